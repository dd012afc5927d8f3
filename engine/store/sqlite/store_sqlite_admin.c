/*
 * store_sqlite_admin.c -- the SQLite backend's administration primitives (store.h,
 * "administration"): transactions a caller spans, the online backup, the table dump and
 * row load behind export and import, the full-text rebuild, the doctor's facts and
 * integrity checks, open runs, and the provenance repairs. What counts as a fault, what a
 * repair keeps and how a report or an export reads is maint.c's.
 */
#include "store.h"
#include "store_sqlite.h"
#include "store_sqlite_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

int store_sqlite_tx_begin(store *s, char **err) { return store_sqlite_exec(s, "BEGIN IMMEDIATE", err); }
int store_sqlite_tx_commit(store *s, char **err) { return store_sqlite_exec(s, "COMMIT", err); }

void store_sqlite_tx_rollback(store *s)
{
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    store_sqlite_bulk_reset(s);
}

static int store_table_exists(store *s, const char *name)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* Which tables a check needs exist: the messages, and the summaries with all their
 * provenance tables. */
static void store_admin_has(store *s, int *msgs, int *prov)
{
    *msgs = store_table_exists(s, "messages");
    *prov = store_table_exists(s, "summaries") && store_table_exists(s, "summary_spans") &&
            store_table_exists(s, "summary_messages") && store_table_exists(s, "summary_children");
}

/* ---- backup -------------------------------------------------------------------------------- */

int store_sqlite_backup_to(store *from, const char *dest_path, char **err)
{
    sqlite3 *dst = NULL;
    sqlite3_backup *bk = NULL;
    int rc = LC_OK;
    char *msg = NULL;
    if (sqlite3_open_v2(dest_path, &dst, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        rc = store_sqlite_err(dst, err, "maint", "backup open");
        goto done;
    }
    if (!(bk = sqlite3_backup_init(dst, "main", from->db, "main"))) {
        rc = store_sqlite_err(dst, err, "maint", "backup init");
        goto done;
    }
    /* All pages in one step = one read transaction on the source: a snapshot, whatever a
     * concurrent writer does (WAL readers never block writers). */
    int step = sqlite3_backup_step(bk, -1);
    sqlite3_backup_finish(bk);
    bk = NULL;
    if (step != SQLITE_DONE) {
        rc = lc_errf(err, LC_ERR, "backup: copy failed: %s", sqlite3_errstr(step));
        goto done;
    }
    /* The copy is a standalone file: no -wal to carry along. */
    if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, &msg) != SQLITE_OK)
        rc = lc_errf(err, LC_ERR, "maint: %s", msg ? msg : sqlite3_errmsg(dst));
done:
    sqlite3_free(msg);
    if (bk) sqlite3_backup_finish(bk);
    sqlite3_close(dst);
    return rc;
}

/* ---- dump and load ----------------------------------------------------------------------- */

/* Ordinary tables: not sqlite_*, not virtual, not a virtual table's shadow tables. */
static const char store_tables_sql[] =
    "SELECT t.name FROM sqlite_master t WHERE t.type='table' AND t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    " AND t.sql NOT LIKE 'CREATE VIRTUAL TABLE%'"
    " AND NOT EXISTS (SELECT 1 FROM sqlite_master v WHERE v.type='table'"
    "   AND v.sql LIKE 'CREATE VIRTUAL TABLE%' AND substr(t.name, 1, length(v.name) + 1) = v.name || '_')"
    " ORDER BY t.name";

