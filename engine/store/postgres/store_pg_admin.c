/*
 * store_pg_admin.c -- the PostgreSQL backend's administration primitives (store.h,
 * "administration"): transactions a caller spans, the dump and row load behind export,
 * import and `lcm migrate` (the session's rows under the SQLite store's table and column
 * names, so a dump of either backend loads into the other), the doctor's facts and checks,
 * open runs, and the provenance repairs. The full-text index is a generated column: there
 * is nothing to rebuild and no document can be missing, so those checks find nothing. A
 * whole-store file backup is the server's business (pg_dump) and is not offered.
 */
#include "store.h"
#include "store_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int store_pg_tx_begin(store *s, char **err)
{
    if (s->tx_open) return lc_errf(err, LC_INVALID, "store: a transaction is already open");
    int rc = store_pg_begin(s, err);
    if (rc == LC_OK) {
        s->tx_open = 1;
        s->inner = 0;
    }
    return rc;
}

int store_pg_tx_commit(store *s, char **err)
{
    if (!s->tx_open) return lc_errf(err, LC_INVALID, "store: no transaction is open");
    s->tx_open = 0;
    s->inner = 0;
    return store_pg_cmd(s, "COMMIT", 0, NULL, 0, "commit", NULL, err);
}

void store_pg_tx_rollback(store *s)
{
    if (s->tx_open || s->inner) PQclear(PQexec(s->conn, "ROLLBACK"));
    s->tx_open = 0;
    s->inner = 0;
}

/* ---- dump and load ----------------------------------------------------------------------- */

/* The tables and columns of the store's schema as the SQLite store names them, by name. */
static const struct {
    const char *name;
    const char *cols;
    const char *order;
} store_pg_tables[] = {
    {"file_handles", "id,entry_id,path,content_id,kind,chars,preview,summary", "id"},
    {"lcm_cuts", "id,anchor_entry,anchor_ordinal,message,tokens,nodes,stubbed,created", "id"},
    {"lcm_events", "id,kind,data,created", "id"},
    {"lcm_pin", "id,cut_id,applied_tokens,window,updated", "id"},
    {"messages", "id,entry_id,ordinal,role,text,chars,tokens,raw_json,payload,removed,tool_name,tool_path,created", "id"},
    {"meta", "key,value", "key"},
    {"runs", "id,kind,pid,started,finished,status", "id"},
    {"summaries", "id,kind,depth,text,tiers,tokens,created", "id"},
    {"summary_children", "parent_id,child_id,position", "parent_id, position"},
    {"summary_messages", "summary_id,entry_id,position", "summary_id, position"},
    {"summary_spans", "summary_id,first_ordinal,last_ordinal,first_entry,last_entry,entry_count", "summary_id"},
};
#define STORE_PG_NTABLES (sizeof store_pg_tables / sizeof store_pg_tables[0])

static int store_pg_table_index(const char *table)
{
    for (size_t i = 0; i < STORE_PG_NTABLES; i++)
        if (strcmp(store_pg_tables[i].name, table) == 0) return (int)i;
    return -1;
}

/* 1 when `col` is one of table `t`'s columns. */
static int store_pg_has_col(int t, const char *col)
{
    const char *p = store_pg_tables[t].cols;
    size_t n = strlen(col);
    while (*p) {
        size_t l = strcspn(p, ",");
        if (l == n && strncmp(p, col, n) == 0) return 1;
        p += l;
        if (*p == ',') p++;
    }
    return 0;
}

/* The columns, quoted ("window" is a keyword). malloc'd. */
static char *store_pg_quoted_cols(int t)
{
    sbuf b = {0};
    const char *p = store_pg_tables[t].cols;
    while (*p) {
        size_t l = strcspn(p, ",");
        sb_printf(&b, "%s\"%.*s\"", b.len ? "," : "", (int)l, p);
        p += l;
        if (*p == ',') p++;
    }
    return sb_detach(&b);
}

