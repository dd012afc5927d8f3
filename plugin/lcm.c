/*
 * lcm.c -- glue from ABI events to the lossless store (skeleton: /lcm status counts the
 * context it was given; the store itself arrives with the store-and-recall issue).
 */
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "plugin.h"
#include "util.h"

static int lcm_command(void *ud, const char *args, char **out_text, char **err)
{
    lc_plugin *p = ud;
    (void)err;
    while (*args == ' ') args++;
    if (*args == '\0' || strncmp(args, "status", 6) == 0) {
        size_t n = p->context_calls ? p->last_n_messages : p->branch_messages;
        size_t tokens = p->context_calls ? p->last_est_tokens : p->branch_tokens;
        double pct = p->window > 0 ? 100.0 * (double)tokens / (double)p->window : 0.0;
        *out_text = lc_asprintf("session: %s\nmessages: %zu\ncontext: ~%zu / %ld tokens "
                                "(%.1f%%)\nmodel: %s",
                                p->session_id ? p->session_id : "?", n, tokens, p->window, pct,
                                p->model ? p->model : "none");
        return AP_OK;
    }
    *out_text = lc_asprintf("/lcm: unknown subcommand '%s' (try: status)", args);
    return AP_OK;
}

int lcm_glue_init(lc_plugin *p, char **err)
{
    return plugin_register_command(p, "lcm", "Lossless context: status and recall store",
                                   lcm_command, err);
}

void lcm_glue_free(lc_plugin *p) { (void)p; }
int lcm_glue_session_start(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }
int lcm_glue_session_shutdown(lc_plugin *p, char **err) { (void)p; (void)err; return AP_OK; }

/* Skeleton: estimate the context from the per-entry texts; the store-backed version
 * ingests only what is new instead of re-reading everything. */
int lcm_glue_context(lc_plugin *p, const ap_context_event *ev, char **err)
{
    (void)err;
    size_t tokens = 0;
    for (size_t i = 0; i < ev->n_messages; i++) tokens += (ev->messages[i].json_len + 3) / 4;
    p->last_est_tokens = tokens;
    return AP_OK;
}

int lcm_glue_turn_end(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }
int lcm_glue_before_compact(lc_plugin *p, const cJSON *ev, cJSON **out, char **err) { (void)p; (void)ev; (void)err; *out = NULL; return AP_OK; }
int lcm_glue_compact(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }
int lcm_glue_tree(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }
