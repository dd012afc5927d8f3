/*
 * store_sqlite_vec.c -- the SQLite backend's vector rows for hybrid recall (store.h,
 * "vectors"): writing a batch, the similarity scan's walk, the re-rank's read of given rows,
 * the backfill's walk of rows without a vector, and coverage. The tables are schema 3's message_vectors and
 * summary_vectors; a read-only store of an older generation has neither, and every read
 * here then sees nothing rather than failing.
 * The vector stamp (store.h: meta `vec_version`) is bumped by every write here in its own
 * transaction, and by TEMP triggers (per connection, like the DAG's progress triggers) for
 * what changes the scan's answer without passing here: a vector deleted with its row or its
 * summary's text, a message's removal mark set or cleared.
 */
#include "store.h"
#include "store_sqlite_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_common.h"
#include "util.h"

#define VEC_BUMP                                                                               \
    "INSERT OR REPLACE INTO meta(key, value) VALUES('vec_version',"                       \
    " coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'vec_version'), 0) + 1);"

int store_sqlite_vec_triggers(store *s, char **err)
{
    if (!store_sqlite_int(s, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN"
                             " ('message_vectors','summary_vectors')", 0))
        return LC_OK;
    return store_sqlite_exec(s,
                             "CREATE TEMP TRIGGER IF NOT EXISTS store_vec_gone AFTER DELETE ON main.message_vectors"
                             " BEGIN " VEC_BUMP " END;"
                             "CREATE TEMP TRIGGER IF NOT EXISTS store_vec_sum_gone AFTER DELETE ON main.summary_vectors"
                             " BEGIN " VEC_BUMP " END;"
                             "CREATE TEMP TRIGGER IF NOT EXISTS store_vec_removed AFTER UPDATE OF removed ON main.messages"
                             " WHEN old.removed != new.removed"
                             " AND EXISTS (SELECT 1 FROM main.message_vectors v WHERE v.message_id = new.id)"
                             " BEGIN " VEC_BUMP " END;",
                             err);
}

static int vec_has_tables(store *s)
{
    return store_sqlite_int(s, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN"
                               " ('message_vectors','summary_vectors')", 0) == 2;
}

