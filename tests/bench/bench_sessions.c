/*
 * bench_sessions.c -- lcm_grep across every session of a home with many stores: N session
 * stores of M messages each (short turns, 12..60 words of a 400-word vocabulary, so common
 * words are in most messages), then an `all_sessions` query of common words and one of a
 * rare word, as the tool runs them (format included), R times each: the median and p99,
 * and how many sessions were reached. The home index is built first, whole (its cost beside
 * the stores' ingest); the first query, which finds every store unchanged (a stat each) and
 * lists the stores, is reported apart. Beside it, in the same run, the reference: the same
 * stores opened read-only with raw SQLite, the same MATCH's best 20 by bm25 read, closed
 * (what any per-file search pays, with no ranking across files).
 * Usage: bench_sessions [sessions (default 1000)] [messages each (default 1000)] [runs (5)]
 * Prints figures; asserts nothing about time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "catalog.h"
#include "recall.h"
#include "store.h"
#include "store_sqlite_tok.h"
#include "util.h"

static int die(const char *what, char *err)
{
    fprintf(stderr, "bench_sessions: %s: %s\n", what, err ? err : "?");
    free(err);
    return 1;
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
    printf("%s: median %.1f ms, p99 %.1f ms (%zu runs)\n", name, v[n / 2], v[p99], n);
}

/* A word of the vocabulary: syllables, the first 20 of them in most messages. */
static void vocab_word(sbuf *b, unsigned idx)
{
    static const char *const syl[] = {"ka", "zor", "ve", "lo", "mi", "tran", "bla", "qui", "dro", "fen",
                                      "gal", "po", "rix", "sul", "ton", "mer", "dax", "pel", "nor", "wim"};
    sb_puts(b, syl[idx % 20]);
    sb_puts(b, syl[(idx / 20) % 20]);
    if (idx >= 20) sb_puts(b, syl[(idx * 7) % 20]);
}

static int make_session(const char *home, size_t si, size_t m, unsigned long long *x, char **err)
{
    char sid[64], cwd[64];
    snprintf(sid, sizeof sid, "bench-%05zu", si);
    snprintf(cwd, sizeof cwd, "/work/p%zu", si % 40);
    store *s = NULL;
    int rc = store_open(home, sid, cwd, &s, err);
    if (rc) return rc;
    store_msg *msgs = calloc(m, sizeof *msgs);
    char **bufs = calloc(m, sizeof *bufs), **ids = calloc(m, sizeof *ids);
    for (size_t i = 0; i < m; i++) {
        sbuf t = {0};
        *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
        size_t nw = 12 + *x % 49;
        for (size_t w = 0; w < nw; w++) {
            *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
            if (w) sb_putc(&t, ' ');
            /* Skewed: half the words from the 20 commonest. */
            vocab_word(&t, (unsigned)(*x % 2 ? *x % 20 : *x % 400));
        }
        if (i == m / 2) sb_printf(&t, " needle%zu", si);
        ids[i] = lc_asprintf("e%zu", i);
        bufs[i] = lc_asprintf("{\"role\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"timestamp\":%llu}",
                              i % 2 ? "assistant" : "user", t.p, 1700000000000ULL + si * 86400000ULL + i * 1000);
        msgs[i] = (store_msg){ids[i], bufs[i], strlen(bufs[i]), NULL};
        sb_free(&t);
    }
    rc = store_ingest(s, msgs, m, NULL, err);
    for (size_t i = 0; i < m; i++) free(bufs[i]), free(ids[i]);
    free(bufs), free(ids), free(msgs);
    store_close(s);
    return rc;
}

/* One query as the tool runs it, format included: its time, and what it reached. */
static int grep_once(const char *home, const char *q, double *ms, size_t *reached, long long *total, size_t *stale,
                     int *indexed)
{
    char *err = NULL;
    recall_grep_opts o = {.query = q};
    recall_result r;
    double t0 = lc_now_ms();
    if (recall_grep_sessions(home, NULL, NULL, RECALL_SCOPE_ALL_SESSIONS, &o, &r, &err)) return die("grep", err);
    free(recall_grep_format(&o, RECALL_SCOPE_ALL_SESSIONS, &r));
    *ms = lc_now_ms() - t0;
    *reached = r.stores_searched;
    *total = (long long)r.total;
    *stale = r.index_stale;
    *indexed = r.home_index;
    if (r.index_note) printf("  (home index not used: %s)\n", r.index_note);
    recall_result_free(&r);
    return 0;
}

