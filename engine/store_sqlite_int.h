/*
 * store_sqlite_int.h -- private to the SQLite backend (store_sqlite*.c): the store's
 * struct (the connection, its cached statements, the ingest's recent state) and the
 * helpers and SQL fragments those files share. No other file includes it.
 */
#ifndef LC_STORE_SQLITE_INT_H
#define LC_STORE_SQLITE_INT_H

#include <sqlite3.h>

#include "store.h"
#include "store_derive.h"
#include "store_sqlite_raw.h"


/* A full-text row a bulk ingest holds back until its commit (store_sqlite_bulk_commit). */
typedef struct store_fts_row {
    int64_t rowid;
    char *text;
    size_t len;
} store_fts_row;

struct store {
    const store_methods *methods; /* first: all store.c reads (store.h, backends) */
    sqlite3 *db;
    char *path;
    int read_only;
    store_options opt;
    sqlite3_stmt *st_exists;
    sqlite3_stmt *st_insert;
    sqlite3_stmt *st_fts;
    sqlite3_stmt *st_handle;
    store_sqlite_raw *raw; /* packs raw_json on ingest (read-write opens) */
    char *mode_note;  /* a wrong mode fixed at open, for the caller to report */
    int busy;         /* a statement failed because another connection held the lock */
    int notadb;       /* the file is not a readable SQLite database (corrupt, truncated) */
    char *last_entry; /* newest entry known stored: the O(1) "nothing new" check */
    int64_t last_ordinal;
    store_call calls[STORE_CALL_RING]; /* recent tool calls: id -> named path */
    size_t call_next;
    int64_t bulk_from; /* a bulk ingest's rows are those above this id (store_bulk_begin) */
    int bulk;          /* inside store_bulk_begin .. commit */
    int bulk_failed;   /* a batch of it failed: the commit rolls it back */
    int64_t bulk_cache; /* the page cache size the bulk restores */
    store_fts_row *fts_rows; /* the bulk's held-back full-text rows */
    size_t fts_n, fts_cap, fts_bytes;
};

/* The DAG-progress SQL fragments (store.h): the watermark as stored, an eligible row,
 * a row no leaf covers. Values live in meta as text, hence the cast. */
#define STORE_WM "(SELECT CAST(value AS INTEGER) FROM main.meta WHERE key = 'dag_watermark')"
#define STORE_ELIGIBLE(row) row ".removed = 0 AND " row ".role NOT IN (" STORE_DAG_EXCLUDED_ROLES ")"
#define STORE_UNCOVERED(row) \
    "NOT EXISTS (SELECT 1 FROM main.summary_messages sm WHERE sm.entry_id = " row ".entry_id)"

/* A failed statement on the store's own connection: noted (busy, not a database), then
 * reported like every other module's. Returns LC_ERR. */
int store_sqlite_failed(store *s, char **err, const char *what);
/* sqlite3_exec on the store's connection; failures noted and reported as above. */
int store_sqlite_exec(store *s, const char *sql, char **err);
/* One integer from a query; `dflt` when it fails or returns nothing. */
int64_t store_sqlite_int(store *s, const char *sql, int64_t dflt);
/* Column `col` as a malloc'd string, NULL for SQL NULL. */
char *store_sqlite_col_dup(sqlite3_stmt *st, int col);

/* The backend's table and its slots (store.h's functions, named store_sqlite_*), defined
 * across store_sqlite*.c. */
extern const store_methods store_sqlite_methods;
void store_sqlite_close(store *s);
void store_sqlite_set_options(store *s, const store_options *opt);
const char *store_sqlite_path(const store *s);
const char *store_sqlite_mode_note(const store *s);
char *store_sqlite_meta_get(store *s, const char *key);
int store_sqlite_meta_put(store *s, const char *key, const char *value, char **err);
int store_sqlite_schema_version(store *s);
int store_sqlite_ingest(store *s, const store_msg *msgs, size_t n, store_ingest_stats *stats, char **err);
/* (Re)create the connection's DAG progress triggers (they exist unless a bulk ingest
 * dropped the one on insert). */
