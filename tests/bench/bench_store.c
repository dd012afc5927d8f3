/*
 * bench_store.c -- store figures on one generated corpus: ingest throughput beside raw
 * FTS5 insertion of the same text in one transaction (the physical limit), the cost of
 * one more turn at 1k / 10k / 100k messages of history, and query / pattern latency
 * (median, p99). One line per figure. Usage: bench_store [max_history (default 100000)]
 * One process runs every group, so peak RSS is the high-water mark after each group with
 * its increase over the previous one (the generated corpus is the baseline).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include <sqlite3.h>

#include "corpus.h"
#include "recall.h"
#include "store.h"
#include "util.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report_latency(const char *name, double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    printf("%s: median %.3f ms, p99 %.3f ms (%zu runs)\n", name, v[n / 2], v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], n);
}

/* ru_maxrss only grows: a group's own need shows as the increase it caused. */
static void report_rss(const char *after, long *prev)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS after %s: %ld kB (+%ld kB)\n", after, ru.ru_maxrss, ru.ru_maxrss - *prev);
    *prev = ru.ru_maxrss;
}

static int die(const char *what, char *err)
{
    fprintf(stderr, "bench_store: %s: %s\n", what, err ? err : "?");
    free(err);
    return 1;
}

int main(int argc, char **argv)
{
    size_t max = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    char home[] = "/tmp/lc-bench-XXXXXX";
    char *err = NULL;
    if (!mkdtemp(home)) return 1;
    corpus c = {0};
    corpus_make(&c, max + 1);
    long rss = 0;
    report_rss("generating the corpus", &rss);

    /* Ingest of the whole corpus, one call per 2-message turn, as the host would. */
    size_t bulk = max < 20000 ? max : 20000;
    store *s = NULL;
    if (store_open(home, "bulk", "/bench", &s, &err)) return die("open", err);
    double t0 = lc_now_ms();
    for (size_t i = 0; i < bulk; i += 2) {
        size_t upto = i + 2 < bulk ? i + 2 : bulk;
        if (store_ingest(s, c.m, upto, NULL, &err)) return die("ingest", err);
    }
    double ms = lc_now_ms() - t0;
    size_t bytes = 0;
    for (size_t i = 0; i < bulk; i++) bytes += c.m[i].json_len;
    printf("ingest per turn (%zu msgs, 2 per call): %.1f MB/s of message JSON, %.0f msgs/s\n", bulk,
           (double)bytes / 1e6 / (ms / 1e3), (double)bulk / (ms / 1e3));
    store_close(s);
    report_rss("ingest per turn", &rss);

    /* The same messages in one ingest call (one transaction). */
    if (store_open(home, "one", "/bench", &s, &err)) return die("open", err);
    t0 = lc_now_ms();
    if (store_ingest(s, c.m, bulk, NULL, &err)) return die("ingest", err);
    ms = lc_now_ms() - t0;
    printf("ingest one transaction (%zu msgs): %.1f MB/s, %.0f msgs/s\n", bulk, (double)bytes / 1e6 / (ms / 1e3),
           (double)bulk / (ms / 1e3));
    store_close(s);
    report_rss("ingest in one transaction", &rss);

    /* Raw FTS5 insertion of the same JSON texts in one transaction: the physical limit. */
    {
        char path[300];
        snprintf(path, sizeof path, "%s/raw.sqlite", home);
        sqlite3 *db;
        sqlite3_stmt *st;
        sqlite3_open(path, &db);
        sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                         "CREATE VIRTUAL TABLE f USING fts5(text, content='')",
                     NULL, NULL, NULL);
        sqlite3_prepare_v2(db, "INSERT INTO f(rowid, text) VALUES(?, ?)", -1, &st, NULL);
        t0 = lc_now_ms();
        sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
        for (size_t i = 0; i < bulk; i++) {
            sqlite3_bind_int64(st, 1, (sqlite3_int64)i + 1);
            sqlite3_bind_text(st, 2, c.m[i].json, (int)c.m[i].json_len, SQLITE_STATIC);
            sqlite3_step(st);
            sqlite3_reset(st);
        }
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        ms = lc_now_ms() - t0;
        printf("raw FTS5 insert one transaction (%zu texts): %.1f MB/s, %.0f msgs/s\n", bulk,
               (double)bytes / 1e6 / (ms / 1e3), (double)bulk / (ms / 1e3));
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    report_rss("raw FTS5 insert", &rss);

    /* One more turn at growing history: the call gets the whole branch, as context does. */
    if (store_open(home, "grow", "/bench", &s, &err)) return die("open", err);
    size_t have = 0;
    const size_t marks[] = {1000, 10000, 100000};
    for (size_t k = 0; k < 3 && marks[k] <= max; k++) {
        if (store_ingest(s, c.m, marks[k], NULL, &err)) return die("ingest", err);
        have = marks[k];
        double v[20];
        size_t runs = 0;
        for (; runs < 20; runs++) {
            /* the same branch again (nothing new), then one new message */
            t0 = lc_now_ms();
            if (store_ingest(s, c.m, have, NULL, &err)) return die("ingest", err);
            v[runs] = lc_now_ms() - t0;
        }
        char name[96];
        snprintf(name, sizeof name, "context with nothing new at %zu msgs", have);
        report_latency(name, v, runs);
        t0 = lc_now_ms();
        if (store_ingest(s, c.m, have + 1, NULL, &err)) return die("ingest", err);
        printf("one more turn at %zu msgs: %.3f ms\n", have, lc_now_ms() - t0);
    }
    report_rss("growing the history", &rss);

    /* Query and pattern latency over the grown store. */
    double q[50], qc[10], p[20];
    for (size_t i = 0; i < 50; i++) {
        char term[32];
        snprintf(term, sizeof term, "N%zu", (i * 997) % (have ? have : 1) / 997 * 997);
        recall_grep_opts o = {.query = term};
        recall_result r;
        t0 = lc_now_ms();
        if (recall_grep(s, &o, &r, &err)) return die("query", err);
        q[i] = lc_now_ms() - t0;
        recall_result_free(&r);
    }
    char name[96];
    snprintf(name, sizeof name, "query latency (rare term) at %zu msgs", have);
    report_latency(name, q, 50);
    for (size_t i = 0; i < 10; i++) {
        recall_grep_opts o = {.query = "engine AND cache"};
        recall_result r;
        t0 = lc_now_ms();
        if (recall_grep(s, &o, &r, &err)) return die("query", err);
        qc[i] = lc_now_ms() - t0;
        recall_result_free(&r);
    }
    snprintf(name, sizeof name, "query latency (terms in most messages, ranked) at %zu msgs", have);
    report_latency(name, qc, 10);
    for (size_t i = 0; i < 20; i++) {
        recall_grep_opts o = {.pattern = i % 2 ? "N9\\d{2}=\\d+" : "id4242\\b"};
        recall_result r;
        t0 = lc_now_ms();
        if (recall_grep(s, &o, &r, &err)) return die("pattern", err);
        p[i] = lc_now_ms() - t0;
        if (i == 0 && r.timed_out) printf("pattern hit the one-second bound after %zu msgs\n", r.scanned);
        recall_result_free(&r);
    }
    snprintf(name, sizeof name, "pattern latency at %zu msgs", have);
    report_latency(name, p, 20);
    report_rss("queries and patterns", &rss);
    store_close(s);
    corpus_free(&c);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    return system(cmd) == 0 ? 0 : 1;
}
