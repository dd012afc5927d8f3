/*
 * plugin.c -- the ABI entry point of lossless-context.so and the callback dispatch.
 *
 * Owns the lc_plugin state and the descriptor's callbacks. Each callback parses its
 * event once, hands it to the glue modules (lcm.c first, so the store sees the raw
 * messages; then clm.c, whose engine side, clm_live, decides what the model sees) and
 * serializes the result.
 */
#include "plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "util.h"

#define PLUGIN_NAME "lossless-context"
#define PLUGIN_VERSION "0.1.0"

/* ---- host wrappers ---------------------------------------------------------------- */

static void plugin_vsay(lc_plugin *p, int notify, int level, const char *fmt, va_list ap)
{
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) return;
    if (notify && AP_HOST_HAS(p->host, notify))
        p->host->notify(p->host->host_ctx, level, msg);
    else if (AP_HOST_HAS(p->host, log))
        p->host->log(p->host->host_ctx, level, msg);
    free(msg);
}

void plugin_log(lc_plugin *p, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    plugin_vsay(p, 0, level, fmt, ap);
    va_end(ap);
}

void plugin_notify(lc_plugin *p, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    plugin_vsay(p, 1, level, fmt, ap);
    va_end(ap);
}

/* Host-allocated strings become malloc'd ones so the rest of the plugin frees with free(). */
static char *plugin_take_host_string(lc_plugin *p, char *s)
{
    if (!s) return NULL;
    char *copy = lc_strdup(s);
    if (AP_HOST_HAS(p->host, free)) p->host->free(s);
    return copy;
}

/* ---- statuses ------------------------------------------------------------------------ */

/* Engine results are returned to the host as they are: every engine status that can
 * cross the ABI has the ABI's value. */
#define PLUGIN_SAME_STATUS(lc, ap) _Static_assert((int)(lc) == (int)(ap), #lc " must equal " #ap)
PLUGIN_SAME_STATUS(LC_OK, AP_OK);
PLUGIN_SAME_STATUS(LC_ERR, AP_ERROR);
PLUGIN_SAME_STATUS(LC_NOMEM, AP_NOMEM);
PLUGIN_SAME_STATUS(LC_INVALID, AP_INVALID);
PLUGIN_SAME_STATUS(LC_NOTFOUND, AP_NOTFOUND);
PLUGIN_SAME_STATUS(LC_BUSY, AP_BUSY);
/* LC_CANCELLED is engine-internal: it must not read as an ABI status on the way out. */
_Static_assert((int)LC_CANCELLED > (int)AP_BUSY && (int)LC_CANCELLED != (int)AP_UNSUPPORTED,
               "LC_CANCELLED must lie outside the ABI's statuses");

_Static_assert((int)LC_EXCLUDED > (int)AP_BUSY && (int)LC_EXCLUDED != (int)AP_UNSUPPORTED,
               "LC_EXCLUDED must lie outside the ABI's statuses");

int plugin_ap_status(int lc)
{
    return lc == LC_CANCELLED || lc == LC_EXCLUDED ? AP_ERROR : lc;
}

int plugin_lc_status(int ap, int unsupported)
{
    return ap == AP_UNSUPPORTED ? unsupported : ap;
}

long plugin_window(const lc_plugin *p)
{
    return p->window > 0 ? p->window : LC_WINDOW_DEFAULT;
}

static int plugin_host_error(lc_plugin *p, int rc, char *host_err, char **err, const char *what)
{
    char *msg = plugin_take_host_string(p, host_err);
    lc_errf(err, rc, "%s: %s", what, msg ? msg : "the host gave no reason");
    free(msg);
    return rc;
}

int plugin_append_custom(lc_plugin *p, const char *custom_type, const cJSON *data,
                         char **out_id, char **err)
{
    if (!AP_HOST_HAS(p->host, append_custom))
        return lc_errf(err, AP_UNSUPPORTED, "the host cannot append session entries");
    int rc = AP_OK;
    char *json = cJSON_PrintUnformatted(data);
    char *id = NULL, *herr = NULL;
    if (!json) {
        rc = lc_errf(err, AP_NOMEM, "out of memory serializing %s", custom_type);
        goto done;
    }
    rc = p->host->append_custom(p->host->host_ctx, custom_type, json, &id, &herr);
    if (rc != AP_OK) {
        plugin_host_error(p, rc, herr, err, "appending a session entry failed");
        goto done;
    }
    if (out_id) *out_id = plugin_take_host_string(p, id);
    else if (AP_HOST_HAS(p->host, free)) p->host->free(id);
done:
    free(json);
    return rc;
}

