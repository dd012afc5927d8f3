/*
 * plugin.c -- the ABI entry point of lossless-context.so and the callback dispatch.
 *
 * Owns the lc_plugin state and the descriptor's callbacks: the top of the plugin's layers
 * (tests/plugin_calls.py). Each callback parses its event once, hands it to the glue
 * modules (lcm.c first, so the store sees the raw messages; then clm.c) and serializes the
 * result. `context` goes to the engine in one call (engine/request/request.h), which
 * projects, composes and notes the request. Host calls are hostcall.c's.
 */
#include "plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "request.h"
#include "util.h"

#define PLUGIN_NAME "lossless-context"
#define PLUGIN_VERSION "0.1.0"

/* ---- callbacks ---------------------------------------------------------------------- */

static void plugin_release(void *state, void *ptr)
{
    (void)state;
    free(ptr);
}

static void plugin_release_context(void *state, ap_context_result *r)
{
    (void)state;
    if (!r) return;
    for (size_t i = 0; i < r->n_items; i++) free(r->items[i].json);
    free(r->items);
    free(r);
}


static void plugin_unload(void *state)
{
    lc_plugin *p = state;
    if (!p) return;
    clm_glue_free(p);
    lcm_glue_free(p);
    LC_FREE(p->in, p->session_id, p->session_file, p->cwd, p->agent_home, p->tmp_dir, p->model, p);
}

/* The start of every JSON event: the summarizer's queued model calls started (`pump`: the
 * callbacks of an agent turn), no result yet, and the event parsed -- a malformed one is
 * refused rather than guessed at. */
static cJSON *plugin_begin(lc_plugin *p, int pump, const char *json, const char *event,
                           char **out_json, char **err)
{
    if (pump) lcm_summ_pump(p);
    *out_json = NULL;
    cJSON *ev = json ? cJSON_Parse(json) : cJSON_CreateObject();
    if (!ev || !cJSON_IsObject(ev)) {
        cJSON_Delete(ev);
        lc_errf(err, AP_INVALID, "%s: the event is not a JSON object", event);
        return NULL;
    }
    return ev;
}

static int plugin_finish(cJSON *ev, cJSON *result, int rc, char **out_json)
{
    if (rc == AP_OK && result) *out_json = cJSON_PrintUnformatted(result);
    cJSON_Delete(result);
    cJSON_Delete(ev);
    return plugin_ap_status(rc);
}

/* The halves' hooks for an event they only take note of, and for one CLM answers. */
typedef int (*plugin_note_fn)(lc_plugin *p, const cJSON *ev, char **err);
typedef int (*plugin_answer_fn)(lc_plugin *p, const cJSON *ev, cJSON **out, char **err);

/* An event both halves take note of: LCM first, then CLM while all went well. */
static int plugin_note(void *state, int pump, const char *json, const char *event, plugin_note_fn lcm,
                       plugin_note_fn clm, char **out_json, char **err)
{
    lc_plugin *p = state;
    cJSON *ev = plugin_begin(p, pump, json, event, out_json, err);
    if (!ev) return AP_INVALID;
    int rc = lcm(p, ev, err);
    if (rc == AP_OK) rc = clm(p, ev, err);
    return plugin_finish(ev, NULL, rc, out_json);
}

/* An event whose answer (possibly none) is CLM's alone. */
static int plugin_answer(void *state, const char *json, const char *event, plugin_answer_fn clm, char **out_json,
                         char **err)
{
    lc_plugin *p = state;
    cJSON *ev = plugin_begin(p, 1, json, event, out_json, err);
    if (!ev) return AP_INVALID;
    cJSON *out = NULL;
    int rc = clm(p, ev, &out, err);
    return plugin_finish(ev, out, rc, out_json);
}

static int on_session_start(void *state, const char *json, char **out_json, char **err)
{
    lc_plugin *p = state;
    cJSON *ev = plugin_begin(p, 0, json, "session_start", out_json, err);
    if (!ev) return AP_INVALID;
    plugin_refresh_session(p);
    plugin_refresh_model(p);
    cJSON *branch = NULL;
    char *berr = NULL;
    if (plugin_get_branch(p, &branch, &berr) == AP_OK) msg_count_branch(branch, &p->branch);
    free(berr);
    /* A new or reloaded session starts idle. */
    p->agent_busy = 0;
    /* LCM's catch-up and marks read the same branch: one read for both. */
    int rc = lcm_glue_session_start(p, ev, branch, err);
    cJSON_Delete(branch);
    if (rc == AP_OK) rc = clm_glue_session_start(p, ev, err);
    return plugin_finish(ev, NULL, rc, out_json);
}

