/*
 * store_q.h -- plain SQL over a suite's store, whichever backend opened it: the SQLite
 * file's connection, or -- when the suite runs with LCM_STORE_URL set, as
 * tests/contract/test_pg_store.sh runs it against a real PostgreSQL server -- the
 * session's views on the store's own connection (store_pg.h), which carry the same table
 * and column names. Suites read what the engine wrote through it. store_q_pg() says the
 * suite runs on PostgreSQL: the few cases about SQLite's own files check nothing there
 * and say so.
 */
#ifndef TEST_STORE_Q_H
#define TEST_STORE_Q_H

#include <stdint.h>
#include <stdlib.h>

#include "store.h"
#include "store_pg.h"
#include "store_sqlite.h"

static inline int store_q_pg(void)
{
    const char *u = getenv("LCM_STORE_URL");
    return u && *u;
}

/* One integer from `sql`; -1 when it returns no row. A statement that fails fails the
 * test. */
static inline int64_t store_q1(store *st, const char *sql)
{
    if (store_pg_is(st)) return store_pg_query_int(st, sql, -1);
    sqlite3_stmt *q = NULL;
    int64_t v = -1;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), sql, -1, &q, NULL), SQLITE_OK);
    if (sqlite3_step(q) == SQLITE_ROW) v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* Run `sql` (a write a test makes behind the engine's back); LC_OK when it ran. */
static inline int store_qexec(store *st, const char *sql)
{
    if (store_pg_is(st)) return store_pg_exec(st, sql, NULL);
    return sqlite3_exec(store_db(st), sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : 1;
}

#endif
