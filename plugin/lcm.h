/*
 * lcm.h -- state shared by the LCM glue modules of the plugin: lcm.c (events, store,
 * recall tools) and lcm_cmd.c (the /lcm command suite). Nothing here is part of the ABI.
 */
#ifndef LC_PLUGIN_LCM_H
#define LC_PLUGIN_LCM_H

#include "plugin.h"
#include <stdint.h>

#include "store.h"

struct lcm_glue {
    store *st;
    int redact; /* redactSecrets; on unless configured off */
    char *open_error;
    /* --- owned by lcm_cmd.c (the /lcm suite, helper J); freed by lcm_cmd_free --- */
    struct lcm_config *cfg;   /* effective lcm.json: loaded at first use (lcm_cmd_config),
                                 replaced at once by `/lcm settings KEY VALUE` */
    struct metrics *metrics;  /* <agent home>/lcm/metrics.jsonl, opened at first use */
    char *cfg_session;        /* the session whose config problems were reported */
    /* --- owned by lcm.c (DAG, projection, pin; helper I) --- */
    struct summ_ctx *summ;    /* the summarizer chain of this session's passes */
    struct lcm_proj *proj;    /* the applied and the prepared cut, the pin, the last request */
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

/* The effective config (never NULL after the first successful call; NULL only on OOM).
 * Loaded from <agent home>/lcm.json at first use in a session; every normalization is
 * reported once per session (a notification, and a config-problem metric row). Call it
 * at session_start so problems surface then. Borrowed: /lcm settings may replace it. */
const struct lcm_config *lcm_cmd_config(lc_plugin *p);
/* Append a telemetry row (metrics.h kinds); never fails the caller. */
void lcm_cmd_metric(lc_plugin *p, const char *kind, const cJSON *fields);
/* Release the suite's state (lcm_glue_free calls it). */
void lcm_cmd_free(lc_plugin *p);

#endif
