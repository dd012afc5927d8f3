/*
 * test_clm_budget.c -- reminder tiers (once per tier, re-arming), the estimate
 * calibrator's bounds and EMA, the overflow guard's oldest-first withholding, and the
 * max_tokens repair that raises but never lowers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clm_budget.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

#include "temp_dir.h"

static void test_tiers_fire_once_and_rearm_when_usage_drops(void **state)
{
    (void)state;
    /* Usage after usage, of a budget of 100000 with a 2048 reserve, and the tier each
     * check reports (0: none). */
    static const struct {
        size_t used;
        int tier;
    } steps[] = {
        {40000, 0}, {55000, 1}, {60000, 0}, {80000, 2}, {91000, 3}, {98000, 4}, {99000, 0},
        /* Drop below 50%: everything re-arms. */
        {30000, 0}, {52000, 1},
        /* A jump over several tiers reports the highest only, once. */
        {92000, 3}, {93000, 0},
        /* Dropping to 80% re-arms 90% only. */
        {80000, 0}, {90500, 3},
    };
    clm_tiers t = {0};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int got = clm_tiers_check(&t, steps[i].used, 100000, 2048);
        if (got != steps[i].tier)
            fail_msg("step %zu, usage %zu: tier %d, expected %d", i, steps[i].used, got,
                     steps[i].tier);
    }
}

static void test_budget_notice_labels_both_numbers(void **state)
{
    (void)state;
    char *n = clm_budget_notice(2, 76000, 81000, 1, 100000, 2048);
    expect_has(n, "75% of the budget", "estimated next request ~76000 tokens",
               "observed previous request 81000 tokens (stale");
    free(n);
    n = clm_budget_notice(4, 98000, 0, 0, 100000, 2048);
    expect_has(n, "reserve line", "not yet known");
    free(n);
    assert_null(clm_budget_notice(0, 1, 1, 0, 1, 1));
}

static void test_calibrator_is_seeded_bounded_and_smoothed(void **state)
{
    (void)state;
    clm_calibrator c;
    clm_calib_init(&c, "2.5");
    assert_true(c.factor == 2.5);
    assert_int_equal(clm_calib_apply(&c, 1000), 2500);
    clm_calib_init(&c, "9");
    assert_true(c.factor == 4.0);
    clm_calib_init(&c, "0.5");
    assert_true(c.factor == 1.0);
    clm_calib_init(&c, "abc");
    assert_true(c.factor == 1.0);
    clm_calib_init(&c, NULL);
    clm_calib_sent(&c, 1000);
    clm_calib_observed(&c, 2000);
    assert_true(c.factor == 2.0);
    clm_calib_sent(&c, 1000);
    clm_calib_observed(&c, 1000);
    assert_true(c.factor > 1.69 && c.factor < 1.71);
    /* An overcount never pulls the factor under 1. */
    for (int i = 0; i < 50; i++) {
        clm_calib_sent(&c, 1000);
        clm_calib_observed(&c, 100);
    }
    assert_true(c.factor >= 1.0);
    /* No pending request: an observation changes nothing. */
    double f = c.factor;
    clm_calib_observed(&c, 99999);
    assert_true(c.factor == f);
}

/* user, then three tool turns with big results, the last being the newest turn. */
static char *big_result(const char *cid, char fill)
{
    char *t = malloc(4001);
    memset(t, fill, 4000);
    t[4000] = '\0';
    char *j = lc_asprintf("{\"role\":\"toolResult\",\"toolCallId\":\"%s\",\"toolName\":\"read\","
                          "\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"timestamp\":7}",
                          cid, t);
    free(t);
    return j;
}

static char *call(const char *cid)
{
    return lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":"
                       "\"%s\",\"name\":\"read\",\"arguments\":{}}]}", cid);
}

typedef struct guard_fixture {
    char *m[7];
    clm_text t[7];
    char dir[64];
    clm_calibrator cal;
    clm_guard_cache cache;
    clm_guard_result r; /* the last guard() call's */
} guard_fixture;

static int guard_setup(void **state)
{
    guard_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->m[0] = lc_strdup("{\"role\":\"user\",\"content\":\"go\"}");
    f->m[1] = call("c1");
    f->m[2] = big_result("c1", 'a');
    f->m[3] = call("c2");
    f->m[4] = big_result("c2", 'b');
    f->m[5] = call("c3");
    f->m[6] = big_result("c3", 'c');
    for (int i = 0; i < 7; i++) f->t[i] = (clm_text){f->m[i], strlen(f->m[i])};
    temp_dir_make(f->dir, sizeof f->dir, "/tmp/clm-guard-XXXXXX");
    clm_calib_init(&f->cal, NULL);
    *state = f;
    return 0;
}

/* The guard over the seven messages, the first `prefix` being the revision's, under
 * `limit` tokens; the result is in f->r. */
static void guard(guard_fixture *f, size_t prefix, size_t limit)
{
    assert_int_equal(clm_guard_apply(&f->cache, f->dir, f->t, 7, prefix, NULL, 0, limit, &f->cal,
                                     &f->r, NULL),
                     LC_OK);
}

static int guard_teardown(void **state)
{
    guard_fixture *f = *state;
    for (int i = 0; i < 7; i++) free(f->m[i]);
    clm_guard_cache_free(&f->cache);
    int rc = temp_dir_remove(f->dir);
    free(f);
    return rc;
}

