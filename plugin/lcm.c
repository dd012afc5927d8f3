/*
 * lcm.c -- glue from ABI events to the lossless store, the DAG and the projection: open
 * the session's store at session_start, ingest what is new and project the request on
 * every `context` (from memory: the applied cut and the prepared one), run the DAG pass
 * and prepare the next cut between turns (turn_end), supply the host's compaction from
 * the DAG (session_before_compact), mark removed branches on tree moves, and serve the
 * recall tools lcm_grep / lcm_describe / lcm_expand_query. No SQL here: everything goes
 * through the engine (store, dag, project, recall).
 *
 * LCM_REQUEST_LOG=<file> appends one JSON line per request (action, cut, tokens sent,
 * window, and SHA-256 digests of the request and of its prefix the size of the previous
 * request) so a test can prove the byte-for-byte extension property from outside.
 * With the log on, LCM_REQUEST_DUMP=<file> also rewrites that file on every request with
 * the messages sent, one per line, so an evaluation can read the surface the model saw
 * last (off by default: it costs one context-sized write per request).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "ingest.h"
#include "dag.h"
#include "jsonl.h"
#include "llm_http.h"
#include "maint.h"
#include "message.h"
#include "plugin.h"
#include "project.h"
#include "recall.h"
#include "sha256.h"
#include "store.h"
#include "summarize.h"
#include "util.h"
#include "zones.h"
#include "lcm.h"



static int lcm_command(void *ud, const char *args, char **out_text, char **err)
{
    lcm_reopen(ud); /* a store busy at start: the user asking is a moment to try again */
    lcm_summ_pump(ud);
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

/* A count argument (offset, max_tokens, char_offset): 0 when absent or negative, -1 when
 * it is no number a count can be (2^63, 1e300, NaN): refused by the caller, never wrapped. */
