/*
 * bench_recall.c -- lcm_grep query latency on one generated store, beside raw FTS5 over
 * the same index (the physical limit): a rare term, terms in most messages (first page
 * and a deep page), and the raw count / rank-ordered / rowid-ordered walks of the same
 * MATCH. One line per figure. Usage: bench_recall [messages (default 100000)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "corpus.h"
#include "recall.h"
#include "store.h"
#include "store_sqlite.h"
#include "util.h"

/* bench_store's corpus, ingested in one transaction. */
static int corpus_ingest(store *s, size_t n, char **err)
{
    corpus c = {0};
    corpus_make(&c, n);
    int rc = store_ingest(s, c.m, n, NULL, err);
    corpus_free(&c);
    return rc;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    size_t p99 = (n * 99) / 100 < n ? (n * 99) / 100 : n - 1;
    printf("%s: median %.3f ms, p99 %.3f ms (%zu runs)\n", name, v[n / 2], v[p99], n);
}

static int die(const char *what, char *err)
{
    fprintf(stderr, "bench_recall: %s: %s\n", what, err ? err : "?");
    free(err);
    return 1;
}

/* lcm_grep's query mode as the tool runs it (format included). */
static int grep_runs(store *s, const char *name, const char *q, size_t offset, size_t runs, size_t have)
{
    double v[64];
    char *err = NULL, label[160];
    recall_result r;
    recall_grep_opts o = {.query = q, .offset = offset};
    long long total = 0;
    int newest = 0;
    for (size_t i = 0; i < runs; i++) {
        double t0 = lc_now_ms();
        if (recall_grep(s, &o, &r, &err)) return die("query", err);
        free(recall_grep_format(&o, RECALL_SCOPE_SESSION, &r));
        v[i] = lc_now_ms() - t0;
        total = (long long)r.total;
        newest = r.newest_first;
        recall_result_free(&r);
    }
    snprintf(label, sizeof label, "lcm_grep query %s \"%s\" offset %zu at %zu msgs (%lld hits, %s)", name, q,
             offset, have, total, newest ? "newest first" : "bm25");
    report(label, v, runs);
    return 0;
}

/* The same MATCH straight on the FTS5 table, no join, no snippet: the physical limit. */
static int raw_runs(store *s, const char *name, const char *sql, const char *q, size_t runs)
{
    double v[64];
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "bench_recall: %s: %s\n", sql, sqlite3_errmsg(store_db(s)));
        return 1;
    }
    long long rows = 0;
    for (size_t i = 0; i < runs; i++) {
        double t0 = lc_now_ms();
        sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
        rows = 0;
        while (sqlite3_step(st) == SQLITE_ROW) rows++;
        sqlite3_reset(st);
        v[i] = lc_now_ms() - t0;
    }
    sqlite3_finalize(st);
    char label[200];
    snprintf(label, sizeof label, "raw FTS5 %s \"%s\"", name, q);
    report(label, v, runs);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    char home[] = "/tmp/lc-bench-recall-XXXXXX";
    char *err = NULL;
    store *s = NULL;
    int rc = 1;
    if (!mkdtemp(home)) return 1;
    if (store_open(home, "recall", "/bench", &s, &err)) return die("open", err);
    double t0 = lc_now_ms();
    if (corpus_ingest(s, n, &err)) return die("ingest", err);
    printf("store of %zu msgs built in %.0f ms\n", n, lc_now_ms() - t0);
    const char *common = "engine AND cache", *one = "engine", *rare = "N997";
    if (grep_runs(s, "(rare term)", rare, 0, 30, n) || grep_runs(s, "(terms in most messages)", common, 0, 10, n) ||
        grep_runs(s, "(terms in most messages)", common, 2000, 10, n) ||
        grep_runs(s, "(one term in most messages)", one, 0, 10, n) ||
        grep_runs(s, "(prefix, a few thousand matches)", "id12*", 0, 10, n))
        goto done;
    if (raw_runs(s, "count", "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1", common, 10) ||
        raw_runs(s, "newest 20 by rowid", "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1"
                 " ORDER BY rowid DESC LIMIT 20", common, 10) ||
        raw_runs(s, "best 20 by bm25", "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1"
                 " ORDER BY rank LIMIT 20", common, 10) ||
        raw_runs(s, "count", "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1", rare, 30) ||
        raw_runs(s, "best 20 by bm25", "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1"
                 " ORDER BY rank LIMIT 20", rare, 30))
        goto done;
    rc = 0;
done:
    store_close(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    if (system(cmd) != 0) rc = 1;
    return rc;
}
