/*
 * mcp.c -- the MCP stdio server and its read-only tools over the stores in <home>/lcm/.
 * Every store is opened read-only per call and closed before the answer is written, so
 * the server holds no lock between calls and sees what a live session wrote meanwhile.
 */
#include "mcp.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "admin.h"
#include "bundle.h"
#include "catalog.h"
#include "cliview.h"
#include "contracts.h"
#include "config.h"
#include "embed.h"
#include "hybrid.h"
#include "ledger.h"
#include "recall.h"
#include "recall_args.h"
#include "store.h"
#include "util.h"

#define MCP_SERVER_NAME "lcm"
#define MCP_SERVER_VERSION LCM_VERSION
#define MCP_SESSIONS_PAGE 50
/* A request line longer than this is refused unread (a parse error, never echoed): no
 * tool argument needs more, and reading it whole cost 4x its size in memory. */
#define MCP_LINE_MAX (8u << 20)
/* Counts (offset, limit, max_tokens, char_offset) above this are refused, not wrapped. */
#define MCP_COUNT_MAX 1000000000LL

static const char *const mcp_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};

/* ---- argument helpers ------------------------------------------------------------------- */

static const char *mcp_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* A non-negative integer argument; -1 when present but not one (the caller refuses it):
 * 2^63 or 1e300 must not wrap to some other count, nor 2^64 to 0. */
static long long mcp_uint(const cJSON *o, const char *k, long long dflt)
{
    int64_t v = 0;
    int rc = lc_json_int(cJSON_GetObjectItemCaseSensitive(o, k), 0, MCP_COUNT_MAX, &v);
    return rc == LC_NOTFOUND ? dflt : rc == LC_OK ? (long long)v : -1;
}

/* A summary id given as 12, "12" or "#12"; 0 when absent, -1 when it is no id (refused). */
static int64_t mcp_summary_id(const cJSON *o)
{
    int64_t v = 0;
    int rc = lc_json_int(cJSON_GetObjectItemCaseSensitive(o, "summary_id"), 1, LC_JSON_INT_MAX, &v);
    return rc == LC_NOTFOUND ? 0 : rc == LC_OK ? v : -1;
}

static const char mcp_bad_summary_id[] = "summary_id is an integer from 1 to 9007199254740991";

/* Open one session's store read-only; it must be of this build's schema to be answered. */
static int mcp_open_session(const mcp_ctx *c, const char *id, store **out, char **err)
{
    int version = -1, rc;
    char *path = NULL, *why = NULL;
    *out = NULL;
    if (!id || !store_valid_id(id)) return lc_errf(err, LC_INVALID, "a session is a plain session id (see lcm_sessions)");
    if (!(path = catalog_path(c->home, id))) return lc_errf(err, LC_NOMEM, "out of memory");
    if (store_file_damaged(path, &why)) {
        rc = lc_errf(err, LC_INVALID, "session %s has a damaged store (%s): not a readable SQLite database;"
                     " `/lcm doctor --repair` in that session rebuilds it", id, why ? why : "?");
        goto done;
    }
    rc = catalog_open(c->home, id, CATALOG_READ, out, &version, err);
    if (rc == LC_NOTFOUND)
        rc = lc_errf(err, rc, "no store for session %s under %s/lcm (see lcm_sessions)", id, c->home);
    if (rc != LC_OK) goto done;
    if (!STORE_SCHEMA_ANSWERS(version)) {
        store_close(*out);
        *out = NULL;
        rc = lc_errf(err, LC_INVALID,
                     "session %s has an older-generation store (schema %d); `/lcm migrate` in a session upgrades it",
                     id, version);
    }
done:
    free(why);
    free(path);
    return rc;
}

/* ---- the store folder ----------------------------------------------------------------------- */

/* Not a readable SQLite database: store_file_damaged, or no schema could be read (which is
 * not "older"). */
static int mcp_damaged(const catalog_entry *e)
{
    return e->damaged || e->schema_version < 0;
}

/* Every store under <home>/lcm/ (of one project when cwd is given), newest first, with
 * its counts. A missing folder is an empty list. */
static int mcp_list_stores(const mcp_ctx *c, const char *cwd, int all_homes, catalog_list *out, char **err)
{
    catalog_filter f = {.cwd = cwd, .counts = 1, .order = CATALOG_NEWEST_FIRST, .all_homes = all_homes};
    return catalog_list_stores(c->home, &f, out, err);
}

/* ---- tools ------------------------------------------------------------------------------ */

/* recall's texts name the plugin's reader tool; here the reader is lcm_expand. */
static char *mcp_rename_reader(char *text)
{
    static const char from[] = "lcm_expand_query", to[] = "lcm_expand";
    sbuf b = {0};
    const char *p = text, *hit;
    if (!text || !strstr(text, from)) return text;
    while ((hit = strstr(p, from))) {
        sb_append(&b, p, (size_t)(hit - p));
        sb_puts(&b, to);
        p = hit + sizeof from - 1;
    }
    sb_puts(&b, p);
    free(text);
    return sb_detach(&b);
}

static int mcp_fail(char *msg, char **text, int *is_error)
{
    *is_error = 1;
    *text = msg ? msg : lc_strdup("lcm: failed");
    return *text ? LC_OK : LC_NOMEM;
}

/* The home's lcm.json (defaults when absent or unreadable: hybrid recall is then off). */
static void mcp_config(const mcp_ctx *c, lcm_config *cfg)
{
    char *path = lc_asprintf("%s/lcm.json", c->home);
    if (!path || lcm_config_load(path, cfg, NULL) != LC_OK) lcm_config_defaults(cfg);
    free(path);
}