static int grep_runs(const char *home, const char *name, const char *q, size_t runs, size_t nsess)
{
    double *v = calloc(runs, sizeof *v), first;
    char label[240];
    size_t reached = 0, stale = 0;
    long long total = 0;
    int indexed = 0;
    /* The first query of the process: it lists the stores (opened once each) and finds the
     * index caught up; reported apart from the runs after it. */
    if (grep_once(home, q, &first, &reached, &total, &stale, &indexed)) return 1;
    printf("lcm_grep all_sessions %s, first query: %.0f ms, %zu of %zu sessions reached,"
           " %zu not yet indexed (searched one by one)\n",
           name, first, reached, nsess, stale);
    for (size_t i = 0; i < runs; i++)
        if (grep_once(home, q, &v[i], &reached, &total, &stale, &indexed)) return 1;
    char hits[40];
    if (total >= 0) snprintf(hits, sizeof hits, "%lld hits", total);
    else snprintf(hits, sizeof hits, "more than %d hits, newest first", RECALL_RANK_MAX);
    snprintf(label, sizeof label, "lcm_grep all_sessions %s \"%s\" (%s, %zu of %zu sessions reached%s)", name, q,
             hits, reached, nsess, indexed ? (stale ? ", home index, some searched one by one" : ", home index") : ", store by store");
    report(label, v, runs);
    free(v);
    return 0;
}

/* The home index built whole, with no time bound (a query catches up at most
 * RECALL_INDEX_CATCHUP_MS of it): the index's build cost, beside the stores' ingest. */
static int index_build(const char *home)
{
    catalog_list l = {0};
    store_index *ix = NULL;
    store_index_stats st;
    char *err = NULL;
    double t0 = lc_now_ms();
    if (catalog_list_stores(home, NULL, &l, &err) || store_index_open(home, &ix, &err)) return die("index", err);
    store_index_source *v = calloc(l.n, sizeof *v);
    /* By name: here the order the sessions were created in, so keys ascend with it. */
    for (size_t i = 0; i < l.n; i++) v[i] = (store_index_source){l.v[i].path, l.v[i].name, l.v[i].created, 0, 0};
    if (store_index_catch_up(ix, v, l.n, 0, &st, &err)) return die("index", err);
    printf("home index built in %.0f ms (%lld rows from %zu stores; the listing included)\n", lc_now_ms() - t0,
           (long long)st.rows_added, st.updated);
    store_index_close(ix);
    free(v);
    catalog_list_free(&l);
    return 0;
}

/* The reference: each store file opened read-only, the MATCH's best 20 by bm25, closed. */
static int raw_runs(const char *home, const char *q, size_t runs, size_t nsess)
{
    double *v = calloc(runs, sizeof *v);
    char label[200], *err = NULL;
    for (size_t i = 0; i < runs; i++) {
        double t0 = lc_now_ms();
        for (size_t si = 0; si < nsess; si++) {
            char *path = lc_asprintf("%s/lcm/bench-%05zu.sqlite", home, si);
            sqlite3 *db = NULL;
            sqlite3_stmt *st = NULL;
            if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
                store_sqlite_tok_register(db, &err) != LC_OK ||
                sqlite3_prepare_v2(db, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rank LIMIT 20",
                                   -1, &st, NULL) != SQLITE_OK) {
                fprintf(stderr, "bench_sessions: %s: %s\n", path, db ? sqlite3_errmsg(db) : "open");
                free(err);
                return 1;
            }
            sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
            while (sqlite3_step(st) == SQLITE_ROW) {
            }
            sqlite3_finalize(st);
            sqlite3_close(db);
            free(path);
        }
        v[i] = lc_now_ms() - t0;
    }
    snprintf(label, sizeof label, "raw SQLite per store file: open, \"%s\" best 20 by bm25, close (%zu files)", q,
             nsess);
    report(label, v, runs);
    free(v);
    return 0;
}

int main(int argc, char **argv)
{
    size_t nsess = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    size_t m = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
    size_t runs = argc > 3 ? strtoul(argv[3], NULL, 10) : 5;
    char home[] = "/tmp/lc-bench-sessions-XXXXXX";
    char *err = NULL;
    unsigned long long x = 88172645463325252ULL;
    int rc = 1;
    if (!nsess || !m || !runs || !mkdtemp(home)) return 2;
    double t0 = lc_now_ms();
    for (size_t si = 0; si < nsess; si++)
        if (make_session(home, si, m, &x, &err)) return die("build", err);
    printf("home of %zu sessions x %zu messages built in %.0f ms\n", nsess, m, lc_now_ms() - t0);
    /* Common: the first three words of the vocabulary; rare: one session's needle. */
    sbuf common = {0};
    for (unsigned w = 0; w < 3; w++) {
        if (w) sb_putc(&common, ' ');
        vocab_word(&common, w);
    }
    char rare[32];
    snprintf(rare, sizeof rare, "needle%zu", nsess / 3);
    if (index_build(home) || grep_runs(home, "common words", common.p, runs, nsess) || grep_runs(home, "a rare word", rare, runs, nsess) ||
        raw_runs(home, common.p, runs, nsess))
        goto done;
    rc = 0;
done:
    sb_free(&common);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    if (system(cmd) != 0) rc = 1;
    return rc;
}