int store_sqlite_vec_put(store *s, const store_vec *v, size_t n, char **err)
{
    sqlite3_stmt *msg = NULL, *sum = NULL;
    int rc = LC_OK, in_tx = 0;
    if (n == 0) return LC_OK;
    /* INSERT ... SELECT: a row deleted since it was read (a repair, a retired summary)
     * inserts nothing instead of failing the batch on the foreign key. */
    if ((rc = store_sqlite_prepare(s, &msg,
                                   "INSERT OR REPLACE INTO message_vectors(message_id, entry_id, model, dim, vec, created)"
                                   " SELECT id, entry_id, ?2, ?3, ?4, ?5 FROM messages WHERE id = ?1",
                                   "vectors", err)) != LC_OK ||
        (rc = store_sqlite_prepare(s, &sum,
                                   "INSERT OR REPLACE INTO summary_vectors(summary_id, model, dim, vec, created)"
                                   " SELECT id, ?2, ?3, ?4, ?5 FROM summaries WHERE id = ?1",
                                   "vectors", err)) != LC_OK)
        goto done;
    if ((rc = store_sqlite_exec(s, "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    in_tx = 1;
    sqlite3_int64 now = (sqlite3_int64)time(NULL) * 1000;
    for (size_t i = 0; i < n; i++) {
        if (v[i].dim <= 0 || !v[i].v || !v[i].model) {
            rc = lc_errf(err, LC_INVALID, "store: a vector needs a model and a dimension");
            goto done;
        }
        sqlite3_stmt *st = v[i].kind == STORE_VEC_SUMMARY ? sum : msg;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, v[i].id);
        sqlite3_bind_text(st, 2, v[i].model, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, v[i].dim);
        sqlite3_bind_blob(st, 4, v[i].v, v[i].dim * (int)sizeof(float), SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, now);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = store_sqlite_failed(s, err, "writing a vector");
            goto done;
        }
    }
    if ((rc = store_sqlite_exec(s, VEC_BUMP, err)) != LC_OK) goto done;
    rc = store_sqlite_exec(s, "COMMIT", err);
    if (rc == LC_OK) in_tx = 0;
done:
    if (in_tx) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_finalize(msg);
    sqlite3_finalize(sum);
    return rc;
}

int store_sqlite_vec_walk(store *s, const char *model, int include_removed, store_vec_visit visit, void *ud,
                          char **err)
{
    sqlite3_stmt *st = NULL;
    float *buf = NULL;
    int cap = 0, rc = LC_OK;
    if (!vec_has_tables(s)) return LC_OK;
    /* The scan reads the vectors' rows only: the removed marks come from their partial
     * index (messages_removed), never the message rows. */
    if ((rc = store_sqlite_prepare(s, &st,
                                   "SELECT 1, v.message_id, v.entry_id,"
                                   " v.message_id IN (SELECT id FROM messages WHERE removed = 1), v.dim, v.vec"
                                   " FROM message_vectors v WHERE v.model = ?1"
                                   " AND (?2 OR v.message_id NOT IN (SELECT id FROM messages WHERE removed = 1))"
                                   " UNION ALL SELECT 2, v.summary_id, NULL, 0, v.dim, v.vec FROM summary_vectors v"
                                   " WHERE v.model = ?1",
                                   "reading vectors", err)) != LC_OK)
        goto done;
    sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, include_removed ? 1 : 0);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int dim = sqlite3_column_int(st, 4);
        const void *blob = sqlite3_column_blob(st, 5);
        int bytes = sqlite3_column_bytes(st, 5);
        if (dim <= 0 || !blob || bytes != dim * (int)sizeof(float)) continue; /* not one of ours */
        if ((rc = store_common_vec_room(&buf, &cap, dim, err)) != LC_OK) goto done;
        /* A BLOB's bytes carry no alignment promise. */
        memcpy(buf, blob, (size_t)bytes);
        store_vec_row r = {
            .kind = sqlite3_column_int(st, 0) == 2 ? STORE_VEC_SUMMARY : STORE_VEC_MESSAGE,
            .id = sqlite3_column_int64(st, 1),
            .entry_id = (const char *)sqlite3_column_text(st, 2),
            .removed = sqlite3_column_int(st, 3),
            .dim = dim,
            .v = buf,
        };
        if ((rc = visit(ud, &r, err)) != LC_OK) {
            if (rc == STORE_VISIT_STOP) rc = LC_OK;
            goto done;
        }
    }
    if (step != SQLITE_DONE) rc = store_sqlite_failed(s, err, "reading vectors");
done:
    sqlite3_finalize(st);
    free(buf);
    return rc;
}

int store_sqlite_vec_get(store *s, const char *model, store_vec_kind kind, const int64_t *ids, size_t n,
                         store_vec_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    float *buf = NULL;
    int cap = 0, rc = LC_OK;
    if (!n || !vec_has_tables(s)) return LC_OK;
    /* One primary-key lookup a row: the re-rank asks for a few hundred. */
    if ((rc = store_sqlite_prepare(s, &st,
                                   kind == STORE_VEC_SUMMARY
                                       ? "SELECT NULL, 0, dim, vec FROM summary_vectors WHERE summary_id = ?1 AND model = ?2"
                                       : "SELECT v.entry_id, coalesce((SELECT m.removed FROM messages m"
                                         " WHERE m.id = v.message_id), 0), v.dim, v.vec"
                                         " FROM message_vectors v WHERE v.message_id = ?1 AND v.model = ?2",
                                   "reading vectors", err)) != LC_OK)
        goto done;
    sqlite3_bind_text(st, 2, model, -1, SQLITE_STATIC);
    for (size_t i = 0; i < n && rc == LC_OK; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, ids[i]);
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE) continue;
        if (step != SQLITE_ROW) {
            rc = store_sqlite_failed(s, err, "reading vectors");
            break;
        }
        int dim = sqlite3_column_int(st, 2);
        const void *blob = sqlite3_column_blob(st, 3);
        int bytes = sqlite3_column_bytes(st, 3);
        if (dim <= 0 || !blob || bytes != dim * (int)sizeof(float)) continue; /* not one of ours */
        if ((rc = store_common_vec_room(&buf, &cap, dim, err)) != LC_OK) break;
        memcpy(buf, blob, (size_t)bytes);
        store_vec_row r = {.kind = kind, .id = ids[i], .entry_id = (const char *)sqlite3_column_text(st, 0),
                           .removed = sqlite3_column_int(st, 1), .dim = dim, .v = buf};
        rc = visit(ud, &r, err);
    }
    if (rc == STORE_VISIT_STOP) rc = LC_OK;