static int store_pg_dump_table(store *s, int t, const store_dump_visitor *v, void *ud, char **err)
{
    char *cols = store_pg_quoted_cols(t);
    char *sql = cols ? lc_asprintf("SELECT %s FROM %s ORDER BY %s", cols, store_pg_tables[t].name,
                                   store_pg_tables[t].order)
                     : NULL;
    const char **names = NULL;
    store_value *vals = NULL;
    PGresult *r = NULL;
    int rc = LC_OK;
    if (!sql) {
        rc = lc_errf(err, LC_NOMEM, "export: out of memory");
        goto done;
    }
    if (!(r = store_pg_run(s, sql, 0, NULL, STORE_PG_IDEM, "export read", err))) {
        rc = LC_ERR;
        goto done;
    }
    int ncol = PQnfields(r);
    if ((rc = store_common_dump_buffers(ncol, &names, &vals, err)) != LC_OK) goto done;
    for (int c = 0; c < ncol; c++) names[c] = PQfname(r, c);
    for (int i = 0; i < PQntuples(r) && rc == LC_OK; i++) {
        for (int c = 0; c < ncol; c++) {
            store_value *x = &vals[c];
            memset(x, 0, sizeof *x);
            Oid ty = PQftype(r, c);
            if (PQgetisnull(r, i, c)) {
                x->type = STORE_VALUE_NULL;
            } else if (ty == 20 || ty == 21 || ty == 23) { /* int8, int2, int4 */
                x->type = STORE_VALUE_INT;
                x->i = strtoll(PQgetvalue(r, i, c), NULL, 10);
            } else if (ty == 700 || ty == 701) { /* float4, float8 */
                x->type = STORE_VALUE_REAL;
                x->d = strtod(PQgetvalue(r, i, c), NULL);
            } else {
                x->type = STORE_VALUE_TEXT;
                x->p = PQgetvalue(r, i, c);
                x->n = (size_t)PQgetlength(r, i, c);
            }
        }
        rc = v->row(ud, store_pg_tables[t].name, (size_t)ncol, names, vals, err);
    }
done:
    PQclear(r);
    LC_FREE(names, vals, cols, sql);
    return rc;
}

int store_pg_dump(store *s, const store_dump_visitor *v, void *ud, char **err)
{
    const char *names[STORE_PG_NTABLES];
    int rc = LC_OK, own_tx = 0;
    for (size_t i = 0; i < STORE_PG_NTABLES; i++) names[i] = store_pg_tables[i].name;
    /* One snapshot of the session (a repeatable-read transaction), unless the caller's. */
    if (!s->tx_open) {
        if ((rc = store_pg_cmd(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, STORE_PG_IDEM, "export",
                               NULL, err)) != LC_OK)
            return rc;
        own_tx = 1;
        s->inner = 1;
    }
    if ((rc = v->tables(ud, store_pg_schema_version(s), names, STORE_PG_NTABLES, err)) != LC_OK) goto done;
    for (size_t i = 0; i < STORE_PG_NTABLES && rc == LC_OK; i++) rc = store_pg_dump_table(s, (int)i, v, ud, err);
done:
    if (own_tx) {
        PQclear(PQexec(s->conn, "COMMIT"));
        s->inner = 0;
    }
    return rc;
}

int store_pg_table_loadable(store *s, const char *table)
{
    (void)s;
    return table && store_pg_table_index(table) >= 0;
}

int store_pg_row_load(store *s, const char *table, size_t ncol, const char *const *cols, const store_value *vals,
                      int *inserted, char **err)
{
    int t = store_pg_table_index(table), rc = LC_OK;
    sbuf sql = {0};
    char **txt = NULL;
    PGresult *r = NULL;
    if (inserted) *inserted = 0;
    if (t < 0) return lc_errf(err, LC_INVALID, "no such table: %s", table);
    for (size_t i = 0; i < ncol; i++)
        if (!store_pg_has_col(t, cols[i])) return lc_errf(err, LC_INVALID, "table %s has no column named %s", table, cols[i]);
    if (!(txt = calloc(ncol + 1, sizeof *txt))) return lc_errf(err, LC_NOMEM, "out of memory");
    sb_printf(&sql, "INSERT INTO %s(", table);
    for (size_t i = 0; i < ncol; i++) sb_printf(&sql, "%s\"%s\"", i ? "," : "", cols[i]);
    sb_puts(&sql, ") VALUES(");
    for (size_t i = 0; i < ncol; i++) sb_printf(&sql, "%s$%zu", i ? "," : "", i + 1);
    sb_puts(&sql, ") ON CONFLICT DO NOTHING RETURNING 1");
    for (size_t i = 0; i < ncol && rc == LC_OK; i++) {
        const store_value *x = &vals[i];
        switch (x->type) {
        case STORE_VALUE_NULL: break;
        case STORE_VALUE_INT: txt[i] = lc_asprintf("%lld", (long long)x->i); break;
        case STORE_VALUE_REAL: txt[i] = lc_asprintf("%.17g", x->d); break;
        default:
            if (memchr(x->p, '\0', x->n)) rc = lc_errf(err, LC_INVALID, "a NUL byte in column %s", cols[i]);
            else txt[i] = lc_strndup(x->p, x->n);
        }
        if (rc == LC_OK && x->type != STORE_VALUE_NULL && !txt[i]) rc = lc_errf(err, LC_NOMEM, "out of memory");
    }
    if (rc == LC_OK && sql.oom) rc = lc_errf(err, LC_NOMEM, "out of memory");
    if (rc != LC_OK) goto done;
    /* A savepoint inside the caller's transaction: a refused row leaves the rest loadable. */
    if ((rc = store_pg_begin(s, err)) != LC_OK) goto done;
    r = store_pg_run(s, sql.p, (int)ncol, (const char *const *)txt, 0, "load", err);
    if (!r) {
        store_pg_rollback(s);
        rc = LC_ERR;
        goto done;
    }
    if (inserted) *inserted = PQntuples(r) > 0;
    rc = store_pg_commit(s, err);
done:
    PQclear(r);
    for (size_t i = 0; i < ncol; i++) free(txt[i]);
    free(txt);
    sb_free(&sql);
    return rc;
}