/* lcm_grep mode "hybrid": words and meaning fused (hybrid.h). */
static int mcp_tool_grep_hybrid(const mcp_ctx *c, const cJSON *a, char **text, int *is_error)
{
    if (mcp_str(a, "since") || mcp_str(a, "until") || mcp_str(a, "role") || mcp_str(a, "sort"))
        return mcp_fail(lc_strdup("lcm_grep: mode hybrid does not take since, until, role or sort yet; mode fts "
                                  "(the default) does"),
                        text, is_error);
    lcm_config cfg;
    char *e = NULL;
    store *s = NULL;
    int rc;
    const char *query = mcp_str(a, "query");
    if (!query || mcp_str(a, "pattern"))
        return mcp_fail(lc_strdup("lcm_grep: mode hybrid takes a query (words or a question), not a pattern"), text,
                        is_error);
    long long off = mcp_uint(a, "offset", 0);
    if (off < 0) return mcp_fail(lc_strdup("lcm_grep: offset is an integer from 0 to 1000000000"), text, is_error);
    mcp_config(c, &cfg);
    if (!cfg.embeddings.enabled) {
        lcm_config_free(&cfg);
        return mcp_fail(lc_asprintf("lcm_grep: %s", embed_not_configured), text, is_error);
    }
    hybrid_opts o = {.query = query, .cfg = &cfg.embeddings, .offset = (size_t)off, .redact = 1,
                     .include_removed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "include_removed"))};
    const char *scope_s = mcp_str(a, "scope"), *session = mcp_str(a, "session");
    if (!scope_s) scope_s = session ? "session" : "all_sessions";
    recall_scope scope = RECALL_SCOPE_SESSION;
    if (recall_scope_parse(scope_s, &scope, NULL) == LC_OK && scope != RECALL_SCOPE_SESSION) {
        if (recall_scope_check(c->home, scope, &e) != LC_OK) {
            lcm_config_free(&cfg);
            return mcp_fail(e, text, is_error);
        }
        const char *cwd = mcp_str(a, "cwd");
        if (!cwd) cwd = c->cwd;
        if (scope == RECALL_SCOPE_SESSIONS && !cwd) {
            lcm_config_free(&cfg);
            return mcp_fail(lc_strdup("lcm_grep: scope sessions needs a cwd (the project folder)"), text, is_error);
        }
        rc = hybrid_grep_sessions(c->home, NULL, cwd ? cwd : "", scope, &o, text, &e);
    } else {
        if (strcmp(scope_s, "session") != 0) session = scope_s;
        if (!session) {
            lcm_config_free(&cfg);
            return mcp_fail(lc_strdup("lcm_grep: scope session needs a session id (see lcm_sessions)"), text, is_error);
        }
        if ((rc = mcp_open_session(c, session, &s, &e)) == LC_OK) {
            char *body = NULL;
            rc = hybrid_grep(s, &o, &body, &e);
            store_close(s);
            if (rc == LC_OK && !(*text = lc_asprintf("session %s\n%s", session, body))) rc = LC_NOMEM;
            free(body);
        }
    }
    lcm_config_free(&cfg);
    if (rc != LC_OK) return mcp_fail(e ? e : lc_strdup("lcm_grep: out of memory"), text, is_error);
    *text = mcp_rename_reader(*text);
    return *text ? LC_OK : LC_NOMEM;
}

static int mcp_tool_grep(const mcp_ctx *c, const cJSON *a, char **text, int *is_error)
{
    recall_grep_opts o = {0};
    recall_result r;
    store *s = NULL;
    char *e = NULL;
    int rc;
    const char *mode = mcp_str(a, "mode");
    if (mode && strcmp(mode, "hybrid") == 0) return mcp_tool_grep_hybrid(c, a, text, is_error);
    if (mode && strcmp(mode, "fts") != 0)
        return mcp_fail(lc_asprintf("lcm_grep: mode is \"fts\" (default) or \"hybrid\", not \"%s\"", mode), text,
                        is_error);
    o.query = mcp_str(a, "query");
    o.pattern = mcp_str(a, "pattern");
    if (!o.query == !o.pattern)
        return mcp_fail(lc_strdup("lcm_grep: give exactly one of query (full-text) or pattern (regex)"), text,
                        is_error);
    long long off = mcp_uint(a, "offset", 0);
    long long lim = mcp_uint(a, "limit", 0);
    if (off < 0 || lim < 0)
        return mcp_fail(lc_strdup("lcm_grep: offset and limit are integers from 0 to 1000000000"), text, is_error);
    o.offset = (size_t)off;
    o.limit = (size_t)lim; /* 0: recall's page */
    o.case_sensitive = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "case_sensitive"));
    o.include_removed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "include_removed"));
    o.resume = mcp_str(a, "resume");
    o.summary_id = mcp_summary_id(a);
    if (o.summary_id < 0) return mcp_fail(lc_asprintf("lcm_grep: %s", mcp_bad_summary_id), text, is_error);
    o.redact = 1;
    if (recall_args_grep_filters(a, (double)lc_epoch_ms(), &o, &e) != LC_OK) return mcp_fail(e, text, is_error);
    /* scope: "all_sessions" (default), "sessions" (one project, by cwd), "fleet" (every
     * session of the store, when lcm.json allows it), "session" with a `session` argument,
     * or a session id given directly as the scope. */
    const char *scope_s = mcp_str(a, "scope"), *session = mcp_str(a, "session");
    recall_scope scope = RECALL_SCOPE_SESSION;
    if (!scope_s) scope_s = session ? "session" : "all_sessions";
    if (recall_scope_parse(scope_s, &scope, NULL) == LC_OK && scope != RECALL_SCOPE_SESSION) {
        if (recall_scope_check(c->home, scope, &e) != LC_OK) return mcp_fail(e, text, is_error);
        const char *cwd = mcp_str(a, "cwd");
        if (!cwd) cwd = c->cwd;
        if (scope == RECALL_SCOPE_SESSIONS && !cwd)
            return mcp_fail(lc_strdup("lcm_grep: scope sessions needs a cwd (the project folder)"), text, is_error);
        rc = recall_grep_sessions(c->home, NULL, cwd ? cwd : "", scope, &o, &r, &e);
        if (rc != LC_OK) return mcp_fail(e, text, is_error);
        *text = recall_grep_format(&o, scope, &r);
        recall_result_free(&r);
        return *text ? LC_OK : LC_NOMEM;
    }
    if (strcmp(scope_s, "session") != 0) session = scope_s;
    if (!session) return mcp_fail(lc_strdup("lcm_grep: scope session needs a session id (see lcm_sessions)"), text, is_error);
    if (mcp_open_session(c, session, &s, &e) != LC_OK) return mcp_fail(e, text, is_error);
    rc = recall_grep(s, &o, &r, &e);
    store_close(s);
    if (rc != LC_OK) return mcp_fail(e, text, is_error);
    char *body = recall_grep_format(&o, RECALL_SCOPE_SESSION, &r);
    recall_result_free(&r);
    *text = body ? lc_asprintf("session %s\n%s", session, body) : NULL;
    free(body);
    return *text ? LC_OK : LC_NOMEM;
}

static int mcp_tool_describe(const mcp_ctx *c, const cJSON *a, char **text, int *is_error)
{
    store *s = NULL;
    char *e = NULL, idbuf[32];
    const char *id = mcp_str(a, "id");
    if (!id && mcp_summary_id(a) < 0) return mcp_fail(lc_asprintf("lcm_describe: %s", mcp_bad_summary_id), text, is_error);
    if (!id && mcp_summary_id(a) > 0) {
        snprintf(idbuf, sizeof idbuf, "%lld", (long long)mcp_summary_id(a));
        id = idbuf;
    }
    if (!id) id = mcp_str(a, "path");
    if (!id) return mcp_fail(lc_strdup("lcm_describe: give id (#12, an entry id, a path or a content id) or summary_id"), text, is_error);
    if (mcp_open_session(c, mcp_str(a, "session"), &s, &e) != LC_OK) return mcp_fail(e, text, is_error);
    int rc = recall_describe(s, id, 1, text, &e);
    store_close(s);
    if (rc != LC_OK) return mcp_fail(e, text, is_error);
    return LC_OK;
}

