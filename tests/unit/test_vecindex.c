/*
 * test_vecindex.c -- hybrid recall's in-memory nearest-vector search (vecindex.h): the int8
 * scan with its exact re-rank agrees with the exact float scan on generated vectors (recall
 * of the top 10), its cosines are the exact ones, removed rows stay out unless asked, the
 * cache holds codes only and re-ranks from the store's floats to the exact top 10, and the
 * process cache sees what another connection to the same store writes or marks, and threads
 * searching at once share one entry (run under TSan by make tsan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed.h"
#include "store.h"
#include "util.h"
#include "vecindex.h"
#include "test_main.h"

#include "temp_home.h"

static unsigned long long rng = 0x2545F4914F6CDD1DULL;
static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* Unit vectors around `centers` clusters, the way embeddings of related texts crowd
 * together: near neighbours differ by little, which is what quantization blurs. */
static void make_vectors(float *v, size_t n, int dim, int centers)
{
    float *c = malloc((size_t)centers * (size_t)dim * sizeof *c);
    assert_non_null(c);
    for (size_t i = 0; i < (size_t)centers * (size_t)dim; i++) c[i] = (float)(uniform() * 2 - 1);
    for (size_t i = 0; i < n; i++) {
        const float *ci = c + (i % (size_t)centers) * (size_t)dim;
        for (int d = 0; d < dim; d++) v[i * (size_t)dim + d] = ci[d] + (float)(uniform() * 2 - 1) * 0.35f;
        embed_normalize(v + i * (size_t)dim, dim);
    }
    free(c);
}

static void fill_set(vecindex_set *set, const float *v, size_t n, int dim)
{
    char *err = NULL;
    set->dim = dim;
    for (size_t i = 0; i < n; i++) {
        store_vec_row r = {.kind = STORE_VEC_MESSAGE, .id = (int64_t)i + 1, .dim = dim, .v = v + i * (size_t)dim};
        assert_int_equal(vecindex_set_add(set, &r, &err), LC_OK);
    }
}

/* The share of the exact top 10 the int8 search returns, over `queries` queries. */
static double recall_at_10(int dim, size_t n, int queries)
{
    float *v = malloc(n * (size_t)dim * sizeof *v), *q = malloc((size_t)dim * sizeof *q);
    assert_non_null(v);
    assert_non_null(q);
    make_vectors(v, n, dim, 40);
    vecindex_set set = {0};
    fill_set(&set, v, n, dim);
    size_t agree = 0;
    char *err = NULL;
    for (int t = 0; t < queries; t++) {
        /* A query near a stored vector, as a real question is near its answer. */
        const float *near = v + (size_t)(uniform() * (double)n) * (size_t)dim;
        for (int d = 0; d < dim; d++) q[d] = near[d] + (float)(uniform() * 2 - 1) * 0.2f;
        embed_normalize(q, dim);
        vecindex_hit *he = NULL, *hq = NULL;
        size_t ne = 0, nq = 0;
        assert_int_equal(vecindex_set_search_exact(&set, q, 0, 10, &he, &ne, &err), LC_OK);
        assert_int_equal(vecindex_set_search(&set, q, 0, 10, &hq, &nq, &err), LC_OK);
        assert_int_equal(ne, 10);
        assert_int_equal(nq, 10);
        for (size_t i = 0; i < nq; i++) {
            /* Each hit's cosine is the exact one, and the order is by it. */
            assert_true(fabs(hq[i].cosine - embed_dot(q, v + hq[i].row * (size_t)dim, dim)) < 1e-9);
            if (i) assert_true(hq[i - 1].cosine >= hq[i].cosine);
            for (size_t j = 0; j < ne; j++) agree += hq[i].row == he[j].row;
        }
        free(he);
        free(hq);
    }
    vecindex_set_free(&set);
    free(v);
    free(q);
    return (double)agree / (10.0 * queries);
}

static void test_int8_search_returns_the_exact_top_10_on_generated_vectors(void **state)
{
    (void)state;
    double r = recall_at_10(384, 20000, 25);
    print_message("recall@10 at dim 384: %.3f\n", r);
    assert_true(r >= 0.98);
}

static void test_int8_search_holds_at_a_dimension_no_multiple_of_32(void **state)
{
    (void)state;
    /* 100 = three whole AVX2 steps and a tail of 4 the kernel scores one by one. */
    double r = recall_at_10(100, 5000, 25);
    print_message("recall@10 at dim 100: %.3f\n", r);
    assert_true(r >= 0.98);
}

/* Each SIMD kernel this CPU has (AVX2, AVX-VNNI: four rows a pass, a tail of rows and of
 * dimensions done one by one) scores every row exactly as the plain C loop does. */
