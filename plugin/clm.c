/*
 * clm.c -- the live-context glue (docs/DESIGN.md §1.1, §3, §4, §5): each ABI event parsed
 * once, handed to the engine's live context (engine/clm/clm_live.h, the rules and the state;
 * engine/clm/clm_pages.h, the /clm pages), and its answer turned back into ABI types once.
 * Here are only the host's side of clm_live_hooks, the conversions, and /clm-compact,
 * which needs the host to start a turn. The `context` request is not here: plugin.c hands
 * it to engine/request/request.h, which composes live context on LCM's projection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clm_live.h"
#include "clm_pages.h"
#include "lcm.h"
#include "message.h"

/* ---- the hooks: the host as the live context sees it ---------------------------------- */

static void clm_hook_say(void *ud, int how, const char *text)
{
    int level = (how & CLM_LIVE_WARNING) ? AP_LEVEL_WARNING : AP_LEVEL_INFO;
    if (how & CLM_LIVE_NOTIFY) plugin_notify(ud, level, "%s", text);
    else plugin_log(ud, level, "%s", text);
}

static int clm_host_error(lc_plugin *p, int rc, char *herr, char **err, const char *what)
{
    lc_errf(err, rc, "%s: %s", what, herr ? herr : "the host gave no reason");
    if (herr && AP_HOST_HAS(p->host, free)) p->host->free(herr);
    return rc;
}

/* Exact bytes both ways (no cJSON round trip): revision payloads carry messages verbatim. */
static int clm_hook_append(void *ud, const char *type, const char *json, char **out_id, char **err)
{
    lc_plugin *p = ud;
    const ap_host_api *h = p->host;
    if (!AP_HOST_HAS(h, append_custom))
        return lc_errf(err, AP_UNSUPPORTED, "the host cannot append session entries");
    char *id = NULL, *herr = NULL;
    int rc = h->append_custom(h->host_ctx, type, json, &id, &herr);
    if (rc != AP_OK) return clm_host_error(p, rc, herr, err, "appending a session entry failed");
    *out_id = id ? lc_strdup(id) : NULL;
    if (AP_HOST_HAS(h, free)) h->free(id);
    return AP_OK;
}

static int clm_hook_branch(void *ud, char **out, char **err)
{
    lc_plugin *p = ud;
    const ap_host_api *h = p->host;
    *out = NULL;
    if (!AP_HOST_HAS(h, get_branch))
        return lc_errf(err, AP_UNSUPPORTED, "the host cannot list the branch");
    char *json = NULL, *herr = NULL;
    int rc = h->get_branch(h->host_ctx, &json, &herr);
    if (rc != AP_OK) return clm_host_error(p, rc, herr, err, "reading the branch failed");
    *out = lc_strdup(json ? json : "[]");
    if (AP_HOST_HAS(h, free)) h->free(json);
    return *out ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}

static int clm_hook_entry(void *ud, const char *id, cJSON **out, char **err)
{
    int rc = plugin_get_entry(ud, id, out, err);
    return rc == AP_OK ? LC_OK : rc == AP_NOTFOUND ? LC_NOTFOUND : rc == AP_NOMEM ? LC_NOMEM : LC_ERR;
}

static void clm_hook_facts(void *ud, clm_live_facts *f)
{
    const lc_plugin *p = ud;
    f->window = p->window;
    f->cwd = p->cwd;
    f->session_id = p->session_id;
    /* redactSecrets (lcm.json); on until that config is loaded and says otherwise. */
    f->redact = p->lcm && p->lcm->cfg ? p->lcm->redact : 1;
    f->context_calls = p->context_calls;
    f->branch_tokens = p->branch.tokens;
}

static const char *clm_ev_str(const cJSON *ev, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, key));
}

/* ---- the other events ------------------------------------------------------------------ */

int clm_glue_session_start(lc_plugin *p, const cJSON *ev, char **err)
{
    return clm_live_session_start(p->clm, p->tmp_dir, p->session_id, p->model,
                                  clm_ev_str(ev, "reason"), err);
}

int clm_glue_session_shutdown(lc_plugin *p, char **err)
{
    (void)err;
    clm_live_session_shutdown(p->clm);
    return AP_OK;
}

int clm_glue_before_agent_start(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    (void)err;
    *out = NULL;
    char *sp = clm_live_system_prompt(p->clm, clm_ev_str(ev, "systemPrompt"));
    if (sp) {
        *out = cJSON_CreateObject();
        cJSON_AddStringToObject(*out, "systemPrompt", sp);
    }
    free(sp);
    return AP_OK;
}