static int mcp_tool_expand(const mcp_ctx *c, const cJSON *a, char **text, int *is_error)
{
    recall_expand_opts o = {0};
    char *e = NULL;
    o.summary_id = mcp_summary_id(a);
    if (o.summary_id < 0) return mcp_fail(lc_asprintf("lcm_expand: %s", mcp_bad_summary_id), text, is_error);
    o.entry_id = mcp_str(a, "entry_id");
    o.question = mcp_str(a, "question");
    if (!o.question) o.question = mcp_str(a, "query");
    long long mt = mcp_uint(a, "max_tokens", 0), co = mcp_uint(a, "char_offset", 0);
    if (mt < 0 || co < 0)
        return mcp_fail(lc_strdup("lcm_expand: max_tokens and char_offset are integers from 0 to 1000000000"), text, is_error);
    o.max_tokens = (size_t)mt;
    o.char_offset = (size_t)co;
    o.redact = 1;
    if (!o.summary_id && !o.entry_id && !o.question)
        return mcp_fail(lc_strdup("lcm_expand: give summary_id, entry_id or question"), text, is_error);
    const char *session = mcp_str(a, "session");
    if (!session) return mcp_fail(lc_strdup("lcm_expand: session is required (see lcm_sessions)"), text, is_error);
    /* No completion function: the reader returns verbatim windows of the originals. */
    if (recall_expand_session(c->home, session, &o, NULL, NULL, text, &e) != LC_OK)
        return mcp_fail(e, text, is_error);
    free(e);
    return LC_OK;
}

/* A sub-agent store's type (malloc'd, NULL when unknown): its own meta, else what its
 * session's store learnt of it (Claude Code names a sub-agent's type only in the result of
 * the call that started it, in the session's file). */
static char *mcp_subagent_type(const catalog_list *l, const catalog_entry *v)
{
    cJSON *sa = v->subagent ? cJSON_Parse(v->subagent) : NULL, *all = NULL;
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(sa, "type"), *id = cJSON_GetObjectItemCaseSensitive(sa, "id");
    char *out = cJSON_IsString(ty) ? lc_strdup(ty->valuestring) : NULL;
    for (size_t j = 0; !out && cJSON_IsString(id) && j < l->n; j++) {
        const catalog_entry *p = &l->v[j];
        if (!p->subagents || !p->session_id || strcmp(p->session_id, v->parent_session) != 0) continue;
        all = cJSON_Parse(p->subagents);
        ty = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(all, id->valuestring), "type");
        if (cJSON_IsString(ty)) out = lc_strdup(ty->valuestring);
        cJSON_Delete(all);
    }
    cJSON_Delete(sa);
    return out;
}

/* The listing's order with each sub-agent's store right under its session's (when that one
 * is listed too): order[k] is the k-th entry to show. */
static void mcp_sessions_order(const catalog_list *l, size_t *order)
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        const catalog_entry *v = &l->v[i];
        int under = 0;
        for (size_t j = 0; v->parent_session && j < l->n && !under; j++)
            under = j != i && l->v[j].session_id && !strcmp(l->v[j].session_id, v->parent_session);
        if (under) continue; /* shown with its parent */
        order[k++] = i;
        for (size_t j = 0; j < l->n && v->session_id; j++)
            if (j != i && l->v[j].parent_session && !strcmp(l->v[j].parent_session, v->session_id)) order[k++] = j;
    }
}

/* `lcm sessions`' line for a person: short id, date, size, folder, then the title (its first
 * request) in what is left of a terminal's width (whole, up to 200 bytes, elsewhere). */
static void mcp_session_line(const mcp_ctx *c, const catalog_list *l, size_t i, const char *date, sbuf *b)
{
    const catalog_entry *v = &l->v[i];
    char *id = cliview_short_id(l, i), *folder = NULL, *title = NULL, sums[48] = "";
    const char *home = getenv("HOME"), *cwd = v->cwd && *v->cwd ? v->cwd : "?";
    size_t hl = home ? strlen(home) : 0;
    if (hl > 1 && !strncmp(cwd, home, hl) && (cwd[hl] == '/' || !cwd[hl])) folder = lc_asprintf("~%s", cwd + hl);
    else folder = lc_strdup(cwd);
    /* a long folder keeps its end, the part that names the project */
    if (folder && strlen(folder) > 24) {
        char *cut = lc_asprintf("\xE2\x80\xA6%s", folder + lc_utf8_back(folder, strlen(folder) - 22));
        free(folder);
        folder = cut;
    }
    if (mcp_damaged(v)) {
        /* nothing of it could be counted or read: what it is, and what rebuilds it */
        sb_printf(b, "%s  %s  [damaged store: not a readable SQLite database; `lcm doctor --repair` rebuilds it]\n",
                  id ? id : v->session_id, date ? date : "?");
        free(folder);
        free(id);
        return;
    }
    if (v->summaries > 0) snprintf(sums, sizeof sums, "  %lld summaries", (long long)v->summaries);
    sb_printf(b, "%s  %s  %lld msgs%s  %s  ", id ? id : v->session_id, date ? date : "?", (long long)v->messages,
              sums, folder ? folder : cwd);
    size_t line_start = b->len;
    while (line_start > 0 && b->p[line_start - 1] != '\n') line_start--;
    size_t used = 0, width = c->width > 0 ? (size_t)c->width : SIZE_MAX;
    cliview_fit(b->p + line_start, b->len - line_start, SIZE_MAX, &used);
    if (!STORE_SCHEMA_ANSWERS(v->schema_version)) title = lc_strdup("[older-generation store: lcm migrate --apply]");
    else if (used + 8 < width) title = cliview_title(v, 200);
    if (title) {
        /* cut by characters to what is left of the line */
        size_t room = width > used ? width - used : 0, tl = strlen(title);
        if (cliview_fit(title, tl, room, NULL) == tl) sb_puts(b, title);
        else if (room > 1) sb_printf(b, "%.*s\xE2\x80\xA6", (int)cliview_fit(title, tl, room - 1, NULL), title);
    }
    sb_putc(b, '\n');
    free(title);
    free(folder);
    free(id);
}

