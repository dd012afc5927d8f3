/*
 * bench_hybrid.c -- hybrid recall's query latency at 100k stored vectors, beside the
 * FTS5-only lcm_grep query on the same store in the same run: bench_store's corpus, one
 * unit vector per message (deterministic pseudo-random, `dim` floats), then the exact
 * similarity scan alone, the fused search (full-text side + scan + fusion) for a rare word
 * and for words in most messages, and lcm_grep's query mode for the same words. The
 * query's own embedding (one HTTP call to the configured server) is not in these figures.
 * One line per figure. Usage: bench_hybrid [messages (default 100000)] [dim (default 384)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "embed.h"
#include "hybrid.h"
#include "recall.h"
#include "store.h"
#include "util.h"

#define RUNS 7

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

static int scan_visit(void *ud, const store_vec_row *r, char **err)
{
    (void)err;
    scan_ctx *c = ud;
    double d = embed_dot(c->q, r->v, r->dim);
    if (d > c->best) c->best = d;
    c->n++;
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
    char home[] = "/tmp/lc-bench-hybrid-XXXXXX", *err = NULL, cmd[128];
    store *s = NULL;
    if (!mkdtemp(home)) return 1;
    if (store_open(home, "hybrid", "/bench", &s, &err)) return die("open", err);
    corpus c = {0};
    corpus_make(&c, n);
    if (store_ingest(s, c.m, n, NULL, &err)) return die("ingest", err);
    corpus_free(&c);
    double t0 = lc_now_ms();
    if (fill_vectors(s, n, dim, &err)) return die("vectors", err);
    printf("store: %zu messages, %zu vectors of %d float32 (%.0f MB of vectors) written in %.0f ms; db %lld MB\n", n, n,
           dim, (double)n * dim * 4 / 1e6, lc_now_ms() - t0, (long long)(store_db_bytes(s) >> 20));

    float *q = malloc((size_t)dim * sizeof *q);
    random_unit(q, dim);
    lcm_embeddings cfg = {.enabled = 1, .url = "http://127.0.0.1:9", .model = "bench-model", .w_fts = 1,
                          .w_vector = 1, .rrf_k = 60};
    double v[RUNS];

    for (int i = 0; i < RUNS; i++) {
        scan_ctx sc = {.q = q, .best = -2};
        double a = lc_now_ms();
        if (store_vec_walk(s, "bench-model", 0, scan_visit, &sc, &err)) return die("scan", err);
        v[i] = lc_now_ms() - a;
        if (sc.n != n) return die("scan", lc_asprintf("compared %zu of %zu vectors", sc.n, n));
    }
    report("exact similarity scan alone (read every BLOB + dot)", v, RUNS);

    const char *queries[][2] = {{"\"N997=6982\"", "a rare word"}, {"cache provider", "words in most messages"}};
    for (size_t qi = 0; qi < 2; qi++) {
        char label[160];
        hybrid_opts o = {.query = queries[qi][0], .cfg = &cfg, .qvec = q, .qdim = dim};
        size_t hits = 0;
        for (int i = 0; i < RUNS; i++) {
            hybrid_result r;
            double a = lc_now_ms();
            if (hybrid_search(&s, 1, &o, &r, &err)) return die("hybrid", err);
            v[i] = lc_now_ms() - a;
            hits = r.n;
            hybrid_result_free(&r);
        }
        snprintf(label, sizeof label, "hybrid (fused: full-text top %d + scan + RRF), %s %s, %zu candidates",
                 HYBRID_FTS_CANDIDATES, queries[qi][1], queries[qi][0], hits);
        report(label, v, RUNS);
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
    }
    free(q);
    store_close(s);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    return system(cmd) == 0 ? 0 : 1;
}