#define LCM_COUNT_MAX 1e9
static double lcm_count(const cJSON *o, const char *k)
{
    double v = lcm_num(o, k, 0);
    if (!isfinite(v) || v > LCM_COUNT_MAX) return -1;
    return v > 0 ? floor(v) : 0;
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

/* The session header's cwd (the project a past-session search matches on), read from the
 * session file's first line: session_info's cwd is the host process's, which differs from
 * the header when a session is resumed or replayed elsewhere. Falls back to it. */
static char *lcm_header_cwd(const lc_plugin *p)
{
    char *line = NULL, *cwd = NULL;
    size_t cap = 0;
    FILE *f = p->session_file ? fopen(p->session_file, "r") : NULL;
    if (f && getline(&line, &cap, f) > 0) {
        cJSON *h = cJSON_Parse(line);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(h, "cwd");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "type");
        if (cJSON_IsString(t) && !strcmp(t->valuestring, "session") && cJSON_IsString(c) && *c->valuestring)
            cwd = lc_strdup(c->valuestring);
        cJSON_Delete(h);
    }
    if (f) fclose(f);
    free(line);
    return cwd ? cwd : p->cwd ? lc_strdup(p->cwd) : NULL;
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
    if (lcm_count(a, "offset") < 0) {
        cJSON_Delete(call);
        return lcm_tool_error(lc_strdup("lcm_grep: offset is an integer from 0 to 1000000000"), out, err);
    }
    o.offset = (size_t)lcm_count(a, "offset");
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
        char *cwd = p->lcm && p->lcm->st ? store_meta_get(p->lcm->st, "cwd") : lcm_header_cwd(p);
        rc = recall_grep_sessions(p->agent_home ? p->agent_home : ".", p->session_id, cwd, scope, &o, &r, &e);
        free(cwd);
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
    if (lcm_count(a, "max_tokens") < 0 || lcm_count(a, "char_offset") < 0) {
        cJSON_Delete(call);
        return lcm_tool_error(lc_strdup("lcm_expand_query: max_tokens and char_offset are integers from 0 "
                                        "to 1000000000"), out, err);
    }
    o.max_tokens = (size_t)lcm_count(a, "max_tokens");
    o.char_offset = (size_t)lcm_count(a, "char_offset");
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

/* ---- the projection's state ------------------------------------------------------- */

struct lcm_proj {
    project_cut pinned;        /* the applied cut (pin.cut_id), loaded once */
    int has_pinned;
    project_cut cand;          /* the newest prepared cut not yet applied */
    int has_cand;
    project_pin pin;
    int pin_dirty;             /* decided in `context`, written between turns */
    size_t hint;               /* where the pinned anchor was last found */
    zones_resolved z;
    long last_tokens, last_raw_tokens;
    const char *last_action;
    long passes;
    int covered;               /* truncation was laid because summaries were late */
    FILE *log;                 /* LCM_REQUEST_LOG */
    unsigned long requests;
    size_t prev_items;
    char prev_sha[65];
    size_t prev_n;
    char *prev_last;           /* entry id of the previous request's last raw message */
    project_plan plan;         /* the last request's plan, for the request log */
    int64_t plan_cut;
    int logged_plan;
    /* what the previous `context` carried, so the next one touches only what is new */
    size_t seen_n;
    size_t seen_tokens;
    char *seen_first, *seen_last;
    int seen_stored;           /* the previous ingest succeeded */
    project_msg *pm;           /* the plan's input, reused across requests */
    size_t pm_cap;
};

static int lcm_same_id(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static void lcm_seen_update(struct lcm_proj *pr, const ap_context_event *ev, size_t tokens,
                            int stored)
{
    const char *first = ev->messages[0].entry_id, *last = ev->messages[ev->n_messages - 1].entry_id;
    if (!lcm_same_id(pr->seen_first, first)) {
        free(pr->seen_first);
        pr->seen_first = first ? lc_strdup(first) : NULL;
    }
    free(pr->seen_last);
    pr->seen_last = last ? lc_strdup(last) : NULL;
    /* Without ids the next call cannot be matched: it starts over. */
    pr->seen_n = pr->seen_first && pr->seen_last ? ev->n_messages : 0;
    pr->seen_tokens = tokens;
    pr->seen_stored = stored;
}

static void lcm_proj_reset(struct lcm_proj *pr)
{
    project_cut_free(&pr->pinned);
    project_cut_free(&pr->cand);
    pr->has_pinned = pr->has_cand = 0;
    memset(&pr->pin, 0, sizeof pr->pin);
    pr->pin_dirty = 0;
    pr->hint = 0;
    pr->last_action = "keep";
    free(pr->prev_last);
    pr->prev_last = NULL;
    pr->prev_items = pr->prev_n = 0;
    pr->prev_sha[0] = '\0';
    free(pr->seen_first);
    free(pr->seen_last);
    pr->seen_first = pr->seen_last = NULL;
    pr->seen_n = pr->seen_tokens = 0;
    pr->seen_stored = 0;
}

static void lcm_proj_free(struct lcm_proj *pr)
{
    if (!pr) return;
    lcm_proj_reset(pr);
    free(pr->pm);
    if (pr->log) fclose(pr->log);
    free(pr);
}

void lcm_glue_view_get(lc_plugin *p, lcm_glue_view *out)
{
    memset(out, 0, sizeof *out);
    out->last_action = "keep";
    out->window = p->window;
    if (!p->lcm || !p->lcm->proj) return;
    struct lcm_proj *pr = p->lcm->proj;
    out->cut_id = pr->pin.cut_id;
    out->applied_tokens = pr->pin.applied_tokens;
    out->window = pr->z.window > 0 ? pr->z.window : p->window;
    out->last_tokens = pr->last_tokens;
    out->last_raw_tokens = pr->last_raw_tokens;
    out->last_action = pr->last_action;
    out->passes = pr->passes;
}

void lcm_glue_free(lc_plugin *p)
{
    if (!p->lcm) return;
    lcm_summ_free(p);
    lcm_cmd_free(p);
    lcm_proj_free(p->lcm->proj);
    store_close(p->lcm->st);
    free(p->lcm->open_error);
    free(p->lcm);
    p->lcm = NULL;
}

/* ---- zones and budgets ------------------------------------------------------------------ */

static int lcm_zones(lc_plugin *p, zones_resolved *z)
{
    const lcm_config *cfg = lcm_cmd_config(p);
    zones_cfg zc = cfg ? lcm_config_zones_for(cfg, p->model) : zones_cfg_unset();
    long keep = cfg ? cfg->keep_recent_tokens : 0;
    return zones_resolve(&zc, keep, p->window > 0 ? p->window : 128000, z, NULL);
}

/* The pointer block's budget: a quarter of the swap line, so a cut brings the request to
 * about the fresh tail plus a quarter of the swap line, well under it, and the appends
 * that follow have most of the band up to the re-cut line. */
static long lcm_block_budget(const zones_resolved *z, const lcm_config *cfg)
{
    long b = z->swap_tokens / 4;
    long floor = cfg ? cfg->summary_tokens * 2 : 2400;
    return b > floor ? b : floor;
}

/* Load the pin and the cuts a previous process left (resume). */
static void lcm_proj_load(lc_plugin *p)
{
    struct lcm_proj *pr = p->lcm->proj;
    char *e = NULL;
    lcm_proj_reset(pr);
    if (project_pin_get(p->lcm->st, &pr->pin, &e) == LC_OK && pr->pin.cut_id > 0) {
        if (project_get_cut(p->lcm->st, pr->pin.cut_id, &pr->pinned, &e) == LC_OK)
            pr->has_pinned = 1;
        else
            memset(&pr->pin, 0, sizeof pr->pin);
    }
    free(e);
    e = NULL;
    if (project_latest_cut(p->lcm->st, &pr->cand, &e) == LC_OK) {
        if (pr->has_pinned && pr->cand.id == pr->pinned.id) project_cut_free(&pr->cand);
        else pr->has_cand = 1;
    }
    free(e);
}

/* ---- the host's entries, for the engine's ingest ---------------------------------------- */

/* ingest_entry_fn over the host's get_entry: the entry's text as the host holds it. */
static int lcm_entry_text(void *ud, const char *id, char **text, char **err)
{
    return plugin_get_entry_text(ud, id, text, err);
}

static void lcm_mark_from_host(lc_plugin *p)
{
    cJSON *branch = NULL;
    char *e = NULL;
    size_t marked = 0, cleared = 0;
    if (!p->lcm || !p->lcm->st) return;
    if (plugin_get_branch(p, &branch, &e) != AP_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: branch unavailable for removed marks: %s", e ? e : "?");
        free(e);
        return;
    }
    if (ingest_mark_branch(p->lcm->st, branch, &marked, &cleared, &e) != LC_OK)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: marking removed entries failed: %s", e ? e : "?");
    else if (marked || cleared)
        plugin_log(p, AP_LEVEL_INFO, "lcm: branch change: %zu entries removed, %zu restored", marked, cleared);
    free(e);
    cJSON_Delete(branch);
}

/* Store what the branch ends with that no `context` carried: the last turn of a session,
 * or what a crash or a failed write left out. One branch read per session start or end,
 * never per request. */
static void lcm_ingest_branch_tail(lc_plugin *p)
{
    cJSON *branch = NULL;
    char *e = NULL;
    if (!p->lcm->st || plugin_get_branch(p, &branch, NULL) != AP_OK) return;
    if (ingest_branch_tail(p->lcm->st, branch, lcm_entry_text, p, &e) != LC_OK)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: storing a branch's last messages failed: %s", e ? e : "?");
    free(e);
    cJSON_Delete(branch);
}

/* Store the session's messages on no active branch that never reached the store (a branch
 * abandoned while the store could not be written). Every entry is read once per session
 * start (get_entries, API level 2; a level-1 host lists only the active branch, so this
 * is skipped there). lcm_mark_from_host then marks them removed. */
static void lcm_ingest_offbranch(lc_plugin *p)
{
    cJSON *all = NULL, *branch = NULL;
    char *e = NULL;
    size_t inserted = 0;
    int rc = plugin_get_entries(p, &all, &e);
    if (rc != AP_OK) {
        if (rc != AP_UNSUPPORTED)
            plugin_log(p, AP_LEVEL_WARNING, "lcm: the session's entries are unavailable: %s", e ? e : "?");
    } else if (plugin_get_branch(p, &branch, NULL) == AP_OK) {
        if (ingest_offbranch(p->lcm->st, all, branch, lcm_entry_text, p, &inserted, &e) != LC_OK)
            plugin_log(p, AP_LEVEL_WARNING, "lcm: storing off-branch messages failed: %s", e ? e : "?");
        else if (inserted)
            plugin_log(p, AP_LEVEL_INFO, "lcm: %zu message(s) of abandoned branches were missing from "
                       "the store and are stored now", inserted);
    }
    free(e);
    cJSON_Delete(branch);
    cJSON_Delete(all);
}
/* A window correction survives restarts in the store's meta: "believed corrected source". */
static void lcm_window_load(lc_plugin *p)
{
    char *v = store_meta_get(p->lcm->st, "window_correction");
    long believed = 0, corrected = 0;
    char source[32] = "";
    if (v && sscanf(v, "%ld %ld %31s", &believed, &corrected, source) == 3 && corrected > 0) {
        p->window_corrected_from = believed;
        p->window_corrected = corrected;
        snprintf(p->window_source, sizeof p->window_source, "%s", source);
        plugin_apply_window(p);
    }
    free(v);
}

/* A provider error that names the real context length (an overflow) corrects the window
 * the host reported: record it, use it from now on, and say so. */
static void lcm_window_correct(lc_plugin *p, const char *error_text)
{
    zones_window_correction corr;
    if (!error_text || p->window_believed <= 0 ||
        !zones_correction_from_error(p->window_believed, error_text, &corr))
        return;
    p->window_corrected_from = corr.believed;
    p->window_corrected = corr.corrected;
    snprintf(p->window_source, sizeof p->window_source, "%s", corr.source);
    plugin_apply_window(p);
    char *v = lc_asprintf("%ld %ld %s", corr.believed, corr.corrected, corr.source);
    char *e = NULL;
    if (v && p->lcm->st && store_meta_put(p->lcm->st, "window_correction", v, &e) != LC_OK)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: the window correction was not stored: %s", e ? e : "?");
    plugin_notify(p, AP_LEVEL_WARNING, "lcm: the host believes a %ld-token window; the provider "
                  "says %ld: thresholds now use %ld (%s)", corr.believed, corr.corrected,
                  corr.corrected, corr.source);
    free(v);
    free(e);
}

/* How long a session start waits for a store another process holds, and how a later
 * request retries: at most one short attempt every LCM_REOPEN_EVERY_MS, so a request
 * never waits more than LCM_REOPEN_WAIT_MS for it. */
#define LCM_REOPEN_EVERY_MS 2000
#define LCM_REOPEN_WAIT_MS 250

/* Open the session's store and do everything a session start does for LCM once it is
 * open: the header's cwd, the window correction, the off-branch and branch-tail ingest,
 * the removed marks, the summarizer (its worker opens its own connection, so it starts
 * only once this one opened) and the pin. On failure nothing is held and open_error says
 * why. */
static int lcm_attach(lc_plugin *p, long wait_ms)
{
    char *e = NULL;
    char *hcwd = lcm_header_cwd(p), *mcwd = NULL;
    int orc = store_open_wait(p->agent_home, p->session_id, hcwd, wait_ms, &p->lcm->st, &e);
    free(p->lcm->open_error);
    p->lcm->open_error = NULL;
    if (orc != LC_OK) {
        p->lcm->open_error = e ? e : lc_strdup("store open failed");
        free(hcwd);
        return orc;
    }
    /* A store written before the header's cwd was recorded holds the process's. */
    if (hcwd && (!(mcwd = store_meta_get(p->lcm->st, "cwd")) || strcmp(mcwd, hcwd) != 0) &&
        store_meta_put(p->lcm->st, "cwd", hcwd, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: %s", e ? e : "cwd not recorded");
        free(e);
        e = NULL;
    }
    free(hcwd);
    free(mcwd);
    /* Where the session lives, so `/lcm gc` retires this store only once that file is
     * gone, wherever it is (not only under HOME/sessions). */
    char *sf = p->session_file ? realpath(p->session_file, NULL) : NULL;
    char *had = sf ? store_meta_get(p->lcm->st, "session_file") : NULL;
    if (sf && (!had || strcmp(had, sf) != 0) && store_meta_put(p->lcm->st, "session_file", sf, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: %s", e ? e : "session file not recorded");
        free(e);
        e = NULL;
    }
    free(sf);
    free(had);
    lcm_window_load(p);
    if (store_mode_note(p->lcm->st))
        plugin_notify(p, AP_LEVEL_WARNING, "lcm: %s", store_mode_note(p->lcm->st));
    /* The marks of a resumed tree, and what the store missed (a crash, a failed write, a
     * deleted store, a store that was busy until now): the branch read once here is the
     * session file's truth. */
    lcm_ingest_offbranch(p);
    lcm_mark_from_host(p);
    lcm_ingest_branch_tail(p);
    lcm_summ_open(p);
    lcm_proj_load(p);
    return LC_OK;
}

/* The store was busy at session start: try again, at most once every LCM_REOPEN_EVERY_MS
 * (a context call or an /lcm command), and tell the user when LCM is active again. */
void lcm_reopen(lc_plugin *p)
{
    if (!p->lcm || p->lcm->st || !p->lcm->reopen) return;
    double now = lc_now_ms();
    if (now - p->lcm->reopen_at < LCM_REOPEN_EVERY_MS) return;
    p->lcm->reopen_at = now;
    int rc = lcm_attach(p, LCM_REOPEN_WAIT_MS);
    if (rc == LC_BUSY) return;
    p->lcm->reopen = 0;
    if (rc != LC_OK) {
        plugin_notify(p, AP_LEVEL_WARNING, "lcm: the store still cannot be opened (%s); LCM stays "
                      "inactive for this run", p->lcm->open_error);
        return;
    }
    plugin_notify(p, AP_LEVEL_INFO, "lcm: the store is open (after %.0f s); LCM is active again: "
                  "every message of the session is stored and requests are projected from now on",
                  (now - p->lcm->off_since) / 1000.0);
}

int lcm_glue_attach(lc_plugin *p)
{
    if (!p->lcm || p->lcm->st || !p->agent_home || !p->session_id) return LC_OK;
    p->lcm->reopen = 0;
    return lcm_attach(p, STORE_BUSY_MS);
}

int lcm_glue_session_start(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)ev;
    (void)err;
    if (!p->lcm) return AP_OK;
    lcm_summ_close(p);
    if (!p->lcm->proj && !(p->lcm->proj = calloc(1, sizeof *p->lcm->proj)))
        return lc_errf(err, AP_NOMEM, "out of memory");
    lcm_proj_reset(p->lcm->proj);
    const char *logpath = getenv("LCM_REQUEST_LOG");
    if (logpath && *logpath && !p->lcm->proj->log) p->lcm->proj->log = fopen(logpath, "a");
    store_close(p->lcm->st);
    p->lcm->st = NULL;
    p->lcm->reopen = 0;
    free(p->lcm->open_error);
    p->lcm->open_error = NULL;
    if (!p->agent_home || !p->session_id) {
        p->lcm->open_error = lc_strdup("the host gave no agent home or session id");
        return AP_OK;
    }
    /* A backup killed mid-copy left a partial file in the store folder: it is no backup. */
    char *ldir = lc_asprintf("%s/lcm", p->agent_home);
    int swept = ldir ? maint_backup_sweep_dir(ldir) : 0;
    if (swept)
        plugin_log(p, AP_LEVEL_INFO, "lcm: removed %d partial backup file(s) of a killed backup in %s",
                   swept, ldir);
    free(ldir);
    /* A store that cannot open costs recall, never the session: say so and go on. */
    double t0 = lc_now_ms();
    int orc = lcm_attach(p, STORE_BUSY_MS);
    if (orc == LC_BUSY) {
        /* Another process holds the store (an import, gc, a long write): not a reason to
         * lose LCM for the whole run. Until it opens, requests are what the host builds. */
        p->lcm->reopen = 1;
        p->lcm->reopen_at = lc_now_ms();
        p->lcm->off_since = t0;
        plugin_notify(p, AP_LEVEL_WARNING, "lcm: the store is busy (%s); LCM is not active: requests "
                      "go to the model as the host builds them (the raw context, cut only by the "
                      "host's own compaction) and recall tools answer that the store is not open. "
                      "It is retried every %d s; you will be told when LCM is active again",
                      p->lcm->open_error, LCM_REOPEN_EVERY_MS / 1000);
    } else if (orc != LC_OK) {
        /* A refused store path (a link planted in the private folder) or a store that is
         * not a database is the user's to know at once, not only in the log. */
        plugin_notify(p, AP_LEVEL_WARNING, "lcm: %s%s", p->lcm->open_error,
                      strstr(p->lcm->open_error, "LCM is not active") ? "" : "; LCM is not active for this run");
    }
    return AP_OK;
}

static void lcm_pin_flush(lc_plugin *p)
{
    struct lcm_proj *pr = p->lcm ? p->lcm->proj : NULL;
    char *e = NULL;
    if (!pr || !pr->pin_dirty || !p->lcm->st) return;
    int rc = pr->pin.cut_id > 0 ? project_pin_set(p->lcm->st, &pr->pin, &e)
                                : project_pin_clear(p->lcm->st, &e);
    if (rc != LC_OK) plugin_log(p, AP_LEVEL_WARNING, "lcm: the pin was not stored: %s", e ? e : "?");
    else pr->pin_dirty = 0;
    free(e);
}


int lcm_glue_session_shutdown(lc_plugin *p, char **err)
{
    (void)err;
    if (p->lcm) {
        lcm_summ_pick pick;
        lcm_summ_pickup(p, 0, &pick);
        lcm_summ_close(p);
        lcm_ingest_branch_tail(p);
        lcm_pin_flush(p);
        store_close(p->lcm->st);
        p->lcm->st = NULL;
    }
    return AP_OK;
}

/* Wall-clock ms, the clock of metrics.jsonl, so a reader can place compaction passes
 * between requests. */
static long long lcm_log_epoch_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* One JSON line per request for LCM_REQUEST_LOG. */
void lcm_glue_context_sent(lc_plugin *p, const ap_context_event *ev, const ap_context_result *sent)
{
    struct lcm_proj *pr = p->lcm ? p->lcm->proj : NULL;
    if (!pr || !pr->log || !pr->logged_plan) return;
    pr->logged_plan = 0;
    const project_plan *plan = &pr->plan;
    const ap_context_item *items = sent ? sent->items : NULL;
    size_t n_items = sent ? sent->n_items : 0;
    long sent_tokens = 0;
    sha256_ctx full, prefix;
    uint8_t d[32];
    char sha[65], psha[65] = "";
    size_t count = items ? n_items : ev->n_messages;
    const char *dump_path = getenv("LCM_REQUEST_DUMP");
    FILE *dump = dump_path && *dump_path ? fopen(dump_path, "w") : NULL;
    /* Live context's one-call notice rides at the very end of one request only; the
     * provider's cached prefix is everything before it, so that is what must survive. */
    if (count > 0 && items && items[count - 1].input_index < 0 &&
        strstr(items[count - 1].json, "\"customType\":\"live-context-notice\""))
        count--;
    sha256_init(&full);
    for (size_t i = 0; i < count; i++) {
        const char *json;
        size_t len;
        if (!items || items[i].input_index >= 0) {
            size_t k = items ? (size_t)items[i].input_index : i;
            json = ev->messages[k].json;
            len = ev->messages[k].json_len;
        } else {
            json = items[i].json;
            len = strlen(json);
        }
        if (i == pr->prev_items) {
            prefix = full;
            sha256_final(&prefix, d);
            sha256_to_hex(d, psha);
        }
        sha256_update(&full, json, len);
        sha256_update(&full, "\n", 1);
        sent_tokens += project_tokens(len);
        if (dump) {
            fwrite(json, 1, len, dump);
            fputc('\n', dump);
        }
    }
    if (dump) fclose(dump);
    if (count == pr->prev_items) {
        prefix = full;
        sha256_final(&prefix, d);
        sha256_to_hex(d, psha);
    }
    sha256_final(&full, d);
    sha256_to_hex(d, sha);
    /* The raw input only grew when the previous last message is still where it was. */
    int appended = pr->prev_last && pr->prev_n <= ev->n_messages && pr->prev_n > 0 &&
                   ev->messages[pr->prev_n - 1].entry_id &&
                   strcmp(ev->messages[pr->prev_n - 1].entry_id, pr->prev_last) == 0;
    fprintf(pr->log,
            "{\"request\":%lu,\"ts\":%lld,\"action\":\"%s\",\"cut\":%lld,\"zone\":\"%s\",\"tokens\":%ld,"
            "\"raw\":%ld,\"window\":%ld,\"swap\":%ld,\"recut\":%ld,\"messages\":%zu,\"items\":%zu,"
            "\"rawAppended\":%s,\"prevItems\":%zu,\"prefixSha\":\"%s\",\"prevSha\":\"%s\",\"sha\":\"%s\"}\n",
            pr->requests, lcm_log_epoch_ms(), project_action_name(plan->action),
            (long long)pr->plan_cut, zones_zone_name(plan->zone), sent_tokens, plan->raw_tokens, pr->z.window, pr->z.swap_tokens, pr->z.recut_tokens, ev->n_messages,
            count, appended ? "true" : "false", pr->prev_items, psha, pr->prev_sha, sha);
    fflush(pr->log);
    pr->prev_items = count;
    memcpy(pr->prev_sha, sha, sizeof sha);
    free(pr->prev_last);
    const char *last = ev->messages[ev->n_messages - 1].entry_id;
    pr->prev_last = last ? lc_strdup(last) : NULL;
    pr->prev_n = ev->n_messages;
}

static void lcm_take_worker(lc_plugin *p, long wait_ms);
static int lcm_make_room(lc_plugin *p);

int lcm_glue_context(lc_plugin *p, const ap_context_event *ev, size_t clm_anchor,
                     ap_context_result **out, char **err)
{
    int rc = AP_OK;
    project_msg *pm = NULL;
    project_item *items = NULL;
    size_t n_items = 0;
    ap_context_result *res = NULL;
    *out = NULL;
    lcm_reopen(p);
    struct lcm_proj *pr = p->lcm ? p->lcm->proj : NULL;
    /* The input only grew when its first message and the last one of the previous call
     * are where they were: then only the new messages are summed, copied and ingested. */
    size_t known = 0;
    if (pr && pr->seen_n && pr->seen_n <= ev->n_messages &&
        lcm_same_id(pr->seen_first, ev->messages[0].entry_id) &&
        lcm_same_id(pr->seen_last, ev->messages[pr->seen_n - 1].entry_id))
        known = pr->seen_n;
    size_t tokens = known ? pr->seen_tokens : 0;
    for (size_t i = known; i < ev->n_messages; i++) tokens += (ev->messages[i].json_len + 3) / 4;
    p->last_est_tokens = tokens;
    if (!p->lcm || !p->lcm->st || ev->n_messages == 0) return AP_OK;
    /* The previous last message is stored when the previous ingest succeeded, so the
     * store's walk back stops at it. */
    size_t from = known && pr->seen_stored && ev->messages[known - 1].entry_id ? known - 1 : 0;
    size_t nm = ev->n_messages - from;
    store_msg *m = malloc(nm * sizeof *m);
    if (!m) return AP_OK;
    for (size_t i = 0; i < nm; i++) {
        m[i].entry_id = ev->messages[from + i].entry_id;
        m[i].json = ev->messages[from + i].json;
        m[i].json_len = ev->messages[from + i].json_len;
    }
    char *e = NULL;
    store_ingest_stats st;
    int stored = store_ingest(p->lcm->st, m, nm, &st, &e) == LC_OK;
    if (!stored) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: ingest failed: %s", e ? e : "?");
        free(e);
        e = NULL;
    }
    free(m);
    if (pr) lcm_seen_update(pr, ev, tokens, stored);
    if (!pr) return AP_OK;
    if (lcm_zones(p, &pr->z) != LC_OK) return AP_OK;
    lcm_take_worker(p, 0);
    /* The plan reads only what is in memory: the applied cut and the prepared one. */
    /* The entry id pointers are the host's, valid for this call only, so they are copied
     * every time; the buffer itself is kept (a history-sized malloc per request would be
     * an mmap and its page faults). */
    if (ev->n_messages > pr->pm_cap) {
        size_t cap = ev->n_messages + ev->n_messages / 2 + 64;
        project_msg *v = realloc(pr->pm, cap * sizeof *v);
        if (!v) return AP_OK;
        pr->pm = v;
        pr->pm_cap = cap;
    }
    pm = pr->pm;
    for (size_t i = 0; i < ev->n_messages; i++)
        pm[i] = (project_msg){ev->messages[i].entry_id, ev->messages[i].json_len};
    project_plan plan;
    project_decide(pm, ev->n_messages, clm_anchor, pr->has_pinned ? &pr->pinned : NULL,
                   pr->has_cand ? &pr->cand : NULL, &pr->z, &pr->hint, &plan);
    /* No request goes over the window because summaries were late. */
    if (plan.occupancy >= zones_fit_tokens(&pr->z) && lcm_make_room(p))
        project_decide(pm, ev->n_messages, clm_anchor, pr->has_pinned ? &pr->pinned : NULL,
                       pr->has_cand ? &pr->cand : NULL, &pr->z, &pr->hint, &plan);
    if ((rc = project_items(ev->n_messages, clm_anchor, &plan, &items, &n_items, err)) != LC_OK) {
        rc = AP_NOMEM;
        goto done;
    }
    pr->requests++;
    pr->plan = plan;
    pr->plan_cut = plan.use ? plan.use->id : 0;
    pr->logged_plan = 1;
    if (items) {
        if (!(res = calloc(1, sizeof *res)) || !(res->items = calloc(n_items, sizeof *res->items))) {
            rc = lc_errf(err, AP_NOMEM, "out of memory");
            goto done;
        }
        res->n_items = n_items;
        for (size_t i = 0; i < n_items; i++) {
            res->items[i].input_index = items[i].index;
            if (items[i].index < 0 && !(res->items[i].json = lc_strdup(items[i].json))) {
                rc = lc_errf(err, AP_NOMEM, "out of memory");
                goto done;
            }
        }
    }
    pr->last_tokens = plan.occupancy;
    pr->last_raw_tokens = plan.raw_tokens;
    pr->last_action = project_action_name(plan.action);
    if (plan.action == PROJECT_SWAP || plan.action == PROJECT_RECUT) {
        /* The candidate becomes the pin; it is stored between turns (pin_dirty). */
        project_cut_free(&pr->pinned);
        pr->pinned = pr->cand;
        memset(&pr->cand, 0, sizeof pr->cand);
        pr->has_cand = 0;
        pr->has_pinned = 1;
        pr->pin = (project_pin){pr->pinned.id, plan.current_tokens, pr->z.window};
        pr->pin_dirty = 1;
        plugin_log(p, AP_LEVEL_INFO, "lcm: %s to cut %lld at %ld of %ld tokens; the request is %ld",
                   pr->last_action, (long long)pr->pin.cut_id, plan.current_tokens, pr->z.window,
                   plan.occupancy);
    } else if (plan.action == PROJECT_DROP) {
        plugin_log(p, AP_LEVEL_INFO, "lcm: cut %lld no longer applies (its anchor left the context)",
                   (long long)pr->pinned.id);
        project_cut_free(&pr->pinned);
        pr->has_pinned = 0;
        memset(&pr->pin, 0, sizeof pr->pin);
        pr->pin_dirty = 1;
    }
    *out = res;
    res = NULL;
done:
    if (res) {
        for (size_t i = 0; res->items && i < res->n_items; i++) free(res->items[i].json);
        free(res->items);
        free(res);
    }
    free(items);
    return rc;
}

/* A cut id worth holding as the candidate the context hook may swap to: newer than the one
 * held (ids grow with every prepared cut) and not the pin. */
static int lcm_candidate_newer(const struct lcm_proj *pr, int64_t id)
{
    return id > 0 && !(pr->has_pinned && id == pr->pinned.id) && !(pr->has_cand && id <= pr->cand.id);
}

/* Make cut *c (ownership taken) the candidate when it is newer; else free it. */
static void lcm_candidate_adopt(lc_plugin *p, project_cut *c)
{
    struct lcm_proj *pr = p->lcm->proj;
    if (!lcm_candidate_newer(pr, c->id)) {
        project_cut_free(c);
        return;
    }
    project_cut_free(&pr->cand);
    pr->cand = *c;
    pr->has_cand = 1;
}

static void lcm_candidate_take(lc_plugin *p, int64_t id)
{
    project_cut c;
    if (lcm_candidate_newer(p->lcm->proj, id) && project_get_cut(p->lcm->st, id, &c, NULL) == LC_OK)
        lcm_candidate_adopt(p, &c);
}

/* Render the current frontier as the next cut on this thread's connection and take it. */
static void lcm_refresh_candidate(lc_plugin *p, long budget)
{
    char *e = NULL;
    int64_t id = 0;
    int rc = project_prepare_cut(p->lcm->st, budget, &id, &e);
    if (rc == LC_OK) lcm_candidate_take(p, id);
    else if (rc != LC_NOTFOUND)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: preparing a cut failed: %s", e ? e : "?");
    free(e);
}

static dag_opts lcm_dag_opts(const struct lcm_proj *pr, const lcm_config *cfg, long budget,
                             int flush_all)
{
    /* Approaching the swap line, the last partial chunk is summarized too, so the cut
     * that the line calls for is ready when it is crossed. */
    int flush = flush_all || pr->last_tokens >= pr->z.swap_tokens - pr->z.swap_tokens / 10;
    dag_opts o = {
        .keep_recent_tokens = pr->z.keep_recent_tokens,
        .leaf_chunk_tokens = cfg ? cfg->leaf_chunk_tokens : 0,
        .summary_tokens = cfg ? cfg->summary_tokens : 0,
        .block_budget = budget,
        .max_source_tokens = cfg ? cfg->async_chunk_tokens : 0,
        .flush = flush,
    };
    return o;
}

/* A pass on the host thread that must get done: a node the worker committed first (its
 * call was in flight when it was told to stop) ends a pass early, so it runs again over
 * what is left. The worker makes at most that one node more. */
static int lcm_dag_pass(lc_plugin *p, summ_ctx *sc, const dag_opts *o, dag_stats *ds, char **err)
{
    int rc = LC_OK;
    dag_stats one;
    memset(ds, 0, sizeof *ds);
    for (int round = 0; round < 4; round++) {
        if ((rc = dag_pass(p->lcm->st, sc, o, &one, err)) != LC_OK) break;
        ds->leaves += one.leaves;
        ds->condensed += one.condensed;
        ds->source_tokens += one.source_tokens;
        ds->summary_tokens += one.summary_tokens;
        ds->stalled = one.stalled;
        ds->capped = one.capped;
        ds->block_tokens = one.block_tokens;
        ds->boundary_ordinal = one.boundary_ordinal;
        ds->conflicts += one.conflicts;
        if (!one.conflicts) break;
    }
    return rc;
}

/* One pass on the host thread (no worker could start), then the next cut. */
static void lcm_pass_here(lc_plugin *p, summ_ctx *sc, const dag_opts *o, long budget,
                          int always_cut, const char *what)
{
    struct lcm_proj *pr = p->lcm->proj;
    char *e = NULL;
    dag_stats ds;
    if (lcm_dag_pass(p, sc, o, &ds, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: %s failed: %s", what, e ? e : "?");
        free(e);
        return;
    }
    pr->passes++;
    if (ds.leaves || ds.condensed) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "leaves", ds.leaves);
        cJSON_AddNumberToObject(d, "condensed", ds.condensed);
        cJSON_AddNumberToObject(d, "sourceTokens", (double)ds.source_tokens);
        cJSON_AddNumberToObject(d, "blockTokens", (double)ds.block_tokens);
        cJSON_AddBoolToObject(d, "stalled", ds.stalled);
        if (sc == p->lcm->cover) cJSON_AddBoolToObject(d, "truncated", 1);
        lcm_cmd_metric(p, "compaction-pass", d);
        cJSON_Delete(d);
    }
    if (ds.leaves || ds.condensed || (!pr->has_cand && !pr->has_pinned)) {
        lcm_refresh_candidate(p, budget);
    } else if (always_cut) {
        /* Nothing new here, but the worker prepares a cut after each of its passes, and one
         * whose result an invalidation dropped is still in the store: take the newest
         * (one row) rather than render the frontier again on every request. */
        project_cut c;
        if (project_latest_cut(p->lcm->st, &c, NULL) == LC_OK) lcm_candidate_adopt(p, &c);
    }
}

/* Between turns: store a pin decided in `context`, then ask for the pass the next requests
 * need -- on the worker, and only once the request nears the line that calls for a cut
 * (eagerSummaries: every turn). */
static void lcm_between_turns(lc_plugin *p, int flush_all)
{
    struct lcm_proj *pr = p->lcm ? p->lcm->proj : NULL;
    const lcm_config *cfg = lcm_cmd_config(p);
    if (!pr || !p->lcm->st || !p->lcm->summ) return;
    lcm_pin_flush(p);
    long budget = lcm_block_budget(&pr->z, cfg);
    dag_opts o = lcm_dag_opts(pr, cfg, budget, flush_all);
    long lead = cfg ? cfg->leaf_chunk_tokens : 20000;
    if (!flush_all && !(cfg && cfg->eager_summaries) &&
        !zones_summaries_due(&pr->z, pr->last_tokens, pr->has_pinned, lead))
        return;
    if (!p->lcm->worker) {
        lcm_pass_here(p, p->lcm->summ, &o, budget, 0, "compaction pass");
        return;
    }
    worker_job j = {
        .dag = o,
        .cut_budget = budget,
        /* Always: a cut the worker prepared may have been dropped with an invalidation,
         * and preparing one that exists already writes nothing. */
        .want_cut = 1,
        /* Truncation laid because summaries were late is redone by the model once the
         * worker has nothing newer to do. */
        .heal_nodes = pr->covered ? 4 : 0,
        .heal = {
            .tokens_per_heal = cfg ? cfg->summarizer_tokens_per_heal : 0,
            .heal_source_tokens = cfg ? lcm_config_heal_source_tokens(cfg) : 0,
            .summary_tokens = cfg ? cfg->summary_tokens : 0,
        },
    };
    lcm_summ_submit(p, &j);
}

/* What the worker committed since the last request: its newest cut becomes the candidate. */
static void lcm_take_worker(lc_plugin *p, long wait_ms)
{
    struct lcm_proj *pr = p->lcm->proj;
    lcm_summ_pick pick;
    if (!lcm_summ_pickup(p, wait_ms, &pick)) return;
    pr->passes += pick.passes;
    /* Heal ran with these passes; nothing left that it could improve ends the asking. */
    if (pr->covered && !pick.healed) pr->covered = 0;
    lcm_candidate_take(p, pick.cut_id);
}

/* A request over the fit line with summaries late: wait for the worker up to
 * summaryWaitMs when that can help, then cover what is still uncovered with truncation
 * (instant; the worker improves it later). True when the candidate changed. */
static int lcm_make_room(lc_plugin *p)
{
    struct lcm_proj *pr = p->lcm->proj;
    const lcm_config *cfg = lcm_cmd_config(p);
    int64_t before = pr->has_cand ? pr->cand.id : 0;
    long wait = cfg ? cfg->summary_wait_ms : 15000;
    if (wait > 0 && lcm_summ_can_wait(p)) {
        double t0 = lc_now_ms();
        lcm_take_worker(p, wait);
        plugin_log(p, AP_LEVEL_INFO, "lcm: the request waited %.0f ms for summaries (summaryWaitMs %ld)",
                   lc_now_ms() - t0, wait);
    }
    if (pr->has_cand && pr->cand.id != before) return 1;
    if (!p->lcm->cover || !p->lcm->st) return 0;
    long budget = lcm_block_budget(&pr->z, cfg);
    dag_opts o = lcm_dag_opts(pr, cfg, budget, 1);
    o.max_source_tokens = 0;
    /* The worker's pass in flight would only repeat what is covered now; what it committed
     * before is taken first. */
    lcm_take_worker(p, 0);
    if (pr->has_cand && pr->cand.id != before) return 1;
    lcm_summ_invalidate(p);
    lcm_pass_here(p, p->lcm->cover, &o, budget, 1, "covering late summaries");
    /* Still nothing newer: the fresh tail itself is what does not fit. Its older half is
     * covered too -- the originals stay in the store, and the window is the promise. */
    if (!(pr->has_cand && pr->cand.id != before) && o.keep_recent_tokens > 0) {
        o.keep_recent_tokens /= 2;
        lcm_pass_here(p, p->lcm->cover, &o, budget, 1, "covering late summaries");
    }
    if (pr->has_cand && pr->cand.id != before) {
        pr->covered = 1;
        plugin_log(p, AP_LEVEL_WARNING, "lcm: summaries were late; the oldest uncovered history is "
                   "truncated for now ([lcm:truncated]) and summarized again in the background");
        return 1;
    }
    return 0;
}

int lcm_glue_turn_end(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)ev;
    (void)err;
    /* turn_end's messages get their entry ids when the host appends them; the next
     * `context` ingests them with those ids, so only the DAG work happens here. */
    lcm_between_turns(p, 0);
    return AP_OK;
}

/* The blocking regime: the host is about to compact. Supply its summary from the DAG,
 * after a synchronous pass that covers everything before the kept entries; never cancel,
 * and on any failure answer nothing so the host's own compaction runs. */
int lcm_glue_before_compact(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    (void)err;
    *out = NULL;
    struct lcm_proj *pr = p->lcm ? p->lcm->proj : NULL;
    const lcm_config *cfg = lcm_cmd_config(p);
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason"));
    if (reason && strcmp(reason, "overflow") == 0)
        lcm_window_correct(p, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "error")));
    const cJSON *prep = cJSON_GetObjectItemCaseSensitive(ev, "preparation");
    const char *first_kept = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prep, "firstKeptEntryId"));
    const cJSON *tb = cJSON_GetObjectItemCaseSensitive(prep, "tokensBefore");
    char *e = NULL, *text = NULL;
    dag_node *v = NULL;
    size_t n = 0, k = 0;
    store_row row = {0};
    if (!pr || !p->lcm->st || !p->lcm->summ || !first_kept) return AP_OK;
    /* This pass covers what the worker is on; the worker's nodes would collide with it. */
    lcm_summ_invalidate(p);
    lcm_pin_flush(p);
    if (store_get_message(p->lcm->st, first_kept, &row, &e) != LC_OK) goto done;
    long budget = lcm_block_budget(&pr->z, cfg);
    dag_opts o = {
        .leaf_chunk_tokens = cfg ? cfg->leaf_chunk_tokens : 0,
        .summary_tokens = cfg ? cfg->summary_tokens : 0,
        .block_budget = budget,
        .flush = 1,
        .before_ordinal = row.ordinal > 0 ? row.ordinal : 1,
    };
    dag_stats ds;
    int64_t left = 0;
    if (row.ordinal <= 0 || lcm_dag_pass(p, p->lcm->summ, &o, &ds, &e) != LC_OK ||
        dag_uncovered(p->lcm->st, row.ordinal, &left, &e) != LC_OK || left > 0 ||
        dag_frontier(p->lcm->st, &v, &n, &e) != LC_OK)
        goto done;
    pr->passes++;
    /* The nodes that hold what the host is about to drop. */
    while (k < n && v[k].first_ordinal < row.ordinal) k++;
    if (k == 0) goto done;
    int stubbed = 0;
    if (project_render_text(v, k, budget, &text, &stubbed, &e) != LC_OK) goto done;
    cJSON *res = cJSON_CreateObject(), *c = cJSON_AddObjectToObject(res, "compaction");
    cJSON_AddStringToObject(c, "summary", text);
    cJSON_AddStringToObject(c, "firstKeptEntryId", first_kept);
    cJSON_AddNumberToObject(c, "tokensBefore", cJSON_IsNumber(tb) ? tb->valuedouble : 0);
    cJSON *d = cJSON_AddObjectToObject(c, "details"), *lcm = cJSON_AddObjectToObject(d, "lcm");
    cJSON *ids = cJSON_AddArrayToObject(lcm, "nodes");
    for (size_t i = 0; i < k; i++) cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)v[i].id));
    cJSON_AddNumberToObject(lcm, "stubbed", stubbed);
    *out = res;
done:
    if (!*out)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: the host's compaction runs unchanged: %s",
                   e ? e : "the DAG could not cover the compacted messages");
    free(e);
    free(text);
    dag_nodes_free(v, n);
    store_row_free(&row);
    return AP_OK;
}

int lcm_glue_compact(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)ev;
    (void)err;
    /* The host's context now starts at its compaction; a pinned cut whose anchor is still
     * there keeps applying, one whose anchor left is dropped by the next request. */
    lcm_pin_flush(p);
    return AP_OK;
}

int lcm_glue_tree(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)err;
    char *e = NULL;
    if (!p->lcm || !p->lcm->st) return AP_OK;
    /* A pass over the branch just left, or a cut prepared on it, no longer applies. */
    lcm_summ_invalidate(p);
    const char *old_leaf = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "oldLeafId"));
    const char *new_leaf = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "newLeafId"));
    /* The marks were right for the old branch, so only the entries between the two leaves
     * and their common ancestor change. A host that cannot say (no get_entry, no leaf
     * ids) gets the whole-branch comparison. */
    char *warn = NULL;
    int moved = AP_HOST_HAS(p->host, get_entry) && (old_leaf || new_leaf) &&
                ingest_move(p->lcm->st, lcm_entry_text, p, old_leaf, new_leaf, &warn, &e) == LC_OK;
    if (warn) plugin_log(p, AP_LEVEL_WARNING, "lcm: storing a branch's last messages failed: %s", warn);
    free(warn);
    if (!moved) {
        if (e) plugin_log(p, AP_LEVEL_INFO, "lcm: tree move walked by whole branch: %s", e);
        lcm_mark_from_host(p);
    }
    free(e);
    /* The latest cut may stand on the branch just left: the candidate becomes the newest
     * cut on the branch now active, so a request past the lines has a cut to swap to. */
    struct lcm_proj *pr = p->lcm->proj;
    project_cut c;
    if (pr && project_branch_cut(p->lcm->st, &c, NULL) == LC_OK) {
        if (pr->has_pinned && c.id == pr->pinned.id) {
            project_cut_free(&c);
        } else {
            if (pr->has_cand) project_cut_free(&pr->cand);
            pr->cand = c;
            pr->has_cand = 1;
        }
    }
    return AP_OK;
}