/* A host slot that answers with a JSON array (the branch, every entry), parsed. */
static int plugin_host_array(lc_plugin *p, int (*slot)(void *, char **, char **), const char *missing,
                             const char *failed, const char *what, cJSON **out, char **err)
{
    *out = NULL;
    if (!slot) return lc_errf(err, AP_UNSUPPORTED, "%s", missing);
    char *json = NULL, *herr = NULL;
    int rc = slot(p->host->host_ctx, &json, &herr);
    if (rc != AP_OK) return plugin_host_error(p, rc, herr, err, failed);
    *out = cJSON_Parse(json);
    if (AP_HOST_HAS(p->host, free)) p->host->free(json);
    if (!*out || !cJSON_IsArray(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return lc_errf(err, AP_INVALID, "the host's answer (%s) is not a JSON array", what);
    }
    return AP_OK;
}

int plugin_get_branch(lc_plugin *p, cJSON **out, char **err)
{
    return plugin_host_array(p, AP_HOST_HAS(p->host, get_branch) ? p->host->get_branch : NULL,
                             "the host cannot list the branch", "reading the branch failed",
                             "branch", out, err);
}

/* A host slot that takes one string and answers with one (an entry, a completion): the
 * answer as a malloc'd string, NULL when the host answered nothing. */
static int plugin_host_answer(lc_plugin *p, int (*slot)(void *, const char *, char **, char **), const char *arg,
                              const char *missing, const char *failed, char **out, char **err)
{
    *out = NULL;
    if (!slot) return lc_errf(err, AP_UNSUPPORTED, "%s", missing);
    char *json = NULL, *herr = NULL;
    int rc = slot(p->host->host_ctx, arg, &json, &herr);
    if (rc != AP_OK) return plugin_host_error(p, rc, herr, err, failed);
    *out = plugin_take_host_string(p, json);
    return AP_OK;
}

int plugin_get_entry_text(lc_plugin *p, const char *entry_id, char **out, char **err)
{
    int rc = plugin_host_answer(p, AP_HOST_HAS(p->host, get_entry) ? p->host->get_entry : NULL, entry_id,
                                "the host cannot read an entry by id", "reading an entry failed", out, err);
    if (rc != AP_OK) return rc;
    return *out ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}

int plugin_get_entry(lc_plugin *p, const char *entry_id, cJSON **out, char **err)
{
    char *json = NULL;
    *out = NULL;
    int rc = plugin_get_entry_text(p, entry_id, &json, err);
    if (rc != AP_OK) return rc;
    *out = cJSON_Parse(json);
    free(json);
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return lc_errf(err, AP_INVALID, "the host's entry %s is not a JSON object", entry_id);
    }
    return AP_OK;
}

int plugin_get_entries(lc_plugin *p, cJSON **out, char **err)
{
    return plugin_host_array(p, AP_HOST_HAS(p->host, get_entries) ? p->host->get_entries : NULL,
                             "the host cannot list every entry (API level < 2)",
                             "reading the session's entries failed", "entries", out, err);
}

int plugin_can_send(const lc_plugin *p)
{
    return AP_HOST_HAS(p->host, send_user_message);
}

int plugin_send_user_message(lc_plugin *p, const char *text, char **err)
{
    if (!plugin_can_send(p))
        return lc_errf(err, AP_UNSUPPORTED, "the host cannot start a turn (API level < 2)");
    char *herr = NULL;
    int rc = p->host->send_user_message(p->host->host_ctx, text, &herr);
    if (rc != AP_OK) return plugin_host_error(p, rc, herr, err, "sending a user message failed");
    return AP_OK;
}

void plugin_apply_window(lc_plugin *p)
{
    /* A correction belongs to the window it corrected: a model switch that changes the
     * host's figure makes it stale. */
    long w = zones_effective_window(p->window_believed, &p->window_corr);
    if (w > 0) p->window = w;
}

/* A host slot's JSON answer, parsed; NULL when the host lacks the slot, fails or answers
 * nothing parsable. For facts the plugin refreshes when it can and otherwise keeps. */
static cJSON *plugin_host_facts(lc_plugin *p, int (*slot)(void *, char **, char **))
{
    if (!slot) return NULL;
    char *json = NULL, *herr = NULL;
    if (slot(p->host->host_ctx, &json, &herr) != AP_OK) {
        if (AP_HOST_HAS(p->host, free)) p->host->free(herr);
        return NULL;
    }
    cJSON *facts = cJSON_Parse(json);
    if (AP_HOST_HAS(p->host, free)) p->host->free(json);
    return facts;
}

