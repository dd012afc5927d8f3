/*
 * store_sqlite_search.c -- the SQLite backend's search primitives (store.h, "search"):
 * the FTS5 count, page and top-k over messages_fts, the pattern scan's walk, the DAG
 * cover of an entry, and the describe reads (a summary, its originals' totals, file
 * handles). Counting and paging read only the index: the removed and summary filters are
 * sets of rowids, so no message row is touched until a hit is shown. Recall owns what is
 * done with the rows.
 */
#include "store.h"
#include "store_sqlite_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "util.h"

/* The entries a node covers, through its descendants (?1 = summary id, 0 = none). */
#define STORE_SCOPE_CTE                                                                   \
    "WITH RECURSIVE sub(id) AS (SELECT ?1 UNION SELECT c.child_id FROM summary_children c" \
    " JOIN sub ON c.parent_id = sub.id),"                                                 \
    " scope(entry_id) AS (SELECT entry_id FROM summary_messages WHERE summary_id IN"      \
    " (SELECT id FROM sub)) "

/* The row columns every visit reads: id, entry_id, role, ordinal, removed, text, created. */
static store_search_row store_search_row_read(sqlite3_stmt *st)
{
    store_search_row r = {0};
    r.id = sqlite3_column_int64(st, 0);
    r.entry_id = (const char *)sqlite3_column_text(st, 1);
    r.role = (const char *)sqlite3_column_text(st, 2);
    r.ordinal = sqlite3_column_int64(st, 3);
    r.removed = sqlite3_column_int(st, 4);
    r.text = (const char *)sqlite3_column_text(st, 5);
    r.text_len = (size_t)sqlite3_column_bytes(st, 5);
    r.created = sqlite3_column_int64(st, 6);
    if (!r.text) r.text = "";
    return r;
}

static int store_search_row_visit(sqlite3_stmt *st, store_search_visit visit, void *ud, char **err)
{
    store_search_row r = store_search_row_read(st);
    return visit(ud, &r, err);
}

/* A page row whose match is in its thinking alone (lcm_cols: the `thinking` column, not
 * `text`): visited with its thinking as the text, derived from the verbatim JSON (columns
 * 7-8 of the row statement: raw_json, payload; 5 is the text, 6 the time). A row whose
 * thinking cannot be read is visited as it is. */
static int store_search_thinking_visit(sqlite3_stmt *st, store_search_visit visit, void *ud, char **err)
{
    char *json = NULL, *body = NULL, *thinking = NULL, *why = NULL;
    size_t len = 0;
    cJSON *m = NULL;
    int rc;
    if (store_sqlite_raw_column(st, 7, 5, 8, &json, &len, &why) == LC_OK && (m = store_derive_parse(json, len)) &&
        msg_index_text(m, &body, &thinking) == LC_OK && thinking) {
        store_search_row r = store_search_row_read(st);
        r.text = thinking;
        r.text_len = strlen(thinking);
        r.thinking = 1;
        rc = visit(ud, &r, err);
    } else {
        rc = store_search_row_visit(st, visit, ud, err);
    }
    cJSON_Delete(m);
    free(why);
    free(json);
    free(body);
    free(thinking);
    return rc;
}

/* ---- the rank: bm25 with a coverage term ---------------------------------------------------
 * lc_rank(messages_fts, 'w0,w1,...') scores a row, higher first:
 *   sum over the query's phrases present in the row of  w * idf * (1 + tf')
 * where tf' is bm25's saturated term frequency (k1 1.2, b 0.75, the row's length against the
 * average). The 1 is the coverage term: a phrase counts once for being there at all, so a
 * message holding more of the query's distinct words ranks above one repeating a single
 * word; idf makes a rare word count more than a common one; w is recall's weight (0 for
 * stopwords and excluded phrases). Computed from the index alone (the table is contentless). */

