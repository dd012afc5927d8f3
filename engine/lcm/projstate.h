/*
 * projstate.h -- the projection's state across the requests of one session, and the policy
 * that moves it.
 *
 * Owns the pinned cut and the candidate (the newest prepared cut not yet applied) with
 * their adoption, the zones a request is resolved against, the request itself (its new
 * messages ingested, the plan decided from memory, the pin moved by a swap, a re-cut or a
 * drop), the hand-off of a long session's first ingest to the worker (and the requests
 * sent meanwhile), the make-room policy of a request over the fit line (wait boundedly for the
 * worker, then cover with truncation), the between-turns decision (is a pass due, on the
 * worker or here), the blocking regime's compaction summary, and the request log
 * (LCM_REQUEST_LOG). project.h decides one request; this module remembers what it decided.
 *
 * Whoever runs the summarizer worker (the plugin) is reached through projstate_hooks; each
 * call gets the session's store, config and chains in a projstate_env. Knows nothing of
 * the ABI.
 */
#ifndef LC_PROJSTATE_H
#define LC_PROJSTATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "project.h"
#include "store.h"
#include "summarize.h"
#include "worker.h"

typedef struct projstate projstate;

/* What the worker committed since the last pickup. */
typedef struct projstate_pick {
    int64_t cut_id;           /* > 0: the newest cut the worker prepared */
    int passes, nodes, healed;
} projstate_pick;

/* The summarizer's owner, as the projection needs it. Every hook may be NULL (no worker,
 * nothing logged). */
typedef struct projstate_hooks {
    void *ud;
    /* One line for the host's log (warn: a warning, else information). */
    void (*log)(void *ud, int warn, const char *text);
    /* One telemetry row (metrics.h kinds). */
    void (*metric)(void *ud, const char *kind, const cJSON *fields);
    /* What the worker committed since the last call, waiting up to wait_ms (0: none);
     * 1 when a result came. */
    int (*pickup)(void *ud, long wait_ms, projstate_pick *out);
    /* Waiting on this thread could bring the worker's summaries in. */
    int (*can_wait)(void *ud);
    /* The worker's pass and results no longer apply. */
    void (*invalidate)(void *ud);
    /* Queue a pass on the worker (coalesced). */
    void (*submit)(void *ud, const worker_job *job);
    /* Hand messages to the worker's catch-up ingest, in order, copied (worker_catchup);
     * LC_OK when queued. NULL: every request stores its messages itself. */
    int (*catchup)(void *ud, const store_msg *msgs, size_t n);
    /* Messages handed over and not stored yet (worker_catchup_left): 0 caught up, -1 the
     * catch-up failed (*why malloc'd or NULL). */
    long (*catchup_left)(void *ud, char **why);
} projstate_hooks;

/* The session as one call sees it (borrowed for the call). */
typedef struct projstate_env {
    store *st;                /* the host thread's connection; NULL: LCM inactive */
    const lcm_config *cfg;    /* NULL: the defaults */
    const char *model;        /* for the per-model zones */
    long window;              /* the window the host reports; <= 0: 128,000 */
    summ_ctx *summ;           /* the configured chain; NULL: no passes */
    summ_ctx *cover;          /* truncation only, for a request that cannot wait */
    int worker;               /* a background worker runs the passes between turns */
    int offline;              /* st is NULL because the store went offline (offline.h):
                               * requests are still planned from what is in memory (the
                               * applied and the prepared cut), nothing is stored */
} projstate_env;

int projstate_new(const projstate_hooks *hooks, projstate **out);
void projstate_free(projstate *ps);
/* A new session: nothing pinned, nothing seen (the pass count and the log stay). */
void projstate_reset(projstate *ps);
/* Append one JSON line per request to log_path (and, with dump_path, rewrite that file
 * with the messages sent on every request). Opened once; NULL/"" paths: off. */
void projstate_log_open(projstate *ps, const char *log_path, const char *dump_path);
/* Reset, then take the pin and the newest cut a previous process left (resume). */
void projstate_load(projstate *ps, store *st);

