/*
 * lcm.c -- glue from ABI events to the lossless store and recall engine: open the
 * session's store at session_start, ingest what is new on every `context`, mark removed
 * branches on tree moves, and serve the recall tools lcm_grep / lcm_describe /
 * lcm_expand_query. No SQL here: everything goes through engine/store.h and recall.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "plugin.h"
#include "recall.h"
#include "store.h"
#include "util.h"
#include "lcm.h"



static int lcm_command(void *ud, const char *args, char **out_text, char **err)
{
    return lcm_cmd_run(ud, args, out_text, err);
}

/* ---- tools ---------------------------------------------------------------------------- */

static const cJSON *lcm_args(const cJSON *call)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(call, "arguments");
    return cJSON_IsObject(a) ? a : NULL;
}

static const char *lcm_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static double lcm_num(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* A summary id given as 12, "12" or "#12". */
static int64_t lcm_summary_id(const cJSON *o)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "summary_id");
    if (cJSON_IsNumber(v)) return (int64_t)v->valuedouble;
    if (cJSON_IsString(v)) return atoll(v->valuestring[0] == '#' ? v->valuestring + 1 : v->valuestring);
    return 0;
}

static int lcm_tool_reply(char *text, int is_error, char **out, char **err)
{
    if (!text) return lc_errf(err, AP_NOMEM, "out of memory");
    *out = plugin_text_result(text, is_error);
    free(text);
    return *out ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}

static int lcm_tool_error(char *msg, char **out, char **err)
{
    return lcm_tool_reply(msg ? msg : lc_strdup("lcm: failed"), 1, out, err);
}

static int lcm_no_store(lc_plugin *p, char **out, char **err)
{
    return lcm_tool_reply(lc_asprintf("lcm: the store is not open (%s)",
                                      p->lcm && p->lcm->open_error ? p->lcm->open_error : "no session"),
                          1, out, err);
}

static int lcm_tool_grep(void *ud, const char *call_json, char **out, char **err)
{
    lc_plugin *p = ud;
    cJSON *call = cJSON_Parse(call_json);
    const cJSON *a = lcm_args(call);
    char *e = NULL;
    int rc;
    recall_grep_opts o = {0};
    o.query = lcm_str(a, "query");
    o.pattern = lcm_str(a, "pattern");
    o.case_sensitive = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "case_sensitive"));
    o.include_removed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "include_removed"));
    o.offset = (size_t)(lcm_num(a, "offset", 0) > 0 ? lcm_num(a, "offset", 0) : 0);
    o.summary_id = lcm_summary_id(a);
    o.redact = p->lcm ? p->lcm->redact : 1;
    const char *scope_s = lcm_str(a, "scope");
    recall_scope scope = !scope_s ? RECALL_SCOPE_SESSION
                         : !strcmp(scope_s, "sessions") ? RECALL_SCOPE_SESSIONS
                         : !strcmp(scope_s, "all_sessions") ? RECALL_SCOPE_ALL_SESSIONS
                                                            : RECALL_SCOPE_SESSION;
    recall_result r;
    if (scope == RECALL_SCOPE_SESSION) {
        if (!p->lcm || !p->lcm->st) {
            rc = lcm_no_store(p, out, err);
            goto done;
        }
        rc = recall_grep(p->lcm->st, &o, &r, &e);
    } else {
        rc = recall_grep_sessions(p->agent_home ? p->agent_home : ".", p->session_id, p->cwd, scope, &o, &r, &e);
    }
    if (rc != LC_OK) {
        rc = lcm_tool_error(e, out, err);
        e = NULL;
        goto done;
    }
    rc = lcm_tool_reply(recall_grep_format(&o, scope, &r), 0, out, err);
    recall_result_free(&r);
done:
    free(e);
    cJSON_Delete(call);
    return rc;
}

static int lcm_tool_describe(void *ud, const char *call_json, char **out, char **err)
{
    lc_plugin *p = ud;
    cJSON *call = cJSON_Parse(call_json);
    const cJSON *a = lcm_args(call);
    char *text = NULL, *e = NULL;
    int rc;
    if (!p->lcm || !p->lcm->st) {
        rc = lcm_no_store(p, out, err);
        goto done;
    }
    const char *id = lcm_str(a, "id");
    char idbuf[32];
    if (!id && lcm_summary_id(a) > 0) {
        snprintf(idbuf, sizeof idbuf, "%lld", (long long)lcm_summary_id(a));
        id = idbuf;
    }
    if (!id) id = lcm_str(a, "path");
    if (recall_describe(p->lcm->st, id, p->lcm->redact, &text, &e) != LC_OK) {
        rc = lcm_tool_error(e, out, err);
        e = NULL;
        goto done;
    }
    rc = lcm_tool_reply(text, 0, out, err);
done:
    free(e);
    cJSON_Delete(call);
    return rc;
}

