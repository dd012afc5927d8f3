/*
 * store_pg_vec.c -- the PostgreSQL backend's vector rows for hybrid recall (store.h,
 * "vectors"), the same contract as store_sqlite_vec.c over schema 4's message_vectors and
 * summary_vectors (bytea, float32 in the writer's byte order): writing a batch, the scan's
 * walk, the re-rank's read of given rows, the backfill's walk, coverage. The similarity itself runs on the client
 * (vecindex.h): no server extension is needed. Reads go in pages by id, so a walk over a
 * million vectors never holds them all in one result.
 */
#include "store_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_common.h"
#include "util.h"

#define PG_VEC_PAGE 2000 /* rows a walk reads per statement (the LIMIT below) */
#define PG_VEC_LIMIT " LIMIT 2000"

static int pg_vec_has_tables(store *s)
{
    return store_pg_int(s, "SELECT CASE WHEN to_regclass('lcm.message_vectors') IS NULL THEN 0 ELSE 1 END", 0,
                        NULL, 0) == 1;
}

/* bytea's hex input form of `n` bytes (malloc'd). */
static char *pg_vec_hex(const void *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *b = p;
    char *o = malloc(2 * n + 3);
    if (!o) return NULL;
    o[0] = '\\';
    o[1] = 'x';
    for (size_t i = 0; i < n; i++) {
        o[2 + 2 * i] = digits[b[i] >> 4];
        o[3 + 2 * i] = digits[b[i] & 15];
    }
    o[2 * n + 2] = '\0';
    return o;
}

