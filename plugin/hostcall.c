/*
 * hostcall.c -- the plugin's bottom layer: every call into the host's table (log, notify,
 * session entries, the branch, completions, registration, the model and session facts),
 * each checking that the host offers the slot, and the one conversion between the
 * engine's statuses and the ABI's. Calls nothing of the plugin above it (plugin.c, clm.c,
 * lcm*.c call it), so the plugin's files form layers (tests/plugin_calls.py).
 */
#include "plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "util.h"

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

void plugin_refresh_session(lc_plugin *p)
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