static void test_the_simd_scan_scores_every_row_as_the_plain_loop_does(void **state)
{
    (void)state;
    const int dims[] = {384, 100, 31, 7};
    for (size_t t = 0; t < sizeof dims / sizeof *dims; t++) {
        int dim = dims[t];
        size_t n = 1003; /* not a multiple of four: the last rows go one by one */
        float *v = malloc(n * (size_t)dim * sizeof *v), *q = malloc((size_t)dim * sizeof *q);
        float *simd = malloc(n * sizeof *simd), *plain = malloc(n * sizeof *plain);
        assert_non_null(v);
        assert_non_null(q);
        assert_non_null(simd);
        assert_non_null(plain);
        make_vectors(v, n, dim, 9);
        vecindex_set set = {0};
        fill_set(&set, v, n, dim);
        memcpy(q, v + 17 * (size_t)dim, (size_t)dim * sizeof *q);
        char *err = NULL;
        assert_int_equal(vecindex_set_scores(&set, q, "plain", plain, &err), LC_OK);
        const char *kernels[] = {NULL, "avx2", "vnni"};
        for (size_t k = 0; k < 3; k++) {
            int rc = vecindex_set_scores(&set, q, kernels[k], simd, &err);
            if (rc == LC_INVALID) {
                print_message("%s: %s\n", kernels[k], err);
                free(err);
                err = NULL;
                continue;
            }
            assert_int_equal(rc, LC_OK);
            for (size_t i = 0; i < n; i++) {
                if (simd[i] != plain[i])
                    print_error("%s dim %d row %zu: %g != %g\n", kernels[k] ? kernels[k] : "in use", dim, i, simd[i],
                                plain[i]);
                assert_true(simd[i] == plain[i]);
            }
        }
        vecindex_set_free(&set);
        free(v);
        free(q);
        free(simd);
        free(plain);
    }
}