int clm_glue_before_provider_request(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    clm_live *g = p->clm;
    *out = NULL;
    const cJSON *payload = cJSON_GetObjectItemCaseSensitive(ev, "payload");
    if (!g->enabled || !cJSON_IsObject(payload)) return AP_OK;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(payload, "replay"))) {
        g->render_off = 1;
        return AP_OK;
    }
    cJSON *fixed = NULL;
    size_t window = (size_t)plugin_window(p);
    size_t model_max = (size_t)(p->max_tokens > 0 ? p->max_tokens : 8192);
    int rc = clm_max_tokens_repair_doc(payload, window, model_max, g->est_next, &fixed, err);
    if (rc == LC_OK && fixed) {
        *out = cJSON_CreateObject();
        cJSON_AddItemToObject(*out, "payload", fixed);
        g->repairs++;
    }
    return rc;
}

int clm_glue_turn_end(lc_plugin *p, const cJSON *ev, char **err)
{
    return clm_live_turn_end(p->clm, cJSON_GetObjectItemCaseSensitive(ev, "message"), err);
}

int clm_glue_tool_call(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    (void)ev, (void)err;
    const char *why = clm_live_tool_call(p->clm);
    *out = NULL;
    if (why) {
        *out = cJSON_CreateObject();
        cJSON_AddBoolToObject(*out, "block", 1);
        cJSON_AddStringToObject(*out, "reason", why);
    }
    return AP_OK;
}

int clm_glue_tool_result(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    (void)err;
    *out = NULL;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(ev, "content"), *b;
    if (!cJSON_IsArray(content)) return AP_OK;
    size_t chars = 0;
    cJSON_ArrayForEach(b, content) {
        const char *t = clm_ev_str(b, "text");
        if (t) chars += strlen(t);
    }
    char *t = clm_live_tool_trailer(p->clm, chars);
    if (!t) return AP_OK;
    cJSON *nc = cJSON_Duplicate(content, 1);
    msg_add_text(nc, t);
    free(t);
    *out = cJSON_CreateObject();
    cJSON_AddItemToObject(*out, "content", nc);
    return AP_OK;
}

int clm_glue_before_compact(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    (void)err;
    *out = NULL;
    if (clm_live_before_compact(p->clm, clm_ev_str(ev, "reason"), clm_ev_str(ev, "error"))) {
        *out = cJSON_CreateObject();
        cJSON_AddBoolToObject(*out, "cancel", 1);
    }
    return AP_OK;
}

int clm_glue_compact(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)err;
    clm_live_compact(p->clm, clm_ev_str(cJSON_GetObjectItemCaseSensitive(ev, "compactionEntry"), "id"));
    return AP_OK;
}

int clm_glue_tree(lc_plugin *p, const cJSON *ev, char **err)
{
    return clm_live_tree(p->clm, clm_ev_str(ev, "oldLeafId"), clm_ev_str(ev, "newLeafId"), err);
}

/* ---- /clm and /clm-compact ------------------------------------------------------------------ */

static int clm_command(void *ud, const char *args, char **out_text, char **err)
{
    lc_plugin *p = ud;
    *out_text = clm_pages_command(p->clm, args);
    return *out_text ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}
/* Forget the waiting request. */
static void clm_compact_clear(clm_live *g)
{
    g->compact_pending = 0;
    g->compact_wait = 0;
    free(g->compact_baseline);
    g->compact_baseline = NULL;
}

/* Build the prompt and hand it to the host as a user message. Returns AP_OK, or the
 * host's status with *why (malloc'd) saying what went wrong. */
static int clm_compact_send(lc_plugin *p, const char *instructions, char **why)
{
    clm_live *g = p->clm;
    char *t = clm_live_compact_prompt(g, instructions);
    if (!t) {
        *why = lc_asprintf("the compact prompt %s cannot be read",
                           g->set.compact_prompt ? g->set.compact_prompt : "(built in)");
        return AP_INVALID;
    }
    int rc = plugin_send_user_message(p, t, why);
    free(t);
    return rc;
}

/* The level-1 path: the prompt rides on the next request as a one-call notice, and the
 * user starts that turn. */
static char *clm_compact_as_notice(clm_live *g, const char *args, const char *reason)
{
    free(g->compact_baseline);
    g->compact_baseline = lc_strdup(args ? args : "");
    g->compact_pending = 1;
    g->compact_wait = 0;
    return lc_asprintf("/clm-compact: the compaction prompt goes out with the next request "
                       "(%s): send any prompt, e.g. \"compact your context\", to run it.", reason);
}

