/*
 * store_pg_search.c -- the PostgreSQL backend's search primitives (store.h, "search"):
 * the FTS5 query language mapped to a tsquery (store_pg_tsquery, the one place), count,
 * page and top-k over the messages' GIN-indexed tsvector, the pattern scan's rows streamed
 * in keyset batches (ordinal, id), the DAG cover of an entry, and the describe reads.
 * Ranking is ts_rank_cd (cover density), not bm25: the order of equally good matches can
 * differ from a SQLite store's; ties break by row id so pages never overlap.
 */
#include "store.h"
#include "store_pg_int.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define STORE_PG_SCAN_BATCH 128

/* ---- FTS5 -> tsquery -------------------------------------------------------------------------
 * What maps: barewords (runs of letters, digits, '_' and non-ASCII bytes; a word the
 * tokenizer splits becomes a phrase of its parts), "quoted phrases" ("" is a quote inside
 * one) -> 'a' <-> 'b', a trailing * -> a prefix ('a':*), AND / OR / NOT (NOT binary: a NOT
 * b = a & !b), parentheses, and adjacency as AND. What does not: NEAR(...), column filters
 * (col:), the initial-token ^ and +; refused with a sentence naming the form. */

/* The parts of `w` (n bytes) as 'a' <-> 'b' (the last with :* when `prefix`); returns 0
 * when `w` has no letter or digit. */