static int on_session_shutdown(void *state, const char *json, char **out_json, char **err)
{
    lc_plugin *p = state;
    *out_json = NULL;
    (void)json;
    int rc = clm_glue_session_shutdown(p, err);
    int rc2 = lcm_glue_session_shutdown(p, rc == AP_OK ? err : NULL);
    return plugin_ap_status(rc != AP_OK ? rc : rc2);
}

static int on_before_agent_start(void *state, const char *json, char **out_json, char **err)
{
    lc_plugin *p = state;
    cJSON *ev = plugin_begin(p, 1, json, "before_agent_start", out_json, err);
    if (!ev) return AP_INVALID;
    /* Only a host that reports the loop's end can have it tracked; on a level-1 host the
     * plugin never learns of idle, so it never waits for it. */
    if (p->idle_known) p->agent_busy = 1;
    cJSON *out = NULL;
    int rc = clm_glue_before_agent_start(p, ev, &out, err);
    if (rc == AP_OK) lcm_glue_system_prompt(p, ev, &out);
    return plugin_finish(ev, out, rc, out_json);
}

/* The event's messages as engine structs, in a buffer kept across requests (a
 * history-sized malloc per request would be an mmap and its page faults). NULL on OOM. */
static const store_msg *plugin_messages(lc_plugin *p, const ap_context_event *ev)
{
    if (ev->n_messages > p->in_cap) {
        store_msg *v = lc_grow(p->in, &p->in_cap, ev->n_messages, sizeof *v);
        if (!v) return NULL;
        p->in = v;
    }
    for (size_t i = 0; i < ev->n_messages; i++)
        p->in[i] = (store_msg){ev->messages[i].entry_id, ev->messages[i].json, ev->messages[i].json_len, NULL};
    return p->in;
}