/* Hand every row of `table` to v->row. */
static int store_dump_table(store *s, const char *table, const store_dump_visitor *v, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    const char **cols = NULL;
    store_value *vals = NULL;
    char *raw = NULL;
    int rc = LC_OK, step;
    char *sql = sqlite3_mprintf("SELECT * FROM \"%w\"", table);
    if (!sql || sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_err(s->db, err, "maint", "export read");
        goto done;
    }
    int ncol = sqlite3_column_count(st);
    if ((rc = store_common_dump_buffers(ncol, &cols, &vals, err)) != LC_OK) goto done;
    /* A message's JSON leaves as the original text, packed or not (store_sqlite_raw.c). */
    int raw_col = -1, text_col = -1, payload_col = -1;
    for (int c = 0; c < ncol; c++) {
        cols[c] = sqlite3_column_name(st, c);
        if (strcmp(table, "messages") != 0) continue;
        if (!strcmp(cols[c], "raw_json")) raw_col = c;
        else if (!strcmp(cols[c], "text")) text_col = c;
        else if (!strcmp(cols[c], "payload")) payload_col = c;
    }
    if (text_col < 0) raw_col = -1;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        for (int c = 0; c < ncol; c++) {
            store_value *x = &vals[c];
            memset(x, 0, sizeof *x);
            switch (sqlite3_column_type(st, c)) {
            case SQLITE_INTEGER: x->type = STORE_VALUE_INT; x->i = sqlite3_column_int64(st, c); break;
            case SQLITE_FLOAT: x->type = STORE_VALUE_REAL; x->d = sqlite3_column_double(st, c); break;
            case SQLITE_NULL: x->type = STORE_VALUE_NULL; break;
            case SQLITE_BLOB:
                x->type = STORE_VALUE_BLOB;
                x->p = sqlite3_column_blob(st, c);
                x->n = (size_t)sqlite3_column_bytes(st, c);
                break;
            default:
                x->type = STORE_VALUE_TEXT;
                x->p = sqlite3_column_text(st, c);
                x->n = (size_t)sqlite3_column_bytes(st, c);
                if (!x->p) x->p = "";
            }
        }
        if (raw_col >= 0 && vals[raw_col].type == STORE_VALUE_BLOB) {
            size_t n = 0;
            if ((rc = store_sqlite_raw_column(st, raw_col, text_col, payload_col, &raw, &n, err)) != LC_OK) goto done;
            vals[raw_col].type = STORE_VALUE_TEXT;
            vals[raw_col].p = raw;
            vals[raw_col].n = n;
        }
        rc = v->row(ud, table, (size_t)ncol, cols, vals, err);
        free(raw);
        raw = NULL;
        if (rc != LC_OK) goto done;
    }
    if (step != SQLITE_DONE) rc = store_sqlite_err(s->db, err, "maint", "export read");
done:
    free(raw);
    sqlite3_free(sql);
    sqlite3_finalize(st);
    free(cols);
    free(vals);
    return rc;
}

int store_sqlite_dump(store *s, const store_dump_visitor *v, void *ud, char **err)
{
    sqlite3_stmt *tl = NULL;
    char **tables = NULL;
    size_t nt = 0;
    int rc = LC_OK, own_tx = 0;
    /* One read transaction: the dump is one snapshot of the store. */
    if (sqlite3_get_autocommit(s->db)) {
        if ((rc = store_sqlite_exec(s, "BEGIN", err)) != LC_OK) goto done;
        own_tx = 1;
    }
    if (sqlite3_prepare_v2(s->db, store_tables_sql, -1, &tl, NULL) != SQLITE_OK) {
        rc = store_sqlite_err(s->db, err, "maint", "export tables");
        goto done;
    }
    while (sqlite3_step(tl) == SQLITE_ROW) {
        char **nt2 = realloc(tables, (nt + 1) * sizeof *nt2);
        if (!nt2) {
            rc = lc_errf(err, LC_NOMEM, "export: out of memory");
            goto done;
        }
        tables = nt2;
        if (!(tables[nt] = lc_strdup((const char *)sqlite3_column_text(tl, 0)))) {
            rc = lc_errf(err, LC_NOMEM, "export: out of memory");
            goto done;
        }
        nt++;
    }
    int schema = (int)store_sqlite_int(s, "PRAGMA user_version", 0);
    if ((rc = v->tables(ud, schema, (const char *const *)tables, nt, err)) != LC_OK) goto done;
    for (size_t i = 0; i < nt; i++)
        if ((rc = store_dump_table(s, tables[i], v, ud, err)) != LC_OK) goto done;
done:
    sqlite3_finalize(tl);
    if (own_tx) sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    for (size_t i = 0; i < nt; i++) free(tables[i]);
    free(tables);
    return rc;
}

