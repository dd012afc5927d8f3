/*
 * clm.c -- glue from ABI events to the live-context engine (skeleton: /clm status and
 * the /clm-compact command; every event passes through unchanged).
 */
#include <stdlib.h>
#include <string.h>

#include "plugin.h"
#include "util.h"

static size_t clm_status_messages(const lc_plugin *p)
{
    return p->context_calls ? p->last_n_messages : p->branch_messages;
}

static int clm_command(void *ud, const char *args, char **out_text, char **err)
{
    lc_plugin *p = ud;
    (void)err;
    while (*args == ' ') args++;
    if (*args == '\0' || strncmp(args, "status", 6) == 0) {
        size_t tokens = p->context_calls ? p->last_est_tokens : p->branch_tokens;
        *out_text = lc_asprintf("live context: off (raw context)\n"
                                "next request: ~%zu tokens estimated in %zu messages, "
                                "window %ld\n"
                                "edits: none",
                                tokens, clm_status_messages(p), p->window);
        return AP_OK;
    }
    *out_text = lc_asprintf("/clm: unknown subcommand '%s' (try: status)", args);
    return AP_OK;
}

static int clm_compact_command(void *ud, const char *args, char **out_text, char **err)
{
    (void)ud;
    (void)args;
    (void)err;
    *out_text = lc_strdup("/clm-compact: live context is not enabled in this build yet");
    return AP_OK;
}

int clm_glue_init(lc_plugin *p, char **err)
{
    int rc = plugin_register_command(p, "clm", "Live context: status, edits, settings",
                                     clm_command, err);
    if (rc == AP_OK)
        rc = plugin_register_command(p, "clm-compact",
                                     "Ask the model to compact its live context", clm_compact_command,
                                     err);
    return rc;
}

void clm_glue_free(lc_plugin *p) { (void)p; }
int clm_glue_session_start(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }
int clm_glue_session_shutdown(lc_plugin *p, char **err) { (void)p; (void)err; return AP_OK; }
int clm_glue_before_agent_start(lc_plugin *p, const cJSON *ev, cJSON **out, char **err) { (void)p; (void)ev; (void)err; *out = NULL; return AP_OK; }
int clm_glue_context(lc_plugin *p, const ap_context_event *ev, ap_context_result **out, char **err) { (void)p; (void)ev; (void)err; *out = NULL; return AP_OK; }
int clm_glue_before_provider_request(lc_plugin *p, const cJSON *ev, cJSON **out, char **err) { (void)p; (void)ev; (void)err; *out = NULL; return AP_OK; }
int clm_glue_turn_end(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }
int clm_glue_tool_call(lc_plugin *p, const cJSON *ev, cJSON **out, char **err) { (void)p; (void)ev; (void)err; *out = NULL; return AP_OK; }
int clm_glue_tool_result(lc_plugin *p, const cJSON *ev, cJSON **out, char **err) { (void)p; (void)ev; (void)err; *out = NULL; return AP_OK; }
int clm_glue_before_compact(lc_plugin *p, const cJSON *ev, cJSON **out, char **err) { (void)p; (void)ev; (void)err; *out = NULL; return AP_OK; }
int clm_glue_compact(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }
int clm_glue_tree(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }
