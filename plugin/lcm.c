/*
 * lcm.c -- glue from ABI events to the lossless store, the DAG and the projection: open
 * the session's store at session_start, lend LCM's side of every `context` request to the
 * engine's one request call (lcm_glue_request: the projection, its store, config and
 * chains, the offline hook; engine/request/request.h composes it), ask for the DAG pass
 * between turns (turn_end), supply the host's compaction from the DAG
 * (session_before_compact), mark removed branches on tree moves (engine/lcm/ingest.h), lend
 * the worker's catch-up queue to a long session's first request (engine/lcm/projstate.h),
 * and serve the recall tools lcm_grep / lcm_describe / lcm_expand_query (saying so while
 * that catch-up still runs). Each callback parses
 * the host's data once, calls the engine, and finishes once; no SQL and no policy here.
 *
 * LCM_REQUEST_LOG=<file> (opened here at session start, written by the projection when
 * engine/request/request.c notes a request as sent) appends one JSON line per request
 * (action, cut, tokens sent, window, and SHA-256 digests of the request and of its prefix
 * the size of the previous request) so a test can prove the byte-for-byte extension
 * property from outside.
 * With the log on, LCM_REQUEST_DUMP=<file> also rewrites that file on every request with
 * the messages sent, one per line, so an evaluation can read the surface the model saw
 * last (off by default: it costs one context-sized write per request).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "embed.h"
#include "hybrid.h"
#include "ingest.h"
#include "ledger.h"
#include "maint.h"
#include "metrics.h"
#include "offline.h"
#include "plugin.h"
#include "projstate.h"
#include "recall.h"
#include "recall_args.h"
#include "store.h"
#include "summ_host.h"
#include "util.h"
#include "lcm.h"

/* ---- tools ---------------------------------------------------------------------------- */

/* While a long session's history is still being stored in the background, a recall
 * answer covers only what is stored: it says so (malloc'd; NULL otherwise). */
static char *lcm_catchup_note(lc_plugin *p)
{
    long left = p && p->lcm ? projstate_catchup_left(p->lcm->proj) : 0;
    if (left <= 0) return NULL;
    return lc_asprintf("\n\n[lcm] This session's history is still being indexed in the background: %ld "
                       "message(s) are not stored yet, so this answer covers only what is stored so far; "
                       "ask again later for the rest.", left);
}

/* A tool's answer, with the catch-up's note when one applies (text taken). */
static int lcm_tool_reply_in(lc_plugin *p, char *text, int is_error, char **out, char **err);

static int lcm_tool_reply(char *text, int is_error, char **out, char **err)
{
    return lcm_tool_reply_in(NULL, text, is_error, out, err);
}

static int lcm_tool_reply_in(lc_plugin *p, char *text, int is_error, char **out, char **err)
{
    char *note = text && !is_error ? lcm_catchup_note(p) : NULL;
    if (note) {
        char *t = lc_asprintf("%s%s", text, note);
        free(note);
        free(text);
        text = t;
    }
    if (!text) return lc_errf(err, AP_NOMEM, "out of memory");
    *out = plugin_text_result(text, is_error);
    free(text);
    return *out ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}

static int lcm_tool_error(char *msg, char **out, char **err)
{
    return lcm_tool_reply(msg ? msg : lc_strdup("lcm: failed"), 1, out, err);
}

/* An engine call's outcome as the tool's reply: its text, or on failure its error message
 * (*e is taken either way). */
static int lcm_tool_answer(lc_plugin *p, int rc, char *text, char **e, char **out, char **err)
{
    char *msg = *e;
    *e = NULL;
    if (rc != LC_OK) {
        free(text);
        return lcm_tool_error(msg, out, err);
    }
    free(msg);
    return lcm_tool_reply_in(p, text, 0, out, err);
}

static int lcm_no_store(lc_plugin *p, char **out, char **err)
{
    if (p->lcm && p->lcm->off.offline) return lcm_tool_reply(offline_recall_refusal(&p->lcm->off), 1, out, err);
    return lcm_tool_reply(lc_asprintf("lcm: the store is not open (%s)",
                                      p->lcm && p->lcm->open_error ? p->lcm->open_error : "no session"),
                          1, out, err);
}

/* The session header's cwd (the project a past-session search matches on), read from the
 * session file's first line: session_info's cwd is the host process's, which differs from
 * the header when a session is resumed or replayed elsewhere. Falls back to it. */
static char *lcm_header_cwd(const lc_plugin *p)
{
    char *cwd = p->session_file ? maint_session_header(p->session_file, "cwd") : NULL;
    if (cwd && *cwd) return cwd;
    free(cwd);
    return p->cwd ? lc_strdup(p->cwd) : NULL;
}

/* mode "hybrid": the query's words and meaning fused (engine/lcm/hybrid.h), in this session
 * or, with scope, past ones. */
static int lcm_tool_grep_hybrid(lc_plugin *p, const recall_grep_opts *g, recall_scope scope, char **out, char **err)
{
    const lcm_config *cfg = lcm_conf_get(p);
    char *text = NULL, *e = NULL;
    int rc;
    hybrid_opts o;
    if (recall_args_hybrid(g, cfg ? &cfg->embeddings : NULL, &o, &e) != LC_OK) return lcm_tool_error(e, out, err);
    if (scope == RECALL_SCOPE_SESSION) {
        if (!p->lcm || !p->lcm->st) return lcm_no_store(p, out, err);
        rc = hybrid_grep(p->lcm->st, &o, &text, &e);
    } else {
        char *cwd = p->lcm && p->lcm->st ? store_meta_get(p->lcm->st, "cwd") : lcm_header_cwd(p);
        rc = hybrid_grep_sessions(p->agent_home ? p->agent_home : ".", p->session_id, cwd, scope, &o, &text, &e);
        free(cwd);
    }
    return lcm_tool_answer(p, rc, text, &e, out, err);
}

static int lcm_tool_grep(void *ud, const char *call_json, char **out, char **err)
{
    lc_plugin *p = ud;
    cJSON *call = cJSON_Parse(call_json);
    char *e = NULL;
    int rc, hybrid;
    recall_grep_opts o;
    const char *scope_s;
    if (recall_args_grep(recall_args_of(call), &o, &scope_s, &hybrid, &e) != LC_OK) {
        cJSON_Delete(call);
        return lcm_tool_error(e, out, err);
    }
    o.redact = p->lcm ? p->lcm->redact : 1;
    const char *home = p->agent_home ? p->agent_home : ".";
    recall_scope scope = RECALL_SCOPE_SESSION;
    recall_result r;
    if ((scope_s && recall_scope_parse(scope_s, &scope, &e) != LC_OK) || recall_scope_check(home, scope, &e) != LC_OK) {
        rc = lcm_tool_error(e, out, err);
        e = NULL;
        goto done;
    }
    if (hybrid) {
        rc = lcm_tool_grep_hybrid(p, &o, scope, out, err);
        goto done;
    }
    if (scope == RECALL_SCOPE_SESSION) {
        if (!p->lcm || !p->lcm->st) {
            rc = lcm_no_store(p, out, err);
            goto done;
        }
        rc = recall_grep(p->lcm->st, &o, &r, &e);
    } else {
        char *cwd = p->lcm && p->lcm->st ? store_meta_get(p->lcm->st, "cwd") : lcm_header_cwd(p);
        rc = recall_grep_sessions(home, p->session_id, cwd, scope, &o, &r, &e);
        free(cwd);
    }
    if (rc != LC_OK) {
        rc = lcm_tool_error(e, out, err);
        e = NULL;
        goto done;
    }
    rc = lcm_tool_reply_in(p, recall_grep_format(&o, scope, &r), 0, out, err);
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
    char *text = NULL, *e = NULL;
    int rc;
    if (!p->lcm || !p->lcm->st) {
        rc = lcm_no_store(p, out, err);
        goto done;
    }
    char idbuf[32];
    const char *id = recall_args_describe_id(recall_args_of(call), idbuf, sizeof idbuf);
    rc = recall_describe(p->lcm->st, id, p->lcm->redact, &text, &e);
    rc = lcm_tool_answer(p, rc, text, &e, out, err);
done:
    free(e);
    cJSON_Delete(call);
    return rc;
}

/* expand_query's reader: the session model through the host, in the cost ledger as
 * `expand` and held to its limits (a refused read answers with the limit's sentence). */
static int lcm_complete(void *ud, const char *request_json, char **out_json, char **err)
{
    lc_plugin *p = ud;
    const ledger *led = p->lcm ? p->lcm->ledger : NULL;
    char *why = NULL;
    int first = 0;
    if (ledger_allow(led, LEDGER_EXPAND, &why, &first) != LC_OK) {
        if (first) plugin_notify(p, AP_LEVEL_WARNING, "lcm: spend limit reached (%s); expand_query reads no more "
                                 "with the model until the window moves on", why ? why : "?");
        int rc = lc_errf(err, LC_BUSY, "spend limit reached: %s", why ? why : "?");
        free(why);
        return rc;
    }
    int rc = plugin_complete(ud, request_json, out_json, err);
    if (led && rc != AP_UNSUPPORTED) {
        summ_completion c = {0};
        if (rc == AP_OK && *out_json) summ_host_answer(*out_json, &c, NULL);
        ledger_usage u = {c.input_tokens, c.output_tokens, c.cached_tokens, c.has_cost, c.cost};
        ledger_record(led, LEDGER_EXPAND, "auto", c.model ? c.model : "auto", &u, rc == AP_OK,
                      rc == AP_OK ? NULL : (err ? *err : NULL), NULL);
        summ_completion_free(&c);
    }
    return rc;
}

static int lcm_tool_expand(void *ud, const char *call_json, char **out, char **err)
{
    lc_plugin *p = ud;
    cJSON *call = cJSON_Parse(call_json);
    char *text = NULL, *e = NULL;
    int rc;
    recall_expand_opts o;
    const char *session;
    if (recall_args_expand(recall_args_of(call), &o, &session, &e) != LC_OK) {
        cJSON_Delete(call);
        return lcm_tool_error(e, out, err);
    }
    o.redact = p->lcm ? p->lcm->redact : 1;
    if (session && (!p->session_id || strcmp(session, p->session_id) != 0)) {
        rc = recall_expand_session(p->agent_home ? p->agent_home : ".", session, &o, lcm_complete, p, &text, &e);
    } else if (!p->lcm || !p->lcm->st) {
        rc = lcm_no_store(p, out, err);
        goto done;
    } else {
        rc = recall_expand(p->lcm->st, &o, lcm_complete, p, &text, &e);
    }
    rc = lcm_tool_answer(p, rc, text, &e, out, err);
done:
    free(e);
    cJSON_Delete(call);
    return rc;
}

/* ---- the projection's hooks into the summarizer glue ----------------------------------- */

static void lcm_hook_log(void *ud, int warn, const char *text)
{
    plugin_log(ud, warn ? AP_LEVEL_WARNING : AP_LEVEL_INFO, "%s", text);
}

static void lcm_hook_metric(void *ud, const char *kind, const cJSON *fields)
{
    lcm_conf_metric(ud, kind, fields);
}

static int lcm_hook_pickup(void *ud, long wait_ms, projstate_pick *out)
{
    return lcm_summ_pickup(ud, wait_ms, out);
}

static int lcm_hook_can_wait(void *ud)
{
    return lcm_summ_can_wait(ud);
}

static void lcm_hook_invalidate(void *ud)
{
    lcm_summ_invalidate(ud);
}

static void lcm_hook_submit(void *ud, const worker_job *job)
{
    lcm_summ_submit(ud, job);
}

static int lcm_hook_catchup(void *ud, const store_msg *msgs, size_t n)
{
    lc_plugin *p = ud;
    char *e = NULL;
    if (!p->lcm || !p->lcm->worker) return LC_ERR;
    int rc = worker_catchup(p->lcm->worker, msgs, n, &e);
    if (rc != LC_OK) plugin_log(p, AP_LEVEL_WARNING, "lcm: the background catch-up was not queued: %s", e ? e : "?");
    free(e);
    return rc;
}

static long lcm_hook_catchup_left(void *ud, char **why)
{
    lc_plugin *p = ud;
    if (why) *why = NULL;
    /* The worker stopped (offline, a reset): what it did not store is offered again. */
    if (!p->lcm || !p->lcm->worker) {
        if (why) *why = lc_strdup("the background worker stopped");
        return -1;
    }
    return worker_catchup_left(p->lcm->worker, why);
}

int lcm_glue_init(lc_plugin *p, char **err)
{
    if (!(p->lcm = calloc(1, sizeof *p->lcm))) return lc_errf(err, AP_NOMEM, "out of memory");
    p->lcm->redact = 1;
    projstate_hooks hooks = {
        .ud = p,
        .log = lcm_hook_log,
        .metric = lcm_hook_metric,
        .pickup = lcm_hook_pickup,
        .can_wait = lcm_hook_can_wait,
        .invalidate = lcm_hook_invalidate,
        .submit = lcm_hook_submit,
        .catchup = lcm_hook_catchup,
        .catchup_left = lcm_hook_catchup_left,
    };
    if (projstate_new(&hooks, &p->lcm->proj) != LC_OK) return lc_errf(err, AP_NOMEM, "out of memory");
    /* A host without tools still gets passive logging; the tools are simply absent. */
    if (plugin_register_tool(p, "lcm_grep", recall_args_grep_description, recall_args_grep_schema, lcm_tool_grep,
                             err) != AP_OK ||
        plugin_register_tool(p, "lcm_describe",
                             "Describe a summary (text, tiers, cost of reading its originals, files) or a file handle.",
                             recall_args_describe_schema, lcm_tool_describe, err) != AP_OK ||
        plugin_register_tool(p, "lcm_expand_query",
                             "Read stored originals (by summary_id, entry_id or question) with a bounded reader "
                             "and return findings.",
                             recall_args_expand_schema, lcm_tool_expand, err) != AP_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: recall tools not registered: %s", err && *err ? *err : "?");
        if (err) {
            free(*err);
            *err = NULL;
        }
    }
    return AP_OK;
}

/* The session as the projection sees it in one call. cfg is the effective config, loaded
 * at its first use (with_cfg: the callers that read it). */
static projstate_env lcm_env(lc_plugin *p, int with_cfg)
{
    projstate_env env = {
        .st = p->lcm->st,
        .cfg = with_cfg ? lcm_conf_get(p) : NULL,
        .model = p->model,
        .window = p->window,
        .summ = p->lcm->summ,
        .cover = p->lcm->cover,
        .worker = p->lcm->worker != NULL,
        .offline = p->lcm->off.offline,
    };
    return env;
}

void lcm_glue_view_get(lc_plugin *p, lcm_glue_view *out)
{
    projstate_view v;
    projstate_view_get(p->lcm ? p->lcm->proj : NULL, &v);
    *out = (lcm_glue_view){
        .cut_id = v.cut_id,
        .applied_tokens = v.applied_tokens,
        .window = v.window > 0 ? v.window : p->window,
        .last_tokens = v.last_tokens,
        .last_raw_tokens = v.last_raw_tokens,
        .last_action = v.last_action,
        .passes = v.passes,
    };
}

void lcm_glue_free(lc_plugin *p)
{
    if (!p->lcm) return;
    lcm_summ_free(p);
    lcm_conf_free(p);
    projstate_free(p->lcm->proj);
    store_close(p->lcm->st);
    LC_FREE(p->lcm->open_error, p->lcm->bundle);
    offline_free(&p->lcm->off);
    free(p->lcm);
    p->lcm = NULL;
}

/* ---- the host's entries, for the engine's ingest ---------------------------------------- */

/* ingest_entry_fn over the host's get_entry: the entry's text as the host holds it. */
static int lcm_entry_text(void *ud, const char *id, char **text, char **err)
{
    return plugin_get_entry_text(ud, id, text, err);
}

/* The helpers below take the active branch the caller read (NULL: read it here): a session
 * start reads it once for all three, where each read is the host serializing every entry
 * of a long session and this side parsing it. */
static void lcm_mark_from_host(lc_plugin *p, const cJSON *given)
{
    cJSON *branch = NULL;
    char *e = NULL;
    size_t marked = 0, cleared = 0;
    if (!p->lcm || !p->lcm->st) return;
    if (!given && plugin_get_branch(p, &branch, &e) != AP_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: branch unavailable for removed marks: %s", e ? e : "?");
        free(e);
        return;
    }
    if (ingest_mark_branch(p->lcm->st, given ? given : branch, &marked, &cleared, &e) != LC_OK)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: marking removed entries failed: %s", e ? e : "?");
    else if (marked || cleared)
        plugin_log(p, AP_LEVEL_INFO, "lcm: branch change: %zu entries removed, %zu restored", marked, cleared);
    free(e);
    cJSON_Delete(branch);
}

/* Store what the branch ends with that no `context` carried: the last turn of a session,
 * or what a crash or a failed write left out. One branch read per session start or end,
 * never per request. */
static int lcm_ingest_branch_tail(lc_plugin *p, const cJSON *given, char **why)
{
    cJSON *branch = NULL;
    char *e = NULL;
    int rc = LC_OK;
    if (!p->lcm->st || (!given && plugin_get_branch(p, &branch, NULL) != AP_OK)) return LC_OK;
    if ((rc = ingest_branch_tail(p->lcm->st, given ? given : branch, lcm_entry_text, p, &e)) != LC_OK)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: storing a branch's last messages failed: %s", e ? e : "?");
    if (why && rc != LC_OK) {
        *why = e;
        e = NULL;
    }
    free(e);
    cJSON_Delete(branch);
    return rc;
}

/* Store the session's messages on no active branch that never reached the store (a branch
 * abandoned while the store could not be written). Every entry is read once per session
 * start (get_entries, API level 2; a level-1 host lists only the active branch, so this
 * is skipped there). lcm_mark_from_host then marks them removed. */
static void lcm_ingest_offbranch(lc_plugin *p, const cJSON *given)
{
    cJSON *all = NULL, *branch = NULL;
    char *e = NULL;
    size_t inserted = 0;
    int rc = plugin_get_entries(p, &all, &e);
    if (rc != AP_OK) {
        if (rc != AP_UNSUPPORTED)
            plugin_log(p, AP_LEVEL_WARNING, "lcm: the session's entries are unavailable: %s", e ? e : "?");
    } else if (given || plugin_get_branch(p, &branch, NULL) == AP_OK) {
        if (ingest_offbranch(p->lcm->st, all, given ? given : branch, lcm_entry_text, p, &inserted, &e) != LC_OK)
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
    zones_window_correction c = {0};
    if (v && sscanf(v, "%ld %ld %31s", &c.believed, &c.corrected, c.source) == 3 && c.corrected > 0) {
        p->window_corr = c;
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
    p->window_corr = corr;
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

/* lcm.json's file-handle settings (largeFileChars, externalizeFiles) for what this
 * connection ingests; `lcm import` applies the same, so both store the same rows. */
static void lcm_store_options(store *st, const lcm_config *cfg)
{
    if (!cfg) return;
    store_options o = {(size_t)cfg->large_file_chars, cfg->externalize_files, cfg->redact_at_ingest};
    store_set_options(st, &o);
}

/* Open the session's store and do everything a session start does for LCM once it is
 * open: the header's cwd, the window correction, the off-branch and branch-tail ingest,
 * the removed marks, the summarizer (its worker opens its own connection, so it starts
 * only once this one opened) and the pin. On failure nothing is held and open_error says
 * why. */
static int lcm_attach(lc_plugin *p, long wait_ms, int64_t *caught, const cJSON *given)
{
    char *e = NULL;
    char *hcwd = lcm_header_cwd(p);
    int orc = store_open_wait(p->agent_home, p->session_id, hcwd, wait_ms, &p->lcm->st, &e);
    free(p->lcm->open_error);
    p->lcm->open_error = NULL;
    if (orc != LC_OK) {
        p->lcm->open_error = e ? e : lc_strdup("store open failed");
        free(hcwd);
        return orc;
    }
    /* A store written before the header's cwd was recorded holds the process's. */
    if (hcwd && store_meta_ensure(p->lcm->st, "cwd", hcwd, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: %s", e ? e : "cwd not recorded");
        free(e);
        e = NULL;
    }
    free(hcwd);
    lcm_store_options(p->lcm->st, lcm_conf_get(p));
    /* Where the session lives, so `/lcm gc` retires this store only once that file is
     * gone, wherever it is (not only under HOME/sessions). */
    char *sf = p->session_file ? realpath(p->session_file, NULL) : NULL;
    if (sf && store_meta_ensure(p->lcm->st, "session_file", sf, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: %s", e ? e : "session file not recorded");
        free(e);
        e = NULL;
    }
    free(sf);
    lcm_window_load(p);
    if (store_mode_note(p->lcm->st))
        plugin_notify(p, AP_LEVEL_WARNING, "lcm: %s", store_mode_note(p->lcm->st));
    /* The marks of a resumed tree, and what the store missed (a crash, a failed write, a
     * deleted store, a store that was busy until now): the branch read once here is the
     * session file's truth. */
    /* The active branch first: the store's ingest takes the newest stored entry of a
     * batch as proof that what comes before it is stored too, which an abandoned tail
     * stored ahead of its ancestors would break for a concurrent `lcm import`. */
    /* A reconnect after the store was offline: the catch-up is what makes the store whole
     * again, so a store that opens but cannot take it is still offline. */
    int64_t before = caught ? store_message_count(p->lcm->st) : 0;
    char *why = NULL;
    cJSON *read = NULL;
    /* The session start's own read of the branch when it made one: each read is the host
     * serializing every entry of the session and this side parsing it. */
    if (!given && plugin_get_branch(p, &read, NULL) != AP_OK) read = NULL;
    const cJSON *branch = given ? given : read;
    /* Thousands of messages the store lacks (a plugin installed into a long session, a
     * store deleted, a catch-up a crash cut short): the first `context` carries them and
     * hands them to the worker (projstate.h), rather than this start storing them here
     * one host read each. A reconnect catches up here: it has no worker yet to lean on. */
    const lcm_config *cfg = lcm_conf_get(p);
    int defer = branch && !caught && cfg && cfg->summary_worker &&
                ingest_branch_lacks_tail(p->lcm->st, branch, PROJSTATE_CATCHUP_MIN);
    if (defer)
        plugin_log(p, AP_LEVEL_INFO, "lcm: the store lacks %d or more of this session's messages; the first "
                   "request hands them to the background worker", PROJSTATE_CATCHUP_MIN);
    if (branch && !defer && lcm_ingest_branch_tail(p, branch, &why) != LC_OK && p->lcm->off.offline) {
        p->lcm->open_error = lc_asprintf("the catch-up from the session file failed: %s", why ? why : "?");
        free(why);
        cJSON_Delete(read);
        store_close(p->lcm->st);
        p->lcm->st = NULL;
        return LC_ERR;
    }
    free(why);
    if (branch) {
        /* Off-branch messages go in after the branch they hang from (see above). */
        if (!defer) lcm_ingest_offbranch(p, branch);
        lcm_mark_from_host(p, branch);
        cJSON_Delete(read);
    } else {
        lcm_mark_from_host(p, NULL); /* logs why the branch is unavailable */
    }
    if (caught) *caught = store_message_count(p->lcm->st) - before;
    lcm_summ_open(p);
    /* What the requests decided while the store was offline is what it holds from now. */
    projstate_pin_flush(p->lcm->proj, p->lcm->st);
    projstate_load(p->lcm->proj, p->lcm->st);
    return LC_OK;
}

/* The one notice of going offline (the state is the engine's, offline.h). */
static void lcm_offline_notice(lc_plugin *p)
{
    char *t = offline_notice(&p->lcm->off);
    if (t) plugin_notify(p, AP_LEVEL_WARNING, "%s", t);
    free(t);
}

/* A store call failed mid-run: let go of the connections (the worker's too) and go
 * offline; lcm_reopen reconnects and catches up. */
static void lcm_go_offline(lc_plugin *p, const char *why)
{
    struct lcm_glue *g = p->lcm;
    lcm_summ_close(p);
    store_close(g->st);
    g->st = NULL;
    free(g->open_error);
    g->open_error = lc_asprintf("the store is offline: %s", why);
    g->reopen = 1;
    g->off_since = lc_now_ms();
    offline_enter(&g->off, why, g->off_since);
    lcm_offline_notice(p);
}

/* The store was busy at session start: try again, at most once every LCM_REOPEN_EVERY_MS
 * (a context call or an /lcm command), and tell the user when LCM is active again. */
static void lcm_reopen_when(lc_plugin *p, int now_due)
{
    struct lcm_glue *g = p->lcm;
    if (!g || g->st || !g->reopen) return;
    double now = lc_now_ms();
    if (!now_due && (g->off.offline ? !offline_due(&g->off, now) : now - g->reopen_at < LCM_REOPEN_EVERY_MS)) return;
    g->reopen_at = now;
    int64_t caught = 0;
    int rc = lcm_attach(p, LCM_REOPEN_WAIT_MS, &caught, NULL);
    if (rc == LC_BUSY && !g->off.offline) return;
    if (rc != LC_OK && (g->off.offline || offline_failure(rc))) {
        int was = g->off.offline;
        offline_still(&g->off, g->open_error, now);
        if (!was) lcm_offline_notice(p);
        else plugin_log(p, AP_LEVEL_INFO, "lcm: the store is still offline: %s", g->open_error ? g->open_error : "?");
        return;
    }
    p->lcm->reopen = 0;
    if (rc == LC_OK && g->off.offline) {
        long reqs = g->off.requests;
        double secs = offline_leave(&g->off, now);
        plugin_notify(p, AP_LEVEL_INFO, "lcm: the store is back online after %.0f s offline (%ld request(s) were "
                      "built from what was known): %lld message(s) it missed are stored now from the session "
                      "file; LCM is active again", secs, reqs, (long long)caught);
        return;
    }
    if (rc != LC_OK) {
        plugin_notify(p, AP_LEVEL_WARNING, "lcm: the store still cannot be opened (%s); LCM stays "
                      "inactive for this run", p->lcm->open_error);
        return;
    }
    plugin_notify(p, AP_LEVEL_INFO, "lcm: the store is open (after %.0f s); LCM is active again: "
                  "every message of the session is stored and requests are projected from now on",
                  (now - p->lcm->off_since) / 1000.0);
}

void lcm_reopen(lc_plugin *p) { lcm_reopen_when(p, 0); }

int lcm_glue_attach(lc_plugin *p)
{
    if (!p->lcm || p->lcm->st || !p->agent_home || !p->session_id) return LC_OK;
    p->lcm->reopen = 0;
    int rc = lcm_attach(p, STORE_BUSY_MS, NULL, NULL);
    if (rc == LC_OK) offline_leave(&p->lcm->off, lc_now_ms());
    else if (p->lcm->off.offline) p->lcm->reopen = 1;
    return rc;
}

/* The bundle every system prompt of the run carries, built once here at session start
 * (engine/memory/bundle.h decides what a new session of a folder carries). */
static void lcm_bundle_load(lc_plugin *p)
{
    const lcm_config *cfg = lcm_conf_get(p);
    char *e = NULL;
    free(p->lcm->bundle);
    p->lcm->bundle = NULL;
    if (p->lcm->st &&
        bundle_session_prompt(p->agent_home, p->lcm->st, p->session_id, cfg, &p->lcm->bundle, &e) != LC_OK)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: %s", e ? e : "the session's bundle failed");
    free(e);
}

void lcm_glue_system_prompt(lc_plugin *p, const cJSON *ev, cJSON **out)
{
    if (!p->lcm || !p->lcm->bundle) return;
    const char *sp = *out ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(*out, "systemPrompt")) : NULL;
    if (!sp) sp = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "systemPrompt"));
    char *t = lc_asprintf("%s%s%s", sp ? sp : "", sp && *sp ? "\n\n" : "", p->lcm->bundle);
    if (!t || (!*out && !(*out = cJSON_CreateObject()))) {
        free(t);
        return;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(*out, "systemPrompt");
    cJSON_AddStringToObject(*out, "systemPrompt", t);
    free(t);
}

int lcm_glue_session_start(lc_plugin *p, const cJSON *ev, const cJSON *branch, char **err)
{
    (void)ev;
    (void)err;
    if (!p->lcm) return AP_OK;
    lcm_summ_close(p);
    projstate_reset(p->lcm->proj);
    projstate_log_open(p->lcm->proj, getenv("LCM_REQUEST_LOG"), getenv("LCM_REQUEST_DUMP"));
    store_close(p->lcm->st);
    p->lcm->st = NULL;
    p->lcm->reopen = 0;
    offline_free(&p->lcm->off);
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
    int orc = lcm_attach(p, STORE_BUSY_MS, NULL, branch);
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
    } else if (orc == LC_OK) {
        lcm_bundle_load(p);
    } else if (orc == LC_EXCLUDED) {
        /* The user's choice (lcm.json exclude), not a fault: no retry, no store. */
        plugin_notify(p, AP_LEVEL_INFO, "lcm: %s; LCM is not active for this run", p->lcm->open_error);
    } else if (offline_failure(orc)) {
        /* Unreachable (a server down, a folder that cannot be made): the session goes on
         * and the store is tried again on the engine's cadence. */
        p->lcm->reopen = 1;
        p->lcm->reopen_at = lc_now_ms();
        p->lcm->off_since = t0;
        offline_enter(&p->lcm->off, p->lcm->open_error, t0);
        lcm_offline_notice(p);
    } else {
        /* A refused store path (a link planted in the private folder) or a store that is
         * not a database is the user's to know at once, not only in the log. */
        plugin_notify(p, AP_LEVEL_WARNING, "lcm: %s%s", p->lcm->open_error,
                      strstr(p->lcm->open_error, "LCM is not active") ? "" : "; LCM is not active for this run");
    }
    return AP_OK;
}

int lcm_glue_session_shutdown(lc_plugin *p, char **err)
{
    (void)err;
    if (p->lcm) {
        lcm_summ_pick pick;
        lcm_summ_pickup(p, 0, &pick);
        /* A background catch-up cut short by the exit is not finished here, one host read
         * a message: the store holds whole batches in order, and the next session's first
         * request hands the rest to its worker. */
        long left = projstate_catchup_left(p->lcm->proj);
        lcm_summ_close(p);
        if (left > 0)
            plugin_log(p, AP_LEVEL_INFO, "lcm: %ld message(s) of the background catch-up are not stored yet; "
                       "the next session stores them", left);
        /* Offline at the end of the run: one last reconnect, not held to the cadence, so
         * the catch-up stores what the store missed while the session file is at hand
         * (a server restarted near the end of a run would otherwise wait for the next). */
        if (p->lcm->off.offline) lcm_reopen_when(p, 1);
        if (left <= 0) lcm_ingest_branch_tail(p, NULL, NULL);
        projstate_pin_flush(p->lcm->proj, p->lcm->st);
        store_close(p->lcm->st);
        p->lcm->st = NULL;
    }
    return AP_OK;
}

/* A store call of a request failed mid-run (engine/request/request.h). */
static void lcm_hook_offline(void *ud, const char *why)
{
    lcm_go_offline(ud, why);
}

void lcm_glue_request(lc_plugin *p, size_t n_messages, request_session *s)
{
    lcm_reopen(p);
    s->proj = p->lcm ? p->lcm->proj : NULL;
    if (!s->proj) return;
    s->env = lcm_env(p, p->lcm->st && n_messages);
    s->off = &p->lcm->off;
    s->hooks = (request_hooks){.ud = p, .offline = lcm_hook_offline, .metric = lcm_hook_metric};
}

/* The provider's usage of the answer just appended: how much of the request it served
 * from its prompt cache (`/lcm report` sets it beside the requests that kept the prefix). */
static void lcm_note_usage(lc_plugin *p, const cJSON *msg)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(msg, "usage");
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "role"));
    if (!p->lcm->st || !cJSON_IsObject(u) || !role || strcmp(role, "assistant") != 0) return;
    static const char *const keys[] = {"input", "output", "cacheRead", "cacheWrite"};
    cJSON *row = cJSON_CreateObject();
    if (!row) return;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(u, keys[i]);
        cJSON_AddNumberToObject(row, keys[i], cJSON_IsNumber(v) ? v->valuedouble : 0);
    }
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(u, "cost"), "total");
    cJSON_AddNumberToObject(row, "cost", cJSON_IsNumber(cost) ? cost->valuedouble : 0);
    const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "model"));
    if (model) cJSON_AddStringToObject(row, "model", model);
    lcm_conf_metric(p, METRIC_USAGE, row);
    cJSON_Delete(row);
}

int lcm_glue_turn_end(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)err;
    /* turn_end's messages get their entry ids when the host appends them; the next
     * `context` ingests them with those ids, so only the DAG work happens here. */
    if (!p->lcm) return AP_OK;
    lcm_note_usage(p, cJSON_GetObjectItemCaseSensitive(ev, "message"));
    projstate_env env = lcm_env(p, 1);
    projstate_between_turns(p->lcm->proj, &env, 0);
    /* After the DAG's job: the rows the last `context` stored get their vectors. */
    lcm_summ_embed_nudge(p);
    return AP_OK;
}

/* The blocking regime: the host is about to compact. Supply its summary from the DAG,
 * after a synchronous pass that covers everything before the kept entries; never cancel,
 * and on any failure answer nothing so the host's own compaction runs. */
int lcm_glue_before_compact(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    (void)err;
    *out = NULL;
    if (!p->lcm) return AP_OK;
    const lcm_config *cfg = lcm_conf_get(p);
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason"));
    if (reason && strcmp(reason, "overflow") == 0)
        lcm_window_correct(p, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "error")));
    const cJSON *prep = cJSON_GetObjectItemCaseSensitive(ev, "preparation");
    const char *first_kept = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prep, "firstKeptEntryId"));
    const cJSON *tb = cJSON_GetObjectItemCaseSensitive(prep, "tokensBefore");
    char *e = NULL, *text = NULL;
    int64_t *ids = NULL;
    size_t n = 0;
    int stubbed = 0;
    projstate_env env = lcm_env(p, 0);
    env.cfg = cfg;
    if (!p->lcm->proj || !env.st || !env.summ || !first_kept) return AP_OK;
    if (projstate_compaction(p->lcm->proj, &env, first_kept, &text, &ids, &n, &stubbed, &e) != LC_OK)
        goto done;
    cJSON *res = cJSON_CreateObject(), *c = cJSON_AddObjectToObject(res, "compaction");
    cJSON_AddStringToObject(c, "summary", text);
    cJSON_AddStringToObject(c, "firstKeptEntryId", first_kept);
    cJSON_AddNumberToObject(c, "tokensBefore", cJSON_IsNumber(tb) ? tb->valuedouble : 0);
    cJSON *d = cJSON_AddObjectToObject(c, "details"), *lcm = cJSON_AddObjectToObject(d, "lcm");
    cJSON *nodes = cJSON_AddArrayToObject(lcm, "nodes");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(nodes, cJSON_CreateNumber((double)ids[i]));
    cJSON_AddNumberToObject(lcm, "stubbed", stubbed);
    *out = res;