int store_pg_rebuild_index(store *s, char **err)
{
    (void)s;
    (void)err;
    return LC_OK; /* generated from each row: always current */
}

/* ---- doctor --------------------------------------------------------------------------------- */

int store_pg_facts_get(store *s, store_facts *out, char **err)
{
    (void)err;
    memset(out, 0, sizeof *out);
    out->has_messages = out->has_summaries = out->has_provenance = out->has_runs = 1;
    out->schema_version = store_pg_schema_version(s);
    out->messages = store_pg_int(s, "SELECT count(*) FROM messages", 0, NULL, 0);
    out->removed = store_pg_int(s, "SELECT count(*) FROM messages WHERE removed = 1", 0, NULL, 0);
    out->payload_bytes = store_pg_int(s, "SELECT coalesce(sum(octet_length(payload)), 0) FROM messages", 0, NULL, 0);
    out->summaries = store_pg_int(s, "SELECT count(*) FROM summaries", 0, NULL, 0);
    PGresult *r = store_pg_run(s, "SELECT depth, count(*) FROM summaries GROUP BY depth", 0, NULL, STORE_PG_IDEM,
                               "facts", NULL);
    for (int i = 0; r && i < PQntuples(r); i++) {
        int64_t d = store_pg_col_int(r, i, 0);
        if (d >= 0 && d <= STORE_MAX_DEPTH) out->depth_hist[d] = store_pg_col_int(r, i, 1);
    }
    PQclear(r);
    out->file_handles = store_pg_int(s, "SELECT count(*) FROM file_handles", 0, NULL, 0);
    out->runs = store_pg_int(s, "SELECT count(*) FROM runs", 0, NULL, 0);
    out->unleafed = store_pg_int(s,
                                 "SELECT count(*) FROM messages m WHERE m.removed = 0 AND NOT EXISTS"
                                 " (SELECT 1 FROM summary_messages sm WHERE sm.entry_id = m.entry_id)",
                                 0, NULL, 0);
    return LC_OK;
}

static int store_pg_check_rows(store *s, const char *sql, const char *what, store_id_visit visit, void *ud, char **err)
{
    PGresult *r = store_pg_run(s, sql, 0, NULL, STORE_PG_IDEM, what, err);
    int rc = LC_OK;
    if (!r) return LC_ERR;
    for (int i = 0; i < PQntuples(r) && rc == LC_OK; i++) rc = visit(ud, PQgetvalue(r, i, 0), err);
    PQclear(r);
    return rc == STORE_VISIT_STOP ? LC_OK : rc;
}

int store_pg_check(store *s, store_check_kind kind, store_id_visit visit, void *ud, char **err)
{
    switch (kind) {
    /* The tsvector is a generated column and PostgreSQL enforces the foreign keys: these
     * hold by construction. */
    case STORE_CHECK_MESSAGES_INDEX:
    case STORE_CHECK_MESSAGES_INDEX_ROWS:
    case STORE_CHECK_SUMMARIES_INDEX:
    case STORE_CHECK_SUMMARIES_INDEX_ROWS:
    case STORE_CHECK_FOREIGN_KEYS: return LC_OK;
    case STORE_CHECK_SPANS:
        return store_pg_check_rows(s, STORE_COMMON_BAD_SPANS_SQL " ORDER BY 1", "spans", visit, ud, err);
    case STORE_CHECK_SHAPE:
        return store_pg_check_rows(s, STORE_COMMON_BAD_SHAPE_SQL " ORDER BY s.id", "shape", visit, ud, err);
    case STORE_CHECK_CHILDREN:
        return store_pg_check_rows(s, STORE_COMMON_BAD_CHILDREN_SQL " ORDER BY 1", "children", visit, ud, err);
    case STORE_CHECK_DUPLICATES:
        return store_pg_check_rows(s, STORE_COMMON_DUPLICATES_SQL " ORDER BY sp.summary_id", "duplicates", visit, ud,
                                   err);
    }
    return lc_errf(err, LC_INVALID, "store: no such check");
}

