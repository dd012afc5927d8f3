/*
 * bench_sqlite_fts5_ref.c -- the reference `lcm import` is measured against: the raw
 * SQLite + FTS5 insert of the same texts in one transaction, nothing else (no raw JSON,
 * no ordinals, no entry ids, no derived columns). The texts are the derived text the store
 * indexes (msg_derive_text) of every message entry of a Pi session file, read and derived
 * before the clock starts; the clock covers open, schema, the inserts, the commit and the
 * close (its checkpoint), with the store's own journal settings (WAL, synchronous=NORMAL);
 * with "rollback", the journal `lcm import` writes a new store with (journal_mode=DELETE,
 * synchronous=FULL), each page written once.
 *
 * Usage: bench_sqlite_fts5_ref SESSION.jsonl DB [rollback]
 * Prints: "reference: N texts, B bytes, S s wall (R MB/s), C s CPU (R MB/s)" (MB = 10^6
 * bytes of text; CPU: the process's user + system time over the same span, the figure a
 * loaded machine disturbs least).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "jsonl.h"
#include "message.h"
#include "util.h"

typedef struct ref_texts {
    char **v;
    size_t n, cap, bytes;
} ref_texts;

static double ref_now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every message entry's derived text, in file order. */
static int ref_read(const char *path, ref_texts *t)
{
    jsonl_reader *r = NULL;
    const char *line;
    size_t len;
    char *err = NULL;
    if (jsonl_open(path, &r, &err) != LC_OK) {
        fprintf(stderr, "bench_sqlite_fts5_ref: %s\n", err ? err : path);
        free(err);
        return LC_ERR;
    }
    while (jsonl_next(r, &line, &len, NULL) == LC_OK) {
        cJSON *e = cJSON_ParseWithLength(line, len);
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        if (cJSON_IsString(type) && strcmp(type->valuestring, "message") == 0 && cJSON_IsObject(msg)) {
            int complete = 1;
            char *text = msg_derive_text(msg, &complete);
            if (text && t->n == t->cap) {
                size_t cap = t->cap ? t->cap * 2 : 4096;
                char **v = realloc(t->v, cap * sizeof *v);
                if (!v) {
                    free(text);
                    text = NULL;
                } else {
                    t->v = v;
                    t->cap = cap;
                }
            }
            if (!text) {
                cJSON_Delete(e);
                jsonl_close(r);
                return LC_NOMEM;
            }
            t->bytes += strlen(text);
            t->v[t->n++] = text;
        }
        cJSON_Delete(e);
    }
    jsonl_close(r);
    return LC_OK;
}

static int ref_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK) return LC_OK;
    fprintf(stderr, "bench_sqlite_fts5_ref: %s: %s\n", sql, msg ? msg : "failed");
    sqlite3_free(msg);
    return LC_ERR;
}

static int ref_insert(const char *dbpath, const ref_texts *t, int rollback)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *row = NULL, *fts = NULL;
    int rc = LC_ERR;
    remove(dbpath);
    if (sqlite3_open(dbpath, &db) != SQLITE_OK) goto done;
    if (ref_exec(db, rollback ? "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;"
                              : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;") != LC_OK ||
        ref_exec(db, "CREATE TABLE texts(id INTEGER PRIMARY KEY, text TEXT NOT NULL);"
                     "CREATE VIRTUAL TABLE texts_fts USING fts5(text, content='');") != LC_OK)
        goto done;
    if (sqlite3_prepare_v2(db, "INSERT INTO texts(text) VALUES(?)", -1, &row, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO texts_fts(rowid, text) VALUES(?, ?)", -1, &fts, NULL) != SQLITE_OK)
        goto done;
    if (ref_exec(db, "BEGIN") != LC_OK) goto done;
    for (size_t i = 0; i < t->n; i++) {
        sqlite3_bind_text(row, 1, t->v[i], -1, SQLITE_STATIC);
        if (sqlite3_step(row) != SQLITE_DONE) goto done;
        sqlite3_reset(row);
        sqlite3_bind_int64(fts, 1, sqlite3_last_insert_rowid(db));
        sqlite3_bind_text(fts, 2, t->v[i], -1, SQLITE_STATIC);
        if (sqlite3_step(fts) != SQLITE_DONE) goto done;
        sqlite3_reset(fts);
    }
    if (ref_exec(db, "COMMIT") != LC_OK) goto done;
    rc = LC_OK;
done:
    if (rc != LC_OK && db) fprintf(stderr, "bench_sqlite_fts5_ref: %s\n", sqlite3_errmsg(db));
    sqlite3_finalize(row);
    sqlite3_finalize(fts);
    sqlite3_close(db);
    return rc;
}

int main(int argc, char **argv)
{
    ref_texts t = {0};
    int rc;
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "rollback"))) {
        fprintf(stderr, "usage: bench_sqlite_fts5_ref SESSION.jsonl DB [rollback]\n");
        return 2;
    }
    if ((rc = ref_read(argv[1], &t)) == LC_OK) {
        double t0 = ref_now(CLOCK_MONOTONIC), c0 = ref_now(CLOCK_PROCESS_CPUTIME_ID);
        rc = ref_insert(argv[2], &t, argc == 4);
        double s = ref_now(CLOCK_MONOTONIC) - t0, c = ref_now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (rc == LC_OK)
            printf("reference: %zu texts, %zu bytes, %.3f s wall (%.1f MB/s), %.3f s CPU (%.1f MB/s)\n", t.n,
                   t.bytes, s, (double)t.bytes / 1e6 / s, c, (double)t.bytes / 1e6 / c);
    }
    for (size_t i = 0; i < t.n; i++) free(t.v[i]);
    free(t.v);
    return rc == LC_OK ? 0 : 1;
}