static int lcm_complete(void *ud, const char *request_json, char **out_json, char **err)
{
    return plugin_complete(ud, request_json, out_json, err);
}

static int lcm_tool_expand(void *ud, const char *call_json, char **out, char **err)
{
    lc_plugin *p = ud;
    cJSON *call = cJSON_Parse(call_json);
    const cJSON *a = lcm_args(call);
    char *text = NULL, *e = NULL;
    int rc;
    recall_expand_opts o = {0};
    o.summary_id = lcm_summary_id(a);
    o.entry_id = lcm_str(a, "entry_id");
    o.question = lcm_str(a, "question");
    if (!o.question) o.question = lcm_str(a, "query");
    o.max_tokens = lcm_num(a, "max_tokens", 0) > 0 ? (size_t)lcm_num(a, "max_tokens", 0) : 0;
    o.char_offset = lcm_num(a, "char_offset", 0) > 0 ? (size_t)lcm_num(a, "char_offset", 0) : 0;
    o.redact = p->lcm ? p->lcm->redact : 1;
    const char *session = lcm_str(a, "session");
    if (session && (!p->session_id || strcmp(session, p->session_id) != 0)) {
        rc = recall_expand_session(p->agent_home ? p->agent_home : ".", session, &o, lcm_complete, p, &text, &e);
    } else if (!p->lcm || !p->lcm->st) {
        rc = lcm_no_store(p, out, err);
        goto done;
    } else {
        rc = recall_expand(p->lcm->st, &o, lcm_complete, p, &text, &e);
    }
    if (rc != LC_OK) {
        rc = lcm_tool_error(e, out, err);
        e = NULL;
        goto done;
    }
    rc = lcm_tool_reply(text, 0, out, err);
done:
    free(e);
    cJSON_Delete(call);
    return rc;
}

static const char lcm_grep_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"query\":{\"type\":\"string\",\"description\":\"FTS5 full-text query: words, \\\"quoted phrases\\\", AND/OR, prefix*\"},"
    "\"pattern\":{\"type\":\"string\",\"description\":\"regular expression (PCRE2) over the full text\"},"
    "\"case_sensitive\":{\"type\":\"boolean\"},"
    "\"offset\":{\"type\":\"integer\",\"description\":\"hits to skip; pages are 20 hits\"},"
    "\"summary_id\":{\"type\":\"integer\",\"description\":\"search inside one summary's originals\"},"
    "\"include_removed\":{\"type\":\"boolean\",\"description\":\"include abandoned branches, labelled [removed]\"},"
    "\"scope\":{\"type\":\"string\",\"enum\":[\"session\",\"sessions\",\"all_sessions\"]}}}";
static const char lcm_describe_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"id\":{\"type\":\"string\",\"description\":\"a summary id (#12) or a file handle's entry id, path or content id\"},"
    "\"summary_id\":{\"type\":\"integer\"}}}";
static const char lcm_expand_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"question\":{\"type\":\"string\",\"description\":\"what to find in the originals\"},"
    "\"summary_id\":{\"type\":\"integer\"},"
    "\"entry_id\":{\"type\":\"string\"},"
    "\"session\":{\"type\":\"string\",\"description\":\"a past session id from an lcm_grep scope hit\"},"
    "\"max_tokens\":{\"type\":\"integer\",\"description\":\"retrieval budget, default 10000\"},"
    "\"char_offset\":{\"type\":\"integer\",\"description\":\"with entry_id: continue reading at this character\"}}}";

int lcm_glue_init(lc_plugin *p, char **err)
{
    int rc;
    if (!(p->lcm = calloc(1, sizeof *p->lcm))) return lc_errf(err, AP_NOMEM, "out of memory");
    p->lcm->redact = 1;
    if ((rc = plugin_register_command(p, "lcm", "Lossless context: status and recall store",
                                      lcm_command, err)) != AP_OK)
        return rc;
    /* A host without tools still gets passive logging; the tools are simply absent. */
    if (plugin_register_tool(p, "lcm_grep",
                             "Search all stored history (also compacted-out and, with scope, past sessions): "
                             "query (full-text) or pattern (regex). 20 hits a page.",
                             lcm_grep_schema, lcm_tool_grep, err) != AP_OK ||
        plugin_register_tool(p, "lcm_describe",
                             "Describe a summary (text, tiers, cost of reading its originals, files) or a file handle.",
                             lcm_describe_schema, lcm_tool_describe, err) != AP_OK ||
        plugin_register_tool(p, "lcm_expand_query",
                             "Read stored originals (by summary_id, entry_id or question) with a bounded reader "
                             "and return findings.",
                             lcm_expand_schema, lcm_tool_expand, err) != AP_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: recall tools not registered: %s", err && *err ? *err : "?");
        if (err) {
            free(*err);
            *err = NULL;
        }
    }
    return AP_OK;
}

