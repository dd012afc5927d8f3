/*
 * test_hybrid.c -- hybrid recall's pieces on real SQLite stores in a temp dir: reciprocal
 * rank fusion, the vector math, the endpoint URL rule, the `embeddings` settings (off by
 * default), the store's vector rows (write, walk, backfill walk with and without other
 * models, coverage, a summary's vector leaving with its text), and the fused search with
 * the query's vector given (no HTTP: the loopback server is the contract test's).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "embed.h"
#include "hybrid.h"
#include "store.h"
#include "store_backend.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

#include "temp_home.h"

/* The store of session `sid` (the suite's stores all belong to one project folder) holding
 * n user messages e0..e(n-1) with the given texts. */
static store *store_with_texts(const char *sid, const char *const *texts, size_t n)
{
    store *s = home_store(sid, "/work/proj");
    msg_batch b = {0};
    for (size_t i = 0; i < n; i++)
        msg_batch_add(&b, lc_asprintf("e%zu", i),
                      lc_asprintf("{\"role\":\"user\",\"content\":\"%s\",\"timestamp\":%zu}",
                                  texts[i], 1700000000000 + i));
    msg_batch_ingest(s, &b, NULL);
    return s;
}

static int64_t row_id(store *s, const char *entry)
{
    store_row r;
    char *err = NULL;
    assert_int_equal(store_get_message(s, entry, &r, &err), LC_OK);
    int64_t id = r.id;
    store_row_free(&r);
    return id;
}

/* ---- fusion and math ---------------------------------------------------------------------- */

static void test_rrf_ranks_a_row_found_both_ways_above_either_alone(void **state)
{
    (void)state;
    hybrid_cand c[3] = {
        {.id = 1, .fts_rank = 1},                              /* words only, best */
        {.id = 2, .has_vec = 1, .cosine = 0.9},                /* meaning only, best */
        {.id = 3, .fts_rank = 2, .has_vec = 1, .cosine = 0.8}, /* second both ways */
    };
    hybrid_rrf(c, 3, 1.0, 1.0, 60);
    assert_int_equal(c[0].id, 3);
    assert_true(fabs(c[0].score - (1.0 / 62 + 1.0 / 62)) < 1e-12);
    assert_int_equal(c[0].vec_rank, 2);
    /* The two single-sided rows tie at 1/61; the one with a vector goes first. */
    assert_int_equal(c[1].id, 2);
    assert_int_equal(c[1].vec_rank, 1);
    assert_true(fabs(c[1].score - 1.0 / 61) < 1e-12);
    assert_int_equal(c[2].id, 1);
    assert_int_equal(c[2].vec_rank, 0);
    assert_true(fabs(c[2].score - 1.0 / 61) < 1e-12);
}

static void test_rrf_weights_and_k_shape_the_order(void **state)
{
    (void)state;
    hybrid_cand c[2] = {{.id = 1, .fts_rank = 1}, {.id = 2, .has_vec = 1, .cosine = 0.5}};
    hybrid_rrf(c, 2, 3.0, 1.0, 60);
    assert_int_equal(c[0].id, 1); /* words weigh three times as much */
    assert_true(fabs(c[0].score - 3.0 / 61) < 1e-12);
    hybrid_cand d[2] = {{.id = 1, .fts_rank = 1}, {.id = 2, .has_vec = 1, .cosine = 0.5}};
    hybrid_rrf(d, 2, 0.0, 1.0, 0); /* k <= 0 is the default 60 */
    assert_int_equal(d[0].id, 2);
    assert_true(fabs(d[0].score - 1.0 / 61) < 1e-12);
    assert_true(d[1].score == 0.0);
}

static void test_rrf_orders_vectors_by_cosine_not_by_input_order(void **state)
{
    (void)state;
    hybrid_cand c[3] = {{.id = 1, .has_vec = 1, .cosine = 0.1}, {.id = 2, .has_vec = 1, .cosine = 0.7},
                        {.id = 3, .has_vec = 1, .cosine = 0.4}};
    hybrid_rrf(c, 3, 1.0, 1.0, 60);
    assert_int_equal(c[0].id, 2);
    assert_int_equal(c[1].id, 3);
    assert_int_equal(c[2].id, 1);
    assert_int_equal(c[2].vec_rank, 3);
}

static void test_normalize_makes_unit_vectors_so_dot_is_cosine(void **state)
{
    (void)state;
    float a[2] = {3, 4}, b[2] = {4, 3}, z[3] = {0, 0, 0};
    embed_normalize(a, 2);
    embed_normalize(b, 2);
    assert_true(fabs(a[0] - 0.6f) < 1e-6 && fabs(a[1] - 0.8f) < 1e-6);
    assert_true(fabs(embed_dot(a, a, 2) - 1.0) < 1e-6);
    assert_true(fabs(embed_dot(a, b, 2) - 24.0 / 25.0) < 1e-6); /* cos of (3,4),(4,3) */
    embed_normalize(z, 3);
    assert_true(z[0] == 0 && z[1] == 0 && z[2] == 0); /* a zero vector matches nothing */
}

static void test_embed_url_takes_a_base_or_the_full_path(void **state)
{
    (void)state;
    const char *cases[][2] = {
        {"http://127.0.0.1:11434", "http://127.0.0.1:11434/v1/embeddings"},
        {"http://h:8080/v1/", "http://h:8080/v1/embeddings"},
        {"https://api.example.com/v1/embeddings", "https://api.example.com/v1/embeddings"},
        {"http://h/custom/embeddings/", "http://h/custom/embeddings"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *u = embed_url(cases[i][0]);
        assert_string_equal(u, cases[i][1]);
        free(u);
    }
}

/* ---- settings ------------------------------------------------------------------------------ */

static lcm_config parse(const char *text)
{
    lcm_config c;
    char *err = NULL;
    assert_int_equal(lcm_config_parse(text, strlen(text), &c, &err), LC_OK);
    return c;
}

static void test_embeddings_are_off_by_default_and_absent_from_the_effective_config(void **state)
{
    (void)state;
    lcm_config c;
    lcm_config_defaults(&c);
    assert_int_equal(c.embeddings.enabled, 0);
    cJSON *j = lcm_config_to_json(&c);
    assert_null(cJSON_GetObjectItem(j, "embeddings"));
    cJSON_Delete(j);
    float *v = NULL;
    int dim = 0;
    char *err = NULL;
    const char *q = "x";
    assert_int_equal(embed_texts(&c.embeddings, &q, 1, &v, &dim, &err), LC_INVALID);
    assert_non_null(strstr(err, "needs an embeddings endpoint"));
    free(err);
    lcm_config_free(&c);
}

static void test_embeddings_settings_parse_with_weights_and_bounds(void **state)
{
    (void)state;
    lcm_config c = parse("{\"embeddings\":{\"url\":\"http://127.0.0.1:1/v1\",\"model\":\"m\",\"apiKeyEnv\":\"K\","
                         "\"dimensions\":64,\"batchSize\":8,\"hybridWeights\":{\"fts\":0.5,\"vector\":2}}}");
    assert_int_equal(c.n_problems, 0);
    assert_int_equal(c.embeddings.enabled, 1);
    assert_string_equal(c.embeddings.model, "m");
    assert_string_equal(c.embeddings.api_key_env, "K");
    assert_int_equal(c.embeddings.dimensions, 64);
    assert_int_equal(c.embeddings.batch, 8);
    assert_int_equal(c.embeddings.rrf_k, 60);
    assert_true(c.embeddings.w_fts == 0.5 && c.embeddings.w_vector == 2.0);
    cJSON *j = lcm_config_to_json(&c);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "embeddings"), "model")->valuestring, "m");
    cJSON_Delete(j);
    lcm_config_free(&c);

    c = parse("{\"embeddings\":{\"url\":\"ftp://x\",\"model\":\"m\",\"batchSize\":0,"
              "\"hybridWeights\":{\"fts\":0,\"vector\":0},\"colour\":1}}");
    assert_int_equal(c.embeddings.enabled, 0); /* the URL was refused: off, and said so */
    assert_int_equal(c.embeddings.batch, 16);
    assert_true(c.embeddings.w_fts == 1.0 && c.embeddings.w_vector == 1.0);
    assert_int_equal(c.n_problems, 5);
    lcm_config_free(&c);
}