int store_sqlite_table_loadable(store *s, const char *table)
{
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (sqlite3_prepare_v2(s->db, store_tables_sql, -1, &st, NULL) != SQLITE_OK) return 0;
    while (!ok && sqlite3_step(st) == SQLITE_ROW) ok = strcmp((const char *)sqlite3_column_text(st, 0), table) == 0;
    sqlite3_finalize(st);
    return ok;
}

static int store_bind_value(sqlite3_stmt *st, int idx, const store_value *v)
{
    switch (v->type) {
    case STORE_VALUE_NULL: return sqlite3_bind_null(st, idx);
    case STORE_VALUE_INT: return sqlite3_bind_int64(st, idx, (sqlite3_int64)v->i);
    case STORE_VALUE_REAL: return sqlite3_bind_double(st, idx, v->d);
    case STORE_VALUE_TEXT: return sqlite3_bind_text(st, idx, v->p, (int)v->n, SQLITE_TRANSIENT);
    case STORE_VALUE_BLOB: return sqlite3_bind_blob(st, idx, v->p, (int)v->n, SQLITE_TRANSIENT);
    }
    return SQLITE_MISMATCH;
}

int store_sqlite_row_load(store *s, const char *table, size_t ncol, const char *const *cols, const store_value *vals,
                   int *inserted, char **err)
{
    sbuf sql = {0};
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if (inserted) *inserted = 0;
    char *q = sqlite3_mprintf("INSERT OR IGNORE INTO \"%w\"(", table);
    sb_puts(&sql, q ? q : "");
    sqlite3_free(q);
    for (size_t i = 0; i < ncol; i++) {
        q = sqlite3_mprintf("%s\"%w\"", i ? "," : "", cols[i]);
        sb_puts(&sql, q ? q : "");
        sqlite3_free(q);
    }
    sb_puts(&sql, ") VALUES(");
    for (size_t i = 0; i < ncol; i++) sb_puts(&sql, i ? ",?" : "?");
    sb_puts(&sql, ")");
    int ok = !sql.oom && sqlite3_prepare_v2(s->db, sql.p, -1, &st, NULL) == SQLITE_OK;
    for (size_t i = 0; ok && i < ncol; i++)
        if (store_bind_value(st, (int)i + 1, &vals[i]) != SQLITE_OK) ok = 0;
    if (ok && sqlite3_step(st) != SQLITE_DONE) ok = 0;
    if (ok && inserted) *inserted = sqlite3_changes(s->db) > 0;
    if (!ok) rc = lc_errf(err, LC_ERR, "%s", sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    sb_free(&sql);
    return rc;
}

int store_sqlite_rebuild_index(store *s, char **err)
{
    int rc = LC_OK;
    /* Contentless tables cannot 'rebuild': empty them and index every row again, with the
     * words and reach of ingest (store_sqlite_reindex_messages). */
    if (store_table_exists(s, "messages_fts") && store_table_exists(s, "messages") &&
        (rc = store_sqlite_reindex_messages(s, err)) != LC_OK)
        return rc;
    if (store_table_exists(s, "summaries_fts") && store_table_exists(s, "summaries"))
        rc = store_sqlite_exec(s,
                               "INSERT INTO summaries_fts(summaries_fts) VALUES('delete-all');"
                               "INSERT INTO summaries_fts(rowid, text) SELECT id, text FROM summaries;",
                               err);
    return rc;
}

/* ---- doctor --------------------------------------------------------------------------------- */

int store_sqlite_facts_get(store *s, store_facts *out, char **err)
{
    sqlite3_stmt *st = NULL;
    (void)err;
    memset(out, 0, sizeof *out);
    out->has_messages = store_table_exists(s, "messages");
    out->has_summaries = store_table_exists(s, "summaries");
    out->has_provenance = out->has_summaries && store_table_exists(s, "summary_spans") &&
                          store_table_exists(s, "summary_messages") && store_table_exists(s, "summary_children");
    out->has_runs = store_table_exists(s, "runs");
    out->schema_version = (int)store_sqlite_int(s, "PRAGMA user_version", -1);
    if (out->has_messages) {
        out->messages = store_sqlite_int(s, "SELECT count(*) FROM messages", 0);
        out->removed = store_sqlite_int(s, "SELECT count(*) FROM messages WHERE removed = 1", 0);
        out->payload_bytes = store_sqlite_int(s, "SELECT coalesce(sum(length(payload)), 0) FROM messages", 0);
    }
    if (out->has_summaries) {
        out->summaries = store_sqlite_int(s, "SELECT count(*) FROM summaries", 0);
        if (sqlite3_prepare_v2(s->db, "SELECT depth, count(*) FROM summaries GROUP BY depth", -1, &st, NULL) ==
            SQLITE_OK)
            while (sqlite3_step(st) == SQLITE_ROW) {
                int d = sqlite3_column_int(st, 0);
                if (d >= 0 && d <= STORE_MAX_DEPTH) out->depth_hist[d] = sqlite3_column_int64(st, 1);
            }
        sqlite3_finalize(st);
    }
    if (store_table_exists(s, "file_handles"))
        out->file_handles = store_sqlite_int(s, "SELECT count(*) FROM file_handles", 0);
    if (out->has_runs) out->runs = store_sqlite_int(s, "SELECT count(*) FROM runs", 0);
    if (out->has_messages && out->has_provenance)
        out->unleafed = store_sqlite_int(s,
                                        "SELECT count(*) FROM messages m WHERE m.removed = 0 AND NOT EXISTS"
                                        " (SELECT 1 FROM summary_messages sm WHERE sm.entry_id = m.entry_id)",
                                        0);
    return LC_OK;
}

/* Run `sql` (one id column) and visit every row. */
static int store_check_rows(store *s, const char *sql, const char *what, store_id_visit visit, void *ud,
                            char **err)
{
    sqlite3_stmt *st = NULL;
    int step, rc = LC_OK;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = store_sqlite_err(s->db, err, "maint", what);
        goto done;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if ((rc = visit(ud, id ? id : "", err)) != LC_OK) goto done;
    }
    if (step != SQLITE_DONE) rc = store_sqlite_err(s->db, err, "maint", what);
done:
    sqlite3_finalize(st);
    return rc;
}