int store_sqlite_progress_triggers(store *s, char **err);
int store_sqlite_bulk_begin(store *s, char **err);
int store_sqlite_bulk_commit(store *s, char **err);
/* Forget a bulk ingest's held-back state (a rollback, the close). */
void store_sqlite_bulk_reset(store *s);
int store_sqlite_mark_branch(store *s, const char *const *active_ids, size_t n, size_t *marked, size_t *cleared, char **err);
int store_sqlite_set_removed(store *s, const char *const *entry_ids, size_t n, int removed, char **err);
int store_sqlite_dag_progress(store *s, int64_t *watermark, int64_t *pending, char **err);
int store_sqlite_dag_set_watermark(store *s, int64_t expect, int64_t value, int *moved, char **err);
int store_sqlite_dag_block_get(store *s, int64_t *tokens);
int store_sqlite_dag_block_put(store *s, int64_t tokens, char **err);
int store_sqlite_get_message(store *s, const char *entry_id, store_row *out, char **err);
int64_t store_sqlite_message_count(store *s);
int64_t store_sqlite_summary_count(store *s);
int64_t store_sqlite_db_bytes(store *s);
int store_sqlite_summary_add(store *s, const store_summary *in, int64_t *out_id, char **err);
int store_sqlite_summary_set_text(store *s, int64_t id, const char *text, int64_t tokens, char **err);
int store_sqlite_dag_walk_tail(store *s, store_msg_visit visit, void *ud, int *stopped, char **err);
int store_sqlite_walk_newest(store *s, store_msg_visit visit, void *ud, int *stopped, char **err);
long long store_sqlite_last_activity_ms(store *s);
int store_sqlite_dag_walk_uncovered(store *s, int64_t after, int64_t before, store_msg_visit visit, void *ud, int *stopped, char **err);
int store_sqlite_dag_count_uncovered(store *s, int64_t from, int64_t before, int64_t *count, char **err);
int store_sqlite_dag_walk_frontier(store *s, store_node_visit visit, void *ud, char **err);
int store_sqlite_dag_walk_prefixed(store *s, const char *prefix, store_node_visit visit, void *ud, char **err);
int store_sqlite_dag_walk_source(store *s, int64_t id, int leaf, store_msg_visit visit, void *ud, char **err);
int store_sqlite_dag_walk_children(store *s, int64_t id, store_node_visit visit, void *ud, char **err);
int64_t store_sqlite_run_begin(store *s, const char *kind);
void store_sqlite_run_end(store *s, int64_t id, const char *status);
int store_sqlite_event_add(store *s, const char *kind, const char *data_json, char **err);
int64_t store_sqlite_event_count(store *s, const char *kind);
int store_sqlite_cut_get(store *s, store_cut_which which, int64_t id, store_cut *out, char **err);
int store_sqlite_cut_add(store *s, const store_cut *in, int64_t tokens, int64_t *out_id, char **err);
int store_sqlite_pin_get(store *s, store_pin *out, char **err);
int store_sqlite_pin_set(store *s, const store_pin *pin, char **err);
int store_sqlite_pin_clear(store *s, char **err);
int store_sqlite_search_count(store *s, const char *query, const store_search_scope *scope, int64_t *count, char **err);
int store_sqlite_search_page(store *s, const char *query, const store_search_scope *scope, int newest_first, size_t limit, size_t offset, store_search_visit visit, void *ud, char **err);
int store_sqlite_search_top(store *s, const char *query, int newest_first, size_t limit, store_search_visit visit, void *ud, char **err);
int64_t store_sqlite_search_unindexed(store *s);
int store_sqlite_search_scan(store *s, const store_search_scope *scope, store_search_visit visit, void *ud, int *stopped, char **err);
void store_sqlite_search_cover(store *s, const char *entry_id, int64_t *top, int64_t *leaf);
int store_sqlite_summary_exists(store *s, int64_t id);
int store_sqlite_summary_get(store *s, int64_t id, store_node_visit visit, void *ud, char **err);
int store_sqlite_scope_totals_get(store *s, int64_t summary_id, store_scope_totals *out, char **err);
int store_sqlite_scope_handles(store *s, int64_t summary_id, store_handle_visit visit, void *ud, char **err);
int store_sqlite_handle_find(store *s, const char *key, store_handle_visit visit, void *ud, char **err);
int store_sqlite_tx_begin(store *s, char **err);
int store_sqlite_tx_commit(store *s, char **err);
void store_sqlite_tx_rollback(store *s);
int store_sqlite_backup_to(store *from, const char *dest_path, char **err);
int store_sqlite_dump(store *s, const store_dump_visitor *v, void *ud, char **err);
int store_sqlite_table_loadable(store *s, const char *table);
int store_sqlite_row_load(store *s, const char *table, size_t ncol, const char *const *cols, const store_value *vals, int *inserted, char **err);
int store_sqlite_rebuild_index(store *s, char **err);
int store_sqlite_facts_get(store *s, store_facts *out, char **err);
int store_sqlite_check(store *s, store_check_kind kind, store_id_visit visit, void *ud, char **err);
int store_sqlite_runs_open(store *s, store_run_visit visit, void *ud, char **err);
int store_sqlite_run_reap(store *s, int64_t id, char **err);
int store_sqlite_prune_broken(store *s, int64_t *orphans, int64_t *dropped, char **err);
int store_sqlite_dedupe_spans(store *s, int64_t *removed, char **err);
int store_sqlite_vec_put(store *s, const store_vec *v, size_t n, char **err);
int store_sqlite_vec_walk(store *s, const char *model, int include_removed, store_vec_visit visit, void *ud, char **err);
int store_sqlite_vec_walk_missing(store *s, const char *model, int other_models, store_vec_pending_visit visit, void *ud, int *stopped, char **err);
int store_sqlite_vec_coverage_get(store *s, const char *model, store_vec_coverage *out, char **err);

#endif