/* ---- the store's vector rows ------------------------------------------------------------- */

typedef struct seen {
    int64_t ids[16];
    int kinds[16];
    char *other[16];
    size_t n;
    size_t stop_after;
} seen;

static int see_pending(void *ud, const store_vec_pending *t, char **err)
{
    (void)err;
    seen *s = ud;
    if (s->stop_after && s->n == s->stop_after) return STORE_VISIT_STOP;
    s->ids[s->n] = t->id;
    s->kinds[s->n] = t->kind;
    s->other[s->n] = t->other_model ? lc_strdup(t->other_model) : NULL;
    s->n++;
    return LC_OK;
}

static void seen_free(seen *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->other[i]);
    memset(s, 0, sizeof *s);
}

static int see_vec(void *ud, const store_vec_row *r, char **err)
{
    (void)err;
    seen *s = ud;
    s->ids[s->n] = r->id;
    s->kinds[s->n] = r->kind;
    s->n++;
    assert_true(fabs(embed_dot(r->v, r->v, r->dim) - 1.0) < 1e-5);
    return LC_OK;
}

static void test_vectors_are_written_walked_backfilled_and_counted(void **state)
{
    (void)state;
    const char *texts[] = {"alpha one", "beta two", "gamma three"};
    store *s = store_with_texts("vec", texts, 3);
    char *err = NULL;
    seen t = {0};
    int stopped = 0;
    assert_int_equal(store_vec_walk_missing(s, "m1", 0, see_pending, &t, &stopped, &err), LC_OK);
    assert_int_equal(t.n, 3);
    assert_int_equal(stopped, 0);
    seen_free(&t);
    /* Bounded: a walk stopped after one row says so. */
    t.stop_after = 1;
    assert_int_equal(store_vec_walk_missing(s, "m1", 0, see_pending, &t, &stopped, &err), LC_OK);
    assert_int_equal(stopped, 1);
    seen_free(&t);

    float v0[3] = {1, 0, 0}, v1[3] = {0, 1, 0};
    store_vec put[2] = {{STORE_VEC_MESSAGE, row_id(s, "e0"), "m1", 3, v0}, {STORE_VEC_MESSAGE, row_id(s, "e1"), "m1", 3, v1}};
    assert_int_equal(store_vec_put(s, put, 2, &err), LC_OK);
    /* Resumable: the written rows are not visited again. */
    assert_int_equal(store_vec_walk_missing(s, "m1", 0, see_pending, &t, &stopped, &err), LC_OK);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.ids[0], row_id(s, "e2"));
    seen_free(&t);
    /* Another model: rows carrying m1 are offered only with other_models, naming m1. */
    assert_int_equal(store_vec_walk_missing(s, "m2", 0, see_pending, &t, &stopped, &err), LC_OK);
    assert_int_equal(t.n, 1);
    seen_free(&t);
    assert_int_equal(store_vec_walk_missing(s, "m2", 1, see_pending, &t, &stopped, &err), LC_OK);
    assert_int_equal(t.n, 3);
    assert_string_equal(t.other[0], "m1");
    assert_null(t.other[2]);
    seen_free(&t);

    assert_int_equal(store_vec_walk(s, "m1", 0, see_vec, &t, &err), LC_OK);
    assert_int_equal(t.n, 2);
    seen_free(&t);
    store_vec_coverage c;
    assert_int_equal(store_vec_coverage_get(s, "m2", &c, &err), LC_OK);
    assert_int_equal(c.messages, 3);
    assert_int_equal(c.messages_embedded, 0);
    assert_int_equal(c.messages_other, 2);
    assert_string_equal(c.other_model, "m1");
    store_vec_coverage_free(&c);
    /* A removed branch's vector is walked only when asked. */
    const char *gone[] = {"e1"};
    assert_int_equal(store_set_removed(s, gone, 1, 1, NULL, &err), LC_OK);
    assert_int_equal(store_vec_walk(s, "m1", 0, see_vec, &t, &err), LC_OK);
    assert_int_equal(t.n, 1);
    seen_free(&t);
    assert_int_equal(store_vec_walk(s, "m1", 1, see_vec, &t, &err), LC_OK);
    assert_int_equal(t.n, 2);
    seen_free(&t);
    store_close(s);
}

