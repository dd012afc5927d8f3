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

static void test_tiers_fire_once_and_rearm_when_usage_drops(void **state)
{
    (void)state;
    clm_tiers t = {0};
    const size_t B = 100000, R = 2048;
    assert_int_equal(clm_tiers_check(&t, 40000, B, R), 0);
    assert_int_equal(clm_tiers_check(&t, 55000, B, R), 1);
    assert_int_equal(clm_tiers_check(&t, 60000, B, R), 0);
    assert_int_equal(clm_tiers_check(&t, 80000, B, R), 2);
    assert_int_equal(clm_tiers_check(&t, 91000, B, R), 3);
    assert_int_equal(clm_tiers_check(&t, 98000, B, R), 4);
    assert_int_equal(clm_tiers_check(&t, 99000, B, R), 0);
    /* Drop below 50%: everything re-arms. */
    assert_int_equal(clm_tiers_check(&t, 30000, B, R), 0);
    assert_int_equal(clm_tiers_check(&t, 52000, B, R), 1);
    /* A jump over several tiers reports the highest only, once. */
    assert_int_equal(clm_tiers_check(&t, 92000, B, R), 3);
    assert_int_equal(clm_tiers_check(&t, 93000, B, R), 0);
    /* Dropping to 80% re-arms 90% only. */
    assert_int_equal(clm_tiers_check(&t, 80000, B, R), 0);
    assert_int_equal(clm_tiers_check(&t, 90500, B, R), 3);
}

static void test_budget_notice_labels_both_numbers(void **state)
{
    (void)state;
    char *n = clm_budget_notice(2, 76000, 81000, 1, 100000, 2048);
    assert_non_null(strstr(n, "75% of the budget"));
    assert_non_null(strstr(n, "estimated next request ~76000 tokens"));
    assert_non_null(strstr(n, "observed previous request 81000 tokens (stale"));
    free(n);
    n = clm_budget_notice(4, 98000, 0, 0, 100000, 2048);
    assert_non_null(strstr(n, "reserve line"));
    assert_non_null(strstr(n, "not yet known"));
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
} guard_fixture;

static void fixture(guard_fixture *f)
{
    f->m[0] = lc_strdup("{\"role\":\"user\",\"content\":\"go\"}");
    f->m[1] = call("c1");
    f->m[2] = big_result("c1", 'a');
    f->m[3] = call("c2");
    f->m[4] = big_result("c2", 'b');
    f->m[5] = call("c3");
    f->m[6] = big_result("c3", 'c');
    for (int i = 0; i < 7; i++) f->t[i] = (clm_text){f->m[i], strlen(f->m[i])};
    snprintf(f->dir, sizeof f->dir, "/tmp/clm-guard-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
}

static void fixture_free(guard_fixture *f)
{
    for (int i = 0; i < 7; i++) free(f->m[i]);
    char *cmd = lc_asprintf("rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void test_guard_withholds_oldest_tool_results_first(void **state)
{
    (void)state;
    guard_fixture f;
    fixture(&f);
    clm_calibrator cal;
    clm_calib_init(&cal, NULL);
    clm_guard_cache cache = {0};
    clm_guard_result r;
    /* ~1000 tokens per result; a limit of ~2200 needs one withheld. */
    assert_int_equal(clm_guard_apply(&cache, f.dir, f.t, 7, 0, NULL, 0, 2200, &cal, &r, NULL),
                     LC_OK);
    assert_non_null(r.replace[2]);
    assert_null(r.replace[4]);
    assert_null(r.replace[6]);
    assert_false(r.still_over);
    cJSON *n = cJSON_Parse(r.replace[2]);
    assert_string_equal(cJSON_GetObjectItem(n, "role")->valuestring, "toolResult");
    assert_string_equal(cJSON_GetObjectItem(n, "toolCallId")->valuestring, "c1");
    const char *txt = cJSON_GetArrayItem(cJSON_GetObjectItem(n, "content"), 0)
                          ->child->next->valuestring;
    assert_non_null(strstr(txt, "tool read, call c1"));
    assert_non_null(strstr(txt, "/withheld/"));
    /* The file holds the full text. */
    const char *path = strstr(txt, f.dir);
    char *p = lc_strndup(path, strcspn(path, " "));
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(lc_read_file(p, &data, &len, NULL), LC_OK);
    assert_int_equal(len, 4000);
    assert_int_equal(data[0], 'a');
    free(data);
    free(p);
    cJSON_Delete(n);
    assert_non_null(strstr(r.notice, "[CLM BUDGET] Overflow guard"));
    assert_non_null(strstr(r.notice, "c1"));
    char *first = lc_strdup(r.replace[2]);
    clm_guard_result_free(&r);

    /* Tighter: the next oldest goes too, never the newest turn's result. */
    assert_int_equal(clm_guard_apply(&cache, f.dir, f.t, 7, 0, NULL, 0, 500, &cal, &r, NULL),
                     LC_OK);
    assert_non_null(r.replace[2]);
    assert_non_null(r.replace[4]);
    assert_null(r.replace[6]);
    assert_true(r.still_over);
    assert_non_null(strstr(r.notice, "Still over the limit"));
    assert_string_equal(r.replace[2], first);
    clm_guard_result_free(&r);

    /* Roomy again: earlier notes stay, byte for byte (no flip-flop). */
    assert_int_equal(clm_guard_apply(&cache, f.dir, f.t, 7, 0, NULL, 0, 100000, &cal, &r,
                                     NULL), LC_OK);
    assert_string_equal(r.replace[2], first);
    assert_non_null(r.replace[4]);
    assert_null(r.notice);
    clm_guard_result_free(&r);
    free(first);
    clm_guard_cache_free(&cache);
    fixture_free(&f);
}

static void test_guard_never_withholds_from_the_revision_prefix(void **state)
{
    (void)state;
    guard_fixture f;
    fixture(&f);
    clm_calibrator cal;
    clm_calib_init(&cal, NULL);
    clm_guard_cache cache = {0};
    clm_guard_result r;
    assert_int_equal(clm_guard_apply(&cache, f.dir, f.t, 7, 3, NULL, 0, 2200, &cal, &r, NULL),
                     LC_OK);
    assert_null(r.replace[2]);
    assert_non_null(r.replace[4]);
    clm_guard_result_free(&r);
    /* The calibrated estimate governs: factor 2 makes even one withheld not enough. */
    clm_calib_init(&cal, "2");
    assert_int_equal(clm_guard_apply(&cache, f.dir, f.t, 7, 3, NULL, 0, 2200, &cal, &r, NULL),
                     LC_OK);
    assert_true(r.still_over);
    assert_true(r.tokens > 2200);
    clm_guard_result_free(&r);
    clm_guard_cache_free(&cache);
    fixture_free(&f);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiers_fire_once_and_rearm_when_usage_drops),
        cmocka_unit_test(test_budget_notice_labels_both_numbers),
        cmocka_unit_test(test_calibrator_is_seeded_bounded_and_smoothed),
        cmocka_unit_test(test_guard_withholds_oldest_tool_results_first),
        cmocka_unit_test(test_guard_never_withholds_from_the_revision_prefix),
        cmocka_unit_test(test_guard_limit_takes_the_tighter_ceiling),
        cmocka_unit_test(test_max_tokens_repair_raises_never_lowers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