typedef struct store_rank_aux {
    int n;
    sqlite3_int64 rows;
    sqlite3_int64 *df; /* per phrase: rows holding it */
    double *idf;   /* per phrase */
    double *w;     /* per phrase */
    double avgdl;
} store_rank_aux;

static void store_rank_aux_free(void *p)
{
    store_rank_aux *a = p;
    if (!a) return;
    free(a->idf);
    free(a->w);
    free(a->df);
    free(a);
}

static int store_rank_count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ud)
{
    (void)api;
    (void)fts;
    (*(sqlite3_int64 *)ud)++;
    return SQLITE_OK;
}

static store_rank_aux *store_rank_prepare(const Fts5ExtensionApi *api, Fts5Context *fts, const char *weights)
{
    store_rank_aux *a = calloc(1, sizeof *a);
    sqlite3_int64 rows = 0, tokens = 0;
    if (!a) return NULL;
    a->n = api->xPhraseCount(fts);
    a->idf = calloc((size_t)a->n + 1, sizeof *a->idf);
    a->w = calloc((size_t)a->n + 1, sizeof *a->w);
    a->df = calloc((size_t)a->n + 1, sizeof *a->df);
    if (!a->idf || !a->w || !a->df) {
        store_rank_aux_free(a);
        return NULL;
    }
    api->xRowCount(fts, &rows);
    api->xColumnTotalSize(fts, -1, &tokens);
    a->rows = rows;
    a->avgdl = rows > 0 ? (double)tokens / (double)rows : 1.0;
    if (a->avgdl <= 0) a->avgdl = 1.0;
    const char *p = weights ? weights : "";
    for (int i = 0; i < a->n; i++) {
        char *end = NULL;
        double w = strtod(p, &end);
        a->w[i] = end && end != p ? w : 1.0;
        p = end && *end == ',' ? end + 1 : end && end != p ? end : p;
        sqlite3_int64 df = 0;
        if ((a->w[i] > 0 || !weights) && api->xQueryPhrase(fts, i, &df, store_rank_count_row) != SQLITE_OK) df = 0;
        a->df[i] = df;
        double idf = log(1.0 + ((double)rows - (double)df + 0.5) / ((double)df + 0.5));
        a->idf[i] = idf > 0.01 ? idf : 0.01;
    }
    return a;
}

static void store_rank_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nval,
                          sqlite3_value **val)
{
    store_rank_aux *a = api->xGetAuxdata(fts, 0);
    if (!a) {
        a = store_rank_prepare(api, fts, nval > 0 ? (const char *)sqlite3_value_text(val[0]) : NULL);
        if (!a || api->xSetAuxdata(fts, a, store_rank_aux_free) != SQLITE_OK) {
            sqlite3_result_error_nomem(ctx);
            return;
        }
    }
    int inst = 0, dl = 0;
    /* A third argument: the average length to weigh the row's against (the home index
     * passes the row's own store's, as a store's own rank has it). */
    double avgdl = nval > 1 && sqlite3_value_numeric_type(val[1]) != SQLITE_NULL && sqlite3_value_double(val[1]) > 0
                       ? sqlite3_value_double(val[1])
                       : a->avgdl;
    double tf_stack[64], *tf = a->n <= 64 ? tf_stack : calloc((size_t)a->n, sizeof *tf);
    if (!tf) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    memset(tf, 0, (size_t)a->n * sizeof *tf);
    api->xColumnSize(fts, -1, &dl);
    if (api->xInstCount(fts, &inst) == SQLITE_OK)
        for (int k = 0; k < inst; k++) {
            int ph = 0, col = 0, off = 0;
            if (api->xInst(fts, k, &ph, &col, &off) == SQLITE_OK && ph >= 0 && ph < a->n) tf[ph] += 1;
        }
    double score = 0, norm = 1.2 * (0.25 + 0.75 * (double)dl / avgdl);
    for (int i = 0; i < a->n; i++)
        if (tf[i] > 0) score += a->w[i] * a->idf[i] * (1.0 + tf[i] * 2.2 / (tf[i] + norm));
    if (tf != tf_stack) free(tf);
    sqlite3_result_double(ctx, score);
}