void plugin_refresh_model(lc_plugin *p)
{
    cJSON *m = plugin_host_facts(p, AP_HOST_HAS(p->host, get_model) ? p->host->get_model : NULL);
    if (!m) return;
    const char *prov = cJSON_GetStringValue(cJSON_GetObjectItem(m, "provider"));
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(m, "id"));
    cJSON *win = cJSON_GetObjectItem(m, "contextWindow");
    cJSON *mt = cJSON_GetObjectItem(m, "maxTokens");
    free(p->model);
    p->model = lc_asprintf("%s/%s", prov ? prov : "unknown", id ? id : "unknown");
    if (cJSON_IsNumber(win) && win->valuedouble > 0) p->window_believed = (long)win->valuedouble;
    plugin_apply_window(p);
    if (cJSON_IsNumber(mt) && mt->valuedouble > 0) p->max_tokens = (long)mt->valuedouble;
    cJSON_Delete(m);
}

int plugin_register_command(lc_plugin *p, const char *name, const char *description,
                            ap_command_fn fn, char **err)
{
    if (!AP_HOST_HAS(p->host, register_command))
        return lc_errf(err, AP_UNSUPPORTED, "the host cannot register commands");
    char *herr = NULL;
    int rc = p->host->register_command(p->host->host_ctx, name, description, fn, p, &herr);
    if (rc != AP_OK) return plugin_host_error(p, rc, herr, err, "registering a command failed");
    return AP_OK;
}

int plugin_register_tool(lc_plugin *p, const char *name, const char *description,
                         const char *parameters_json, ap_tool_fn fn, char **err)
{
    if (!AP_HOST_HAS(p->host, register_tool))
        return lc_errf(err, AP_UNSUPPORTED, "the host cannot register tools");
    char *herr = NULL;
    int rc = p->host->register_tool(p->host->host_ctx, name, description, parameters_json, fn,
                                    p, &herr);
    if (rc != AP_OK) return plugin_host_error(p, rc, herr, err, "registering a tool failed");
    return AP_OK;
}

int plugin_complete(lc_plugin *p, const char *request_json, char **out_json, char **err)
{
    return plugin_host_answer(p, AP_HOST_HAS(p->host, complete) ? p->host->complete : NULL, request_json,
                              "the host offers no completion service", "completion failed", out_json, err);
}

char *plugin_text_result(const char *text, int is_error)
{
    cJSON *r = msg_tool_result(text ? text : "", NULL, is_error);
    char *s = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return s;
}

/* ---- session facts ------------------------------------------------------------------ */

static void plugin_refresh_session(lc_plugin *p)
{
    cJSON *s = plugin_host_facts(p, AP_HOST_HAS(p->host, session_info) ? p->host->session_info : NULL);
    if (!s) return;
    struct { const char *key; char **slot; } facts[] = {
        {"id", &p->session_id},   {"sessionFile", &p->session_file}, {"cwd", &p->cwd},
        {"agentHome", &p->agent_home}, {"tmpDir", &p->tmp_dir},
    };
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(s, facts[i].key));
        free(*facts[i].slot);
        *facts[i].slot = lc_strdup(v ? v : "");
    }
    cJSON_Delete(s);
}

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
    LC_FREE(p->session_id, p->session_file, p->cwd, p->agent_home, p->tmp_dir, p->model, p);
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
    cJSON_Delete(branch);
    /* A new or reloaded session starts idle. */
    p->agent_busy = 0;
    int rc = lcm_glue_session_start(p, ev, err);
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
    size_t anchor = clm_glue_anchor(p);
    ap_context_result *lcm = NULL, *clm = NULL;
    int rc = lcm_glue_context(p, ev, anchor, &lcm, err);
    if (rc != AP_OK) return plugin_ap_status(rc);
    /* CLM works on LCM's projection of the raw suffix; with live context off it hands
     * nothing back and LCM's projection is the answer. */
    rc = clm_glue_context(p, ev, lcm, &clm, err);
    if (rc == AP_OK) {
        *out = clm ? clm : lcm;
        if (clm) plugin_release_context(p, lcm);
    } else {
        plugin_release_context(p, lcm);
    }
    if (rc == AP_OK) lcm_glue_context_sent(p, ev, *out);
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