static int mcp_tool_sessions(const mcp_ctx *c, const cJSON *a, char **text, int *is_error)
{
    catalog_list l = {0};
    size_t shown = 0;
    char *e = NULL;
    sbuf b = {0};
    const char *cwd = mcp_str(a, "cwd"), *scope_s = mcp_str(a, "scope");
    recall_scope scope = RECALL_SCOPE_ALL_SESSIONS;
    long long off = mcp_uint(a, "offset", 0), lim = mcp_uint(a, "limit", MCP_SESSIONS_PAGE);
    if (off < 0 || lim < 0) return mcp_fail(lc_strdup("lcm_sessions: offset and limit are integers from 0 to 1000000000"), text, is_error);
    if (lim == 0) lim = MCP_SESSIONS_PAGE;
    /* scope: all_sessions (default: every session of this home), sessions (one project:
     * cwd, default the server's), fleet (every session of the store, when allowed). */
    if (scope_s && (recall_scope_parse(scope_s, &scope, NULL) != LC_OK || scope == RECALL_SCOPE_SESSION))
        return mcp_fail(lc_strdup("lcm_sessions: scope is sessions, all_sessions or fleet"), text, is_error);
    if (recall_scope_check(c->home, scope, &e) != LC_OK) return mcp_fail(e, text, is_error);
    if (scope == RECALL_SCOPE_SESSIONS && !cwd) cwd = c->cwd;
    if (scope == RECALL_SCOPE_SESSIONS && !cwd)
        return mcp_fail(lc_strdup("lcm_sessions: scope sessions needs a cwd (the project folder)"), text, is_error);
    if (mcp_list_stores(c, cwd, scope == RECALL_SCOPE_FLEET, &l, &e) != LC_OK) return mcp_fail(e, text, is_error);
    size_t *order = l.n ? malloc(l.n * sizeof *order) : NULL;
    if (l.n && !order) {
        catalog_list_free(&l);
        return mcp_fail(lc_strdup("lcm_sessions: out of memory"), text, is_error);
    }
    mcp_sessions_order(&l, order);
    for (size_t k = (size_t)off; k < l.n && shown < (size_t)lim; k++) {
        const catalog_entry *v = &l.v[order[k]];
        char *date = lc_utc_format(v->created, "%Y-%m-%d %H:%M", "?");
        shown++;
        if (v->parent_session) {
            char *type = mcp_subagent_type(&l, v);
            sb_printf(&b, "  sub-agent%s%s of %s: ", type ? " " : "", type ? type : "", v->parent_session);
            free(type);
        }
        if (c->cli && !v->parent_session) {
            mcp_session_line(c, &l, order[k], date, &b);
            free(date);
            continue;
        }
        sb_printf(&b, "%s  %s  %lld messages  %lld summaries  cwd %s%s\n", v->session_id, date ? date : "?",
                  (long long)v->messages, (long long)v->summaries, v->cwd && *v->cwd ? v->cwd : "?",
                  mcp_damaged(v) ? "  [damaged store: not a readable SQLite database; `/lcm doctor --repair` in its session rebuilds it]"
                  : STORE_SCHEMA_ANSWERS(v->schema_version) ? "" : "  [older-generation store: not searchable until migrated]");
        free(date);
    }
    free(order);
    char *body = sb_detach(&b);
    const char *fleet = scope != RECALL_SCOPE_FLEET ? ""
                        : l.shared ? "; fleet: every session of the shared store"
                                   : "; fleet: the embedded SQLite store is not shared, so every session of this agent home";
    if (c->cli && body) {
        /* a person's header: the paging only when there is more than this page */
        char *page = (size_t)off + shown < l.n || off
                         ? lc_asprintf("; showing %lld-%lld%s", off + 1, off + (long long)shown,
                                       (size_t)off + shown < l.n ? "; more: --offset N" : "")
                         : lc_strdup("");
        *text = page ? lc_asprintf("%zu stores under %s/lcm%s%s%s%s\n%s", l.n, c->home, cwd ? " with cwd " : "",
                                   cwd ? cwd : "", fleet, page, body)
                     : NULL;
        free(page);
    } else
    *text = body ? lc_asprintf("%zu stores under %s/lcm%s%s%s; showing %zu from offset %lld%s\n%s", l.n, c->home,
                               cwd ? " with cwd " : "", cwd ? cwd : "", fleet, shown, off,
                               (size_t)off + shown < l.n ? " (more: raise offset)" : "", body)
                 : NULL;
    free(body);
    catalog_list_free(&l);
    return *text ? LC_OK : LC_NOMEM;
}

#define MCP_STATUS_SIZES 20

static int mcp_by_bytes(const void *a, const void *b)
{
    int64_t x = (*(const catalog_entry *const *)a)->bytes, y = (*(const catalog_entry *const *)b)->bytes;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* What the home's stores take on disk, store by store (the largest first, at most
 * MCP_STATUS_SIZES of them), their total, and what `retention` says about it. */
static char *mcp_sizes(const catalog_list *l, const lcm_config *cfg)
{
    const catalog_entry **v = calloc(l->n ? l->n : 1, sizeof *v);
    sbuf b = {0};
    int64_t total = 0;
    if (!v) return NULL;
    for (size_t i = 0; i < l->n; i++) {
        v[i] = &l->v[i];
        total += l->v[i].bytes;
    }
    qsort(v, l->n, sizeof *v, mcp_by_bytes);
    sb_printf(&b, "home size: %.1f MB in %zu store files", (double)total / 1e6, l->n);
    if (cfg->retention.enabled) {
        sb_puts(&b, "; retention: ");
        if (cfg->retention.days) sb_printf(&b, "sessions idle over %ld days", cfg->retention.days);
        else sb_puts(&b, "no age limit");
        if (cfg->retention.max_gb > 0) sb_printf(&b, ", home cap %.1f MB", cfg->retention.max_gb * 1000.0);
        sb_puts(&b, " (lcm gc --retention shows what it would delete)");
    } else
        sb_puts(&b, "; retention: off (nothing is deleted unless lcm.json \"retention\" says so)");
    for (size_t i = 0; i < l->n && i < MCP_STATUS_SIZES; i++)
        sb_printf(&b, "\n  %8.1f MB  %s", (double)v[i]->bytes / 1e6, v[i]->session_id);
    if (l->n > MCP_STATUS_SIZES) sb_printf(&b, "\n  ... %zu smaller stores", l->n - MCP_STATUS_SIZES);
    free(v);
    return sb_detach(&b);
}

/* Hybrid recall's coverage summed over the stores (a catalog_walk). */
typedef struct mcp_coverage {
    const char *model;
    int64_t messages, embedded, other;
} mcp_coverage;

static int mcp_coverage_add(void *cb, const catalog_entry *e, size_t i, store **s, char **err)
{
    mcp_coverage *c = cb;
    store_vec_coverage cov = {0};
    (void)e;
    (void)i;
    (void)err;
    if (store_vec_coverage_get(*s, c->model, &cov, NULL) == LC_OK) {
        c->messages += cov.messages;
        c->embedded += cov.messages_embedded;
        c->other += cov.messages_other + cov.summaries_other;
    }
    store_vec_coverage_free(&cov);
    return LC_OK;
}