/* lc_rank_in(messages_fts): the score's inputs as a blob of doubles {rows, avgdl, dl, then
 * per phrase df, tf}, so recall can score the rows of several stores on their joint counts. */
static void store_rank_in_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nval,
                             sqlite3_value **val)
{
    (void)nval;
    (void)val;
    store_rank_aux *a = api->xGetAuxdata(fts, 0);
    if (!a) {
        a = store_rank_prepare(api, fts, NULL);
        if (!a || api->xSetAuxdata(fts, a, store_rank_aux_free) != SQLITE_OK) {
            sqlite3_result_error_nomem(ctx);
            return;
        }
    }
    size_t n = 3 + 2 * (size_t)a->n;
    double *v = calloc(n, sizeof *v);
    int inst = 0, dl = 0;
    if (!v) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    api->xColumnSize(fts, -1, &dl);
    v[0] = (double)a->rows;
    v[1] = a->avgdl;
    v[2] = dl;
    for (int i = 0; i < a->n; i++) v[3 + 2 * i] = (double)a->df[i];
    if (api->xInstCount(fts, &inst) == SQLITE_OK)
        for (int k = 0; k < inst; k++) {
            int ph = 0, col = 0, off = 0;
            if (api->xInst(fts, k, &ph, &col, &off) == SQLITE_OK && ph >= 0 && ph < a->n) v[4 + 2 * ph] += 1;
        }
    sqlite3_result_blob(ctx, v, (int)(n * sizeof *v), free);
}

int store_sqlite_rank_register_db(sqlite3 *db, char **err)
{
    sqlite3_stmt *st = NULL;
    fts5_api *api = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) != SQLITE_OK)
        return lc_errf(err, LC_ERR, "store: search: %s", sqlite3_errmsg(db));
    sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
    sqlite3_step(st);
    sqlite3_finalize(st);
    if (!api || api->xCreateFunction(api, "lc_rank", NULL, store_rank_fn, NULL) != SQLITE_OK ||
        api->xCreateFunction(api, "lc_rank_in", NULL, store_rank_in_fn, NULL) != SQLITE_OK)
        return lc_errf(err, LC_ERR, "store: search: the rank function cannot be registered");
    return LC_OK;
}

/* Register lc_rank on this connection once (FTS5 functions belong to a connection). */
static int store_rank_register(store *s, char **err)
{
    if (s->rank_fn) return LC_OK;
    int rc = store_sqlite_rank_register_db(s->db, err);
    if (rc == LC_OK) s->rank_fn = 1;
    return rc;
}

/* ---- the time bound ---------------------------------------------------------------------- */

static int store_search_progress(void *ud)
{
    return lc_now_ms() > *(const double *)ud;
}

static void store_search_deadline(store *s, const store_search_scope *sc)
{
    if (sc->deadline_ms > 0) sqlite3_progress_handler(s->db, 2000, store_search_progress, (void *)&sc->deadline_ms);
}

static int store_search_stepped(store *s, int step, char **err)
{
    sqlite3_progress_handler(s->db, 0, NULL, NULL);
    if (step == SQLITE_INTERRUPT) return lc_errf(err, LC_CANCELLED, "search: stopped at its time bound");
    return LC_OK;
}

/* The FROM/WHERE of a scoped match (?2 = the query; ?5 since, ?6 until, ?7 roles). malloc'd. */
static char *store_search_where(const store_search_scope *sc)
{
    int filtered = sc->since_ms > 0 || sc->until_ms > 0 || (sc->roles && *sc->roles);
    return lc_asprintf(" FROM messages_fts f WHERE messages_fts MATCH ?2%s%s%s",
                       sc->include_removed ? "" : " AND f.rowid NOT IN (SELECT id FROM messages WHERE removed = 1)",
                       sc->summary_id > 0 ? " AND f.rowid IN (SELECT m.id FROM messages m"
                                            " WHERE m.entry_id IN (SELECT entry_id FROM scope))"
                                          : "",
                       filtered ? " AND f.rowid IN (SELECT id FROM messages WHERE (?5 = 0 OR created >= ?5)"
                                  " AND (?6 = 0 OR created < ?6)"
                                  " AND (?7 IS NULL OR instr(',' || ?7 || ',', ',' || role || ',') > 0))"
                                : "");
}

