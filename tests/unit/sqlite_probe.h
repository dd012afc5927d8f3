/*
 * sqlite_probe.h -- one integer read straight from a store's SQLite file, for the suites
 * that check rows the store's functions do not hand out (counts, sums, spans). The query
 * must prepare and return a row, or the test fails.
 */
#ifndef TEST_SQLITE_PROBE_H
#define TEST_SQLITE_PROBE_H

#include <stdint.h>

#include <sqlite3.h>

#include "store_sqlite.h"

static inline int64_t sqlite_probe_int(store *st, const char *sql)
{
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

#endif
