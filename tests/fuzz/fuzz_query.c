/*
 * fuzz_query.c -- libFuzzer target for lcm_grep's query language (recall_query.h): any
 * bytes a model or a person can type are parsed, and the translation (unless the fts5:
 * switch passed the text raw) must be an expression FTS5 accepts, run against a small
 * in-memory index. A refusal aborts: "a query is never answered with a syntax error".
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "recall_query.h"
#include "util.h"

static sqlite3 *db;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!db) {
        if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
            sqlite3_exec(db, "CREATE VIRTUAL TABLE t USING fts5(x); INSERT INTO t VALUES('opk gui grays palette');"
                         "INSERT INTO t VALUES('现在删除 NotificationBell');",
                         NULL, NULL, NULL) != SQLITE_OK)
            abort();
    }
    char *q = malloc(size + 1);
    if (!q) return 0;
    memcpy(q, data, size);
    q[size] = '\0';
    recall_query r;
    char *err = NULL;
    if (recall_query_parse(q, &r, &err) != LC_OK) {
        free(err);
        free(q);
        return 0;
    }
    if (r.match && !r.raw) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, "SELECT count(*) FROM t WHERE t MATCH ?", -1, &st, NULL) != SQLITE_OK) abort();
        sqlite3_bind_text(st, 1, r.match, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW) {
            fprintf(stderr, "FTS5 refused the translation of %s: %s -> %s\n", q, r.match, sqlite3_errmsg(db));
            abort();
        }
        sqlite3_finalize(st);
        /* Every phrase has its weight and word. */
        for (size_t i = 0; i < r.nphrases; i++)
            if (!r.words[i] || r.weights[i] < 0) abort();
    }
    recall_query_free(&r);
    free(q);
    return 0;
}