static void store_search_bind_filters(sqlite3_stmt *st, const store_search_scope *sc)
{
    sqlite3_bind_int64(st, 5, sc->since_ms);
    sqlite3_bind_int64(st, 6, sc->until_ms);
    if (sc->roles && *sc->roles) sqlite3_bind_text(st, 7, sc->roles, -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, 7);
}

int store_sqlite_search_count(store *s, const char *query, const store_search_scope *scope, int64_t *count,
                       char **err)
{
    sqlite3_stmt *st = NULL;
    char *where = store_search_where(scope);
    char *sql = where ? lc_asprintf(STORE_SCOPE_CTE "SELECT count(*)%s", where) : NULL;
    int rc = LC_OK, step;
    *count = 0;
    if (!sql) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    if ((rc = store_sqlite_prepare(s, &st, sql, "search", err)) != LC_OK) goto done;
    sqlite3_bind_int64(st, 1, scope->summary_id);
    sqlite3_bind_text(st, 2, query, -1, SQLITE_STATIC);
    store_search_bind_filters(st, scope);
    store_search_deadline(s, scope);
    step = sqlite3_step(st);
    if ((rc = store_search_stepped(s, step, err)) != LC_OK) goto done;
    /* FTS5 parses the query when the statement runs: a syntax error shows up here. */
    if (step != SQLITE_ROW) {
        rc = lc_errf(err, LC_INVALID, "%s", sqlite3_errmsg(s->db));
        goto done;
    }
    *count = sqlite3_column_int64(st, 0);
done:
    sqlite3_finalize(st);
    free(where);
    free(sql);
    return rc;
}

/* A ranked row's score rides to the visitor with the row. */
typedef struct store_search_row_ctx {
    store_search_visit visit;
    void *ud;
    double score;
    const double *rank_in;
    size_t rank_n;
    int64_t prompt_ordinal;
    int has_prompt;
} store_search_row_ctx;

static int store_search_scored(void *ud, const store_search_row *r, char **err)
{
    store_search_row_ctx *c = ud;
    store_search_row sr = *r;
    sr.score = c->score;
    sr.rank_in = c->rank_in;
    sr.rank_n = c->rank_n;
    sr.prompt_ordinal = c->prompt_ordinal;
    sr.has_prompt = c->has_prompt;
    return c->visit(c->ud, &sr, err);
}

/* How far back a row's prompt is looked for (store_search_row.prompt_ordinal), in messages:
 * a turn of thousands of tool calls would otherwise walk them all for every row shown. */
#define STORE_PROMPT_REACH "256"

/* A page's row by id: the row columns, raw_json and payload (a thinking match's text), and
 * the prompt its turn answers. */
#define STORE_SEARCH_ROW_SQL                                                                      \
    "SELECT id, entry_id, role, ordinal, removed, text, created, raw_json, payload,"               \
    " (SELECT p.ordinal FROM messages p WHERE p.role = 'user' AND p.ordinal < m.ordinal"           \
    " AND p.ordinal >= m.ordinal - " STORE_PROMPT_REACH " ORDER BY p.ordinal DESC LIMIT 1)"        \
    " FROM messages m WHERE id = ?"