static int pg_vec_nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* bytea's hex output into `out` (exactly `n` bytes): 0, or -1 when it is not that. */
static int pg_vec_unhex(const char *t, void *out, size_t n)
{
    unsigned char *o = out;
    if (!t || t[0] != '\\' || t[1] != 'x' || strlen(t + 2) != 2 * n) return -1;
    for (size_t i = 0; i < n; i++) {
        int hi = pg_vec_nibble(t[2 + 2 * i]), lo = pg_vec_nibble(t[3 + 2 * i]);
        if (hi < 0 || lo < 0) return -1;
        o[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

int store_pg_vec_put(store *s, const store_vec *v, size_t n, char **err)
{
    int rc = LC_OK, in_tx = 0;
    char idb[24], dimb[24], now[24], *hex = NULL;
    if (n == 0) return LC_OK;
    if ((rc = store_pg_begin(s, err)) != LC_OK) return rc;
    in_tx = 1;
    store_pg_now(now);
    for (size_t i = 0; i < n && rc == LC_OK; i++) {
        if (v[i].dim <= 0 || !v[i].v || !v[i].model) {
            rc = lc_errf(err, LC_INVALID, "store: a vector needs a model and a dimension");
            break;
        }
        if (!(hex = pg_vec_hex(v[i].v, (size_t)v[i].dim * sizeof(float)))) {
            rc = lc_errf(err, LC_NOMEM, "store: out of memory");
            break;
        }
        const char *p[] = {store_pg_i64(idb, v[i].id), v[i].model, store_pg_i64(dimb, v[i].dim), hex, now, s->sidtxt};
        /* INSERT ... SELECT: a row deleted since it was read inserts nothing. */
        rc = store_pg_cmd(s,
                          v[i].kind == STORE_VEC_SUMMARY
                              ? "INSERT INTO lcm.summary_vectors(sid, summary_id, model, dim, vec, created)"
                                " SELECT sid, id, $2, $3::integer, $4::bytea, $5::bigint FROM lcm.summaries"
                                " WHERE sid = $6::bigint AND id = $1::bigint"
                                " ON CONFLICT (sid, summary_id) DO UPDATE SET model = EXCLUDED.model,"
                                " dim = EXCLUDED.dim, vec = EXCLUDED.vec, created = EXCLUDED.created"
                              : "INSERT INTO lcm.message_vectors(sid, message_id, entry_id, model, dim, vec, created)"
                                " SELECT sid, id, entry_id, $2, $3::integer, $4::bytea, $5::bigint FROM lcm.messages"
                                " WHERE sid = $6::bigint AND id = $1::bigint"
                                " ON CONFLICT (sid, message_id) DO UPDATE SET entry_id = EXCLUDED.entry_id,"
                                " model = EXCLUDED.model, dim = EXCLUDED.dim, vec = EXCLUDED.vec,"
                                " created = EXCLUDED.created",
                          6, p, 0, "writing a vector", NULL, err);
        free(hex);
        hex = NULL;
    }
    if (rc == LC_OK) {
        const char *p[] = {s->sidtxt};
        rc = store_pg_cmd(s, "SELECT lcm.vec_bump($1::bigint)", 1, p, 0, "writing a vector", NULL, err);
    }
    if (rc == LC_OK && (rc = store_pg_commit(s, err)) == LC_OK) in_tx = 0;
    if (in_tx) store_pg_rollback(s);
    return rc;
}

int store_pg_vec_walk(store *s, const char *model, int include_removed, store_vec_visit visit, void *ud,
                      char **err)
{
    static const char *const sql[2] = {
        "SELECT v.message_id, v.entry_id, m.removed, v.dim, v.vec FROM message_vectors v"
        " JOIN messages m ON m.id = v.message_id WHERE v.model = $1 AND ($2::boolean OR m.removed = 0)"
        " AND v.message_id > $3::bigint ORDER BY v.message_id" PG_VEC_LIMIT,
        "SELECT summary_id, NULL, 0, dim, vec FROM summary_vectors WHERE model = $1 AND $2::boolean IS NOT NULL"
        " AND summary_id > $3::bigint ORDER BY summary_id" PG_VEC_LIMIT,
    };
    float *buf = NULL;
    int cap = 0, rc = LC_OK;
    if (!pg_vec_has_tables(s)) return LC_OK;
    for (int k = 0; k < 2 && rc == LC_OK; k++) {
        int64_t after = 0;
        for (;;) {
            char ab[24];
            const char *p[] = {model, include_removed ? "true" : "false", store_pg_i64(ab, after)};
            PGresult *r = store_pg_run(s, sql[k], 3, p, STORE_PG_IDEM, "reading vectors", err);
            if (!r) {
                rc = LC_ERR;
                break;
            }
            int rows = PQntuples(r);
            for (int i = 0; i < rows && rc == LC_OK; i++) {
                int dim = (int)store_pg_col_int(r, i, 3);
                after = store_pg_col_int(r, i, 0);
                if (dim <= 0) continue;
                if ((rc = store_common_vec_room(&buf, &cap, dim, err)) != LC_OK) break;
                if (pg_vec_unhex(store_pg_col(r, i, 4), buf, (size_t)dim * sizeof(float)) != 0) continue; /* not ours */
                store_vec_row row = {
                    .kind = k ? STORE_VEC_SUMMARY : STORE_VEC_MESSAGE,
                    .id = after,
                    .entry_id = store_pg_col(r, i, 1),
                    .removed = (int)store_pg_col_int(r, i, 2),
                    .dim = dim,
                    .v = buf,
                };
                rc = visit(ud, &row, err);
            }
            PQclear(r);
            if (rc == STORE_VISIT_STOP) {
                rc = LC_OK;
                goto done;
            }
            if (rc != LC_OK || rows < PG_VEC_PAGE) break;
        }
    }
done:
    free(buf);
    return rc;
}

int store_pg_vec_get(store *s, const char *model, store_vec_kind kind, const int64_t *ids, size_t n,
                     store_vec_visit visit, void *ud, char **err)
{
    float *buf = NULL;
    int cap = 0, rc = LC_OK;
    PGresult *r = NULL;
    sbuf arr = {0};
    if (!n || !pg_vec_has_tables(s)) return LC_OK;
    /* One statement for the whole set: a round trip per row would cost more than the scan. */
    sb_putc(&arr, '{');
    for (size_t i = 0; i < n; i++) sb_printf(&arr, "%s%lld", i ? "," : "", (long long)ids[i]);
    sb_putc(&arr, '}');
    char *list = sb_detach(&arr);
    if (!list) return lc_errf(err, LC_NOMEM, "store: out of memory");
    const char *p[] = {model, list};
    r = store_pg_run(s,
                     kind == STORE_VEC_SUMMARY
                         ? "SELECT summary_id, NULL, 0, dim, vec FROM summary_vectors WHERE model = $1"
                           " AND summary_id = ANY($2::bigint[])"
                         : "SELECT v.message_id, v.entry_id, m.removed, v.dim, v.vec FROM message_vectors v"
                           " JOIN messages m ON m.id = v.message_id WHERE v.model = $1"
                           " AND v.message_id = ANY($2::bigint[])",
                     2, p, STORE_PG_IDEM, "reading vectors", err);
    free(list);
    if (!r) return LC_ERR;
    int rows = PQntuples(r);
    for (int i = 0; i < rows && rc == LC_OK; i++) {
        int dim = (int)store_pg_col_int(r, i, 3);
        if (dim <= 0) continue;
        if ((rc = store_common_vec_room(&buf, &cap, dim, err)) != LC_OK) break;
        if (pg_vec_unhex(store_pg_col(r, i, 4), buf, (size_t)dim * sizeof(float)) != 0) continue; /* not ours */
        store_vec_row row = {.kind = kind, .id = store_pg_col_int(r, i, 0), .entry_id = store_pg_col(r, i, 1),
                             .removed = (int)store_pg_col_int(r, i, 2), .dim = dim, .v = buf};
        rc = visit(ud, &row, err);
    }
    if (rc == STORE_VISIT_STOP) rc = LC_OK;
    PQclear(r);
    free(buf);
    return rc;
}

int store_pg_vec_walk_missing(store *s, const char *model, int other_models, store_vec_pending_visit visit,
                              void *ud, int *stopped, char **err)
{
    static const char *const sql[2] = {
        "SELECT m.id, m.text, v.model FROM messages m LEFT JOIN message_vectors v ON v.message_id = m.id"
        " WHERE m.text != '' AND (v.model IS NULL OR ($2::boolean AND v.model != $1)) AND m.id > $3::bigint"
        " ORDER BY m.id" PG_VEC_LIMIT,
        "SELECT x.id, x.text, v.model FROM summaries x LEFT JOIN summary_vectors v ON v.summary_id = x.id"
        " WHERE x.text != '' AND (v.model IS NULL OR ($2::boolean AND v.model != $1)) AND x.id > $3::bigint"
        " ORDER BY x.id" PG_VEC_LIMIT,
    };
    int rc = LC_OK;
    if (stopped) *stopped = 0;
    if (!pg_vec_has_tables(s)) return LC_OK;
    for (int k = 0; k < 2 && rc == LC_OK; k++) {
        int64_t after = 0;
        for (;;) {
            char ab[24];
            const char *p[] = {model, other_models ? "true" : "false", store_pg_i64(ab, after)};
            PGresult *r = store_pg_run(s, sql[k], 3, p, STORE_PG_IDEM, "reading rows to embed", err);
            if (!r) {
                rc = LC_ERR;
                break;
            }
            int rows = PQntuples(r);
            for (int i = 0; i < rows && rc == LC_OK; i++) {
                const char *text = store_pg_col(r, i, 1);
                after = store_pg_col_int(r, i, 0);
                store_vec_pending t = {
                    .kind = k ? STORE_VEC_SUMMARY : STORE_VEC_MESSAGE,
                    .id = after,
                    .text = text ? text : "",
                    .text_len = text ? strlen(text) : 0,
                    .other_model = store_pg_col(r, i, 2),
                };
                rc = visit(ud, &t, err);
            }
            PQclear(r);
            if (rc == STORE_VISIT_STOP) {
                if (stopped) *stopped = 1;
                return LC_OK;
            }
            if (rc != LC_OK || rows < PG_VEC_PAGE) break;
        }
    }
    return rc;
}

int store_pg_vec_coverage_get(store *s, const char *model, store_vec_coverage *out, char **err)
{
    memset(out, 0, sizeof *out);
    out->messages = store_pg_message_count(s);
    out->summaries = store_pg_summary_count(s);
    if (!pg_vec_has_tables(s)) return LC_OK;
    const char *p[] = {model};
    PGresult *r = store_pg_run(s,
                               "SELECT (SELECT count(*) FROM message_vectors WHERE model = $1),"
                               " (SELECT count(*) FROM message_vectors WHERE model != $1),"
                               " (SELECT count(*) FROM summary_vectors WHERE model = $1),"
                               " (SELECT count(*) FROM summary_vectors WHERE model != $1),"
                               " (SELECT model FROM message_vectors WHERE model != $1 UNION ALL"
                               "  SELECT model FROM summary_vectors WHERE model != $1 LIMIT 1)",
                               1, p, STORE_PG_IDEM, "vector coverage", err);
    if (!r) return LC_ERR;
    if (PQntuples(r) == 1) {
        out->messages_embedded = store_pg_col_int(r, 0, 0);
        out->messages_other = store_pg_col_int(r, 0, 1);
        out->summaries_embedded = store_pg_col_int(r, 0, 2);
        out->summaries_other = store_pg_col_int(r, 0, 3);
        out->other_model = store_pg_col_dup(r, 0, 4);
    }
    PQclear(r);
    return LC_OK;
}