static void test_removed_rows_stay_out_unless_asked(void **state)
{
    (void)state;
    float v[3][4] = {{1, 0, 0, 0}, {0.8f, 0.6f, 0, 0}, {0, 0, 1, 0}};
    vecindex_set set = {.dim = 4};
    char *err = NULL;
    for (int i = 0; i < 3; i++) {
        store_vec_row r = {.kind = STORE_VEC_MESSAGE, .id = i + 1, .entry_id = i == 0 ? "best" : "other",
                           .removed = i == 0, .dim = 4, .v = v[i]};
        assert_int_equal(vecindex_set_add(&set, &r, &err), LC_OK);
    }
    float q[4] = {1, 0, 0, 0};
    vecindex_hit *h = NULL;
    size_t n = 0;
    assert_int_equal(vecindex_set_search(&set, q, 0, 2, &h, &n, &err), LC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(h[0].id, 2);
    free(h);
    assert_int_equal(vecindex_set_search(&set, q, 1, 2, &h, &n, &err), LC_OK);
    assert_int_equal(h[0].id, 1);
    assert_string_equal(h[0].entry_id, "best");
    assert_true(fabs(h[0].cosine - 1.0) < 1e-9);
    free(h);
    vecindex_set_free(&set);
}

/* ---- the cache against a real store ------------------------------------------------------ */

typedef struct got {
    int64_t id[8];
    size_t n;
} got;

static int got_visit(void *ud, const vecindex_hit *h, char **err)
{
    (void)err;
    got *g = ud;
    if (g->n < 8) g->id[g->n++] = h->id;
    return LC_OK;
}

static got nearest(store *s, const float *q, vecindex_stats *st)
{
    got g = {0};
    char *err = NULL;
    int rc = vecindex_search(s, "m", 0, q, 4, 3, got_visit, &g, st, &err);
    if (rc) print_error("vecindex_search: %s\n", err ? err : "?");
    assert_int_equal(rc, LC_OK);
    return g;
}

static int64_t message_id(store *s, const char *entry)
{
    store_row r;
    char *err = NULL;
    assert_int_equal(store_get_message(s, entry, &r, &err), LC_OK);
    int64_t id = r.id;
    store_row_free(&r);
    return id;
}

static void test_the_cache_sees_what_another_connection_writes_and_marks(void **state)
{
    (void)state;
    store *w = home_store("cache", "/work/proj");
    msg_batch b = {0};
    for (int i = 0; i < 3; i++)
        msg_batch_add(&b, lc_asprintf("e%d", i),
                      lc_asprintf("{\"role\":\"user\",\"content\":\"text %d\",\"timestamp\":%d}", i, 1700000000 + i));
    msg_batch_ingest(w, &b, NULL);
    char *err = NULL;
    float v0[4] = {1, 0, 0, 0}, v1[4] = {0, 1, 0, 0}, v2[4] = {0, 0, 1, 0};
    store_vec put[2] = {{STORE_VEC_MESSAGE, message_id(w, "e0"), "m", 4, v0},
                        {STORE_VEC_MESSAGE, message_id(w, "e1"), "m", 4, v1}};
    assert_int_equal(store_vec_put(w, put, 2, &err), LC_OK);

    /* A reader of the same file: its own connection, as another process would have. */
    store *r = NULL;
    int version = 0;
    assert_int_equal(store_open_readonly(store_path(w), &r, &version, &err), LC_OK);
    vecindex_cache_clear();
    float q[4] = {0, 0, 1, 0};
    vecindex_stats st;
    got g = nearest(r, q, &st);
    assert_int_equal(st.loaded, 1);
    assert_int_equal(st.scanned, 2);
    g = nearest(r, q, &st);
    assert_int_equal(st.loaded, 0); /* held between calls */

    /* The writer adds the very vector the query asks for: the reader finds it first. */
    store_vec add = {STORE_VEC_MESSAGE, message_id(w, "e2"), "m", 4, v2};
    assert_int_equal(store_vec_put(w, &add, 1, &err), LC_OK);
    g = nearest(r, q, &st);
    assert_int_equal(st.loaded, 1);
    assert_int_equal(g.n, 3);
    assert_int_equal(g.id[0], message_id(w, "e2"));

    /* The writer marks it removed (a branch left): the reader no longer offers it. */
    const char *gone[] = {"e2"};
    assert_int_equal(store_set_removed(w, gone, 1, 1, NULL, &err), LC_OK);
    g = nearest(r, q, &st);
    assert_int_equal(g.n, 2);
    assert_true(g.id[0] != message_id(w, "e2") && g.id[1] != message_id(w, "e2"));

    vecindex_cache_clear();
    store_close(r);
    store_close(w);
}

/* The cache keeps the codes only and re-ranks its candidates from the floats the store
 * holds: its top 10 is the exact scan's, each cosine the exact one, each hit names its entry,
 * and it holds no float per vector. */
typedef struct hits10 {
    int64_t id[10];
    double cos[10];
    char *entry[10];
    size_t n;
} hits10;

static int hits10_visit(void *ud, const vecindex_hit *h, char **err)
{
    (void)err;
    hits10 *g = ud;
    if (g->n < 10) {
        g->id[g->n] = h->id;
        g->cos[g->n] = h->cosine;
        g->entry[g->n++] = h->entry_id ? lc_strdup(h->entry_id) : NULL;
    }
    return LC_OK;
}

static void test_the_cache_re_ranks_from_the_store_and_returns_the_exact_top_10(void **state)
{
    (void)state;
    enum { N = 600, DIM = 96 };
    store *w = home_store("lean", "/work/proj");
    msg_batch b = {0};
    for (int i = 0; i < N; i++)
        msg_batch_add(&b, lc_asprintf("e%d", i),
                      lc_asprintf("{\"role\":\"user\",\"content\":\"text %d\",\"timestamp\":%d}", i, 1700000000 + i));
    msg_batch_ingest(w, &b, NULL);
    float *v = malloc((size_t)N * DIM * sizeof *v), q[DIM];
    store_vec *put = calloc(N, sizeof *put);
    int64_t *row_of = calloc(N, sizeof *row_of);
    assert_non_null(v);
    assert_non_null(put);
    assert_non_null(row_of);
    make_vectors(v, N, DIM, 12);
    vecindex_set exact = {.dim = DIM};
    char *err = NULL;
    for (int i = 0; i < N; i++) {
        char eid[16];
        snprintf(eid, sizeof eid, "e%d", i);
        row_of[i] = message_id(w, eid);
        put[i] = (store_vec){STORE_VEC_MESSAGE, row_of[i], "m", DIM, v + (size_t)i * DIM};
        store_vec_row r = {.kind = STORE_VEC_MESSAGE, .id = row_of[i], .dim = DIM, .v = v + (size_t)i * DIM};
        assert_int_equal(vecindex_set_add(&exact, &r, &err), LC_OK);
    }
    assert_int_equal(store_vec_put(w, put, N, &err), LC_OK);
    vecindex_cache_clear();
    size_t agree = 0;
    for (int t = 0; t < 20; t++) {
        const float *near = v + (size_t)(uniform() * N) * DIM;
        for (int d = 0; d < DIM; d++) q[d] = near[d] + (float)(uniform() * 2 - 1) * 0.2f;
        embed_normalize(q, DIM);
        hits10 g = {0};
        vecindex_stats st;
        assert_int_equal(vecindex_search(w, "m", 0, q, DIM, 10, hits10_visit, &g, &st, &err), LC_OK);
        vecindex_hit *he = NULL;
        size_t ne = 0;
        assert_int_equal(vecindex_set_search_exact(&exact, q, 0, 10, &he, &ne, &err), LC_OK);
        assert_int_equal(g.n, 10);
        for (size_t i = 0; i < g.n; i++) {
            size_t at = 0;
            while (at < N && row_of[at] != g.id[i]) at++;
            assert_true(at < N);
            char eid[16];
            snprintf(eid, sizeof eid, "e%zu", at);
            assert_non_null(g.entry[i]);
            assert_string_equal(g.entry[i], eid);
            assert_true(fabs(g.cos[i] - embed_dot(q, v + at * DIM, DIM)) < 1e-9);
            if (i) assert_true(g.cos[i - 1] >= g.cos[i]);
            for (size_t j = 0; j < ne; j++) agree += g.id[i] == he[j].id;
            free(g.entry[i]);
        }
        free(he);
    }
    print_message("cache recall@10 (re-rank from the store): %.3f\n", agree / 200.0);
    assert_true(agree >= 196);
    size_t entries = 0, bytes = 0;
    vecindex_cache_usage(&entries, &bytes);
    print_message("cache: %zu bytes for %d vectors of %d dimensions\n", bytes, N, DIM);
    assert_int_equal(entries, 1);
    assert_true(bytes < (size_t)N * DIM * sizeof(float));
    vecindex_cache_clear();
    vecindex_set_free(&exact);
    free(v);
    free(put);
    free(row_of);
    store_close(w);
}

/* Threads that each open their own connection to one store and search it at once (the
 * plugin's worker beside a tool call): one shared cache entry, the same answer for all. */
typedef struct searcher {
    const char *path;
    int64_t first;
    int ok;
} searcher;

static void *searcher_run(void *ud)
{
    searcher *t = ud;
    store *r = NULL;
    int version = 0;
    char *err = NULL;
    if (store_open_readonly(t->path, &r, &version, &err) != LC_OK) {
        free(err);
        return NULL;
    }
    float q[4] = {0, 1, 0, 0};
    t->ok = 1;
    for (int i = 0; i < 20; i++) {
        got g = {0};
        vecindex_stats st;
        if (vecindex_search(r, "m", 0, q, 4, 3, got_visit, &g, &st, &err) != LC_OK || g.n != 2) t->ok = 0;
        if (i == 0) t->first = g.id[0];
        else if (g.id[0] != t->first) t->ok = 0;
    }
    store_close(r);
    return NULL;
}

static void test_threads_searching_at_once_share_one_cached_answer(void **state)
{
    (void)state;
    store *w = home_store("threads", "/work/proj");
    msg_batch b = {0};
    for (int i = 0; i < 2; i++)
        msg_batch_add(&b, lc_asprintf("e%d", i),
                      lc_asprintf("{\"role\":\"user\",\"content\":\"text %d\",\"timestamp\":%d}", i, 1700000000 + i));
    msg_batch_ingest(w, &b, NULL);
    char *err = NULL;
    float v0[4] = {1, 0, 0, 0}, v1[4] = {0, 1, 0, 0};
    store_vec put[2] = {{STORE_VEC_MESSAGE, message_id(w, "e0"), "m", 4, v0},
                        {STORE_VEC_MESSAGE, message_id(w, "e1"), "m", 4, v1}};
    assert_int_equal(store_vec_put(w, put, 2, &err), LC_OK);
    vecindex_cache_clear();
    searcher t[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        t[i] = (searcher){.path = store_path(w)};
        assert_int_equal(pthread_create(&th[i], NULL, searcher_run, &t[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_true(t[i].ok);
        assert_int_equal(t[i].first, message_id(w, "e1"));
    }
    size_t entries = 0, bytes = 0;
    vecindex_cache_usage(&entries, &bytes);
    assert_int_equal(entries, 1);
    vecindex_cache_clear();
    store_close(w);
}

TEST_MAIN(cmocka_unit_test(test_int8_search_returns_the_exact_top_10_on_generated_vectors),
          cmocka_unit_test(test_int8_search_holds_at_a_dimension_no_multiple_of_32),
          cmocka_unit_test(test_removed_rows_stay_out_unless_asked),
          cmocka_unit_test(test_the_simd_scan_scores_every_row_as_the_plain_loop_does),
          HOME_TEST(test_the_cache_sees_what_another_connection_writes_and_marks),
          HOME_TEST(test_threads_searching_at_once_share_one_cached_answer),
          HOME_TEST(test_the_cache_re_ranks_from_the_store_and_returns_the_exact_top_10))