int store_sqlite_search_row(store *s, int64_t id, int thinking, store_search_visit visit, void *ud, char **err)
{
    sqlite3_stmt *row = NULL;
    int rc = store_sqlite_prepare(s, &row, STORE_SEARCH_ROW_SQL, "search", err), step;
    if (rc != LC_OK) return rc;
    sqlite3_bind_int64(row, 1, id);
    if ((step = sqlite3_step(row)) == SQLITE_ROW) {
        store_search_row_ctx c = {.visit = visit, .ud = ud, .prompt_ordinal = sqlite3_column_int64(row, 9),
                                  .has_prompt = sqlite3_column_type(row, 9) != SQLITE_NULL};
        rc = thinking ? store_search_thinking_visit(row, store_search_scored, &c, err)
                      : store_search_row_visit(row, store_search_scored, &c, err);
        if (rc == STORE_VISIT_STOP) rc = LC_OK;
    } else {
        rc = step == SQLITE_DONE ? LC_NOTFOUND : store_sqlite_failed(s, err, "search");
    }
    sqlite3_finalize(row);
    return rc;
}

int store_sqlite_search_page(store *s, const char *query, const store_search_scope *scope, int newest_first,
                      size_t limit, size_t offset, store_search_visit visit, void *ud, char **err)
{
    sqlite3_stmt *pg = NULL, *row = NULL;
    char *where = store_search_where(scope), *weights = NULL;
    const char *order = newest_first                         ? "f.rowid DESC"
                        : scope->order == STORE_ORDER_NEWEST ? "(SELECT created FROM messages WHERE id = f.rowid) DESC, f.rowid DESC"
                        : scope->order == STORE_ORDER_OLDEST ? "(SELECT created FROM messages WHERE id = f.rowid), f.rowid"
                                                             : "sc DESC, f.rowid";
    /* rowid breaks ties so that pages do not overlap. */
    /* Which columns a row matched in (lcm_cols) rides with the row: asked again per shown
     * row, the whole MATCH ran once more each time (20 runs of the query for a page). */
    /* With total_out (a ranked page): the matches counted in the same pass, by a window over
     * the ranked rows (FTS5's functions cannot run inside the window's own query). */
    int counted = scope->total_out && !newest_first && scope->order == STORE_ORDER_RANK;
    char *sql = !where ? NULL
                : counted
                    ? lc_asprintf(STORE_SCOPE_CTE "SELECT rid, sc, rin, cols, count(*) OVER () FROM (SELECT f.rowid AS rid,"
                                                  " lc_rank(messages_fts, ?8) AS sc, lc_rank_in(messages_fts) AS rin,"
                                                  " lcm_cols(messages_fts) AS cols%s)"
                                                  " ORDER BY sc DESC, rid LIMIT ?3 OFFSET ?4",
                                  where)
                    : lc_asprintf(STORE_SCOPE_CTE "SELECT f.rowid, %s AS sc, %s, lcm_cols(messages_fts), -1%s"
                                                  " ORDER BY %s LIMIT ?3 OFFSET ?4",
                                  newest_first ? "0.0" : "lc_rank(messages_fts, ?8)",
                                  newest_first ? "NULL" : "lc_rank_in(messages_fts)", where, order);
    int rc = LC_OK, step;
    sbuf wb = {0};
    for (size_t i = 0; i < scope->nweights; i++) sb_printf(&wb, "%s%g", i ? "," : "", scope->weights[i]);
    weights = sb_detach(&wb);
    if (!sql) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
        goto done;
    }
    if ((rc = store_rank_register(s, err)) != LC_OK) goto done;
    if ((rc = store_sqlite_prepare(s, &pg, sql, "search", err)) != LC_OK ||
        (rc = store_sqlite_prepare(s, &row, STORE_SEARCH_ROW_SQL, "search", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(pg, 1, scope->summary_id);
    sqlite3_bind_text(pg, 2, query, -1, SQLITE_STATIC);
    sqlite3_bind_int64(pg, 3, (sqlite3_int64)limit);
    sqlite3_bind_int64(pg, 4, (sqlite3_int64)offset);
    store_search_bind_filters(pg, scope);
    if (!newest_first) sqlite3_bind_text(pg, 8, weights ? weights : "", -1, SQLITE_STATIC);
    store_search_deadline(s, scope);
    /* The handler is off while a row is visited: the deadline bounds the ranking, and a page
     * once ranked is shown whole. */
    while ((step = sqlite3_step(pg)) == SQLITE_ROW) {
        sqlite3_progress_handler(s->db, 0, NULL, NULL);
        sqlite3_bind_int64(row, 1, sqlite3_column_int64(pg, 0));
        double score = sqlite3_column_double(pg, 1);
        /* Bit 0: the text column matched; bit 1 alone: only the thinking did. */
        int mask = sqlite3_column_int(pg, 3);
        if (counted) *scope->total_out = sqlite3_column_int64(pg, 4);
        int rstep = sqlite3_step(row);
        if (rstep == SQLITE_ROW) {
            store_search_row_ctx rc2 = {.visit = visit, .ud = ud, .score = score,
                                        .rank_in = sqlite3_column_blob(pg, 2),
                                        .rank_n = (size_t)sqlite3_column_bytes(pg, 2) / sizeof(double),
                                        .prompt_ordinal = sqlite3_column_int64(row, 9),
                                        .has_prompt = sqlite3_column_type(row, 9) != SQLITE_NULL};
            rc = mask == 2 ? store_search_thinking_visit(row, store_search_scored, &rc2, err)
                           : store_search_row_visit(row, store_search_scored, &rc2, err);
        } else if (rstep != SQLITE_DONE) {
            rc = store_sqlite_failed(s, err, "search");
        }
        sqlite3_reset(row);
        if (rc == STORE_VISIT_STOP) {
            rc = LC_OK;
            goto done;
        }
        if (rc != LC_OK) goto done;
        store_search_deadline(s, scope);
    }
    if ((rc = store_search_stepped(s, step, err)) != LC_OK) goto done;
    if (step != SQLITE_DONE) rc = step == SQLITE_ERROR && !strncmp(sqlite3_errmsg(s->db), "fts5:", 5)
                                      ? lc_errf(err, LC_INVALID, "%s", sqlite3_errmsg(s->db))
                                      : store_sqlite_failed(s, err, "search");
done:
    sqlite3_progress_handler(s->db, 0, NULL, NULL);
    sqlite3_finalize(pg);
    sqlite3_finalize(row);
    free(where);
    free(sql);
    free(weights);
    return rc;
}

/* Step `st` (the row columns) through `visit` until it ends or the visitor stops it. */
static int store_search_walk(store *s, sqlite3_stmt *st, const char *what, store_search_visit visit, void *ud,
                             int *stopped, char **err)
{
    int step, rc = LC_OK;
    if (stopped) *stopped = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if (!store_common_visit_next(store_search_row_visit(st, visit, ud, err), &rc, stopped)) return rc;
    return step == SQLITE_DONE ? LC_OK : store_sqlite_failed(s, err, what);
}

int store_sqlite_search_top(store *s, const char *query, int newest_first, size_t limit, store_search_visit visit,
                     void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    char *sql = lc_asprintf("SELECT id, entry_id, role, ordinal, removed, text, created FROM (SELECT m.id, m.entry_id,"
                            " m.role, m.ordinal, m.removed, m.text, m.created FROM messages_fts f JOIN messages m"
                            " ON m.id = f.rowid WHERE messages_fts MATCH ?1 AND m.removed = 0 ORDER BY %s"
                            " LIMIT ?2) ORDER BY ordinal, id",
                            newest_first ? "f.rowid DESC" : "f.rank");
    if (!sql) return lc_errf(err, LC_NOMEM, "store: out of memory");
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "search");
    } else {
        sqlite3_bind_text(st, 1, query, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
        rc = store_search_walk(s, st, "search", visit, ud, NULL, err);
    }
    sqlite3_finalize(st);
    free(sql);
    return rc;
}

/* A literal bound (STORE_INDEX_CHARS), so the partial index messages_long answers without
 * a table scan. */
_Static_assert(STORE_INDEX_CHARS == 100000, "messages_long's bound");
int64_t store_sqlite_search_unindexed(store *s)
{
    return store_sqlite_int(s, "SELECT count(*) FROM messages WHERE chars > 100000", 0);
}

int store_sqlite_search_scan(store *s, const store_search_scope *scope, store_search_visit visit, void *ud,
                      int *stopped, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (stopped) *stopped = 0;
    if (sqlite3_prepare_v2(s->db,
                           STORE_SCOPE_CTE "SELECT m.id, m.entry_id, m.role, m.ordinal, m.removed,"
                           " m.text, m.created FROM messages m WHERE (m.removed = 0 OR ?2)"
                           " AND (?1 = 0 OR m.entry_id IN (SELECT entry_id FROM scope))"
                           " AND (m.ordinal, m.id) > (?3, ?4)"
                           " ORDER BY m.ordinal, m.id",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_failed(s, err, "scan");
    } else {
        sqlite3_bind_int64(st, 1, scope->summary_id);
        sqlite3_bind_int(st, 2, scope->include_removed ? 1 : 0);
        /* From the start: below every row (ordinals start at 0, ids at 1). */
        int from_start = scope->after_ordinal == 0 && scope->after_id == 0;
        sqlite3_bind_int64(st, 3, from_start ? -1 : scope->after_ordinal);
        sqlite3_bind_int64(st, 4, from_start ? 0 : scope->after_id);
        rc = store_search_walk(s, st, "scan", visit, ud, stopped, err);
    }
    sqlite3_finalize(st);
    return rc;
}

void store_sqlite_search_cover(store *s, const char *entry_id, int64_t *top, int64_t *leaf)
{
    /* Asked once per hit shown: the two statements are kept for the connection's life
     * (preparing them per hit was a third of a cross-session search's instructions). */
    sqlite3_stmt *st;
    *top = *leaf = 0;
    if (!s->st_cover_leaf &&
        sqlite3_prepare_v3(s->db, "SELECT summary_id FROM summary_messages WHERE entry_id = ? ORDER BY summary_id LIMIT 1",
                           -1, SQLITE_PREPARE_PERSISTENT, &s->st_cover_leaf, NULL) != SQLITE_OK)
        return;
    if (!s->st_cover_up &&
        sqlite3_prepare_v3(s->db, "SELECT parent_id FROM summary_children WHERE child_id = ?", -1,
                           SQLITE_PREPARE_PERSISTENT, &s->st_cover_up, NULL) != SQLITE_OK)
        return;
    st = s->st_cover_leaf;
    sqlite3_bind_text(st, 1, entry_id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) *leaf = *top = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    st = s->st_cover_up;
    for (int depth = 0; *top && depth < 16; depth++) { /* the DAG's depth cap is 8 */
        sqlite3_bind_int64(st, 1, *top);
        int step = sqlite3_step(st);
        int64_t parent = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        if (!parent) break;
        *top = parent;
    }
}

int store_sqlite_summary_exists(store *s, int64_t id)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM summaries WHERE id = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* Prepare a describe query on one id (?1) and step to its row: LC_NOTFOUND when it has none. */
static int store_sqlite_describe(store *s, sqlite3_stmt **st, const char *sql, int64_t id, char **err)
{
    int rc = store_sqlite_prepare(s, st, sql, "describe", err);
    if (rc != LC_OK) return rc;
    sqlite3_bind_int64(*st, 1, id);
    return sqlite3_step(*st) == SQLITE_ROW ? LC_OK : LC_NOTFOUND;
}

int store_sqlite_summary_get(store *s, int64_t id, store_node_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = store_sqlite_describe(s, &st,
                                   "SELECT s.kind, s.depth, s.text, s.tiers, s.tokens, sp.first_entry,"
                                   " sp.last_entry, sp.first_ordinal, sp.last_ordinal, sp.entry_count"
                                   " FROM summaries s LEFT JOIN summary_spans sp ON sp.summary_id = s.id"
                                   " WHERE s.id = ?",
                                   id, err);
    if (rc != LC_OK) goto done;
    store_node n = {0};
    const char *kind = (const char *)sqlite3_column_text(st, 0);
    n.id = id;
    n.leaf = kind && strcmp(kind, "leaf") == 0;
    n.depth = sqlite3_column_int(st, 1);
    n.text = (const char *)sqlite3_column_text(st, 2);
    n.tiers_json = (const char *)sqlite3_column_text(st, 3);
    n.tokens = sqlite3_column_int64(st, 4);
    n.first_entry = (const char *)sqlite3_column_text(st, 5);
    n.last_entry = (const char *)sqlite3_column_text(st, 6);
    n.first_ordinal = sqlite3_column_int64(st, 7);
    n.last_ordinal = sqlite3_column_int64(st, 8);
    n.entry_count = sqlite3_column_int64(st, 9);
    if (!n.text) n.text = "";
    rc = visit(ud, &n, err);
    if (rc == STORE_VISIT_STOP) rc = LC_OK;
done:
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_scope_totals_get(store *s, int64_t summary_id, store_scope_totals *out, char **err)
{
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    int rc = store_sqlite_describe(s, &st,
                                   STORE_SCOPE_CTE "SELECT count(*), coalesce(sum(m.tokens),0), coalesce(sum(m.chars),0),"
                                   " coalesce(sum(m.removed),0) FROM messages m WHERE m.entry_id IN (SELECT entry_id FROM scope)",
                                   summary_id, err);
    if (rc != LC_OK) goto done;
    out->messages = sqlite3_column_int64(st, 0);
    out->tokens = sqlite3_column_int64(st, 1);
    out->chars = sqlite3_column_int64(st, 2);
    out->removed = sqlite3_column_int64(st, 3);
done:
    sqlite3_finalize(st);
    return rc;
}

/* Columns: entry_id, path, content_id, kind, chars, preview, summary. */
static int store_handle_visit_row(sqlite3_stmt *st, store_handle_visit visit, void *ud, char **err)
{
    store_file_handle h = {0};
    h.entry_id = (const char *)sqlite3_column_text(st, 0);
    h.path = (const char *)sqlite3_column_text(st, 1);
    h.content_id = (const char *)sqlite3_column_text(st, 2);
    h.kind = (const char *)sqlite3_column_text(st, 3);
    h.chars = sqlite3_column_int64(st, 4);
    h.preview = (const char *)sqlite3_column_text(st, 5);
    h.summary = (const char *)sqlite3_column_text(st, 6);
    return visit(ud, &h, err);
}

int store_sqlite_scope_handles(store *s, int64_t summary_id, store_handle_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if ((rc = store_sqlite_prepare(s, &st,
                                   STORE_SCOPE_CTE "SELECT f.entry_id, f.path, f.content_id, f.kind, f.chars, f.preview,"
                                   " f.summary FROM file_handles f WHERE f.entry_id IN (SELECT entry_id FROM scope)"
                                   " ORDER BY f.id",
                                   "describe", err)) != LC_OK)
        goto done;
    sqlite3_bind_int64(st, 1, summary_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!store_common_visit_next(store_handle_visit_row(st, visit, ud, err), &rc, NULL)) break;
    }
done:
    sqlite3_finalize(st);
    return rc;
}

int store_sqlite_handle_find(store *s, const char *key, store_handle_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if ((rc = store_sqlite_prepare(s, &st,
                                   "SELECT entry_id, path, content_id, kind, chars, preview, summary FROM file_handles"
                                   " WHERE entry_id = ?1 OR path = ?1 OR content_id = ?1 ORDER BY id DESC LIMIT 1",
                                   "describe", err)) != LC_OK)
        goto done;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = LC_NOTFOUND;
        goto done;
    }
    rc = store_handle_visit_row(st, visit, ud, err);
    if (rc == STORE_VISIT_STOP) rc = LC_OK;
done:
    sqlite3_finalize(st);
    return rc;
}