static int mcp_tool_status(const mcp_ctx *c, const cJSON *a, char **text, int *is_error)
{
    (void)a;
    catalog_list l = {0};
    size_t older = 0, damaged = 0;
    int64_t msgs = 0, sums = 0, bytes = 0;
    char *e = NULL, *newest = NULL;
    if (mcp_list_stores(c, NULL, 0, &l, &e) != LC_OK) {
        /* The store cannot be listed: say which one, and that it is offline. */
        char *why = lc_asprintf("offline (%s)", e ? e : "?");
        char *sl = why ? admin_store_line(c->home, NULL, why) : NULL;
        char *msg = sl ? lc_asprintf("lcm (read-only MCP server %s)\n%s", MCP_SERVER_VERSION, sl) : NULL;
        free(why);
        free(sl);
        free(e);
        return mcp_fail(msg, text, is_error);
    }
    char *store_line = admin_store_line(c->home, NULL, NULL);
    for (size_t i = 0; i < l.n; i++) {
        if (mcp_damaged(&l.v[i])) {
            damaged++;
            continue; /* nothing could be counted */
        }
        msgs += l.v[i].messages;
        sums += l.v[i].summaries;
        bytes += l.v[i].db_bytes;
        if (!STORE_SCHEMA_ANSWERS(l.v[i].schema_version)) older++;
    }
    char dmg[96] = "";
    if (damaged)
        snprintf(dmg, sizeof dmg, ", %zu damaged (`/lcm doctor --repair` in its session rebuilds it)", damaged);
    if (l.n) newest = lc_utc_format(l.v[0].created, "%Y-%m-%d %H:%M", "?");
    char size[24];
    cliview_size(bytes, size);
    if (c->cli)
        *text = lc_asprintf("lcm %s, agent home %s\n%s\nstores: %s/lcm\nsessions: %zu (%zu older-generation%s)\n"
                            "messages: %lld\nsummaries: %lld\nsize: %s\nnewest: %s%s%s\nschema: %d",
                            LCM_VERSION, c->home, store_line ? store_line : "store: ?", c->home, l.n, older, dmg,
                            (long long)msgs, (long long)sums, size, l.n ? l.v[0].session_id : "none", l.n ? " " : "",
                            l.n ? (newest ? newest : "?") : "", STORE_SCHEMA_VERSION);
    else
    *text = lc_asprintf("lcm (read-only MCP server %s)\n%s\nstores: %s/lcm\nsessions: %zu (%zu older-generation%s)\n"
                        "messages: %lld\nsummaries: %lld\nbytes: %lld\nnewest: %s%s%s\nschema: %d",
                        MCP_SERVER_VERSION, store_line ? store_line : "store: ?", c->home, l.n, older, dmg,
                        (long long)msgs, (long long)sums, (long long)bytes,
                        l.n ? l.v[0].session_id : "none", l.n ? " " : "", l.n ? (newest ? newest : "?") : "",
                        STORE_SCHEMA_VERSION);
    free(newest);
    free(store_line);
    /* Hybrid recall's coverage, only when it is configured: a home without it reads as before. */
    lcm_config cfg;
    mcp_config(c, &cfg);
    char *sizes = *text ? mcp_sizes(&l, &cfg) : NULL;
    if (sizes) {
        char *t = lc_asprintf("%s\n%s", *text, sizes);
        free(*text);
        *text = t;
    }
    free(sizes);
    if (*text && cfg.embeddings.enabled) {
        /* Every store that opens, whatever its schema: one that cannot hold vectors counts none. */
        mcp_coverage cov = {.model = cfg.embeddings.model};
        char *more = NULL;
        if (catalog_walk(&l, 0, CATALOG_ANY_SCHEMA, mcp_coverage_add, &cov, NULL, NULL) == LC_OK)
            more = lc_asprintf("%s\nembeddings: %lld of %lld messages embedded (model %s)%s", *text,
                               (long long)cov.embedded, (long long)cov.messages, cfg.embeddings.model,
                               cov.other ? "; some rows carry another model's vectors (lcm reindex --embeddings --force)"
                                         : "");
        free(*text);
        *text = more;
    }
    lcm_config_free(&cfg);
    catalog_list_free(&l);
    /* The home store's counts, only when there is one (a home that never dreamed reads as
     * it always did). */
    char *cl = *text ? contracts_status_line(c->home) : NULL;
    if (cl) {
        char *t = lc_asprintf("%s\ncontracts: %s", *text, cl);
        free(cl);
        if (!t) return LC_NOMEM;
        free(*text);
        *text = t;
    }
    /* What LCM's own model calls spent (ledger.h), only when the ledger holds some. */
    char *spend = *text ? ledger_status_line(c->home) : NULL;
    if (spend) {
        char *t = lc_asprintf("%s\n%s", *text, spend);
        free(spend);
        if (!t) return LC_NOMEM;
        free(*text);
        *text = t;
    }
    return *text ? LC_OK : LC_NOMEM;
}

/* lcm_contracts: list and show read; reject and retract (which only take a rule out of
 * the bundle) change a contract with "confirm": true. Approve and supersede put a rule in
 * every next session's bundle, so only a person does them (`lcm contracts`, `/lcm
 * contracts`): a client's model must never make its own rule Active. */
static int mcp_tool_contracts(const mcp_ctx *c, const cJSON *a, char **text, int *is_error)
{
    const char *action = mcp_str(a, "action"), *argv[8];
    char idbuf[32], *e = NULL;
    int argc = 0;
    if (!action) action = "list";
    int reads = !strcmp(action, "list") || !strcmp(action, "show");
    if (!strcmp(action, "approve") || !strcmp(action, "supersede"))
        return mcp_fail(lc_asprintf("lcm_contracts %s is refused over MCP: a contract becomes Active only through a "
                                    "person (`lcm contracts %s ID` in a terminal, or `/lcm contracts %s ID` in the "
                                    "agent); nothing was changed",
                                    action, action, action),
                        text, is_error);
    if (!reads && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "confirm")))
        return mcp_fail(lc_asprintf("lcm_contracts %s changes a contract: call again with \"confirm\": true once the "
                                    "user agreed (nothing was changed)", action),
                        text, is_error);
    argv[argc++] = action;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
    int64_t idv = 0;
    if (cJSON_IsNull(id) || (cJSON_IsString(id) && !id->valuestring[0])) id = NULL; /* as before: no id */
    if (id && lc_json_int(id, 1, LC_JSON_INT_MAX, &idv) != LC_OK)
        return mcp_fail(lc_strdup("lcm_contracts: id is a contract number from 1 to 9007199254740991 (nothing was changed)"),
                        text, is_error);
    if (id) {
        snprintf(idbuf, sizeof idbuf, "%lld", (long long)idv);
        argv[argc++] = idbuf;
    }
    static const char *const opts[][2] = {{"reason", "--reason"}, {"state", "--state"}};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (mcp_str(a, opts[i][0])) {
            argv[argc++] = opts[i][1];
            argv[argc++] = mcp_str(a, opts[i][0]);
        }
    if (contracts_command(c->home, argc, argv, "mcp client (lcm_contracts)", NULL, text, &e) != LC_OK)
        return mcp_fail(e, text, is_error);
    return LC_OK;
}