static int store_pg_phrase(sbuf *b, const char *w, size_t n, int prefix)
{
    int parts = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && !(((unsigned char)w[i] >= 0x80) || (w[i] >= '0' && w[i] <= '9') ||
                          (w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z')))
            i++;
        size_t st = i;
        while (i < n && (((unsigned char)w[i] >= 0x80) || (w[i] >= '0' && w[i] <= '9') ||
                         (w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z')))
            i++;
        if (i == st) break;
        if (parts == 0) sb_putc(b, '(');
        else sb_puts(b, " <-> ");
        sb_putc(b, '\'');
        sb_append(b, w + st, i - st);
        sb_putc(b, '\'');
        if (prefix) {
            size_t j = i;
            while (j < n && !(((unsigned char)w[j] >= 0x80) || (w[j] >= '0' && w[j] <= '9') ||
                              (w[j] >= 'a' && w[j] <= 'z') || (w[j] >= 'A' && w[j] <= 'Z')))
                j++;
            if (j >= n) sb_puts(b, ":*");
        }
        parts++;
    }
    if (parts) sb_putc(b, ')');
    return parts;
}

static int store_pg_bare(char c)
{
    return (unsigned char)c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

int store_pg_tsquery(const char *q, char **out, char **err)
{
    sbuf b = {0};
    /* prev: 0 start / after an operator or '(', 1 after an operand or ')'. */
    int prev = 0, depth = 0, rc = LC_OK, terms = 0;
    const char *p = q ? q : "";
    *out = NULL;
    while (*p) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            p++;
            continue;
        }
        if (*p == '(') {
            if (prev) sb_puts(&b, " & ");
            sb_putc(&b, '(');
            depth++;
            prev = 0;
            p++;
            continue;
        }
        if (*p == ')') {
            if (!prev || depth == 0) {
                rc = lc_errf(err, LC_INVALID, "syntax error near \")\"");
                goto done;
            }
            sb_putc(&b, ')');
            depth--;
            p++;
            continue;
        }
        if (*p == '"') {
            sbuf w = {0};
            p++;
            for (;;) {
                if (!*p) {
                    sb_free(&w);
                    rc = lc_errf(err, LC_INVALID, "unterminated string");
                    goto done;
                }
                if (*p == '"' && p[1] == '"') {
                    sb_putc(&w, '"');
                    p += 2;
                    continue;
                }
                if (*p == '"') break;
                sb_putc(&w, *p++);
            }
            p++;
            int prefix = *p == '*';
            if (prefix) p++;
            if (prev) sb_puts(&b, " & ");
            size_t before = b.len;
            if (!store_pg_phrase(&b, w.p ? w.p : "", w.len, prefix)) {
                /* A phrase of no words matches nothing in FTS5; an impossible lexeme here. */
                b.len = before;
                if (b.p) b.p[b.len] = '\0';
                sb_puts(&b, "('')");
            }
            sb_free(&w);
            prev = 1;
            terms++;
            continue;
        }
        if (store_pg_bare(*p)) {
            const char *st = p;
            while (store_pg_bare(*p)) p++;
            size_t n = (size_t)(p - st);
            if (*p == ':') {
                rc = lc_errf(err, LC_INVALID, "column filters (%.*s:) have no PostgreSQL full-text form", (int)n, st);
                goto done;
            }
            if ((n == 3 && strncmp(st, "AND", 3) == 0) || (n == 2 && strncmp(st, "OR", 2) == 0) ||
                (n == 3 && strncmp(st, "NOT", 3) == 0)) {
                if (!prev) {
                    rc = lc_errf(err, LC_INVALID, "syntax error near \"%.*s\"", (int)n, st);
                    goto done;
                }
                sb_puts(&b, n == 2 ? " | " : st[0] == 'A' ? " & " : " & !");
                prev = 0;
                continue;
            }
            if (n == 4 && strncmp(st, "NEAR", 4) == 0 && *p == '(') {
                rc = lc_errf(err, LC_INVALID, "NEAR() has no PostgreSQL full-text form; use a \"quoted phrase\" or AND");
                goto done;
            }
            int prefix = *p == '*';
            if (prefix) p++;
            if (prev) sb_puts(&b, " & ");
            if (!store_pg_phrase(&b, st, n, prefix)) sb_puts(&b, "('')"); /* only '_': no token */
            prev = 1;
            terms++;
            continue;
        }
        if (*p == '^' || *p == '+') {
            rc = lc_errf(err, LC_INVALID, "\"%c\" has no PostgreSQL full-text form", *p);
            goto done;
        }
        rc = lc_errf(err, LC_INVALID, "syntax error near \"%c\"", *p);
        goto done;
    }
    if (!terms || !prev || depth != 0) {
        rc = lc_errf(err, LC_INVALID, terms ? "syntax error near the end of the query" : "empty query");
        goto done;
    }
    if (b.oom) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    *out = sb_detach(&b);
done:
    sb_free(&b);
    return rc;
}

/* ---- queries ------------------------------------------------------------------------------- */

/* The entries a node covers, through its descendants ($1 = summary id, 0 = none). */
#define STORE_PG_SCOPE_CTE                                                                              \
    "WITH RECURSIVE sub(id) AS (SELECT $1::bigint UNION SELECT c.child_id FROM summary_children c"      \
    " JOIN sub ON c.parent_id = sub.id),"                                                               \
    " scope(entry_id) AS (SELECT entry_id FROM summary_messages WHERE summary_id IN (SELECT id FROM sub))," \
    " q(q) AS (SELECT to_tsquery(" STORE_PG_TS ", $2)) "
#define STORE_PG_SCOPED                                                          \
    " FROM messages m, q WHERE m.tsv @@ q.q AND ($3 = '1' OR m.removed = 0)"    \
    " AND ($1::bigint <= 0 OR m.entry_id IN (SELECT entry_id FROM scope))"

/* The time and role filters of a count or a page (store_search_scope): since ($S), until ($U)
 * in ms (0 open), stored roles comma-separated ($R, '' all). */
#define STORE_PG_FILTERED(S, U, R)                                                                   \
    " AND ($" S "::bigint = 0 OR m.created >= $" S "::bigint) AND ($" U "::bigint = 0 OR m.created < $" U \
    "::bigint) AND ($" R "::text = '' OR m.role = ANY(string_to_array($" R "::text, ',')))"

/* The row columns every visit reads: id, entry_id, role, ordinal, removed, text, and created
 * when the query selects it. */
static int store_pg_visit_rows(const PGresult *r, store_search_visit visit, void *ud, int64_t *last_ord,
                               int64_t *last_id, int *stop, char **err)
{
    int rc = LC_OK;
    for (int i = 0; i < PQntuples(r); i++) {
        store_search_row row = {0};
        row.id = store_pg_col_int(r, i, 0);
        row.entry_id = PQgetvalue(r, i, 1);
        row.role = PQgetvalue(r, i, 2);
        row.ordinal = store_pg_col_int(r, i, 3);
        row.removed = (int)store_pg_col_int(r, i, 4);
        row.text = PQgetvalue(r, i, 5);
        row.text_len = (size_t)PQgetlength(r, i, 5);
        if (PQnfields(r) > 6) row.created = store_pg_col_int(r, i, 6);
        if (last_ord) *last_ord = row.ordinal;
        if (last_id) *last_id = row.id;
        if (!store_common_visit_next(visit(ud, &row, err), &rc, stop)) return rc;
    }
    return LC_OK;
}

/* Run a search whose rows have the visit columns, and visit them in the order it gives. */
static int store_pg_search_rows(store *s, const char *sql, int n, const char *const *v, store_search_visit visit,
                                void *ud, char **err)
{
    PGresult *r = store_pg_run(s, sql, n, v, STORE_PG_IDEM, "search", err);
    int rc = r ? store_pg_visit_rows(r, visit, ud, NULL, NULL, NULL, err) : LC_ERR;
    PQclear(r);
    return rc;
}

int store_pg_search_count(store *s, const char *query, const store_search_scope *scope, int64_t *count, char **err)
{
    char *tq = NULL, sb[24];
    *count = 0;
    int rc = store_pg_tsquery(query, &tq, err);
    if (rc != LC_OK) return rc;
    char fs[24], fu[24];
    const char *v[] = {store_pg_i64(sb, scope->summary_id), tq, scope->include_removed ? "1" : "0",
                       store_pg_i64(fs, scope->since_ms), store_pg_i64(fu, scope->until_ms),
                       scope->roles ? scope->roles : ""};
    PGresult *r = store_pg_run(s, STORE_PG_SCOPE_CTE "SELECT count(*)" STORE_PG_SCOPED STORE_PG_FILTERED("4", "5", "6"),
                               6, v, STORE_PG_IDEM, "search", err);
    if (!r) rc = LC_ERR;
    else *count = store_pg_col_int(r, 0, 0);
    PQclear(r);
    free(tq);
    return rc;
}

int store_pg_search_page(store *s, const char *query, const store_search_scope *scope, int newest_first, size_t limit,
                         size_t offset, store_search_visit visit, void *ud, char **err)
{
    char *tq = NULL, sb[24], lb[24], ob[24];
    int rc = store_pg_tsquery(query, &tq, err);
    if (rc != LC_OK) return rc;
    char fs[24], fu[24];
    const char *v[] = {store_pg_i64(sb, scope->summary_id), tq, scope->include_removed ? "1" : "0",
                       store_pg_i64(lb, (int64_t)limit), store_pg_i64(ob, (int64_t)offset),
                       store_pg_i64(fs, scope->since_ms), store_pg_i64(fu, scope->until_ms),
                       scope->roles ? scope->roles : ""};
#define STORE_PG_PAGE(order)                                                                                  \
    STORE_PG_SCOPE_CTE "SELECT m.id, m.entry_id, m.role, m.ordinal, m.removed, m.text, m.created" STORE_PG_SCOPED \
        STORE_PG_FILTERED("6", "7", "8") " ORDER BY " order " LIMIT $4::bigint OFFSET $5::bigint"
    /* Ranked by ts_rank_cd (cover density: more of the query's words, closer, rank higher). */
    const char *sql = newest_first                         ? STORE_PG_PAGE("m.id DESC")
                      : scope->order == STORE_ORDER_NEWEST ? STORE_PG_PAGE("m.created DESC, m.id DESC")
                      : scope->order == STORE_ORDER_OLDEST ? STORE_PG_PAGE("m.created, m.id")
                                                           : STORE_PG_PAGE("ts_rank_cd(m.tsv, q.q) DESC, m.id");
#undef STORE_PG_PAGE
    if (scope->total_out && !newest_first && scope->order == STORE_ORDER_RANK) {
        /* The matches counted in the page's own pass (store.h, total_out): column 7. */
        PGresult *r = store_pg_run(s,
                                   STORE_PG_SCOPE_CTE "SELECT m.id, m.entry_id, m.role, m.ordinal, m.removed, m.text,"
                                   " m.created, count(*) OVER ()" STORE_PG_SCOPED STORE_PG_FILTERED("6", "7", "8")
                                   " ORDER BY ts_rank_cd(m.tsv, q.q) DESC, m.id LIMIT $4::bigint OFFSET $5::bigint",
                                   8, v, STORE_PG_IDEM, "search", err);
        rc = r ? store_pg_visit_rows(r, visit, ud, NULL, NULL, NULL, err) : LC_ERR;
        if (r && PQntuples(r) > 0) *scope->total_out = store_pg_col_int(r, 0, 7);
        PQclear(r);
    } else {
        rc = store_pg_search_rows(s, sql, 8, v, visit, ud, err);
    }
    free(tq);
    return rc;
}

int store_pg_search_top(store *s, const char *query, int newest_first, size_t limit, store_search_visit visit, void *ud,
                        char **err)
{
    char *tq = NULL, lb[24];
    int rc = store_pg_tsquery(query, &tq, err);
    if (rc != LC_OK) return rc;
    const char *v[] = {tq, store_pg_i64(lb, (int64_t)limit)};
    rc = store_pg_search_rows(s,
                              newest_first
                                  ? "SELECT id, entry_id, role, ordinal, removed, text FROM (SELECT m.* FROM messages m"
                                    " WHERE m.tsv @@ to_tsquery(" STORE_PG_TS ", $1) AND m.removed = 0 ORDER BY m.id DESC"
                                    " LIMIT $2::bigint) t ORDER BY ordinal, id"
                                  : "SELECT id, entry_id, role, ordinal, removed, text FROM (SELECT m.*,"
                                    " ts_rank_cd(m.tsv, to_tsquery(" STORE_PG_TS ", $1)) AS rk FROM messages m"
                                    " WHERE m.tsv @@ to_tsquery(" STORE_PG_TS ", $1) AND m.removed = 0"
                                    " ORDER BY rk DESC, m.id LIMIT $2::bigint) t ORDER BY ordinal, id",
                              2, v, visit, ud, err);
    free(tq);
    return rc;
}

int64_t store_pg_search_unindexed(store *s)
{
    return store_pg_int(s, "SELECT count(*) FROM messages WHERE chars > 100000", 0, NULL, 0);
}

int store_pg_search_scan(store *s, const store_search_scope *scope, store_search_visit visit, void *ud, int *stopped,
                         char **err)
{
    int from_start = scope->after_ordinal == 0 && scope->after_id == 0;
    int64_t ord = from_start ? -1 : scope->after_ordinal, id = from_start ? 0 : scope->after_id;
    int stop = 0, rc = LC_OK;
    /* The first batch is small: a scan bounded at a few milliseconds reaches its first row
     * at once; later batches grow to STORE_PG_SCAN_BATCH. */
    int64_t batch = 8;
    if (stopped) *stopped = 0;
    for (;;) {
        char sb[24], ob[24], ib[24], lb[24];
        const char *v[] = {store_pg_i64(ob, ord), store_pg_i64(ib, id), store_pg_i64(lb, batch),
                           scope->include_removed ? "1" : "0", store_pg_i64(sb, scope->summary_id)};
        PGresult *r = store_pg_run(s,
                                   scope->summary_id > 0
                                       ? "WITH RECURSIVE sub(id) AS (SELECT $5::bigint UNION SELECT c.child_id FROM"
                                         " summary_children c JOIN sub ON c.parent_id = sub.id),"
                                         " scope(entry_id) AS (SELECT entry_id FROM summary_messages WHERE summary_id"
                                         " IN (SELECT id FROM sub))"
                                         " SELECT m.id, m.entry_id, m.role, m.ordinal, m.removed, m.text FROM messages m"
                                         " WHERE (m.removed = 0 OR $4 = '1') AND m.entry_id IN (SELECT entry_id FROM scope)"
                                         " AND (m.ordinal, m.id) > ($1::bigint, $2::bigint)"
                                         " ORDER BY m.ordinal, m.id LIMIT $3::bigint"
                                       : "SELECT m.id, m.entry_id, m.role, m.ordinal, m.removed, m.text FROM messages m"
                                         " WHERE (m.removed = 0 OR $4 = '1')"
                                         " AND (m.ordinal, m.id) > ($1::bigint, $2::bigint)"
                                         " ORDER BY m.ordinal, m.id LIMIT $3::bigint",
                                   scope->summary_id > 0 ? 5 : 4, v, STORE_PG_IDEM, "scan", err);
        if (!r) return LC_ERR;
        int got = PQntuples(r);
        rc = store_pg_visit_rows(r, visit, ud, &ord, &id, &stop, err);
        PQclear(r);
        if (rc != LC_OK || stop || got < batch) break;
        if (batch < STORE_PG_SCAN_BATCH) batch *= 4;
    }
    if (stopped) *stopped = stop;
    return rc;
}

void store_pg_search_cover(store *s, const char *entry_id, int64_t *top, int64_t *leaf)
{
    const char *v[] = {entry_id};
    *top = *leaf = store_pg_int(s, "SELECT summary_id FROM summary_messages WHERE entry_id = $1 ORDER BY summary_id LIMIT 1",
                                1, v, 0);
    for (int depth = 0; *top && depth < 16; depth++) { /* the DAG's depth cap is 8 */
        char b[24];
        const char *p[] = {store_pg_i64(b, *top)};
        int64_t parent = store_pg_int(s, "SELECT parent_id FROM summary_children WHERE child_id = $1::bigint LIMIT 1", 1,
                                      p, 0);
        if (!parent) break;
        *top = parent;
    }
}

int store_pg_summary_exists(store *s, int64_t id)
{
    char b[24];
    const char *v[] = {store_pg_i64(b, id)};
    return store_pg_int(s, "SELECT count(*) FROM summaries WHERE id = $1::bigint", 1, v, 0) > 0;
}

/* Run a describe query on one id ($1): LC_OK with its first row in *r, LC_NOTFOUND when it
 * has none (*r is then NULL). */
static int store_pg_describe(store *s, const char *sql, int64_t id, PGresult **r, char **err)
{
    char b[24];
    const char *v[] = {store_pg_i64(b, id)};
    if (!(*r = store_pg_run(s, sql, 1, v, STORE_PG_IDEM, "describe", err))) return LC_ERR;
    if (PQntuples(*r) > 0) return LC_OK;
    PQclear(*r);
    *r = NULL;
    return LC_NOTFOUND;
}

int store_pg_summary_get(store *s, int64_t id, store_node_visit visit, void *ud, char **err)
{
    PGresult *r = NULL;
    int rc = store_pg_describe(s,
                               "SELECT s.kind, s.depth, s.text, s.tiers, s.tokens, sp.first_entry, sp.last_entry,"
                               " sp.first_ordinal, sp.last_ordinal, sp.entry_count FROM summaries s"
                               " LEFT JOIN summary_spans sp ON sp.summary_id = s.id WHERE s.id = $1::bigint",
                               id, &r, err);
    if (rc != LC_OK) return rc;
    store_node n = {0};
    n.id = id;
    n.leaf = strcmp(PQgetvalue(r, 0, 0), "leaf") == 0;
    n.depth = (int)store_pg_col_int(r, 0, 1);
    n.text = PQgetvalue(r, 0, 2);
    n.tiers_json = store_pg_col(r, 0, 3);
    n.tokens = store_pg_col_int(r, 0, 4);
    n.first_entry = store_pg_col(r, 0, 5);
    n.last_entry = store_pg_col(r, 0, 6);
    n.first_ordinal = store_pg_col_int(r, 0, 7);
    n.last_ordinal = store_pg_col_int(r, 0, 8);
    n.entry_count = store_pg_col_int(r, 0, 9);
    rc = visit(ud, &n, err);
    if (rc == STORE_VISIT_STOP) rc = LC_OK;
    PQclear(r);
    return rc;
}

#define STORE_PG_SUBTREE                                                                                \
    "WITH RECURSIVE sub(id) AS (SELECT $1::bigint UNION SELECT c.child_id FROM summary_children c"      \
    " JOIN sub ON c.parent_id = sub.id),"                                                               \
    " scope(entry_id) AS (SELECT entry_id FROM summary_messages WHERE summary_id IN (SELECT id FROM sub)) "

int store_pg_scope_totals_get(store *s, int64_t summary_id, store_scope_totals *out, char **err)
{
    PGresult *r = NULL;
    memset(out, 0, sizeof *out);
    int rc = store_pg_describe(s,
                               STORE_PG_SUBTREE "SELECT count(*), coalesce(sum(m.tokens), 0), coalesce(sum(m.chars), 0),"
                               " coalesce(sum(m.removed), 0) FROM messages m WHERE m.entry_id IN"
                               " (SELECT entry_id FROM scope)",
                               summary_id, &r, err);
    if (rc != LC_OK) return rc;
    out->messages = store_pg_col_int(r, 0, 0);
    out->tokens = store_pg_col_int(r, 0, 1);
    out->chars = store_pg_col_int(r, 0, 2);
    out->removed = store_pg_col_int(r, 0, 3);
    PQclear(r);
    return LC_OK;
}

/* Visit `r` (columns: entry_id, path, content_id, kind, chars, preview, summary). */
static int store_pg_visit_handles(PGresult *r, store_handle_visit visit, void *ud, char **err)
{
    int rc = LC_OK;
    for (int i = 0; i < PQntuples(r); i++) {
        store_file_handle h = {.entry_id = PQgetvalue(r, i, 0),
                               .path = store_pg_col(r, i, 1),
                               .content_id = PQgetvalue(r, i, 2),
                               .kind = PQgetvalue(r, i, 3),
                               .chars = store_pg_col_int(r, i, 4),
                               .preview = PQgetvalue(r, i, 5),
                               .summary = PQgetvalue(r, i, 6)};
        if (!store_common_visit_next(visit(ud, &h, err), &rc, NULL)) break;
    }
    PQclear(r);
    return rc;
}

int store_pg_scope_handles(store *s, int64_t summary_id, store_handle_visit visit, void *ud, char **err)
{
    char b[24];
    const char *v[] = {store_pg_i64(b, summary_id)};
    PGresult *r = store_pg_run(s,
                               STORE_PG_SUBTREE "SELECT f.entry_id, f.path, f.content_id, f.kind, f.chars, f.preview,"
                               " f.summary FROM file_handles f WHERE f.entry_id IN (SELECT entry_id FROM scope)"
                               " ORDER BY f.id",
                               1, v, STORE_PG_IDEM, "describe", err);
    return r ? store_pg_visit_handles(r, visit, ud, err) : LC_ERR;
}

int store_pg_handle_find(store *s, const char *key, store_handle_visit visit, void *ud, char **err)
{
    const char *v[] = {key};
    PGresult *r = store_pg_run(s,
                               "SELECT entry_id, path, content_id, kind, chars, preview, summary FROM file_handles"
                               " WHERE entry_id = $1 OR path = $1 OR content_id = $1 ORDER BY id DESC LIMIT 1",
                               1, v, STORE_PG_IDEM, "describe", err);
    if (!r) return LC_ERR;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return LC_NOTFOUND;
    }
    return store_pg_visit_handles(r, visit, ud, err);
}
