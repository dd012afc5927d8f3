/*
 * store_sqlite_int.h -- private to the SQLite backend (store_sqlite*.c): the store's
 * struct (the connection, its cached statements, the ingest's recent state) and the
 * helpers and SQL fragments those files share. No other file includes it.
 */
#ifndef LC_STORE_SQLITE_INT_H
#define LC_STORE_SQLITE_INT_H

#include <sqlite3.h>

#include "store.h"
#include "store_backend.h"
#include "store_common.h"
#include "store_derive.h"
#include "store_sqlite_raw.h"


/* A full-text row a bulk ingest holds back until its commit (store_sqlite_bulk_commit). */
typedef struct store_fts_row {
    int64_t rowid;
    char *text; /* the text column's words */
    size_t len;
    char *thinking; /* the thinking column's, NULL for none */
    size_t thinking_len;
} store_fts_row;

struct store {
    const store_methods *methods; /* first: all store.c reads (store_backend.h) */
    sqlite3 *db;
    char *path;
    int read_only;
    store_options opt;
    sqlite3_stmt *st_exists;
    sqlite3_stmt *st_insert;
    sqlite3_stmt *st_fts;
    sqlite3_stmt *st_handle;
    sqlite3_stmt *st_cover_leaf, *st_cover_up; /* search: a hit's covering summaries (prepared at first use) */
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
    int64_t bulk_ckpt;  /* the auto-checkpoint pages the bulk restores */
    int bulk_journal;   /* a bulk into an empty store left WAL for a rollback journal: WAL at close */
    store_fts_row *fts_rows; /* the bulk's held-back full-text rows */
    size_t fts_n, fts_cap, fts_bytes;
    int rank_fn;      /* recall's rank function is registered on this connection */
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
/* Prepare `sql` into *st: LC_OK, or the failure naming `what`. */
int store_sqlite_prepare(store *s, sqlite3_stmt **st, const char *sql, const char *what, char **err);
/* Step `st` once and make it ready for the next bindings: LC_OK when it ran to its end,
 * the failure (naming `what`) otherwise. */
int store_sqlite_step_done(store *s, sqlite3_stmt *st, const char *what, char **err);
/* Step `st` to its first row: LC_OK on a row, LC_NOTFOUND (with *err untouched, for the
 * caller to name what is missing) when there is none, the failure (naming `what`) otherwise. */
int store_sqlite_step_row(store *s, sqlite3_stmt *st, const char *what, char **err);

/* The backend's table and its slots (store.h's functions, named store_sqlite_*), defined
 * across store_sqlite*.c. */
extern const store_methods store_sqlite_methods;
#define STORE_SQLITE_PROTO(ret, name, params) ret store_sqlite_##name params;
STORE_SLOTS_CORE(STORE_SQLITE_PROTO)
STORE_SLOTS_TX(STORE_SQLITE_PROTO)
STORE_SLOTS_BACKUP(STORE_SQLITE_PROTO)
STORE_SLOTS_ADMIN(STORE_SQLITE_PROTO)
STORE_SLOTS_V2(STORE_SQLITE_PROTO)
STORE_SLOTS_LEASE(STORE_SQLITE_PROTO)
STORE_SLOTS_V4(STORE_SQLITE_PROTO)
STORE_SLOTS_VEC_GET(STORE_SQLITE_PROTO)
STORE_SLOTS_CKPT(STORE_SQLITE_PROTO)
/* Register recall's rank functions lc_rank and lc_rank_in on `db` (store_sqlite_search.c):
 * a store's connection, or the home index's. */
int store_sqlite_rank_register_db(sqlite3 *db, char **err);
/* The home index's opening (store_sqlite_index.c): store_backend.x_index_open. */
int store_sqlite_index_open(const char *agent_home, store_index **out, char **err);
/* (Re)create the connection's DAG progress triggers (they exist unless a bulk ingest
 * dropped the one on insert). */
int store_sqlite_progress_triggers(store *s, char **err);
/* The vector stamp's TEMP triggers (store_sqlite_vec.c), installed with the progress ones. */
int store_sqlite_vec_triggers(store *s, char **err);
/* Empty messages_fts and index every stored message again, each derived from its verbatim
 * JSON (msg_index_text): the migration to the index's current form and doctor's repair.
 * All or nothing: a savepoint, inside the caller's transaction when there is one. */
int store_sqlite_reindex_messages(store *s, char **err);
/* Forget a bulk ingest's held-back state (a rollback, the close). */
void store_sqlite_bulk_reset(store *s);
/* Back to WAL if a bulk into an empty store left it (the close). */
void store_sqlite_bulk_journal_end(store *s);

#endif