/* The engine's request as the host's result: the items taken over (no copy). */
static int plugin_context_result(request_result *res, ap_context_result **out, char **err)
{
    ap_context_result *r = calloc(1, sizeof *r);
    ap_context_item *items = calloc(res->n ? res->n : 1, sizeof *items);
    if (!r || !items) {
        free(r);
        free(items);
        return lc_errf(err, AP_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < res->n; i++) {
        items[i] = (ap_context_item){res->items[i].raw, res->items[i].json};
        res->items[i].json = NULL;
    }
    r->items = items;
    r->n_items = res->n;
    *out = r;
    return AP_OK;
}

/* The event converted once, the request made by one engine call (engine/request/request.h:
 * LCM's projection, live context composed on it, the note of what was sent), the answer
 * converted once. lcm.c lends LCM's side of the session (its store reopened when due). */
static int on_context(void *state, const ap_context_event *ev, ap_context_result **out,
                      char **err)
{
    lc_plugin *p = state;
    lcm_summ_pump(p);
    *out = NULL;
    if (!ev || ev->struct_size < offsetof(ap_context_event, system_prompt))
        return lc_errf(err, AP_INVALID, "context: the event is missing or too small");
    p->context_calls++;
    p->last_n_messages = ev->n_messages;
    const store_msg *msgs = plugin_messages(p, ev);
    if (!msgs && ev->n_messages) return lc_errf(err, AP_NOMEM, "context: out of memory");
    request_session s = {.clm = p->clm};
    lcm_glue_request(p, ev->n_messages, &s);
    request_result res;
    int rc = request_context(&s, msgs, ev->n_messages, ev->system_prompt, &res, err);
    if (s.proj) p->last_est_tokens = res.raw_tokens;
    if (rc == LC_OK && res.changed) rc = plugin_context_result(&res, out, err);
    request_result_free(&res);
    return plugin_ap_status(rc);
}

static int on_before_provider_request(void *state, const char *json, char **out_json,
                                      char **err)
{
    return plugin_answer(state, json, "before_provider_request", clm_glue_before_provider_request, out_json, err);
}

static int on_turn_end(void *state, const char *json, char **out_json, char **err)
{
    return plugin_note(state, 1, json, "turn_end", lcm_glue_turn_end, clm_glue_turn_end, out_json, err);
}

static int on_tool_call(void *state, const char *json, char **out_json, char **err)
{
    return plugin_answer(state, json, "tool_call", clm_glue_tool_call, out_json, err);
}

static int on_tool_result(void *state, const char *json, char **out_json, char **err)
{
    return plugin_answer(state, json, "tool_result", clm_glue_tool_result, out_json, err);
}

/* LCM answers the host's compaction from its DAG when it can; live context may cancel a
 * threshold compaction while its overflow guard enforces the budget. CLM decides first:
 * a cancel wins over a supplied compaction. */
static int on_session_before_compact(void *state, const char *json, char **out_json,
                                     char **err)
{
    lc_plugin *p = state;
    cJSON *ev = plugin_begin(p, 0, json, "session_before_compact", out_json, err);
    if (!ev) return AP_INVALID;
    cJSON *out = NULL;
    int rc = clm_glue_before_compact(p, ev, &out, err);
    if (rc == AP_OK && !out) rc = lcm_glue_before_compact(p, ev, &out, err);
    return plugin_finish(ev, out, rc, out_json);
}

static int on_session_compact(void *state, const char *json, char **out_json, char **err)
{
    return plugin_note(state, 0, json, "session_compact", lcm_glue_compact, clm_glue_compact, out_json, err);
}

static int on_session_tree(void *state, const char *json, char **out_json, char **err)
{
    return plugin_note(state, 0, json, "session_tree", lcm_glue_tree, clm_glue_tree, out_json, err);
}

static int on_agent_end(void *state, const char *json, char **out_json, char **err)
{
    lc_plugin *p = state;
    cJSON *ev = plugin_begin(p, 1, json, "agent_end", out_json, err);
    if (!ev) return AP_INVALID;
    p->agent_busy = 0;
    int rc = clm_glue_agent_end(p, ev, err);
    return plugin_finish(ev, NULL, rc, out_json);
}

/* ---- entry point -------------------------------------------------------------------- */

AP_EXPORT int agent_plugin_init(const ap_host_api *host, ap_plugin *plugin, char *errbuf,
                                size_t errbuf_len)
{
    int rc = AP_OK;
    char *err = NULL;
    lc_plugin *p = NULL;
    if (errbuf && errbuf_len) errbuf[0] = '\0';
    if (!host || !plugin) {
        rc = lc_errf(&err, AP_INVALID, "agent_plugin_init needs a host table and a descriptor");
        goto done;
    }
    if (host->abi_version != AP_ABI_VERSION) {
        rc = lc_errf(&err, AP_ABI_MISMATCH,
                     "lossless-context was built for ABI version %d (API level %d); the host "
                     "speaks ABI version %u (API level %u)",
                     AP_ABI_VERSION, AP_API_LEVEL, host->abi_version, host->api_level);
        goto done;
    }
    /* The descriptor must hold at least the level-1 layout; the level-2 callback is
     * written only when the host's descriptor has room for it. */
    if (plugin->struct_size < offsetof(ap_plugin, agent_end)) {
        rc = lc_errf(&err, AP_ABI_MISMATCH,
                     "the host's plugin descriptor is %u bytes; lossless-context needs at least "
                     "%zu (API level 1)",
                     plugin->struct_size, offsetof(ap_plugin, agent_end));
        goto done;
    }
    p = calloc(1, sizeof *p);
    if (!p) {
        rc = lc_errf(&err, AP_NOMEM, "out of memory");
        goto done;
    }
    p->host = host;
    p->window = LC_WINDOW_DEFAULT;
    plugin->abi_version = AP_ABI_VERSION;
    plugin->api_level = AP_API_LEVEL;
    plugin->name = PLUGIN_NAME;
    plugin->version = PLUGIN_VERSION;
    plugin->state = p;
    plugin->release = plugin_release;
    plugin->release_context = plugin_release_context;
    plugin->unload = plugin_unload;
    plugin->session_start = on_session_start;
    plugin->session_shutdown = on_session_shutdown;
    plugin->before_agent_start = on_before_agent_start;
    plugin->context = on_context;
    plugin->before_provider_request = on_before_provider_request;
    plugin->turn_end = on_turn_end;
    plugin->tool_call = on_tool_call;
    plugin->tool_result = on_tool_result;
    plugin->session_before_compact = on_session_before_compact;
    plugin->session_compact = on_session_compact;
    plugin->session_tree = on_session_tree;
    if (AP_PLUGIN_HAS_ROOM(plugin, agent_end)) {
        plugin->agent_end = on_agent_end;
        p->idle_known = host->api_level >= 2;
    }
    plugin_refresh_session(p);
    plugin_refresh_model(p);
    if ((rc = lcm_cmd_init(p, &err)) != AP_OK) goto done;
    if ((rc = lcm_glue_init(p, &err)) != AP_OK) goto done;
    if ((rc = clm_glue_init(p, &err)) != AP_OK) goto done;
done:
    if (rc != AP_OK) {
        if (errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err ? err : "init failed");
        if (p) {
            plugin->state = NULL;
            plugin_unload(p);
        }
    }
    free(err);
    return rc;
}