/* §7d: wait for idle, then send the prompt as an ordinary user message. Idle now: send it
 * at once (the host runs it when this command returns). Busy: record the baseline and
 * send it at agent_end unless the live context changed meanwhile. */
static int clm_compact_command(void *ud, const char *args, char **out_text, char **err)
{
    lc_plugin *p = ud;
    clm_live *g = p->clm;
    if (!args) args = "";
    while (*args == ' ' || *args == '\t') args++;
    if (!g->enabled) {
        *out_text = lc_strdup("/clm-compact: live context is off (/clm on)");
    } else if (g->compact_pending) {
        *out_text = lc_strdup(g->compact_wait
                                  ? "/clm-compact: refused, a compaction request is already waiting "
                                    "for the agent to finish"
                                  : "/clm-compact: refused, a compaction request is already waiting "
                                    "for the next request");
    } else if (!plugin_can_send(p)) {
        *out_text = clm_compact_as_notice(g, args, "this host is below API level 2: a plugin "
                                                   "can add to a request but not start one");
    } else if (p->agent_busy) {
        free(g->compact_baseline);
        g->compact_baseline = lc_strdup(args);
        g->compact_pending = 1;
        g->compact_wait = 1;
        g->compact_epoch = g->stale_epoch;
        g->compact_enabled = g->enabled;
        *out_text = lc_strdup("/clm-compact: the agent is busy; the compaction prompt is sent "
                              "when it finishes (a tree move, /clm reset, reload or shutdown "
                              "meanwhile cancels it)");
    } else {
        char *why = NULL;
        int rc = clm_compact_send(p, args, &why);
        if (rc == AP_OK)
            *out_text = lc_strdup("/clm-compact: the compaction prompt was sent as a user "
                                  "message; the model edits LIVE_CONTEXT.md in that turn");
        else if (rc == AP_UNSUPPORTED)
            *out_text = clm_compact_as_notice(g, args, why ? why : "the host cannot start a turn");
        else
            *out_text = lc_asprintf("/clm-compact: not sent (%s)", why ? why : "the host refused");
        free(why);
    }
    return *out_text ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}

int clm_glue_agent_end(lc_plugin *p, const cJSON *ev, char **err)
{
    clm_live *g = p->clm;
    (void)ev;
    (void)err;
    if (!g || !g->compact_pending || !g->compact_wait) return AP_OK;
    /* clm_live_mark_stale cancels a waiting request as it happens; the epoch check also covers
     * a baseline change that reached no hook (the switch, a restore that failed). */
    const char *changed = g->stale_epoch != g->compact_epoch ? "the branch or revision was replaced"
                          : g->enabled != g->compact_enabled ? "live context was switched"
                          : NULL;
    if (changed) {
        plugin_notify(p, AP_LEVEL_INFO, "/clm-compact: not sent, the live context changed (%s)",
                      changed);
        clm_compact_clear(g);
        return AP_OK;
    }
    char *why = NULL;
    char *instructions = g->compact_baseline;
    g->compact_baseline = NULL;
    clm_compact_clear(g);
    int rc = clm_compact_send(p, instructions, &why);
    if (rc == AP_OK)
        plugin_notify(p, AP_LEVEL_INFO, "/clm-compact: the agent is idle; the compaction prompt "
                      "was sent");
    else
        plugin_notify(p, AP_LEVEL_WARNING, "/clm-compact: not sent (%s)", why ? why : "the host refused");
    free(why);
    free(instructions);
    return AP_OK;
}

/* ---- init / free ---------------------------------------------------------------------------- */

int clm_glue_init(lc_plugin *p, char **err)
{
    clm_live_hooks hooks = {p, clm_hook_say, clm_hook_append, clm_hook_branch,
                            AP_HOST_HAS(p->host, get_entry) ? clm_hook_entry : NULL, clm_hook_facts};
    int rc = clm_live_new(&hooks, p->tmp_dir, p->session_id, &p->clm, err);
    if (rc != LC_OK) return rc;
    rc = plugin_register_command(p, "clm", "Live context: status, input, edits, overview, "
                                 "settings, config, on/off, reset", clm_command, err);
    if (rc == AP_OK)
        rc = plugin_register_command(p, "clm-compact",
                                     "Ask the model to compact its live context", clm_compact_command,
                                     err);
    return rc;
}

void clm_glue_free(lc_plugin *p)
{
    if (!p) return;
    clm_live_free(p->clm);
    p->clm = NULL;
}