/* A session's handoff: the stored one (`lcm handoff --generate`), else one built now from
 * its messages and labelled so (the server writes nothing). */
static int mcp_tool_handoff(const mcp_ctx *c, const cJSON *a, char **text, int *is_error)
{
    store *s = NULL;
    char *e = NULL, *sid = NULL, *stored = NULL, *made = NULL;
    const char *session = mcp_str(a, "session"), *cwd = mcp_str(a, "cwd");
    int rc;
    if (!session) {
        if ((rc = bundle_latest_session(c->home, cwd ? cwd : c->cwd, NULL, &sid, &e)) != LC_OK)
            return mcp_fail(e, text, is_error);
        if (!sid)
            return mcp_fail(lc_asprintf("lcm_handoff: no stored session of %s (give session, see lcm_sessions)",
                                        cwd ? cwd : c->cwd),
                            text, is_error);
        session = sid;
    }
    if (mcp_open_session(c, session, &s, &e) != LC_OK) {
        free(sid);
        return mcp_fail(e, text, is_error);
    }
    if ((stored = store_meta_get(s, BUNDLE_HANDOFF_KEY)) && *stored) {
        *text = lc_asprintf("%s", stored);
    } else if ((rc = bundle_handoff_make(s, session, &made, &e)) == LC_OK) {
        *text = lc_asprintf("%s(no handoff was stored for this session: built now from its messages; "
                            "`lcm handoff --generate --session %s` stores one)\n", made, session);
    } else {
        store_close(s);
        free(sid);
        free(stored);
        return mcp_fail(e, text, is_error);
    }
    store_close(s);
    free(sid);
    free(stored);
    free(made);
    return *text ? LC_OK : LC_NOMEM;
}

typedef int (*mcp_tool_fn)(const mcp_ctx *c, const cJSON *a, char **text, int *is_error);

/* What a tool does, for its annotations: MCP_READS reads the stores only; MCP_CHANGES
 * changes rows of the home store (lcm_contracts' reject and retract). */
enum { MCP_READS, MCP_CHANGES };

static const struct mcp_tool {
    const char *name, *description, *schema;
    mcp_tool_fn fn;
    int effect;
} mcp_tools[] = {
    {"lcm_grep",
     "Search the lossless history of agent sessions (every message verbatim, also what compaction removed): "
     "query (plain words or a question; punctuation is fine; one list ranked across every session of the scope, "
     "more of the query's words first) or pattern (PCRE2 regex). Narrow with \"a phrase\", -word, AND, role "
     "(user/assistant/tool/thinking), since/until (2h, 3d, yesterday, last week, 2026-03-01) and sort "
     "(newest/oldest). 40 hits a page across sessions, 20 in one; each hit shows its date and time and names its "
     "session and entry id for lcm_expand.",
     "{\"type\":\"object\",\"properties\":{"
     "\"query\":{\"type\":\"string\",\"description\":\"" RECALL_ARGS_QUERY_HELP "\"},"
     "\"pattern\":{\"type\":\"string\",\"description\":\"regular expression (PCRE2) over the full text\"},"
     "\"scope\":{\"type\":\"string\",\"description\":\"all_sessions (default: every session of this agent home), "
     "sessions (one project: cwd), fleet (every session in the shared store, whoever wrote it; only when the agent "
     "home's lcm.json sets fleetRecall), session (with session), or a session id\"},"
     "\"session\":{\"type\":\"string\",\"description\":\"a session id from lcm_sessions\"},"
     "\"cwd\":{\"type\":\"string\",\"description\":\"project folder for scope sessions (default: the server's)\"},"
     "\"case_sensitive\":{\"type\":\"boolean\"},"
     "\"include_removed\":{\"type\":\"boolean\",\"description\":\"include abandoned branches, labelled [removed]\"},"
     "\"resume\":{\"type\":\"string\",\"description\":\"pattern in one session: continue a scan that stopped at its time bound, from the point its output names\"},"
     "\"summary_id\":{\"type\":\"integer\",\"description\":\"with a session: search one summary's originals\"},"
     "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"hits to skip (paging)\"},"
     "\"limit\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"hits per page (default 20)\"},"
     "\"mode\":{\"type\":\"string\",\"enum\":[\"fts\",\"hybrid\"],\"description\":\"hybrid: the query's words and "
     "its meaning (embeddings configured in lcm.json) fused by reciprocal rank; finds paraphrases words miss\"},"
     RECALL_ARGS_FILTER_SCHEMA "}}",
     mcp_tool_grep, MCP_READS},
    {"lcm_describe",
     "Describe a summary of a session (text, tiers, span, cost of reading its originals) or a stored file handle.",
     "{\"type\":\"object\",\"properties\":{"
     "\"session\":{\"type\":\"string\",\"description\":\"a session id from lcm_sessions\"},"
     "\"id\":{\"type\":\"string\",\"description\":\"#12 (a summary), or a file handle's entry id, path or content id\"},"
     "\"summary_id\":{\"type\":\"integer\"}},\"required\":[\"session\"]}",
     mcp_tool_describe, MCP_READS},
    {"lcm_expand",
     "Read stored originals verbatim, in bounded windows: a summary's originals (summary_id), one message "
     "(entry_id, paged by char_offset) or the messages matching a question.",
     "{\"type\":\"object\",\"properties\":{"
     "\"session\":{\"type\":\"string\",\"description\":\"a session id from lcm_sessions or an lcm_grep hit\"},"
     "\"summary_id\":{\"type\":\"integer\"},"
     "\"entry_id\":{\"type\":\"string\"},"
     "\"question\":{\"type\":\"string\",\"description\":\"what to find (also the address when no id is given)\"},"
     "\"max_tokens\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"budget, default 10000\"},"
     "\"char_offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"with entry_id: continue at this character\"}},"
     "\"required\":[\"session\"]}",
     mcp_tool_expand, MCP_READS},
    {"lcm_sessions",
     "List the stored sessions, newest first: id, date, messages, summaries, cwd.",
     "{\"type\":\"object\",\"properties\":{"
     "\"cwd\":{\"type\":\"string\",\"description\":\"only sessions of this project folder\"},"
     "\"scope\":{\"type\":\"string\",\"enum\":[\"sessions\",\"all_sessions\",\"fleet\"],\"description\":"
     "\"all_sessions (default: every session of this agent home), sessions (one project: cwd, default the server's), "
     "fleet (every session in the shared store; only when lcm.json sets fleetRecall)\"},"
     "\"offset\":{\"type\":\"integer\",\"minimum\":0},"
     "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"default 50\"}}}",
     mcp_tool_sessions, MCP_READS},
    {"lcm_status",
     "Where the stores are and how much they hold (sessions, messages, summaries, bytes).",
     "{\"type\":\"object\",\"properties\":{}}", mcp_tool_status, MCP_READS},
    {"lcm_handoff",
     "The handoff of a session: where it stood (last requests, newest steps, last conclusion, each with the "
     "entry id lcm_expand reads). Default: the newest session of this project folder.",
     "{\"type\":\"object\",\"properties\":{"
     "\"session\":{\"type\":\"string\",\"description\":\"a session id from lcm_sessions\"},"
     "\"cwd\":{\"type\":\"string\",\"description\":\"project folder (default: the server's)\"}}}",
     mcp_tool_handoff, MCP_READS},
    {"lcm_contracts",
     "Behavior contracts (prefer / forbid / verify-before rules learned from past sessions): list them or show one "
     "with its trail; reject a Pending one or retract an Active one (reason required) with confirm: true. Approving "
     "or superseding is a person's act (lcm contracts / /lcm contracts), refused here.",
     "{\"type\":\"object\",\"properties\":{"
     "\"action\":{\"type\":\"string\",\"enum\":[\"list\",\"show\",\"reject\",\"retract\"]},"
     "\"id\":{\"type\":\"integer\",\"description\":\"the contract (not for list)\"},"
     "\"state\":{\"type\":\"string\",\"description\":\"list: only this state (Pending, Active, ...)\"},"
     "\"reason\":{\"type\":\"string\",\"description\":\"why (required to retract); kept in the trail\"},"
     "\"confirm\":{\"type\":\"boolean\",\"description\":\"true to make a change (the user agreed)\"}}}",
     mcp_tool_contracts, MCP_CHANGES},
};
#define MCP_N_TOOLS (sizeof mcp_tools / sizeof mcp_tools[0])

