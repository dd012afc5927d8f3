/*
 * worker.h -- the background summarizer: one thread per session, with its own store
 * connection and its own summarizer chain, that runs the DAG passes (and improves nodes
 * that were laid as truncation) off the host thread.
 *
 * Owns the thread, its connection and chain, the job slot (one pending pass at a time: a
 * newer request replaces the waiting one), the generation that makes a pass stop and its
 * result be dropped once the caller says its results no longer apply (a tree move,
 * maintenance, a reset), the result slot the host thread polls, the summarizer events it
 * collects for the host thread, the catch-up ingest of a long session's first request
 * (worker_catchup), and the figures /lcm status shows. Between DAG jobs it
 * also embeds new rows for hybrid recall (hybrid.h) when embeddings are configured. Every node a pass makes
 * commits in its own transaction (dag.h), so a stop or a crash leaves whole nodes only.
 *
 * Knows nothing of the ABI: model calls arrive through the summ_config callbacks, which
 * the caller makes safe to call from this thread (the worker times each one for
 * /lcm status). Threading: every worker_* function is for the thread that started the
 * worker (the host thread), except worker_should_stop, which those callbacks may call on
 * the worker thread.
 */
#ifndef LC_WORKER_H
#define LC_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dag.h"
#include "store.h"
#include "summarize.h"

typedef struct worker worker;

typedef struct worker_config {
    const char *agent_home;    /* the store to open (copied) */
    const char *session_id;
    const char *session_cwd;
    summ_config summ;          /* copied; chain strings copied; event_fn/ud are replaced
                                * (events are queued for worker_take_events) */
    long pass_deadline_ms;     /* a pass starts no node after running this long; 0 = none */
    const lcm_embeddings *embed; /* hybrid recall's embeddings (copied); NULL or disabled:
                                * the worker embeds nothing */
    const struct ledger *ledger; /* the embedding passes' cost ledger (borrowed: outlives the
                                * worker; ledger.h is thread-safe); NULL: unrecorded */
} worker_config;

typedef struct worker_job {
    dag_opts dag;              /* keep_going is the worker's own */
    long cut_budget;           /* a pass that wrote nodes prepares a cut within this */
    int want_cut;              /* prepare a cut even when the pass wrote nothing */
    int heal_nodes;            /* then improve up to this many [lcm:truncated] nodes */
    dag_heal_opts heal;        /* apply and max_nodes are set by the worker */
} worker_job;

typedef struct worker_result {
    int rc;                    /* LC_OK, or the failure of the last pass (error says why) */
    char *error;               /* malloc'd or NULL */
    dag_stats stats;           /* summed over the passes since the last poll */
    int passes;
    int healed;
    int64_t cut_id;            /* > 0: the newest cut prepared since the last poll */
    long elapsed_ms;           /* the passes' wall time */
    int deadline_hit;          /* a pass stopped at pass_deadline_ms */
} worker_result;
void worker_result_free(worker_result *r);

typedef struct worker_event {
    char *kind;                /* a summ_event_fn kind */
    char *data_json;           /* its data, or NULL */
} worker_event;
void worker_events_free(worker_event *v, size_t n);

typedef struct worker_status {
    int pending;               /* a job waits */
    int running;               /* a pass runs now */
    long running_ms;           /* for this long */
    long call_ms;              /* the model call in flight has run this long (0: none) */
    unsigned long passes, nodes, conflicts, stops, deadline_hits, failures;
    char *last_error;          /* malloc'd or NULL */
    long long last_error_at;   /* wall-clock ms */
    unsigned long embedded, embed_passes, embed_failures; /* hybrid recall's rows */
    char *embed_error;         /* the last embedding failure (malloc'd or NULL) */
} worker_status;
void worker_status_free(worker_status *s);

/* Open the connection, build the chain and start the thread. */
int worker_start(const worker_config *cfg, worker **out, char **err);

/* Stop: the pass in flight stops before its next node and nothing new starts; waits up to
 * timeout_ms for the thread. Returns 1 when the thread ended (the worker is then freed),
 * 0 when it is still inside a model call: the caller must wait (worker_stop again) before
 * it unloads the code the callbacks live in. NULL is a no-op returning 1. */
int worker_stop(worker *w, long timeout_ms);

/* Rows may lack a vector (new messages were stored): once no DAG job waits, the worker
 * embeds them in bounded passes (embeddings passRows rows each), a waiting DAG job going
 * first between passes; a failed pass waits for the next nudge. A no-op when the worker
 * has no embeddings configured. */
void worker_embed_nudge(worker *w);

/* Queue a pass (coalesced with a waiting one: the newer job replaces it). */
void worker_submit(worker *w, const worker_job *job);

/* Results committed since the last call: 1 and *out filled (worker_result_free), or 0. */
int worker_poll(worker *w, worker_result *out);

/* Like worker_poll, but waits up to timeout_ms for the job in flight or waiting to end.
 * 0 when nothing was queued or the time ran out. */
int worker_wait(worker *w, long timeout_ms, worker_result *out);

/* The catch-up ingest: a session's first request that brings thousands of messages the
 * store lacks (a plugin installed into a long session, a deleted store) hands them here
 * instead of storing them on the host thread. msgs are copied and queued behind what is
 * queued already; the worker stores them in order, WORKER_CATCHUP_BATCH a transaction
 * (store_ingest: what is stored is skipped), ahead of any pass or embedding, so the
 * store's ordinals stay the messages' order. A stop between batches leaves whole batches
 * only; the next session completes the rest from the host's messages. LC_NOMEM. */
#define WORKER_CATCHUP_BATCH 2000
int worker_catchup(worker *w, const store_msg *msgs, size_t n, char **err);

/* Messages handed to worker_catchup and not stored yet (0: caught up). -1 when a batch
 * failed: what was queued is dropped and *why (malloc'd, may be NULL) says why; the
 * failure is reported once. */
long worker_catchup_left(worker *w, char **why);

/* A job waits or runs. */
int worker_busy(worker *w);

/* What the worker is doing no longer applies: the pass in flight stops before its next
 * node, the waiting job and any result not yet polled are dropped. */
void worker_invalidate(worker *w);

/* The summarizer events the worker's chain reported since the last call (*out malloc'd;
 * worker_events_free). */
size_t worker_take_events(worker *w, worker_event **out);

void worker_status_get(worker *w, worker_status *out);

/* For a completion callback waiting on the worker thread: the pass should give up (a
 * stop or an invalidation), so the call may be abandoned. */
int worker_should_stop(worker *w);

#endif
