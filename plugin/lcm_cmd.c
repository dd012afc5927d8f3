/*
 * lcm_cmd.c -- the /lcm command suite: status (default) and its subcommands. Reads the
 * store and config through the engine; never writes the session.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lcm.h"
#include "util.h"

int lcm_cmd_run(lc_plugin *p, const char *args, char **out_text, char **err)
{
    (void)err;
    while (*args == ' ') args++;
    if (*args == '\0' || strncmp(args, "status", 6) == 0) {
        size_t n = p->context_calls ? p->last_n_messages : p->branch_messages;
        size_t tokens = p->context_calls ? p->last_est_tokens : p->branch_tokens;
        double pct = p->window > 0 ? 100.0 * (double)tokens / (double)p->window : 0.0;
        long long stored = p->lcm && p->lcm->st ? (long long)store_message_count(p->lcm->st) : -1;
        *out_text = lc_asprintf("session: %s\nmessages: %zu\ncontext: ~%zu / %ld tokens "
                                "(%.1f%%)\nmodel: %s\nstore: %s (%lld messages)",
                                p->session_id ? p->session_id : "?", n, tokens, p->window, pct,
                                p->model ? p->model : "none",
                                p->lcm && p->lcm->st ? store_path(p->lcm->st)
                                : p->lcm && p->lcm->open_error ? p->lcm->open_error : "not open",
                                stored < 0 ? 0 : stored);
        return AP_OK;
    }
    *out_text = lc_asprintf("/lcm: unknown subcommand '%s' (try: status)", args);
    return AP_OK;
}