int mcp_tool_call(const mcp_ctx *c, const char *name, const cJSON *args, char **text, int *is_error)
{
    *text = NULL;
    *is_error = 0;
    for (size_t i = 0; i < MCP_N_TOOLS; i++) {
        if (strcmp(mcp_tools[i].name, name) != 0) continue;
        int rc = mcp_tools[i].fn(c, args, text, is_error);
        if (rc == LC_OK && !(*text = mcp_rename_reader(*text))) rc = LC_NOMEM;
        return rc;
    }
    return LC_NOTFOUND;
}

cJSON *mcp_tool_list(void)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < MCP_N_TOOLS; i++) {
        cJSON *t = cJSON_CreateObject(), *schema = cJSON_Parse(mcp_tools[i].schema);
        cJSON *ann = cJSON_CreateObject();
        if (!t || !schema || !ann) {
            cJSON_Delete(t);
            cJSON_Delete(schema);
            cJSON_Delete(ann);
            cJSON_Delete(arr);
            return NULL;
        }
        cJSON_AddStringToObject(t, "name", mcp_tools[i].name);
        cJSON_AddStringToObject(t, "description", mcp_tools[i].description);
        cJSON_AddItemToObject(t, "inputSchema", schema);
        /* The hints say what the tool does: the readers change nothing; lcm_contracts
         * may move a contract out of the bundle (reject, retract), which cannot be
         * undone and does not repeat (a second retract is refused). */
        int reads = mcp_tools[i].effect == MCP_READS;
        cJSON_AddBoolToObject(ann, "readOnlyHint", reads);
        if (!reads) {
            cJSON_AddBoolToObject(ann, "destructiveHint", 1);
            cJSON_AddBoolToObject(ann, "idempotentHint", 0);
        }
        cJSON_AddBoolToObject(ann, "openWorldHint", 0);
        cJSON_AddItemToObject(t, "annotations", ann);
        cJSON_AddItemToArray(arr, t);
    }
    return arr;
}

/* ---- JSON-RPC ----------------------------------------------------------------------------- */

static cJSON *mcp_error(const cJSON *id, int code, const char *msg)
{
    cJSON *r = cJSON_CreateObject(), *e = cJSON_CreateObject();
    if (!r || !e) {
        cJSON_Delete(r);
        cJSON_Delete(e);
        return NULL;
    }
    cJSON_AddStringToObject(r, "jsonrpc", "2.0");
    cJSON_AddItemToObject(r, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddItemToObject(r, "error", e);
    return r;
}

static cJSON *mcp_result(const cJSON *id, cJSON *result)
{
    cJSON *r = cJSON_CreateObject();
    if (!r || !result) {
        cJSON_Delete(r);
        cJSON_Delete(result);
        return NULL;
    }
    cJSON_AddStringToObject(r, "jsonrpc", "2.0");
    cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, 1));
    cJSON_AddItemToObject(r, "result", result);
    return r;
}

static cJSON *mcp_initialize(const cJSON *id, const cJSON *params)
{
    const char *asked = mcp_str(params, "protocolVersion");
    const char *version = MCP_PROTOCOL_LATEST;
    if (!asked) return mcp_error(id, MCP_INVALID_PARAMS, "initialize: params.protocolVersion is required");
    for (size_t i = 0; i < sizeof mcp_versions / sizeof mcp_versions[0]; i++)
        if (strcmp(asked, mcp_versions[i]) == 0) version = mcp_versions[i];
    cJSON *res = cJSON_CreateObject(), *caps = cJSON_CreateObject(), *tools = cJSON_CreateObject(),
          *info = cJSON_CreateObject();
    if (!res || !caps || !tools || !info) {
        cJSON_Delete(res);
        cJSON_Delete(caps);
        cJSON_Delete(tools);
        cJSON_Delete(info);
        return NULL;
    }
    cJSON_AddStringToObject(res, "protocolVersion", version);
    cJSON_AddBoolToObject(tools, "listChanged", 0);
    cJSON_AddItemToObject(caps, "tools", tools);
    cJSON_AddItemToObject(res, "capabilities", caps);
    cJSON_AddStringToObject(info, "name", MCP_SERVER_NAME);
    cJSON_AddStringToObject(info, "version", MCP_SERVER_VERSION);
    cJSON_AddItemToObject(res, "serverInfo", info);
    cJSON_AddStringToObject(res, "instructions",
                            "Access to lossless-context stores: every message of past agent sessions, "
                            "verbatim (read-only; lcm_contracts alone can reject or retract a contract). Start with lcm_grep (plain "
                            "words or a question; scope all_sessions by default; since/until, role and sort narrow it) or "
                            "lcm_sessions; read "
                            "originals with lcm_expand (session + entry_id or summary_id).");
    return mcp_result(id, res);
}