static void test_a_summary_vector_leaves_when_its_text_changes(void **state)
{
    (void)state;
    const char *texts[] = {"one", "two"};
    store *s = store_with_texts("sumvec", texts, 2);
    const char *entries[] = {"e0", "e1"};
    store_summary sm = {.kind = "leaf", .depth = 0, .text = "a summary", .tokens = 3, .entry_ids = entries, .n_entries = 2};
    int64_t id = 0;
    char *err = NULL;
    assert_int_equal(store_summary_add(s, &sm, &id, &err), LC_OK);
    float v[2] = {0.6f, 0.8f};
    store_vec put = {STORE_VEC_SUMMARY, id, "m1", 2, v};
    assert_int_equal(store_vec_put(s, &put, 1, &err), LC_OK);
    store_vec_coverage c;
    assert_int_equal(store_vec_coverage_get(s, "m1", &c, &err), LC_OK);
    assert_int_equal(c.summaries, 1);
    assert_int_equal(c.summaries_embedded, 1);
    store_vec_coverage_free(&c);
    assert_int_equal(store_summary_set_text(s, id, "a healed summary", 4, &err), LC_OK);
    assert_int_equal(store_vec_coverage_get(s, "m1", &c, &err), LC_OK);
    assert_int_equal(c.summaries_embedded, 0); /* it no longer describes the text */
    store_vec_coverage_free(&c);
    store_close(s);
}

static void test_a_backend_without_vector_slots_says_so(void **state)
{
    (void)state;
    store_methods v1 = {.i_version = 1, .size = offsetof(store_methods, x_vec_put), .name = "v1table"};
    struct { const store_methods *methods; } fake = {&v1};
    char *err = NULL;
    assert_int_equal(store_vec_put((store *)&fake, NULL, 0, &err), LC_INVALID);
    assert_non_null(strstr(err, "v1table backend does not support vectors"));
    free(err);
}

/* ---- the fused search ------------------------------------------------------------------- */