/* Resolve the zones for env (the config's per-model lines, keepRecentTokens). */
int projstate_zones(const projstate_env *env, zones_resolved *z);
/* The pointer block's budget: a quarter of the swap line, and at least two summaries. */
long projstate_block_budget(const zones_resolved *z, const lcm_config *cfg);

/* One request: msgs (root to leaf, borrowed), messages [0, clm_anchor) owned by a
 * live-context revision. Sets *tokens (the raw request's ceil(bytes/4) sum) always; with a
 * store, ingests what is new, takes what the worker committed, plans from memory (making
 * room when the plan is over the fit line) and moves the pin. *items (malloc'd, their
 * json borrowed from the state until the next call) is NULL when the request goes as it
 * came. LC_NOMEM on failure. */
int projstate_context(projstate *ps, const projstate_env *env, const store_msg *msgs, size_t n,
                      size_t clm_anchor, project_item **items, size_t *n_items, size_t *tokens,
                      char **err);

/* A first request that brings at least this many messages the store lacks (a plugin
 * installed into a long session, a store deleted or left behind by a crash) stores none
 * of them on the host thread when a worker runs: they go to its catch-up ingest, and until
 * it is done every request is the newest messages that fit the fit line, after a note that
 * older history is being indexed. Sessions that grow message by message never get here. */
#define PROJSTATE_CATCHUP_MIN 2000

/* Messages still on their way into the store (0: none; the catch-up is over). */
long projstate_catchup_left(projstate *ps);

/* Why the store did not take the last request's messages (its ingest failed), malloc'd
 * and handed over with its status in *rc (the next call starts clean); NULL when it did.
 * The caller decides whether the store is offline. */
char *projstate_store_error(projstate *ps, int *rc);

/* Whether the request just planned waits for its log line (projstate_log_sent). */
int projstate_logging(const projstate *ps);
/* The request as sent: items (n_items; NULL: the input as it came) refer to msgs by index
 * or carry their own json. Returns 1 when its first bytes are the previous request's, byte
 * for byte (the provider's cached prefix survives), 0 when not, -1 with no previous request
 * to compare; *raw_extends (may be NULL) the same of the host's input as it came (what the
 * request would have done without LCM: its last message is still where it was). Writes
 * the log line when one waits (projstate_logging). With the log open the comparison is of
 * the bytes sent (SHA-256); without it a raw message counts as its entry id and length (as
 * the ingest takes it) and the rest by a 64-bit fingerprint of its bytes, so a request does
 * not hash the whole window again. */
int projstate_log_sent(projstate *ps, const store_msg *msgs, size_t n, const project_item *items,
                       size_t n_items, int *raw_extends);

/* Between turns: store the pin decided in `context`, then ask for the pass the next
 * requests need -- on the worker, or here without one -- once the request nears the line
 * that calls for a cut (eagerSummaries, flush_all: always). */
void projstate_between_turns(projstate *ps, const projstate_env *env, int flush_all);
/* Store the pin when a request moved it. */
void projstate_pin_flush(projstate *ps, store *st);
/* After a tree move: the candidate becomes the newest cut on the branch now active. */
void projstate_tree_moved(projstate *ps, store *st);

/* The blocking regime: the host compacts everything before first_kept. A synchronous pass
 * covers it (the worker's results are invalidated first), then the frontier nodes that
 * hold it are rendered as text within the block budget: *text and *node_ids malloc'd.
 * LC_NOTFOUND (*err may stay NULL) when the DAG cannot cover it. */
int projstate_compaction(projstate *ps, const projstate_env *env, const char *first_kept,
                         char **text, int64_t **node_ids, size_t *n_nodes, int *stubbed,
                         char **err);

/* What /lcm status shows, from memory. */
typedef struct projstate_view {
    int64_t cut_id;           /* 0 = nothing swapped */
    long applied_tokens;
    long window;              /* the zones' window; 0 before the first request */
    long last_tokens, last_raw_tokens;
    const char *last_action;  /* keep | swap | recut | drop */
    long passes;
} projstate_view;
void projstate_view_get(const projstate *ps, projstate_view *out);

#endif