static cJSON *mcp_call(const mcp_ctx *c, const cJSON *id, const cJSON *params)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    char *text = NULL;
    int is_error = 0;
    if (!cJSON_IsObject(params) || !cJSON_IsString(name))
        return mcp_error(id, MCP_INVALID_PARAMS, "tools/call: params.name is required");
    if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args))
        return mcp_error(id, MCP_INVALID_PARAMS, "tools/call: params.arguments must be an object");
    int rc = mcp_tool_call(c, name->valuestring, cJSON_IsObject(args) ? args : NULL, &text, &is_error);
    if (rc == LC_OK && text) {
        /* Stored text leaves as valid UTF-8 without control or line-separator characters
         * (a client's JSON parser, or the model reading it, gets no invalid bytes). */
        char *clean = lc_text_clean(text, strlen(text), 0);
        free(text);
        text = clean;
    }
    if (rc == LC_NOTFOUND) {
        char *msg = lc_asprintf("Unknown tool: %s", name->valuestring);
        cJSON *r = mcp_error(id, MCP_INVALID_PARAMS, msg ? msg : "Unknown tool");
        free(msg);
        return r;
    }
    if (rc != LC_OK || !text) {
        free(text);
        return mcp_error(id, MCP_INTERNAL_ERROR, "out of memory");
    }
    cJSON *res = cJSON_CreateObject(), *content = cJSON_CreateArray(), *block = cJSON_CreateObject();
    if (res && content && block) {
        cJSON_AddStringToObject(block, "type", "text");
        cJSON_AddStringToObject(block, "text", text);
        cJSON_AddItemToArray(content, block);
        block = NULL;
        cJSON_AddItemToObject(res, "content", content);
        content = NULL;
        cJSON_AddBoolToObject(res, "isError", is_error);
    } else {
        cJSON_Delete(res);
        res = NULL;
    }
    cJSON_Delete(content);
    cJSON_Delete(block);
    free(text);
    return mcp_result(id, res);
}

/* One request or notification object; NULL when nothing is answered. */
static cJSON *mcp_dispatch(const mcp_ctx *c, const cJSON *msg)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
    /* A number id must come back as sent: 1e999 (no double holds it) or one past 2^53
     * (would come back rounded) cannot, so such a request is refused. */
    int id_ok = id && (cJSON_IsString(id) ||
                       (cJSON_IsNumber(id) && isfinite(id->valuedouble) && fabs(id->valuedouble) <= 9007199254740992.0));
    if (!cJSON_IsObject(msg)) return mcp_error(NULL, MCP_INVALID_REQUEST, "Invalid Request: not an object");
    /* A response from the client (we send no requests, so nothing waits for it). */
    if (!method && (cJSON_GetObjectItemCaseSensitive(msg, "result") || cJSON_GetObjectItemCaseSensitive(msg, "error")))
        return NULL;
    if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0 || !cJSON_IsString(method) ||
        (id && !id_ok) || (params && !cJSON_IsObject(params) && !cJSON_IsArray(params)))
        return mcp_error(id_ok ? id : NULL, MCP_INVALID_REQUEST,
                         id && !id_ok ? "Invalid Request: id must be a string or a number within +-2^53"
                                      : "Invalid Request");
    const char *m = method->valuestring;
    if (!id) return NULL; /* notifications (initialized, cancelled, ...) need no answer */
    if (strcmp(m, "initialize") == 0) return mcp_initialize(id, params);
    if (strcmp(m, "ping") == 0) return mcp_result(id, cJSON_CreateObject());
    if (strcmp(m, "tools/list") == 0) {
        cJSON *res = cJSON_CreateObject(), *tools = mcp_tool_list();
        if (!res || !tools) {
            cJSON_Delete(res);
            cJSON_Delete(tools);
            return NULL;
        }
        cJSON_AddItemToObject(res, "tools", tools);
        return mcp_result(id, res);
    }
    if (strcmp(m, "tools/call") == 0) return mcp_call(c, id, params);
    char *txt = lc_asprintf("Method not found: %.100s%s", m, strlen(m) > 100 ? "..." : "");
    cJSON *r = mcp_error(id, MCP_METHOD_NOT_FOUND, txt ? txt : "Method not found");
    free(txt);
    return r;
}

char *mcp_handle_line(const mcp_ctx *c, const char *line, size_t len)
{
    cJSON *in = cJSON_ParseWithLength(line, len), *out = NULL;
    char *text = NULL;
    if (!in) {
        out = mcp_error(NULL, MCP_PARSE_ERROR, "Parse error");
    } else if (cJSON_IsArray(in)) {
        /* A batch (protocol 2025-03-26): answer each request, in one array. */
        if (cJSON_GetArraySize(in) == 0) {
            out = mcp_error(NULL, MCP_INVALID_REQUEST, "Invalid Request: empty batch");
        } else {
            out = cJSON_CreateArray();
            const cJSON *m;
            cJSON_ArrayForEach(m, in)
            {
                cJSON *r = mcp_dispatch(c, m);
                if (r && out) cJSON_AddItemToArray(out, r);
                else cJSON_Delete(r);
            }
            if (out && cJSON_GetArraySize(out) == 0) {
                cJSON_Delete(out);
                out = NULL;
            }
        }
    } else {
        out = mcp_dispatch(c, in);
    }
    if (out) text = cJSON_PrintUnformatted(out);
    cJSON_Delete(in);
    cJSON_Delete(out);
    return text;
}

/* One line of at most MCP_LINE_MAX bytes into *line; a longer one is read to its end and
 * dropped (*too_long). -1 at the end of input. */
static ssize_t mcp_read_line(FILE *in, char **line, size_t *cap, int *too_long)
{
    size_t n = 0;
    int ch, any = 0;
    *too_long = 0;
    while ((ch = getc_unlocked(in)) != EOF) {
        any = 1;
        if (ch == '\n') break;
        if (*too_long) continue;
        if (n + 1 >= *cap) {
            size_t nc = *cap ? *cap * 2 : 4096;
            char *nl = realloc(*line, nc);
            if (!nl) return -1;
            *line = nl;
            *cap = nc;
        }
        (*line)[n++] = (char)ch;
        if (n > MCP_LINE_MAX) *too_long = 1;
    }
    if (!any) return -1;
    if (*line) (*line)[*too_long ? 0 : n] = '\0';
    return *too_long ? 0 : (ssize_t)n;
}

int mcp_serve(const mcp_ctx *c, FILE *in, FILE *out, char **err)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = LC_OK, too_long = 0;
    while ((n = mcp_read_line(in, &line, &cap, &too_long)) >= 0) {
        char *resp = NULL;
        if (too_long) {
            cJSON *e = mcp_error(NULL, MCP_PARSE_ERROR, "Parse error: a request line is at most 8 MiB");
            resp = e ? cJSON_PrintUnformatted(e) : NULL;
            cJSON_Delete(e);
            goto answer;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        size_t lead = 0;
        while (lead < (size_t)n && (line[lead] == ' ' || line[lead] == '\t')) lead++;
        if (lead == (size_t)n) continue;
        resp = mcp_handle_line(c, line + lead, (size_t)n - lead);
    answer:
        if (resp) {
            int bad = fputs(resp, out) < 0 || fputc('\n', out) == EOF || fflush(out) != 0;
            free(resp);
            if (bad) {
                rc = lc_errf(err, LC_ERR, "lcm mcp: writing to the client failed");
                break;
            }
        }
    }
    free(line);
    return rc;
}
