/*
 * store_sqlite_int.h -- private to the SQLite backend (store_sqlite*.c): the store's
 * struct (the connection, its cached statements, the ingest's recent state) and the
 * helpers and SQL fragments those files share. No other file includes it.
 */
#ifndef LC_STORE_SQLITE_INT_H
#define LC_STORE_SQLITE_INT_H

#include <sqlite3.h>

#include "store.h"

#define STORE_CALL_RING 64

typedef struct store_call {
    char *id;
    char *path;
} store_call;

struct store {
    sqlite3 *db;
    char *path;
    int read_only;
    store_options opt;
    sqlite3_stmt *st_exists;
    sqlite3_stmt *st_insert;
    sqlite3_stmt *st_fts;
    sqlite3_stmt *st_handle;
    char *mode_note;  /* a wrong mode fixed at open, for the caller to report */
    int busy;         /* a statement failed because another connection held the lock */
    int notadb;       /* the file is not a readable SQLite database (corrupt, truncated) */
    char *last_entry; /* newest entry known stored: the O(1) "nothing new" check */
    int64_t last_ordinal;
    store_call calls[STORE_CALL_RING]; /* recent tool calls: id -> named path */
    size_t call_next;
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
/* Column `col` as a malloc'd string, NULL for SQL NULL. */
char *store_sqlite_col_dup(sqlite3_stmt *st, int col);

#endif