/* A run of this machine is judged by its pid (which tells a death at once); another
 * machine's by its lease (a row written before leases holds one lease from its start). */
int store_pg_runs_open(store *s, store_run_visit visit, void *ud, char **err)
{
    char hn[256] = "", nb[24];
    if (gethostname(hn, sizeof hn - 1) != 0) hn[0] = '\0';
    const char *p[] = {hn, store_pg_now(nb)};
    PGresult *r = store_pg_run(s, "SELECT id, pid, CASE WHEN host = $1 THEN -1 WHEN " STORE_PG_LEASE_UNTIL
                                  " < $2::bigint THEN 0 ELSE 1 END FROM runs WHERE finished IS NULL ORDER BY id",
                               2, p, STORE_PG_IDEM, "runs", err);
    int rc = LC_OK;
    if (!r) return LC_ERR;
    for (int i = 0; i < PQntuples(r); i++) {
        int lease = (int)store_pg_col_int(r, i, 2);
        if (!store_common_visit_next(visit(ud, store_pg_col_int(r, i, 0), (long)store_pg_col_int(r, i, 1), lease, err),
                                     &rc, NULL))
            break;
    }
    PQclear(r);
    return rc;
}

int store_pg_run_reap(store *s, int64_t id, char **err)
{
    char nb[24], ib[24];
    const char *v[] = {store_pg_i64(nb, (int64_t)time(NULL) * 1000), store_pg_i64(ib, id)};
    return store_pg_cmd(s, "UPDATE runs SET finished = $1::bigint, status = 'reaped' WHERE id = $2::bigint", 2, v,
                        STORE_PG_IDEM, "reap run", NULL, err);
}

/* ---- named leases ------------------------------------------------------------------------ */

/* Read and write under the session's lock (store_pg_begin), so two takers on two machines
 * are serialized and exactly one sees the lease free. */
int store_pg_lease_take(store *s, const char *name, const char *holder, long ttl_ms, char **other, char **err)
{
    char nb[24], tb[24];
    const char *v[] = {name, holder, store_pg_now(nb), store_pg_i64(tb, ttl_ms)};
    if (s->read_only) return lc_errf(err, LC_INVALID, "store: opened read-only");
    int rc = store_pg_begin(s, err);
    if (rc != LC_OK) return rc;
    PGresult *r = store_pg_run(s, "SELECT holder, until FROM leases WHERE name = $1 AND holder <> $2"
                                  " AND until >= $3::bigint", 3, v, 0, "lease", err);
    if (!r) rc = LC_ERR;
    else if (PQntuples(r) > 0) {
        char *when = lc_utc_format(store_pg_col_int(r, 0, 1), "%Y-%m-%d %H:%M:%S UTC", "?");
        if (other) *other = lc_asprintf("%s until %s", store_pg_col(r, 0, 0), when ? when : "?");
        free(when);
        rc = LC_BUSY;
    }
    PQclear(r);
    if (rc == LC_OK)
        rc = store_pg_cmd(s, "INSERT INTO leases(name, holder, until) VALUES($1, $2, $3::bigint + $4::bigint)"
                             " ON CONFLICT DO NOTHING", 4, v, 0, "lease", NULL, err);
    if (rc == LC_OK)
        rc = store_pg_cmd(s, "UPDATE leases SET holder = $2, until = $3::bigint + $4::bigint WHERE name = $1", 4, v, 0,
                          "lease", NULL, err);
    if (rc == LC_OK) return store_pg_commit(s, err);
    store_pg_rollback(s);
    return rc;
}

void store_pg_lease_drop(store *s, const char *name, const char *holder)
{
    const char *v[] = {name, holder};
    store_pg_cmd(s, "DELETE FROM leases WHERE name = $1 AND holder = $2", 2, v, STORE_PG_IDEM, "lease", NULL, NULL);
}

/* ---- repair ------------------------------------------------------------------------------ */

/* Run `sql`; the rows it changed are added to *n (may be NULL). */
static void store_pg_changes(store *s, const char *sql, int64_t *n, int *rc, char **err)
{
    int64_t c = 0;
    if (*rc != LC_OK) return;
    *rc = store_pg_cmd(s, sql, 0, NULL, 0, "repair", &c, err);
    if (*rc == LC_OK && n) *n += c;
}

