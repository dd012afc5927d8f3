/*
 * store_pg_int.h -- private to the PostgreSQL backend (store_pg*.c): the store's struct
 * (the connection, the session's key, the ingest's recent state) and the one way every
 * file of the backend runs a statement (parameters as text, a lost connection reset and an
 * idempotent statement retried once, an error sentence that never carries the password).
 * No other file includes it; only store_pg*.c include libpq-fe.h.
 *
 * Layout (store_pg_schema.c): the tables live in schema `lcm`, one row set per session keyed by
 * `sid` (lcm.sessions). Each connection sets `lcm.sid` and a search_path whose first
 * schema, `lcm_session`, holds one view per table filtered to that session (the base
 * tables' `sid` defaults to the setting), so the backend's statements name `messages`,
 * `summaries`, ... as the SQLite backend does and can never reach another session's rows.
 */
#ifndef LC_STORE_PG_INT_H
#define LC_STORE_PG_INT_H

#include <libpq-fe.h>
#include <stdint.h>

#include "store.h"
#include "store_backend.h"
#include "store_common.h"
#include "store_derive.h"
#include "store_pg.h"

/* The text search configuration of the tsvectors (schema 3, store_pg_schema.c): 'english', whose
 * snowball stems match an inflected word by its stem as the SQLite index's porter does.
 * A query takes the configuration its database's tsvectors were made with (STORE_PG_TS):
 * a read-only opener never migrates, and a database an older build still writes keeps
 * 'simple' until a read-write open of this build migrates it. */
#define STORE_PG_TS_CONFIG "'english'"
#define STORE_PG_TS                                                                             \
    "(CASE WHEN (SELECT max(version) FROM lcm.schema_version) >= 3 THEN " STORE_PG_TS_CONFIG \
    " ELSE 'simple' END)::regconfig"

#define STORE_PG_PREPARED 8

struct store {
    const store_methods *methods; /* first: all store.c reads (store_backend.h) */
    PGconn *conn;
    char *url;        /* the connection URI as configured (may hold a password: never shown) */
    char *url_safe;   /* the same with any password replaced by "***" */
    char *path;       /* url_safe#sid: what store_path shows and store_open_readonly takes */
    int64_t sid;      /* this session's key in lcm.sessions */
    char sidtxt[24];
    int read_only;
    int tx_open;      /* a transaction the caller spans (store_tx_begin) */
    int inner;        /* depth of the backend's own transaction inside the caller's */
    int offline;      /* the last call found the server unreachable */
    store_options opt;
    char *last_entry; /* newest entry known stored: the O(1) "nothing new" check */
    int64_t last_ordinal;
    store_call calls[STORE_CALL_RING];
    size_t call_next;
    /* The statements prepared on this connection (store_pg_batch): slot i is named
     * lcm_b<i> and holds the SQL's address; a reset connection forgets them. */
    const char *prepared[STORE_PG_PREPARED];
};

/* Statement flags: STORE_PG_IDEM = safe to run again after a reconnect (reads, and writes
 * whose effect is the same when repeated). */
#define STORE_PG_IDEM 1
/* STORE_PG_PREP: run as a statement prepared once per connection (a hot read: its plan is
 * made once, not at every call). */
#define STORE_PG_PREP 2

/* The DAG-progress fragments (store.h), over the session's views. */
/* A run's lease end; a row written before runs had leases holds one from its start. */
#define STORE_PG_STR_(x) #x
#define STORE_PG_STR(x) STORE_PG_STR_(x)
#define STORE_PG_LEASE_UNTIL "coalesce(lease_until, started + " STORE_PG_STR(STORE_RUN_LEASE_MS) ")"
#define STORE_PG_WM "(SELECT value::bigint FROM meta WHERE key = 'dag_watermark')"
#define STORE_PG_ELIGIBLE(row) row ".removed = 0 AND " row ".role NOT IN (" STORE_DAG_EXCLUDED_ROLES ")"
#define STORE_PG_UNCOVERED(row) \
    "NOT EXISTS (SELECT 1 FROM summary_messages sm WHERE sm.entry_id = " row ".entry_id)"

/* Run `sql` with `n` text parameters (NULL = SQL NULL). Returns the result (rows or
 * command done; the caller PQclear()s it) or NULL with *err "store: <what>: <reason>". A
 * lost connection outside a transaction is reset once and, with STORE_PG_IDEM, the
 * statement retried; otherwise the sentence says the store is offline. */