done:
    if (!*out)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: the host's compaction runs unchanged: %s",
                   e ? e : "the DAG could not cover the compacted messages");
    free(e);
    free(text);
    free(ids);
    return AP_OK;
}

int lcm_glue_compact(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)ev;
    (void)err;
    /* The host's context now starts at its compaction; a pinned cut whose anchor is still
     * there keeps applying, one whose anchor left is dropped by the next request. */
    if (p->lcm) projstate_pin_flush(p->lcm->proj, p->lcm->st);
    return AP_OK;
}

int lcm_glue_tree(lc_plugin *p, const cJSON *ev, char **err)
{
    (void)err;
    char *e = NULL, *warn = NULL;
    if (!p->lcm || !p->lcm->st) return AP_OK;
    /* A pass over the branch just left, or a cut prepared on it, no longer applies. */
    lcm_summ_invalidate(p);
    /* The worker is still storing the history in order: the branch just left, stored here,
     * would land ahead of it. The next request queues the branch now active behind it, and
     * the next session start's whole-branch comparison sets the marks. */
    if (projstate_catchup_left(p->lcm->proj) > 0) {
        plugin_log(p, AP_LEVEL_INFO, "lcm: tree move during the background catch-up: removed marks wait for the "
                   "next session start");
        return AP_OK;
    }
    const char *old_leaf = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "oldLeafId"));
    const char *new_leaf = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "newLeafId"));
    /* The marks were right for the old branch, so only the entries between the two leaves
     * and their common ancestor change. A host that cannot say (no get_entry, no leaf
     * ids) gets the whole-branch comparison. */
    int moved = AP_HOST_HAS(p->host, get_entry) && (old_leaf || new_leaf) &&
                ingest_move(p->lcm->st, lcm_entry_text, p, old_leaf, new_leaf, &warn, &e) == LC_OK;
    if (warn) plugin_log(p, AP_LEVEL_WARNING, "lcm: storing a branch's last messages failed: %s", warn);
    if (!moved) {
        if (e) plugin_log(p, AP_LEVEL_INFO, "lcm: tree move walked by whole branch: %s", e);
        lcm_mark_from_host(p, NULL);
    }
    free(warn);
    free(e);
    projstate_tree_moved(p->lcm->proj, p->lcm->st);
    return AP_OK;
}