/* Delete the summaries whose ids the temp table `table` lists, with every edge, span and
 * message row that names them. */
static void store_pg_drop_listed(store *s, const char *table, int *rc, char **err)
{
    char *sql[] = {
        lc_asprintf("DELETE FROM summary_children WHERE child_id IN (SELECT id FROM %s)"
                    " OR parent_id IN (SELECT id FROM %s)", table, table),
        lc_asprintf("DELETE FROM summary_spans WHERE summary_id IN (SELECT id FROM %s)", table),
        lc_asprintf("DELETE FROM summary_messages WHERE summary_id IN (SELECT id FROM %s)", table),
        lc_asprintf("DELETE FROM summaries WHERE id IN (SELECT id FROM %s)", table),
    };
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        if (!sql[i] && *rc == LC_OK) *rc = lc_errf(err, LC_NOMEM, "out of memory");
        store_pg_changes(s, sql[i], NULL, rc, err);
        free(sql[i]);
    }
}

int store_pg_prune_broken(store *s, int64_t *orphans, int64_t *dropped, char **err)
{
    int rc = LC_OK;
    *orphans = *dropped = 0;
    /* The foreign keys keep provenance from naming a missing summary; what can break is a
     * span naming an entry the store lacks, and what hangs from such a node. */
    store_pg_changes(s, "DROP TABLE IF EXISTS pg_temp.maint_drop", NULL, &rc, err);
    store_pg_changes(s, "CREATE TEMP TABLE maint_drop AS " STORE_COMMON_PRUNE_SET_SQL, NULL, &rc, err);
    if (rc) return rc;
    *dropped = store_pg_int(s, "SELECT count(*) FROM pg_temp.maint_drop", 0, NULL, 0);
    store_pg_drop_listed(s, "pg_temp.maint_drop", &rc, err);
    store_pg_changes(s, "DROP TABLE pg_temp.maint_drop", NULL, &rc, err);
    return rc;
}

int store_pg_dedupe_spans(store *s, int64_t *removed, char **err)
{
    int rc = LC_OK;
    *removed = 0;
    store_pg_changes(s, "DROP TABLE IF EXISTS pg_temp.maint_rank", NULL, &rc, err);
    store_pg_changes(s, "DROP TABLE IF EXISTS pg_temp.maint_dups", NULL, &rc, err);
    store_pg_changes(s,
                     "CREATE TEMP TABLE maint_rank AS SELECT s.id, s.depth, sp.first_entry AS fe, sp.last_entry AS le,"
                     " CASE WHEN s.kind = 'leaf' THEN EXISTS (SELECT 1 FROM summary_messages m WHERE m.summary_id = s.id)"
                     "  ELSE EXISTS (SELECT 1 FROM summary_children c WHERE c.parent_id = s.id) END AS ok"
                     " FROM summaries s JOIN summary_spans sp ON sp.summary_id = s.id",
                     NULL, &rc, err);
    store_pg_changes(s,
                     "CREATE TEMP TABLE maint_dups AS SELECT r.id AS id, (SELECT r2.id FROM pg_temp.maint_rank r2"
                     " WHERE r2.depth = r.depth AND r2.fe = r.fe AND r2.le = r.le ORDER BY r2.ok DESC, r2.id LIMIT 1)"
                     " AS keeper FROM pg_temp.maint_rank r",
                     NULL, &rc, err);
    store_pg_changes(s, "DELETE FROM pg_temp.maint_dups WHERE id = keeper", NULL, &rc, err);
    if (rc) return rc;
    *removed = store_pg_int(s, "SELECT count(*) FROM pg_temp.maint_dups", 0, NULL, 0);
    /* Parents re-pointed to the keeper, unless they already hold it (SQLite's OR IGNORE). */
    store_pg_changes(s,
                     "UPDATE summary_children SET child_id = d.keeper FROM pg_temp.maint_dups d"
                     " WHERE summary_children.child_id = d.id AND NOT EXISTS (SELECT 1 FROM summary_children c2"
                     " WHERE c2.parent_id = summary_children.parent_id AND c2.child_id = d.keeper)",
                     NULL, &rc, err);
    store_pg_drop_listed(s, "pg_temp.maint_dups", &rc, err);
    store_pg_changes(s, "DROP TABLE pg_temp.maint_rank", NULL, &rc, err);
    store_pg_changes(s, "DROP TABLE pg_temp.maint_dups", NULL, &rc, err);
    return rc;
}