/* A full-text index's own integrity command: visits the index's name when it fails. A
 * read-only connection cannot run it; the row comparison still finds missing and stray
 * documents. */
static int store_check_index(store *s, const char *fts, const char *table, store_id_visit visit, void *ud,
                             char **err)
{
    int rc = LC_OK;
    if (!store_table_exists(s, fts) || !store_table_exists(s, table)) return LC_OK;
    char *sql = sqlite3_mprintf("INSERT INTO \"%w\"(\"%w\", rank) VALUES('integrity-check', 0)", fts, fts);
    if (sql && sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK &&
        sqlite3_extended_errcode(s->db) != SQLITE_READONLY && sqlite3_errcode(s->db) != SQLITE_READONLY)
        rc = visit(ud, fts, err);
    sqlite3_free(sql);
    return rc;
}

/* The ids in `table` the index has no document for, and the documents with no row. */
static int store_check_index_rows(store *s, const char *fts, const char *table, const char *what,
                                  store_id_visit visit, void *ud, char **err)
{
    int rc = LC_OK;
    if (!store_table_exists(s, fts) || !store_table_exists(s, table)) return LC_OK;
    char *docsize = lc_asprintf("%s_docsize", fts);
    if (docsize && store_table_exists(s, docsize)) {
        char *sql = sqlite3_mprintf("SELECT id FROM \"%w\" WHERE id NOT IN (SELECT id FROM \"%w_docsize\")"
                                    " UNION ALL SELECT id FROM \"%w_docsize\" WHERE id NOT IN (SELECT id FROM \"%w\")",
                                    table, fts, fts, table);
        rc = sql ? store_check_rows(s, sql, what, visit, ud, err) : lc_errf(err, LC_NOMEM, "out of memory");
        sqlite3_free(sql);
    }
    free(docsize);
    return rc;
}

