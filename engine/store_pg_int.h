/*
 * store_pg_int.h -- private to the PostgreSQL backend (store_pg*.c): the store's struct
 * (the connection, the session's key, the ingest's recent state) and the one way every
 * file of the backend runs a statement (parameters as text, a lost connection reset and an
 * idempotent statement retried once, an error sentence that never carries the password).
 * No other file includes it; only store_pg*.c include libpq-fe.h.
 *
 * Layout (store_pg.c): the tables live in schema `lcm`, one row set per session keyed by
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
#include "store_common.h"
#include "store_derive.h"
#include "store_pg.h"

struct store {
    const store_methods *methods; /* first: all store.c reads (store.h, backends) */
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
};

/* Statement flags: STORE_PG_IDEM = safe to run again after a reconnect (reads, and writes
 * whose effect is the same when repeated). */
#define STORE_PG_IDEM 1

/* The DAG-progress fragments (store.h), over the session's views. */
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
/* One integer from a query; `dflt` when it fails, returns no row or NULL. */
int64_t store_pg_int(store *s, const char *sql, int n, const char *const *vals, int64_t dflt);
/* A transaction with the session's write lock (its sessions row locked FOR UPDATE): the
 * writers of one session are serialized as SQLite's write lock serializes them. Inside the
 * caller's transaction a savepoint instead. */
int store_pg_begin(store *s, char **err);
int store_pg_commit(store *s, char **err);
void store_pg_rollback(store *s);
/* Integer text for a parameter (buf >= 24 bytes). */
const char *store_pg_i64(char *buf, int64_t v);
/* Column as int64 / malloc'd string (NULL for SQL NULL). */
int64_t store_pg_col_int(const PGresult *r, int row, int col);
char *store_pg_col_dup(const PGresult *r, int row, int col);
/* Column text, NULL for SQL NULL (borrowed from the result). */
const char *store_pg_col(const PGresult *r, int row, int col);

/* The backend's table and its slots, defined across store_pg*.c. */
extern const store_methods store_pg_methods;
void store_pg_close(store *s);
void store_pg_set_options(store *s, const store_options *opt);
const char *store_pg_path(const store *s);
const char *store_pg_mode_note(const store *s);
char *store_pg_meta_get(store *s, const char *key);
int store_pg_meta_put(store *s, const char *key, const char *value, char **err);
int store_pg_schema_version(store *s);
int store_pg_ingest(store *s, const store_msg *msgs, size_t n, store_ingest_stats *stats, char **err);
int store_pg_mark_branch(store *s, const char *const *active_ids, size_t n, size_t *marked, size_t *cleared, char **err);
int store_pg_set_removed(store *s, const char *const *entry_ids, size_t n, int removed, char **err);
int store_pg_dag_progress(store *s, int64_t *watermark, int64_t *pending, char **err);
int store_pg_dag_set_watermark(store *s, int64_t expect, int64_t value, int *moved, char **err);
int store_pg_dag_block_get(store *s, int64_t *tokens);
int store_pg_dag_block_put(store *s, int64_t tokens, char **err);
int store_pg_get_message(store *s, const char *entry_id, store_row *out, char **err);
int64_t store_pg_message_count(store *s);
int64_t store_pg_summary_count(store *s);
int64_t store_pg_db_bytes(store *s);
int store_pg_summary_add(store *s, const store_summary *in, int64_t *out_id, char **err);
int store_pg_summary_set_text(store *s, int64_t id, const char *text, int64_t tokens, char **err);
int store_pg_dag_walk_tail(store *s, store_msg_visit visit, void *ud, int *stopped, char **err);
int store_pg_walk_newest(store *s, store_msg_visit visit, void *ud, int *stopped, char **err);
long long store_pg_last_activity_ms(store *s);
int store_pg_dag_walk_uncovered(store *s, int64_t after, int64_t before, store_msg_visit visit, void *ud, int *stopped, char **err);
int store_pg_dag_count_uncovered(store *s, int64_t from, int64_t before, int64_t *count, char **err);
int store_pg_dag_walk_frontier(store *s, store_node_visit visit, void *ud, char **err);
int store_pg_dag_walk_prefixed(store *s, const char *prefix, store_node_visit visit, void *ud, char **err);
int store_pg_dag_walk_source(store *s, int64_t id, int leaf, store_msg_visit visit, void *ud, char **err);
int64_t store_pg_run_begin(store *s, const char *kind);
void store_pg_run_end(store *s, int64_t id, const char *status);
int store_pg_event_add(store *s, const char *kind, const char *data_json, char **err);
int64_t store_pg_event_count(store *s, const char *kind);
int store_pg_cut_get(store *s, store_cut_which which, int64_t id, store_cut *out, char **err);
int store_pg_cut_add(store *s, const store_cut *in, int64_t tokens, int64_t *out_id, char **err);
int store_pg_pin_get(store *s, store_pin *out, char **err);
int store_pg_pin_set(store *s, const store_pin *pin, char **err);
int store_pg_pin_clear(store *s, char **err);
int store_pg_search_count(store *s, const char *query, const store_search_scope *scope, int64_t *count, char **err);
int store_pg_search_page(store *s, const char *query, const store_search_scope *scope, int newest_first, size_t limit, size_t offset, store_search_visit visit, void *ud, char **err);
int store_pg_search_top(store *s, const char *query, int newest_first, size_t limit, store_search_visit visit, void *ud, char **err);
int64_t store_pg_search_unindexed(store *s);
int store_pg_search_scan(store *s, const store_search_scope *scope, store_search_visit visit, void *ud, int *stopped, char **err);
void store_pg_search_cover(store *s, const char *entry_id, int64_t *top, int64_t *leaf);
int store_pg_summary_exists(store *s, int64_t id);
int store_pg_summary_get(store *s, int64_t id, store_node_visit visit, void *ud, char **err);
int store_pg_scope_totals_get(store *s, int64_t summary_id, store_scope_totals *out, char **err);
int store_pg_scope_handles(store *s, int64_t summary_id, store_handle_visit visit, void *ud, char **err);
int store_pg_handle_find(store *s, const char *key, store_handle_visit visit, void *ud, char **err);
int store_pg_tx_begin(store *s, char **err);
int store_pg_tx_commit(store *s, char **err);
void store_pg_tx_rollback(store *s);
int store_pg_dump(store *s, const store_dump_visitor *v, void *ud, char **err);
int store_pg_table_loadable(store *s, const char *table);
int store_pg_row_load(store *s, const char *table, size_t ncol, const char *const *cols, const store_value *vals, int *inserted, char **err);
int store_pg_rebuild_index(store *s, char **err);
int store_pg_facts_get(store *s, store_facts *out, char **err);
int store_pg_check(store *s, store_check_kind kind, store_id_visit visit, void *ud, char **err);
int store_pg_runs_open(store *s, store_run_visit visit, void *ud, char **err);
int store_pg_run_reap(store *s, int64_t id, char **err);
int store_pg_prune_broken(store *s, int64_t *orphans, int64_t *dropped, char **err);
int store_pg_dedupe_spans(store *s, int64_t *removed, char **err);
/* The FTS5 query recall passes, as to_tsquery('simple', ...) text (store_pg_search.c).
 * LC_INVALID with a sentence for what has no tsquery form. */
int store_pg_tsquery(const char *fts5, char **out, char **err);

#endif