static void test_guard_withholds_oldest_tool_results_first(void **state)
{
    guard_fixture *f = *state;
    /* ~1000 tokens per result; a limit of ~2200 needs one withheld. */
    guard(f, 0, 2200);
    assert_non_null(f->r.replace[2]);
    assert_null(f->r.replace[4]);
    assert_null(f->r.replace[6]);
    assert_false(f->r.still_over);
    cJSON *n = cJSON_Parse(f->r.replace[2]);
    assert_string_equal(cJSON_GetObjectItem(n, "role")->valuestring, "toolResult");
    assert_string_equal(cJSON_GetObjectItem(n, "toolCallId")->valuestring, "c1");
    const char *txt = cJSON_GetArrayItem(cJSON_GetObjectItem(n, "content"), 0)
                          ->child->next->valuestring;
    expect_has(txt, "tool read, call c1", "/withheld/");
    /* The file holds the full text. */
    const char *path = strstr(txt, f->dir);
    char *p = lc_strndup(path, strcspn(path, " "));
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(lc_read_file(p, &data, &len, NULL), LC_OK);
    assert_int_equal(len, 4000);
    assert_int_equal(data[0], 'a');
    free(data);
    free(p);
    cJSON_Delete(n);
    expect_has(f->r.notice, "[CLM BUDGET] Overflow guard", "c1");
    char *first = lc_strdup(f->r.replace[2]);
    clm_guard_result_free(&f->r);

    /* Tighter: the next oldest goes too, never the newest turn's result. */
    guard(f, 0, 500);
    assert_non_null(f->r.replace[2]);
    assert_non_null(f->r.replace[4]);
    assert_null(f->r.replace[6]);
    assert_true(f->r.still_over);
    assert_non_null(strstr(f->r.notice, "Still over the limit"));
    assert_string_equal(f->r.replace[2], first);
    clm_guard_result_free(&f->r);

    /* Roomy again: earlier notes stay, byte for byte (no flip-flop). */
    guard(f, 0, 100000);
    assert_string_equal(f->r.replace[2], first);
    assert_non_null(f->r.replace[4]);
    assert_null(f->r.notice);
    clm_guard_result_free(&f->r);
    free(first);
}

static void test_guard_never_withholds_from_the_revision_prefix(void **state)
{
    guard_fixture *f = *state;
    guard(f, 3, 2200);
    assert_null(f->r.replace[2]);
    assert_non_null(f->r.replace[4]);
    clm_guard_result_free(&f->r);
    /* The calibrated estimate governs: factor 2 makes even one withheld not enough. */
    clm_calib_init(&f->cal, "2");
    guard(f, 3, 2200);
    assert_true(f->r.still_over);
    assert_true(f->r.tokens > 2200);
    clm_guard_result_free(&f->r);
}

static void test_guard_limit_takes_the_tighter_ceiling(void **state)
{
    (void)state;
    assert_int_equal(clm_guard_limit(100000, 2048, 200000), 97952);
    assert_int_equal(clm_guard_limit(100000, 2048, 32000), 32000 - 4096 - 2048);
    assert_int_equal(clm_guard_limit(1000, 2048, 0), 1);
}

static void test_max_tokens_repair_raises_never_lowers(void **state)
{
    (void)state;
    char *out = NULL;
    const char *p = "{\"model\":\"x\",\"max_tokens\":1,\"messages\":[]}";
    assert_int_equal(clm_max_tokens_repair(p, strlen(p), 32000, 8192, 10000, &out, NULL), LC_OK);
    assert_non_null(out);
    cJSON *j = cJSON_Parse(out);
    assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 8192);
    cJSON_Delete(j);
    free(out);
    p = "{\"max_completion_tokens\":100}";
    assert_int_equal(clm_max_tokens_repair(p, strlen(p), 32000, 0, 20000, &out, NULL), LC_OK);
    j = cJSON_Parse(out);
    assert_int_equal(cJSON_GetObjectItem(j, "max_completion_tokens")->valueint, 32000 - 20000 - 4096);
    cJSON_Delete(j);
    free(out);
    p = "{\"max_tokens\":16000}";
    assert_int_equal(clm_max_tokens_repair(p, strlen(p), 32000, 8192, 10000, &out, NULL), LC_OK);
    assert_null(out);
    p = "{\"max_output_tokens\":5}";
    assert_int_equal(clm_max_tokens_repair(p, strlen(p), 32000, 8192, 31000, &out, NULL), LC_OK);
    assert_null(out); /* no room at all: floor 1, and 5 is already above it */
    assert_int_equal(clm_max_tokens_repair("[1]", 3, 1, 1, 1, &out, NULL), LC_INVALID);
}

TEST_MAIN(
    cmocka_unit_test(test_tiers_fire_once_and_rearm_when_usage_drops),
    cmocka_unit_test(test_budget_notice_labels_both_numbers),
    cmocka_unit_test(test_calibrator_is_seeded_bounded_and_smoothed),
    cmocka_unit_test_setup_teardown(test_guard_withholds_oldest_tool_results_first,
                                    guard_setup, guard_teardown),
    cmocka_unit_test_setup_teardown(test_guard_never_withholds_from_the_revision_prefix,
                                    guard_setup, guard_teardown),
    cmocka_unit_test(test_guard_limit_takes_the_tighter_ceiling),
    cmocka_unit_test(test_max_tokens_repair_raises_never_lowers),
)
