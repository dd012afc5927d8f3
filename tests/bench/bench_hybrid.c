/*
 * bench_hybrid.c -- hybrid recall's query latency at 100k (or 1M) stored vectors, beside
 * its references in the same run: bench_store's corpus, one unit vector per message
 * (deterministic pseudo-random, `dim` floats), then the exact scan reading every vector from
 * the store, the in-memory exact float scan and the int8 scan + exact re-rank (vecindex.h)
 * with its recall of the exact top 10, the cache's load, the fused search (full-text side +
 * scan + fusion) for a rare word and for words in most messages, and lcm_grep's FTS5 query
 * mode for the same words. The query's own embedding (one HTTP call to the configured
 * server) is not in these figures. One line per figure.
 * Usage: bench_hybrid [messages (default 100000)] [dim (default 384)]
 * BENCH_HYBRID_STORE=DIR builds the store into DIR once and keeps it: a later run with the
 * same messages and dim reuses it (the 1M store takes tens of minutes to write).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corpus.h"
#include "embed.h"
#include "hybrid.h"
#include "recall.h"
#include "store.h"
#include "util.h"
#include "vecindex.h"

#define RUNS 7
#define QUERIES 20 /* queries for the recall figure */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    printf("%s: median %.1f ms, max %.1f ms (%zu runs)\n", name, v[n / 2], v[n - 1], n);
}

/* The process's own CPU time: on a shared machine the wall clock counts others' work too. */
static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int die(const char *what, char *err)
{
    fprintf(stderr, "bench_hybrid: %s: %s\n", what, err ? err : "?");
    free(err);
    return 1;
}

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
static void random_unit(float *v, int dim)
{
    for (int i = 0; i < dim; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        v[i] = (float)((double)(rng % 20001) / 10000.0 - 1.0);
    }
    embed_normalize(v, dim);
}

typedef struct scan_ctx {
    const float *q;
    double best;
    size_t n;
} scan_ctx;

static int set_visit(void *ud, const store_vec_row *r, char **err)
{
    return vecindex_set_add(ud, r, err);
}

static int scan_visit(void *ud, const store_vec_row *r, char **err)
{
    (void)err;
    scan_ctx *c = ud;
    double d = embed_dot(c->q, r->v, r->dim);
    if (d > c->best) c->best = d;
    c->n++;
    return LC_OK;
}

typedef struct ids_got {
    int64_t id[10];
    size_t n;
} ids_got;

static int ids_visit(void *ud, const vecindex_hit *h, char **err)
{
    (void)err;
    ids_got *g = ud;
    if (g->n < 10) g->id[g->n++] = h->id;
    return LC_OK;
}