PGresult *store_pg_run(store *s, const char *sql, int n, const char *const *vals, int flags, const char *what,
                       char **err);
/* The same for a statement whose rows are not wanted: LC_OK or LC_ERR. *changed (may be
 * NULL) gets the rows it changed. */
int store_pg_cmd(store *s, const char *sql, int n, const char *const *vals, int flags, const char *what,
                 int64_t *changed, char **err);
/* One statement of a batch (store_pg_batch): `sql` is a string constant (its address names
 * the statement prepared for it on the connection), `vals` its `n` text parameters (NULL =
 * SQL NULL); after the batch `res` holds its result (the caller PQclear()s it; NULL when
 * the batch failed before it ran). */
typedef struct {
    const char *sql;
    int n;
    const char *const *vals;
    PGresult *res;
} store_pg_stmt;

/* Run `st[0..n)` as one transaction under the session's write lock (a savepoint inside the
 * caller's transaction), every statement prepared once per connection and sent in libpq's
 * pipeline mode: the whole batch, with its BEGIN and COMMIT, is one round trip to the server.
 * LC_OK when every statement succeeded and the transaction committed; otherwise it is rolled
 * back and *err says why ("store: <what>: <reason>"). A connection lost outside the
 * caller's transaction is reset and, with STORE_PG_IDEM, the batch sent again once. */
int store_pg_batch(store *s, store_pg_stmt *st, size_t n, int flags, const char *what, char **err);
/* Bring the database's layout to this build's version (store_pg_schema.c): the forward
 * migrations in one transaction under an advisory lock; LC_INVALID for a newer layout. */
int store_pg_migrate(store *s, char **err);
/* One integer from a query; `dflt` when it fails, returns no row or NULL. */
int64_t store_pg_int(store *s, const char *sql, int n, const char *const *vals, int64_t dflt);
/* A transaction with the session's write lock (its sessions row locked FOR UPDATE): the
 * writers of one session are serialized as SQLite's write lock serializes them. Inside the
 * caller's transaction a savepoint instead. */
int store_pg_begin(store *s, char **err);
int store_pg_commit(store *s, char **err);
void store_pg_rollback(store *s);
/* The time now in epoch milliseconds as a parameter (buf >= 24 bytes). */
const char *store_pg_now(char *buf);
/* Integer text for a parameter (buf >= 24 bytes). */
const char *store_pg_i64(char *buf, int64_t v);
/* Column as int64 / malloc'd string (NULL for SQL NULL). */
int64_t store_pg_col_int(const PGresult *r, int row, int col);
char *store_pg_col_dup(const PGresult *r, int row, int col);
/* Column text, NULL for SQL NULL (borrowed from the result). */
const char *store_pg_col(const PGresult *r, int row, int col);

/* The backend's table and its slots, defined across store_pg*.c. */
extern const store_methods store_pg_methods;
#define STORE_PG_PROTO(ret, name, params) ret store_pg_##name params;
STORE_SLOTS_CORE(STORE_PG_PROTO)
STORE_SLOTS_TX(STORE_PG_PROTO)
STORE_SLOTS_ADMIN(STORE_PG_PROTO)
STORE_SLOTS_RUN_LEASE(STORE_PG_PROTO)
STORE_SLOTS_LEASE(STORE_PG_PROTO)
STORE_SLOTS_VEC_GET(STORE_PG_PROTO)
/* The vectors (store.h, version-2 slots; store_pg_vec.c). */
int store_pg_vec_put(store *s, const store_vec *v, size_t n, char **err);
int store_pg_vec_walk(store *s, const char *model, int include_removed, store_vec_visit visit, void *ud, char **err);
int store_pg_vec_walk_missing(store *s, const char *model, int other_models, store_vec_pending_visit visit, void *ud,
                              int *stopped, char **err);
int store_pg_vec_coverage_get(store *s, const char *model, store_vec_coverage *out, char **err);
/* The FTS5 query recall passes, as to_tsquery('simple', ...) text (store_pg_search.c).
 * LC_INVALID with a sentence for what has no tsquery form. */
int store_pg_tsquery(const char *fts5, char **out, char **err);

#endif