int store_sqlite_check(store *s, store_check_kind kind, store_id_visit visit, void *ud, char **err)
{
    int msgs, prov;
    store_admin_has(s, &msgs, &prov);
    switch (kind) {
    case STORE_CHECK_MESSAGES_INDEX: return store_check_index(s, "messages_fts", "messages", visit, ud, err);
    case STORE_CHECK_MESSAGES_INDEX_ROWS:
        return store_check_index_rows(s, "messages_fts", "messages", "fts", visit, ud, err);
    case STORE_CHECK_SUMMARIES_INDEX: return store_check_index(s, "summaries_fts", "summaries", visit, ud, err);
    case STORE_CHECK_SUMMARIES_INDEX_ROWS:
        return store_check_index_rows(s, "summaries_fts", "summaries", "fts", visit, ud, err);
    case STORE_CHECK_SPANS:
        return prov && msgs ? store_check_rows(s, STORE_COMMON_BAD_SPANS_SQL, "spans", visit, ud, err) : LC_OK;
    case STORE_CHECK_SHAPE:
        return prov ? store_check_rows(s, STORE_COMMON_BAD_SHAPE_SQL, "shape", visit, ud, err) : LC_OK;
    case STORE_CHECK_CHILDREN:
        return prov ? store_check_rows(s, STORE_COMMON_BAD_CHILDREN_SQL, "children", visit, ud, err) : LC_OK;
    case STORE_CHECK_DUPLICATES:
        return prov ? store_check_rows(s, STORE_COMMON_DUPLICATES_SQL, "duplicates", visit, ud, err) : LC_OK;
    case STORE_CHECK_FOREIGN_KEYS:
        return store_check_rows(s, "SELECT \"table\" || ':' || coalesce(rowid, '?') FROM pragma_foreign_key_check",
                                "foreign-keys", visit, ud, err);
    }
    return lc_errf(err, LC_INVALID, "store: no such check");
}

