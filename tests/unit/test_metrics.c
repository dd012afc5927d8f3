/*
 * test_metrics.c -- the telemetry log: rows appended with their stamp, session and kind at
 * mode 0600, read back per session with bad lines skipped, the /lcm report tally
 * (model-fallback, heal runs), and the diagnose sanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics.h"
#include "util.h"
#include "test_main.h"

#include "expect_text.h"
#include "temp_home.h"

static void record(metrics *m, const char *kind, const char *json)
{
    cJSON *f = json ? cJSON_Parse(json) : NULL;
    char *err = NULL;
    assert_int_equal(metrics_record(m, kind, f, &err), LC_OK);
    cJSON_Delete(f);
}

static metrics *open_session(const char *sid)
{
    metrics *m = NULL;
    char *err = NULL;
    assert_int_equal(metrics_open(home, sid, &m, &err), LC_OK);
    return m;
}

/* The rows of session `sid` (NULL: every session) in the log at `path`. */
static cJSON *load_rows(const char *path, const char *sid, size_t *skipped)
{
    cJSON *rows = NULL;
    char *err = NULL;
    assert_int_equal(metrics_load(path, sid, &rows, skipped, &err), LC_OK);
    return rows;
}

/* How many rows load_rows finds. */
static int count_rows(const char *path, const char *sid, size_t *skipped)
{
    cJSON *rows = load_rows(path, sid, skipped);
    int n = cJSON_GetArraySize(rows);
    cJSON_Delete(rows);
    return n;
}

static void test_record_appends_one_stamped_row_per_event_at_mode_0600(void **state)
{
    (void)state;
    metrics *m = open_session("sess-a");
    record(m, METRIC_SUMM_CALL, "{\"model\":\"auto\",\"stage\":\"leaf\",\"inputTokens\":120,\"kind\":\"spoof\"}");
    record(m, METRIC_CONTEXT, NULL);
    struct stat sb;
    assert_int_equal(stat(metrics_path(m), &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    cJSON *rows = load_rows(metrics_path(m), NULL, NULL);
    assert_int_equal(cJSON_GetArraySize(rows), 2);
    cJSON *r0 = cJSON_GetArrayItem(rows, 0);
    assert_string_equal(cJSON_GetObjectItem(r0, "kind")->valuestring, METRIC_SUMM_CALL);
    assert_string_equal(cJSON_GetObjectItem(r0, "session")->valuestring, "sess-a");
    assert_string_equal(cJSON_GetObjectItem(r0, "model")->valuestring, "auto");
    assert_true(cJSON_GetObjectItem(r0, "ts")->valuedouble > 1.6e12);
    cJSON_Delete(rows);
    metrics_close(m);
}

static void test_load_keeps_one_session_and_skips_broken_lines(void **state)
{
    (void)state;
    metrics *a = open_session("sess-a"), *b = open_session("sess-b");
    record(a, METRIC_RECALL, NULL);
    record(b, METRIC_RECALL, NULL);
    record(a, METRIC_BRANCH, NULL);
    FILE *fp = fopen(metrics_path(a), "a");
    fputs("{not json\n", fp);
    fclose(fp);
    size_t skipped = 0;
    assert_int_equal(count_rows(metrics_path(a), "sess-a", &skipped), 2);
    assert_int_equal(skipped, 1);
    /* A log that does not exist yet is an empty session, not an error. */
    assert_int_equal(count_rows("/nonexistent/metrics.jsonl", "x", NULL), 0);
    metrics_close(a);
    metrics_close(b);
}

static void test_report_names_model_fallback_heal_runs_and_billed_tokens(void **state)
{
    (void)state;
    metrics *m = open_session("s");
    record(m, METRIC_SUMM_FALLBACK, "{\"from\":\"openrouter/x\",\"to\":\"auto\"}");
    record(m, METRIC_SUMM_FALLBACK, NULL);
    record(m, METRIC_SUMM_CALL, "{\"inputTokens\":1000,\"outputTokens\":200}");
    record(m, METRIC_SUMM_CALL, "{\"inputTokens\":500,\"outputTokens\":100}");
    record(m, METRIC_HEAL_START, NULL);
    record(m, METRIC_HEAL_NODE, NULL);
    record(m, METRIC_HEAL_NODE, NULL);
    record(m, METRIC_HEAL_COMPLETE, NULL);
    record(m, METRIC_CONTEXT, "{\"decision\":\"swap\",\"zone\":\"swap\"}");
    cJSON *rows = load_rows(metrics_path(m), "s", NULL);
    char *r = metrics_report(rows, "s");
    expect_has(r, "9 metric rows", "model-fallback: 2",
               "heal runs: 1 started, 1 completed, 2 nodes attempted",
               "summarizer calls: 2, billed 1500 in / 300 out tokens", "last: swap in zone swap",
               "summarizer-fallback=2");
    free(r);
    cJSON_Delete(rows);
    metrics_close(m);
}

static void test_sanitized_row_masks_free_text_and_keeps_vocabulary(void **state)
{
    (void)state;
    cJSON *row = cJSON_Parse("{\"ts\":1,\"session\":\"s-1\",\"kind\":\"summarizer-call\",\"model\":\"anthropic/claude-haiku-4-5\","
                             "\"error\":\"401 invalid key sk-ant-api03-SECRETSECRET\",\"query\":\"needle words\","
                             "\"path\":\"/home/u/project/file.c\",\"reason\":\"a sentence with spaces\","
                             "\"stage\":\"leaf\",\"nested\":{\"model\":\"/abs/path\"},\"ok\":true}");
    cJSON *s = metrics_row_sanitized(row);
    char *t = cJSON_PrintUnformatted(s);
    expect_lacks(t, "SECRET", "needle", "/home/u", "/abs/path", "sentence");
    expect_has(t, "\"model\":\"anthropic/claude-haiku-4-5\"", "\"stage\":\"leaf\"",
               "\"ok\":true", "[masked");
    cJSON_free(t);
    cJSON_Delete(s);
    cJSON_Delete(row);
}

TEST_MAIN(
    HOME_TEST(test_record_appends_one_stamped_row_per_event_at_mode_0600),
    HOME_TEST(test_load_keeps_one_session_and_skips_broken_lines),
    HOME_TEST(test_report_names_model_fallback_heal_runs_and_billed_tokens),
    cmocka_unit_test(test_sanitized_row_masks_free_text_and_keeps_vocabulary),
)