done:
    sqlite3_finalize(st);
    free(buf);
    return rc;
}

int store_sqlite_vec_walk_missing(store *s, const char *model, int other_models, store_vec_pending_visit visit,
                                  void *ud, int *stopped, char **err)
{
    static const char *const sql[2] = {
        "SELECT m.id, m.text, v.model FROM messages m LEFT JOIN message_vectors v ON v.message_id = m.id"
        " WHERE m.text != '' AND (v.model IS NULL OR (?2 AND v.model != ?1)) ORDER BY m.id",
        "SELECT x.id, x.text, v.model FROM summaries x LEFT JOIN summary_vectors v ON v.summary_id = x.id"
        " WHERE x.text != '' AND (v.model IS NULL OR (?2 AND v.model != ?1)) ORDER BY x.id",
    };
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if (stopped) *stopped = 0;
    if (!vec_has_tables(s)) return LC_OK;
    for (int k = 0; k < 2 && rc == LC_OK; k++) {
        if (sqlite3_prepare_v2(s->db, sql[k], -1, &st, NULL) != SQLITE_OK) {
            rc = store_sqlite_failed(s, err, "reading rows to embed");
            break;
        }
        sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, other_models ? 1 : 0);
        int step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            store_vec_pending t = {
                .kind = k ? STORE_VEC_SUMMARY : STORE_VEC_MESSAGE,
                .id = sqlite3_column_int64(st, 0),
                .text = (const char *)sqlite3_column_text(st, 1),
                .text_len = (size_t)sqlite3_column_bytes(st, 1),
                .other_model = (const char *)sqlite3_column_text(st, 2),
            };
            if ((rc = visit(ud, &t, err)) != LC_OK) break;
        }
        if (rc == STORE_VISIT_STOP) {
            if (stopped) *stopped = 1;
            rc = LC_OK;
            sqlite3_finalize(st);
            return rc;
        }
        if (rc == LC_OK && step != SQLITE_DONE) rc = store_sqlite_failed(s, err, "reading rows to embed");
        sqlite3_finalize(st);
        st = NULL;
    }
    return rc;
}

static int64_t vec_count(store *s, const char *sql, const char *model)
{
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (model) sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

int store_sqlite_vec_coverage_get(store *s, const char *model, store_vec_coverage *out, char **err)
{
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    out->messages = store_sqlite_message_count(s);
    out->summaries = store_sqlite_summary_count(s);
    if (!vec_has_tables(s)) return LC_OK;
    out->messages_embedded = vec_count(s, "SELECT count(*) FROM message_vectors WHERE model = ?1", model);
    out->messages_other = vec_count(s, "SELECT count(*) FROM message_vectors WHERE model != ?1", model);
    out->summaries_embedded = vec_count(s, "SELECT count(*) FROM summary_vectors WHERE model = ?1", model);
    out->summaries_other = vec_count(s, "SELECT count(*) FROM summary_vectors WHERE model != ?1", model);
    if (sqlite3_prepare_v2(s->db, "SELECT model FROM message_vectors WHERE model != ?1 UNION ALL"
                           " SELECT model FROM summary_vectors WHERE model != ?1 LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_failed(s, err, "vector coverage");
    sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) out->other_model = store_sqlite_col_dup(st, 0);
    sqlite3_finalize(st);
    return LC_OK;
}