static int fill_vectors(store *s, size_t n, int dim, char **err)
{
    /* Row ids are 1..n in a fresh store: one batch per 1,000 rows. */
    enum { BATCH = 1000 };
    float *v = malloc((size_t)BATCH * (size_t)dim * sizeof *v);
    store_vec *rows = calloc(BATCH, sizeof *rows);
    int rc = v && rows ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
    for (size_t i = 0; rc == LC_OK && i < n; i += BATCH) {
        size_t k = n - i < BATCH ? n - i : BATCH;
        for (size_t j = 0; j < k; j++) {
            random_unit(v + j * (size_t)dim, dim);
            rows[j] = (store_vec){STORE_VEC_MESSAGE, (int64_t)(i + j + 1), "bench-model", dim, v + j * (size_t)dim};
        }
        rc = store_vec_put(s, rows, k, err);
    }
    free(v);
    free(rows);
    return rc;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 100000;
    int dim = argc > 2 ? atoi(argv[2]) : 384;
    char tmp[] = "/tmp/lc-bench-hybrid-XXXXXX", *err = NULL, cmd[4200], done_mark[4200];
    const char *keep = getenv("BENCH_HYBRID_STORE"), *home = keep && *keep ? keep : NULL;
    store *s = NULL;
    /* Each figure as it is measured: the 1M run takes minutes. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!home && !(home = mkdtemp(tmp))) return 1;
    if (strlen(home) > 4000) return die("BENCH_HYBRID_STORE", lc_strdup("path too long"));
    /* A kept store is reused only when it was finished for these sizes; otherwise made anew. */
    snprintf(done_mark, sizeof done_mark, "%s/bench-hybrid-%zu-%d.done", home, n, dim);
    FILE *mark = keep ? fopen(done_mark, "r") : NULL;
    if (mark) {
        fclose(mark);
        if (store_open(home, "hybrid", "/bench", &s, &err)) return die("open", err);
        printf("store: reused %s (%zu messages, %d dimensions); db %lld MB\n", home, n, dim,
               (long long)(store_db_bytes(s) >> 20));
    } else {
        if (keep) {
            snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", home, home);
            if (system(cmd) != 0) return die("BENCH_HYBRID_STORE", lc_strdup(home));
        }
        if (store_open(home, "hybrid", "/bench", &s, &err)) return die("open", err);
        corpus c = {0};
        corpus_make(&c, n);
        if (store_ingest(s, c.m, n, NULL, &err)) return die("ingest", err);
        corpus_free(&c);
        double t0 = lc_now_ms();
        if (fill_vectors(s, n, dim, &err)) return die("vectors", err);
        printf("store: %zu messages, %zu vectors of %d float32 (%.0f MB of vectors) written in %.0f ms; db %lld MB\n", n,
               n, dim, (double)n * dim * 4 / 1e6, lc_now_ms() - t0, (long long)(store_db_bytes(s) >> 20));
        if (keep && !(mark = fopen(done_mark, "w"))) return die("BENCH_HYBRID_STORE", lc_strdup(done_mark));
        if (mark) fclose(mark);
    }
    /* The queries are made after the store, so a reused store sees the same ones. */
    rng = 0x2545F4914F6CDD1DULL;

    float *q = malloc((size_t)dim * sizeof *q);
    random_unit(q, dim);
    lcm_embeddings cfg = {.enabled = 1, .url = "http://127.0.0.1:9", .model = "bench-model", .w_fts = 1,
                          .w_vector = 1, .rrf_k = 60};
    double v[RUNS];

    /* The store scan reads 1.5 KB a row from SQLite: one run is enough at 1M. */
    int store_runs = n > 200000 ? 1 : RUNS;
    for (int i = 0; i < store_runs; i++) {
        scan_ctx sc = {.q = q, .best = -2};
        double a = lc_now_ms();
        if (store_vec_walk(s, "bench-model", 0, scan_visit, &sc, &err)) return die("scan", err);
        v[i] = lc_now_ms() - a;
        if (sc.n != n) return die("scan", lc_asprintf("compared %zu of %zu vectors", sc.n, n));
    }
    report("reference: exact similarity scan reading every vector from the store (BLOB + dot)", v, (size_t)store_runs);
    double store_scan = v[store_runs / 2];

    vecindex_set set = {.dim = dim};
    double a0 = lc_now_ms();
    if (store_vec_walk(s, "bench-model", 1, set_visit, &set, &err)) return die("load", err);
    printf("in-memory set with its floats: %zu vectors loaded and quantized in %.0f ms; %zu bytes a vector (int8 codes"
           " %d + float32 %d for the re-rank + scale, id, flags) = %.0f MB\n",
           set.n, lc_now_ms() - a0, vecindex_bytes_per_vector(dim, 0), dim, dim * 4,
           (double)set.n * (double)vecindex_bytes_per_vector(dim, 0) / 1e6);
    float *qs = malloc((size_t)QUERIES * (size_t)dim * sizeof *qs);
    for (int i = 0; i < QUERIES; i++) random_unit(qs + (size_t)i * (size_t)dim, dim);
    double ve[QUERIES], vq[QUERIES];
    int64_t exact_ids[QUERIES][10];
    size_t agree = 0;
    for (int i = 0; i < QUERIES; i++) {
        vecindex_hit *he = NULL, *hq = NULL;
        size_t ne = 0, nq = 0;
        const float *qi = qs + (size_t)i * (size_t)dim;
        double a = lc_now_ms();
        if (vecindex_set_search_exact(&set, qi, 0, 10, &he, &ne, &err)) return die("exact", err);
        ve[i] = lc_now_ms() - a;
        a = lc_now_ms();
        if (vecindex_set_search(&set, qi, 0, 10, &hq, &nq, &err)) return die("int8", err);
        vq[i] = lc_now_ms() - a;
        for (size_t x = 0; x < 10; x++) exact_ids[i][x] = x < ne ? he[x].id : -1;
        for (size_t x = 0; x < nq; x++)
            for (size_t y = 0; y < ne; y++) agree += hq[x].row == he[y].row;
        free(he);
        free(hq);
    }
    report("reference: exact float32 scan in memory, top 10", ve, QUERIES);
    double exact_mem = ve[QUERIES / 2];
    report("int8 scan + exact re-rank of the top 40, in memory, top 10", vq, QUERIES);
    printf("int8 recall of the exact top 10: %.3f over %d queries; %.1fx faster than the exact in-memory scan,"
           " %.0fx faster than the store scan\n",
           (double)agree / (10.0 * QUERIES), QUERIES, exact_mem / vq[QUERIES / 2], store_scan / vq[QUERIES / 2]);
    vecindex_set_free(&set);

    /* The process cache as hybrid recall uses it: codes only, the candidates' floats read
     * back from the store for the exact re-rank. */
    {
        size_t entries = 0, bytes = 0;
        ids_got g = {0};
        vecindex_stats st;
        vecindex_cache_clear();
        double a = lc_now_ms();
        if (vecindex_search(s, "bench-model", 0, qs, dim, 10, ids_visit, &g, &st, &err)) return die("cache", err);
        double load = lc_now_ms() - a;
        vecindex_cache_usage(&entries, &bytes);
        printf("vector cache: %zu vectors loaded and quantized in %.0f ms; %zu bytes a vector (int8 codes %d + scale, id,"
               " flags; the floats stay in the store) = %.0f MB held; scan kernel %s\n",
               st.scanned, load, vecindex_bytes_per_vector(dim, 1), dim, (double)bytes / 1e6, vecindex_kernel());
        agree = 0;
        double vc[QUERIES];
        for (int i = 0; i < QUERIES; i++) {
            g = (ids_got){0};
            a = lc_now_ms();
            double c = cpu_ms();
            if (vecindex_search(s, "bench-model", 0, qs + (size_t)i * (size_t)dim, dim, 10, ids_visit, &g, &st, &err))
                return die("cache", err);
            vq[i] = lc_now_ms() - a;
            vc[i] = cpu_ms() - c;
            for (size_t x = 0; x < g.n; x++)
                for (size_t y = 0; y < 10; y++) agree += g.id[x] == exact_ids[i][y];
        }
        report("cached int8 scan + exact re-rank of the top 40 read from the store, top 10", vq, QUERIES);
        report("  the same, the process's CPU time", vc, QUERIES);
        printf("cached int8 recall of the exact top 10: %.3f over %d queries; %.1fx faster than the exact in-memory"
               " scan\n",
               (double)agree / (10.0 * QUERIES), QUERIES, exact_mem / vq[QUERIES / 2]);
    }
    free(qs);

    {
        hybrid_opts o = {.query = "cache provider", .cfg = &cfg, .qvec = q, .qdim = dim};
        hybrid_result r;
        vecindex_cache_clear();
        double a = lc_now_ms();
        if (hybrid_search(&s, 1, &o, &r, &err)) return die("hybrid", err);
        printf("hybrid, first query of the process (loads the vector cache): %.0f ms\n", lc_now_ms() - a);
        hybrid_result_free(&r);
    }

    const char *queries[][2] = {{"\"N997=6982\"", "a rare word"}, {"cache provider", "words in most messages"}};
    for (size_t qi = 0; qi < 2; qi++) {
        char label[160];
        hybrid_opts o = {.query = queries[qi][0], .cfg = &cfg, .qvec = q, .qdim = dim};
        size_t hits = 0;
        double vc[RUNS];
        for (int i = 0; i < RUNS; i++) {
            hybrid_result r;
            double a = lc_now_ms(), c = cpu_ms();
            if (hybrid_search(&s, 1, &o, &r, &err)) return die("hybrid", err);
            v[i] = lc_now_ms() - a;
            vc[i] = cpu_ms() - c;
            hits = r.n;
            hybrid_result_free(&r);
        }
        snprintf(label, sizeof label, "hybrid (fused: full-text top %d + cached int8 scan + RRF), %s %s, %zu candidates",
                 HYBRID_FTS_CANDIDATES, queries[qi][1], queries[qi][0], hits);
        report(label, v, RUNS);
        double hyb = v[RUNS / 2];
        report("  the same, the process's CPU time", vc, RUNS);
        for (int i = 0; i < RUNS; i++) {
            char *text = NULL;
            double a = lc_now_ms();
            if (hybrid_grep(s, &o, &text, &err)) return die("hybrid grep", err);
            v[i] = lc_now_ms() - a;
            free(text);
        }
        snprintf(label, sizeof label, "lcm_grep mode hybrid, formatted page, %s", queries[qi][1]);
        report(label, v, RUNS);
        recall_grep_opts ro = {.query = queries[qi][0]};
        for (int i = 0; i < RUNS; i++) {
            recall_result r;
            double a = lc_now_ms();
            if (recall_grep(s, &ro, &r, &err)) return die("fts", err);
            char *text = recall_grep_format(&ro, RECALL_SCOPE_SESSION, &r);
            v[i] = lc_now_ms() - a;
            free(text);
            recall_result_free(&r);
        }
        snprintf(label, sizeof label, "lcm_grep FTS5 only (same store, same run), %s", queries[qi][1]);
        report(label, v, RUNS);
        printf("hybrid / FTS5-only ratio, %s: %.1f; hybrid / store scan ratio: %.3f\n", queries[qi][1],
               hyb / v[RUNS / 2], hyb / store_scan);
    }
    free(q);
    vecindex_cache_clear();
    store_close(s);
    if (keep) return 0;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    return system(cmd) == 0 ? 0 : 1;
}
