/*
 * store_sqlite.h -- the SQLite face of the store, for the backend's own files
 * (store_sqlite*.c) and for tests that plant or inspect rows. No engine module outside the
 * backend includes it: recall, maint, the DAG and the projection go through store.h, which
 * names no SQLite type, so they cannot reach the connection. Owns the one way a failed
 * SQLite call becomes an engine error.
 */
#ifndef LC_STORE_SQLITE_H
#define LC_STORE_SQLITE_H

#include <sqlite3.h>

#include "store.h"

/* The store's connection. Borrowed: valid until store_close. */
sqlite3 *store_db(store *s);

/* Set *err to "<who>: <what>: <SQLite's message for db's last failure>" and return LC_ERR.
 * `who` names the module ("recall", "dag"), `what` the step that failed. */
int store_sqlite_err(sqlite3 *db, char **err, const char *who, const char *what);

#endif