int store_sqlite_runs_open(store *s, store_run_visit visit, void *ud, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = LC_OK;
    if (!store_table_exists(s, "runs")) return LC_OK;
    if (sqlite3_prepare_v2(s->db, "SELECT id, pid FROM runs WHERE finished IS NULL ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK) {
        rc = store_sqlite_err(s->db, err, "maint", "runs");
        goto done;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        /* A store file is written on one machine: its runs are judged by their pid. */
        if (!store_common_visit_next(visit(ud, sqlite3_column_int64(st, 0), (long)sqlite3_column_int64(st, 1),
                                           STORE_RUN_BY_PID, err),
                                     &rc, NULL))
            break;
    }
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- named leases: a meta row "lease:NAME" = "UNTIL_MS HOLDER" ------------------------------
 * Read and written inside one write transaction (or a savepoint within the caller's), so of
 * two takers exactly one sees the lease free; a row's own schema would buy nothing more. */
int store_sqlite_lease_take(store *s, const char *name, const char *holder, long ttl_ms, char **other, char **err)
{
    int nested = !sqlite3_get_autocommit(s->db);
    char *key = lc_asprintf("lease:%s", name), *cur = NULL, *val = NULL;
    int rc = LC_OK;
    if (!key) return lc_errf(err, LC_NOMEM, "store: out of memory");
    if ((rc = store_sqlite_exec(s, nested ? "SAVEPOINT store_lease" : "BEGIN IMMEDIATE", err)) != LC_OK) goto done;
    long long now = lc_epoch_ms(), until = 0;
    int off = 0;
    if ((cur = store_sqlite_meta_get(s, key)) && sscanf(cur, "%lld %n", &until, &off) == 1 && off > 0 &&
        strcmp(cur + off, holder) != 0 && until >= now) {
        char *when = lc_utc_format(until, "%Y-%m-%d %H:%M:%S UTC", "?");
        if (other) *other = lc_asprintf("%s until %s", cur + off, when ? when : "?");
        free(when);
        rc = LC_BUSY;
    } else if (!(val = lc_asprintf("%lld %s", now + ttl_ms, holder))) {
        rc = lc_errf(err, LC_NOMEM, "store: out of memory");
    } else {
        rc = store_sqlite_meta_put(s, key, val, err);
    }
    if (rc == LC_OK) rc = store_sqlite_exec(s, nested ? "RELEASE store_lease" : "COMMIT", err);
    else store_sqlite_exec(s, nested ? "ROLLBACK TO store_lease; RELEASE store_lease" : "ROLLBACK", NULL);
done:
    free(key), free(cur), free(val);
    return rc;
}

void store_sqlite_lease_drop(store *s, const char *name, const char *holder)
{
    char *key = lc_asprintf("lease:%s", name), *cur = key ? store_sqlite_meta_get(s, key) : NULL;
    long long until = 0;
    int off = 0;
    sqlite3_stmt *st = NULL;
    if (cur && sscanf(cur, "%lld %n", &until, &off) == 1 && off > 0 && strcmp(cur + off, holder) == 0 &&
        sqlite3_prepare_v2(s->db, "DELETE FROM meta WHERE key = ? AND value = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, cur, -1, SQLITE_STATIC);
        sqlite3_step(st);
    }
    sqlite3_finalize(st);
    free(key), free(cur);
}

int store_sqlite_run_reap(store *s, int64_t id, char **err)
{
    sqlite3_stmt *up = NULL;
    int rc = LC_OK;
    if (sqlite3_prepare_v2(s->db, "UPDATE runs SET finished = ?, status = 'reaped' WHERE id = ?", -1, &up, NULL) !=
        SQLITE_OK) {
        rc = store_sqlite_err(s->db, err, "maint", "runs");
        goto done;
    }
    sqlite3_bind_int64(up, 1, (sqlite3_int64)time(NULL) * 1000);
    sqlite3_bind_int64(up, 2, id);
    if (sqlite3_step(up) != SQLITE_DONE) rc = store_sqlite_err(s->db, err, "maint", "reap run");
done:
    sqlite3_finalize(up);
    return rc;
}

/* ---- repair ------------------------------------------------------------------------------ */

/* Run `sql`; the rows the last statement changed are added to *n (may be NULL). */
static void store_admin_changes(store *s, const char *sql, int64_t *n, int *rc, char **err)
{
    if (*rc != LC_OK) return;
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        *rc = lc_errf(err, LC_ERR, "maint: %s", msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return;
    }
    if (n) *n += sqlite3_changes(s->db);
}

int store_sqlite_prune_broken(store *s, int64_t *orphans, int64_t *dropped, char **err)
{
    int rc = LC_OK, msgs, prov;
    *orphans = *dropped = 0;
    store_admin_has(s, &msgs, &prov);
    if (!prov || !msgs) return LC_OK;
    /* Provenance rows that name no summary first, so the closure below sees only real
     * edges; then every bad node and, transitively, every parent that loses a child. */
    store_admin_changes(s, "DELETE FROM summary_children WHERE parent_id NOT IN (SELECT id FROM summaries)",
                        orphans, &rc, err);
    store_admin_changes(s, "DELETE FROM summary_spans WHERE summary_id NOT IN (SELECT id FROM summaries)", orphans,
                        &rc, err);
    store_admin_changes(s, "DELETE FROM summary_messages WHERE summary_id NOT IN (SELECT id FROM summaries)",
                        orphans, &rc, err);
    if (rc) return rc;
    store_admin_changes(s, "DROP TABLE IF EXISTS temp.maint_drop;"
                           "CREATE TEMP TABLE maint_drop AS " STORE_COMMON_PRUNE_SET_SQL ";",
                        NULL, &rc, err);
    if (rc) return rc;
    *dropped = store_sqlite_int(s, "SELECT count(*) FROM temp.maint_drop", 0);
    store_admin_changes(s,
                        "DELETE FROM summary_children WHERE child_id IN (SELECT id FROM temp.maint_drop)"
                        " OR parent_id IN (SELECT id FROM temp.maint_drop);"
                        "DELETE FROM summary_spans WHERE summary_id IN (SELECT id FROM temp.maint_drop);"
                        "DELETE FROM summary_messages WHERE summary_id IN (SELECT id FROM temp.maint_drop);"
                        "DELETE FROM summaries WHERE id IN (SELECT id FROM temp.maint_drop);"
                        "DROP TABLE temp.maint_drop;",
                        NULL, &rc, err);
    return rc;
}

int store_sqlite_dedupe_spans(store *s, int64_t *removed, char **err)
{
    int rc = LC_OK, msgs, prov;
    *removed = 0;
    store_admin_has(s, &msgs, &prov);
    if (!prov || !msgs) return LC_OK;
    store_admin_changes(
        s,
        "DROP TABLE IF EXISTS temp.maint_rank; DROP TABLE IF EXISTS temp.maint_dups;"
        "CREATE TEMP TABLE maint_rank AS SELECT s.id, s.depth, sp.first_entry AS fe, sp.last_entry AS le,"
        " CASE WHEN s.kind = 'leaf' THEN EXISTS (SELECT 1 FROM summary_messages m WHERE m.summary_id = s.id)"
        "  ELSE EXISTS (SELECT 1 FROM summary_children c WHERE c.parent_id = s.id) END AS ok"
        " FROM summaries s JOIN summary_spans sp ON sp.summary_id = s.id;"
        "CREATE TEMP TABLE maint_dups AS SELECT r.id AS id, (SELECT r2.id FROM temp.maint_rank r2"
        " WHERE r2.depth = r.depth AND r2.fe = r.fe AND r2.le = r.le ORDER BY r2.ok DESC, r2.id LIMIT 1)"
        " AS keeper FROM temp.maint_rank r;"
        "DELETE FROM temp.maint_dups WHERE id = keeper;",
        NULL, &rc, err);
    if (rc) return rc;
    *removed = store_sqlite_int(s, "SELECT count(*) FROM temp.maint_dups", 0);
    store_admin_changes(
        s,
        "UPDATE OR IGNORE summary_children SET child_id ="
        " (SELECT keeper FROM temp.maint_dups d WHERE d.id = summary_children.child_id)"
        " WHERE child_id IN (SELECT id FROM temp.maint_dups);"
        "DELETE FROM summary_children WHERE child_id IN (SELECT id FROM temp.maint_dups)"
        " OR parent_id IN (SELECT id FROM temp.maint_dups);"
        "DELETE FROM summary_spans WHERE summary_id IN (SELECT id FROM temp.maint_dups);"
        "DELETE FROM summary_messages WHERE summary_id IN (SELECT id FROM temp.maint_dups);"
        "DELETE FROM summaries WHERE id IN (SELECT id FROM temp.maint_dups);"
        "DROP TABLE temp.maint_rank; DROP TABLE temp.maint_dups;",
        NULL, &rc, err);
    return rc;
}