static void test_hybrid_search_finds_by_meaning_what_shares_no_word(void **state)
{
    (void)state;
    const char *texts[] = {"the parser reads brackets", "we ship to prod on fridays", "the parser reads the schedule"};
    store *s = store_with_texts("fuse", texts, 3);
    /* Concept vectors: dimension 0 "deploy", 1 "schedule", 2 "parser". */
    float v[3][3] = {{0, 0, 1}, {0.7071f, 0.7071f, 0}, {0, 0.6f, 0.8f}};
    store_vec put[3];
    for (int i = 0; i < 3; i++) {
        char e[16];
        snprintf(e, sizeof e, "e%d", i);
        put[i] = (store_vec){STORE_VEC_MESSAGE, row_id(s, e), "m", 3, v[i]};
    }
    char *err = NULL;
    assert_int_equal(store_vec_put(s, put, 3, &err), LC_OK);
    lcm_embeddings cfg = {.enabled = 1, .url = "http://127.0.0.1:9", .model = "m", .w_fts = 1, .w_vector = 1, .rrf_k = 60};
    float q[3] = {0.7071f, 0.7071f, 0}; /* "deployment schedule" */
    hybrid_opts o = {.query = "deployment schedule", .cfg = &cfg, .qvec = q, .qdim = 3};
    hybrid_result r;
    assert_int_equal(hybrid_search(&s, 1, &o, &r, &err), LC_OK);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.v[0].entry_id, "e2"); /* "schedule": found both ways */
    assert_int_equal(r.v[0].fts_rank, 1);
    assert_int_equal(r.v[0].vec_rank, 2);
    assert_string_equal(r.v[1].entry_id, "e1"); /* no shared word, the nearest meaning */
    assert_int_equal(r.v[1].fts_rank, 0);
    assert_int_equal(r.v[1].vec_rank, 1);
    assert_int_equal(r.scanned, 3);
    assert_int_equal(r.embedded, 3);
    for (size_t i = 0; i < r.n; i++) assert_string_not_equal(r.v[i].entry_id, "e0"); /* orthogonal, no word */
    hybrid_result_free(&r);
    char *text = NULL;
    assert_int_equal(hybrid_grep(s, &o, &text, &err), LC_OK);
    expect_has(text, "- [hybrid] e1 [user]: we ship to prod on fridays (meaning #1, cosine 1.000)",
               "(full-text #1, meaning #2");
    free(text);
    store_close(s);
}

static void test_hybrid_full_text_side_keeps_the_ranking_bound(void **state)
{
    (void)state;
    size_t n = RECALL_RANK_MAX + 2;
    const char **texts = calloc(n, sizeof *texts);
    for (size_t i = 0; i < n; i++) texts[i] = i == 7 ? "cache zebra" : "cache line";
    store *s = store_with_texts("bound", texts, n);
    free(texts);
    lcm_embeddings cfg = {.enabled = 1, .url = "http://127.0.0.1:9", .model = "m", .w_fts = 1, .w_vector = 1, .rrf_k = 60};
    float q[2] = {1, 0};
    hybrid_opts o = {.query = "cache zebra", .cfg = &cfg, .qvec = q, .qdim = 2};
    hybrid_result r;
    char *err = NULL;
    assert_int_equal(hybrid_search(&s, 1, &o, &r, &err), LC_OK);
    /* Any word matches every message (over the bound): the messages with both are ranked. */
    assert_int_equal(r.fts_narrowed, 1);
    assert_int_equal(r.fts_newest, 0);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.v[0].entry_id, "e7");
    hybrid_result_free(&r);
    char *text = NULL;
    assert_int_equal(hybrid_grep(s, &o, &text, &err), LC_OK);
    assert_non_null(strstr(text, "ranks those holding every word"));
    free(text);
    store_close(s);
}

TEST_MAIN(
    cmocka_unit_test(test_rrf_ranks_a_row_found_both_ways_above_either_alone),
    cmocka_unit_test(test_rrf_weights_and_k_shape_the_order),
    cmocka_unit_test(test_rrf_orders_vectors_by_cosine_not_by_input_order),
    cmocka_unit_test(test_normalize_makes_unit_vectors_so_dot_is_cosine),
    cmocka_unit_test(test_embed_url_takes_a_base_or_the_full_path),
    cmocka_unit_test(test_embeddings_are_off_by_default_and_absent_from_the_effective_config),
    cmocka_unit_test(test_embeddings_settings_parse_with_weights_and_bounds),
    HOME_TEST(test_vectors_are_written_walked_backfilled_and_counted),
    HOME_TEST(test_a_summary_vector_leaves_when_its_text_changes),
    cmocka_unit_test(test_a_backend_without_vector_slots_says_so),
    HOME_TEST(test_hybrid_search_finds_by_meaning_what_shares_no_word),
    HOME_TEST(test_hybrid_full_text_side_keeps_the_ranking_bound),
)