void lcm_glue_free(lc_plugin *p)
{
    if (!p->lcm) return;
    store_close(p->lcm->st);
    free(p->lcm->open_error);
    free(p->lcm);
    p->lcm = NULL;
}

/* Entry ids of the active branch (borrowed from `branch`), for removed-branch marks. */
static const char **lcm_branch_ids(const cJSON *branch, size_t *n)
{
    size_t cap = (size_t)cJSON_GetArraySize(branch) + 1, k = 0;
    const char **ids = calloc(cap, sizeof *ids);
    const cJSON *e;
    if (!ids) return NULL;
    cJSON_ArrayForEach(e, branch)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (cJSON_IsString(id) && k < cap) ids[k++] = id->valuestring;
    }
    *n = k;
    return ids;
}

static void lcm_mark_from_host(lc_plugin *p)
{
    cJSON *branch = NULL;
    char *e = NULL;
    size_t n = 0, marked = 0, cleared = 0;
    if (!p->lcm || !p->lcm->st) return;
    if (plugin_get_branch(p, &branch, &e) != AP_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: branch unavailable for removed marks: %s", e ? e : "?");
        free(e);
        return;
    }
    const char **ids = lcm_branch_ids(branch, &n);
    if (ids && store_mark_branch(p->lcm->st, ids, n, &marked, &cleared, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: marking removed entries failed: %s", e ? e : "?");
        free(e);
    } else if (marked || cleared) {
        plugin_log(p, AP_LEVEL_INFO, "lcm: branch change: %zu entries removed, %zu restored", marked, cleared);
    }
    free(ids);
    cJSON_Delete(branch);
}

int lcm_glue_session_start(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)ev;
    (void)err;
    char *e = NULL;
    if (!p->lcm) return AP_OK;
    store_close(p->lcm->st);
    p->lcm->st = NULL;
    free(p->lcm->open_error);
    p->lcm->open_error = NULL;
    if (!p->agent_home || !p->session_id) {
        p->lcm->open_error = lc_strdup("the host gave no agent home or session id");
        return AP_OK;
    }
    /* A store that cannot open costs recall, never the session: say so and go on. */
    if (store_open(p->agent_home, p->session_id, p->cwd, &p->lcm->st, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: %s", e ? e : "store open failed");
        p->lcm->open_error = e;
        return AP_OK;
    }
    /* Messages arrive with the first `context`; here only the marks of a resumed tree. */
    lcm_mark_from_host(p);
    return AP_OK;
}

int lcm_glue_session_shutdown(lc_plugin *p, char **err)
{
    (void)err;
    if (p->lcm) {
        store_close(p->lcm->st);
        p->lcm->st = NULL;
    }
    return AP_OK;
}

int lcm_glue_context(lc_plugin *p, const ap_context_event *ev, char **err)
{
    (void)err;
    size_t tokens = 0;
    for (size_t i = 0; i < ev->n_messages; i++) tokens += (ev->messages[i].json_len + 3) / 4;
    p->last_est_tokens = tokens;
    if (!p->lcm || !p->lcm->st || ev->n_messages == 0) return AP_OK;
    store_msg *m = malloc(ev->n_messages * sizeof *m);
    if (!m) return AP_OK;
    /* Only the tail is read unless it is new; the copy is O(n) pointers, no parsing. */
    for (size_t i = 0; i < ev->n_messages; i++) {
        m[i].entry_id = ev->messages[i].entry_id;
        m[i].json = ev->messages[i].json;
        m[i].json_len = ev->messages[i].json_len;
    }
    char *e = NULL;
    store_ingest_stats st;
    if (store_ingest(p->lcm->st, m, ev->n_messages, &st, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: ingest failed: %s", e ? e : "?");
        free(e);
    }
    free(m);
    return AP_OK;
}

/* turn_end's messages get their entry ids when the host appends them; the next
 * `context` ingests them with those ids, so nothing is written here. */
int lcm_glue_turn_end(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }
int lcm_glue_before_compact(lc_plugin *p, const cJSON *ev, cJSON **out, char **err) { (void)p; (void)ev; (void)err; *out = NULL; return AP_OK; }
int lcm_glue_compact(lc_plugin *p, const cJSON *ev, char **err) { (void)p; (void)ev; (void)err; return AP_OK; }

int lcm_glue_tree(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)ev;
    (void)err;
    lcm_mark_from_host(p);
    return AP_OK;
}
