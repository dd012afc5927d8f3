/*
 * lcm.h -- state shared by the LCM glue modules of the plugin: lcm.c (events, store,
 * recall tools), lcm_cmd.c (the /lcm command suite), lcm_summ.c (the summarizer chains and
 * the worker) and lcm_conf.c (the effective config, the telemetry handle). Nothing here is
 * part of the ABI.
 */
#ifndef LC_PLUGIN_LCM_H
#define LC_PLUGIN_LCM_H

#include "plugin.h"
#include <stdint.h>

#include "offline.h"
#include "projstate.h"
#include "store.h"
#include "util.h"
#include "worker.h"

struct lcm_glue {
    store *st;
    int redact; /* redactSecrets; on unless configured off */
    char *open_error;
    char *bundle;   /* sessionBundle: the folder's previous session, for the system prompt */
    /* --- owned by lcm_conf.c; freed by lcm_conf_free --- */
    struct lcm_config *cfg;   /* effective lcm.json: loaded at first use (lcm_conf_get),
                                 replaced at once by `/lcm settings KEY VALUE` */
    struct metrics *metrics;  /* <agent home>/lcm/metrics.jsonl, opened at first use */
    char *cfg_session;        /* the session whose config problems were reported */
    /* --- owned by lcm_summ.c (the chains and the background worker) --- */
    struct summ_ctx *summ;    /* the configured chain, for passes on the host thread */
    struct summ_ctx *cover;   /* truncation only: a request that cannot wait for summaries */
    struct worker *worker;    /* the background summarizer; NULL: passes between turns */
    struct lcm_summ_ud *wud;  /* what the worker's chain calls with */
    struct lcm_summ_ud *retired; /* earlier sessions' call state, freed at unload */
    char *summ_fallback;      /* the last time the chain fell back: "auto -> extractive: why" */
    long long summ_fallback_at; /* wall-clock ms */
    char *summ_unreachable;   /* why `auto` could not reach the session's model (kept: it is skipped after) */
    long long summ_unreachable_at; /* wall-clock ms */
    struct ledger *ledger;    /* the host thread's chain's cost ledger (engine/ledger.h) */
    /* --- owned by lcm.c (DAG, projection, pin; helper I) --- */
    struct projstate *proj;   /* the applied and the prepared cut, the pin, the last request
                                 (engine/lcm/projstate.h); made at init */
    /* --- the store was busy at session start (lcm.c lcm_reopen) --- */
    int reopen;               /* retry the open on later context calls / commands */
    double reopen_at;         /* lc_now_ms of the last attempt */
    double off_since;         /* lc_now_ms when LCM went inactive */
    /* --- the store is offline (engine/lcm/offline.h): unreachable at start or since a write
     *     failed; `reopen` is set and lcm_reopen reconnects on the engine's cadence --- */
    offline_state off;
};

/* What /lcm status needs from the projection, read from memory (no SQL). */
typedef struct lcm_glue_view {
    int64_t cut_id;           /* 0 = nothing swapped */
    long applied_tokens;      /* occupancy the pin was applied at */
    long window;              /* the window the zones were resolved against */
    long last_tokens;         /* the last request as sent (ceil(bytes/4)) */
    long last_raw_tokens;     /* the same request before the projection */
    const char *last_action;  /* keep | swap | recut | drop */
    long passes;              /* DAG passes run this session */
} lcm_glue_view;
void lcm_glue_view_get(lc_plugin *p, lcm_glue_view *out);

/* `/lcm [subcommand] [args]`: status (the default) and the rest of the suite.
 * *out_text malloc'd. */
int lcm_cmd_run(lc_plugin *p, const char *args, char **out_text, char **err);

/* ---- lcm_conf.c: the effective config and the telemetry handle ---- */

/* The effective config (never NULL after the first successful call; NULL only on OOM).
 * Loaded from <agent home>/lcm.json at first use in a session; every normalization is
 * reported once per session (a notification, and a config-problem metric row). Call it
 * at session_start so problems surface then. Borrowed: /lcm settings may replace it. */
const struct lcm_config *lcm_conf_get(lc_plugin *p);
/* Append a telemetry row (metrics.h kinds); never fails the caller. */
void lcm_conf_metric(lc_plugin *p, const char *kind, const cJSON *fields);
/* A row of one string field and one number field (either key may be NULL). */
void lcm_conf_metric_kv(lc_plugin *p, const char *kind, const char *k1, const char *v1, const char *k2, double v2);
/* Release the config and the telemetry handle (lcm_glue_free calls it). */
void lcm_conf_free(lc_plugin *p);

/* ---- lcm_summ.c: the summarizer chains and the background worker ---- */

/* Build the session's chains and start its worker (session_start, a settings change);
 * whatever was open is closed first. */
void lcm_summ_open(lc_plugin *p);
/* Stop the worker (bounded by the call in flight) and free the chains. */
void lcm_summ_close(lc_plugin *p);
/* lcm_summ_close, and the call state the host can no longer answer (unload). */
void lcm_summ_free(lc_plugin *p);
/* Queue a pass (coalesced). No-op without a worker. */
void lcm_summ_submit(lc_plugin *p, const worker_job *job);
/* New rows may lack vectors: the worker embeds them (hybrid recall; a no-op unless
 * embeddings are configured). */
void lcm_summ_embed_nudge(lc_plugin *p);
/* The worker's pass and results no longer apply (tree move, maintenance, compaction). */
void lcm_summ_invalidate(lc_plugin *p);
/* Waiting on this thread could bring the worker's summaries in: it is busy, and its
 * model calls do not need this thread to answer. */
int lcm_summ_can_wait(lc_plugin *p);

/* What the worker committed: the projection's pick (engine/lcm/projstate.h). */
typedef projstate_pick lcm_summ_pick;
/* What the worker committed since the last call, waiting up to wait_ms (0: no wait);
 * its events and pass figures are written as metrics here. 1 when a result came. */
int lcm_summ_pickup(lc_plugin *p, long wait_ms, lcm_summ_pick *out);
/* The worker's lines of /lcm status. */
void lcm_summ_status(lc_plugin *p, sbuf *b);

#endif
