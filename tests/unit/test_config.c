/* test_config.c -- lcm.json: strict JSON, per-key type and range (table-driven), problem
 * reporting, per-model zones, writes with .bak, the test-run home guard (engine/core/config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "util.h"
#include "temp_dir.h"
#include "test_main.h"

static lcm_config parse(const char *text)
{
    lcm_config c;
    char *err = NULL;
    assert_int_equal(lcm_config_parse(text, strlen(text), &c, &err), LC_OK);
    assert_null(err);
    return c;
}

static long get_long(const lcm_config *c, const char *key)
{
    if (!strcmp(key, "keepRecentTokens")) return c->keep_recent_tokens;
    if (!strcmp(key, "summaryTokens")) return c->summary_tokens;
    if (!strcmp(key, "leafChunkTokens")) return c->leaf_chunk_tokens;
    if (!strcmp(key, "asyncChunkTokens")) return c->async_chunk_tokens;
    if (!strcmp(key, "largeFileChars")) return c->large_file_chars;
    if (!strcmp(key, "summarizerTokensPerCall")) return c->summarizer_tokens_per_call;
    if (!strcmp(key, "summarizerTokensPerPass")) return c->summarizer_tokens_per_pass;
    if (!strcmp(key, "summarizerTokensPerHeal")) return c->summarizer_tokens_per_heal;
    if (!strcmp(key, "healSourceTokens")) return c->heal_source_tokens;
    if (!strcmp(key, "smartZone")) return c->zones.smart_zone;
    if (!strcmp(key, "swapAtTokens")) return c->zones.swap_tokens;
    if (!strcmp(key, "recutAtTokens")) return c->zones.recut_tokens;
    fail_msg("no such key %s", key);
    return -1;
}

static void test_defaults_without_a_file(void **state)
{
    (void)state;
    lcm_config c;
    char *err = NULL;
    assert_int_equal(lcm_config_load("/nonexistent/lcm.json", &c, &err), LC_OK);
    assert_int_equal(c.file_state, LCM_CONFIG_ABSENT);
    assert_int_equal(c.keep_recent_tokens, 20000);
    assert_int_equal(c.large_file_chars, 32000);
    assert_int_equal(c.summarizer_tokens_per_heal, 120000);
    assert_true(c.externalize_files);
    assert_true(c.redact_secrets);
    assert_int_equal(c.n_summarizer, 0);
    assert_int_equal(c.n_problems, 0);
    lcm_config_free(&c);
}

/* Every integer key: a valid value is taken; a wrong type, a fraction and both sides of
 * the range are ignored with one problem each, leaving the default. */
static void test_every_integer_key_type_and_range(void **state)
{
    (void)state;
    static const struct {
        const char *key;
        long ok, below, above, dflt;
    } t[] = {
        {"keepRecentTokens", 30000, 999, 10000001, 20000},
        {"summaryTokens", 2000, 0, 100001, 1200},
        {"leafChunkTokens", 8000, 999, 1000001, 20000},
        {"asyncChunkTokens", 50000, 999, 10000001, 40000},
        {"largeFileChars", 64000, 999, 1000000001, 32000},
        {"summarizerTokensPerCall", 30000, 999, 1000000001, 60000},
        {"summarizerTokensPerPass", 90000, 999, -1, 400000},
        {"summarizerTokensPerHeal", 50000, 999, -1, 120000},
        {"healSourceTokens", 5000, 499, 10000001, 0},
        {"smartZone", 110000, 999, 100000001, 0},
        {"swapAtTokens", 110000, 999, 100000001, 0},
        {"recutAtTokens", 130000, 999, 100000001, 0},
    };
    char buf[256];
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        snprintf(buf, sizeof buf, "{\"%s\": %ld}", t[i].key, t[i].ok);
        lcm_config c = parse(buf);
        assert_int_equal(get_long(&c, t[i].key), t[i].ok);
        assert_int_equal(c.n_problems, 0);
        lcm_config_free(&c);

        const char *bad[4];
        char b1[128], b2[128], b3[128], b4[128];
        snprintf(b1, sizeof b1, "{\"%s\": \"%ld\"}", t[i].key, t[i].ok);
        snprintf(b2, sizeof b2, "{\"%s\": %ld.5}", t[i].key, t[i].ok);
        snprintf(b3, sizeof b3, "{\"%s\": %ld}", t[i].key, t[i].below);
        snprintf(b4, sizeof b4, "{\"%s\": %ld}", t[i].key, t[i].above);
        bad[0] = b1;
        bad[1] = b2;
        bad[2] = b3;
        bad[3] = t[i].above > 0 ? b4 : "{\"summaryTokens\": true}";
        for (int k = 0; k < 4; k++) {
            c = parse(bad[k]);
            assert_int_equal(c.n_problems, 1);
            if (k < 3 || t[i].above > 0) {
                assert_int_equal(get_long(&c, t[i].key), t[i].dflt);
                assert_non_null(strstr(c.problems[0], t[i].key));
            }
            lcm_config_free(&c);
        }
    }
}

static void test_ratios_must_lie_in_zero_one(void **state)
{
    (void)state;
    lcm_config c = parse("{\"swapAtRatio\": 0.6, \"recutAtRatio\": 0.8}");
    assert_true(c.zones.swap_ratio > 0.59 && c.zones.swap_ratio < 0.61);
    assert_true(c.zones.recut_ratio > 0.79 && c.zones.recut_ratio < 0.81);
    lcm_config_free(&c);
    const char *bad[] = {"{\"swapAtRatio\": 0}", "{\"swapAtRatio\": 1.5}",
                         "{\"recutAtRatio\": -0.2}", "{\"recutAtRatio\": \"0.8\"}"};
    for (size_t i = 0; i < 4; i++) {
        c = parse(bad[i]);
        assert_int_equal(c.n_problems, 1);
        assert_true(c.zones.swap_ratio < 0 && c.zones.recut_ratio < 0);
        lcm_config_free(&c);
    }
}

static void test_booleans_take_only_true_or_false(void **state)
{
    (void)state;
    lcm_config c = parse("{\"externalizeFiles\": false, \"redactSecrets\": false}");
    assert_false(c.externalize_files);
    assert_false(c.redact_secrets);
    lcm_config_free(&c);
    c = parse("{\"externalizeFiles\": 0, \"redactSecrets\": \"no\"}");
    assert_true(c.externalize_files);
    assert_true(c.redact_secrets);
    assert_int_equal(c.n_problems, 2);
    lcm_config_free(&c);
}

/* `text` parses to the summarizer entries listed (NULL-ended), with `problems` problems
 * (-1: not checked). */
static void expect_summarizer(const char *text, int problems, const char *const *want)
{
    lcm_config c = parse(text);
    size_t n = 0;
    while (want[n]) n++;
    assert_int_equal(c.n_summarizer, n);
    for (size_t i = 0; i < n; i++) assert_string_equal(c.summarizer[i], want[i]);
    if (problems >= 0) assert_int_equal(c.n_problems, problems);
    lcm_config_free(&c);
}

static void test_summarizer_string_or_list_drops_duplicates_and_empties(void **state)
{
    (void)state;
    /* no comma form */
    expect_summarizer("{\"summarizer\": \"openrouter/z-ai/glm,5\"}", -1,
                      (const char *const[]){"openrouter/z-ai/glm,5", NULL});
    expect_summarizer("{\"summarizer\": [\"a/b\", \"\", \"auto\", \"a/b\", 7]}", 3,
                      (const char *const[]){"a/b", "auto", NULL});
    expect_summarizer("{\"summarizer\": 3}", 1, (const char *const[]){NULL});
}

static void test_strict_json_rejects_comments_trailing_commas_and_lenient_forms(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *fault;
    } t[] = {
        {"{\"smartZone\": 110000, // easy mode\n}", "comment"},
        {"// header\n{}", "comment"},
        {"{\"smartZone\": 110000 /* x */}", "comment"},
        {"{\"smartZone\": 110000,}", "trailing comma"},
        {"{\"summarizer\": [\"auto\",]}", "trailing comma"},
        {"{\"smartZone\": 0110000}", "leading zero"},
        {"{\"smartZone\": +1}", "unexpected character"},
        {"{\"a\": \"tab\there\"}", "control character"},
        {"{\"a\": \"\xff\"}", "UTF-8"},
        {"{'a': 1}", "string key"},
        {"{\"a\": 1} x", "after the JSON value"},
        {"{\"a\": tru}", "unexpected word"},
        {"", "end of input"},
        /* Half a UTF-16 pair (found by fuzz_config: the check passed it, cJSON did not,
         * and the parse reported "out of memory"). */
        {"{\"zones\": {\"an\\udbaeUrl\": {}}}", "lone UTF-16 surrogate"},
        {"{\"a\": \"\\udc00\"}", "lone UTF-16 surrogate"},
        {"{\"a\": \"\\ud83d\\u0041\"}", "lone UTF-16 surrogate"},
        {"{\"a\": \"\\ud83d\"}", "lone UTF-16 surrogate"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char *err = NULL;
        assert_int_equal(lcm_json_strict_check(t[i].text, strlen(t[i].text), &err), LC_INVALID);
        assert_non_null(err);
        if (!strstr(err, t[i].fault)) fail_msg("case %zu: '%s' lacks '%s'", i, err, t[i].fault);
        free(err);

        lcm_config c = parse(t[i].text);
        assert_int_equal(c.file_state, LCM_CONFIG_CORRUPT);
        assert_int_equal(c.n_problems, 1);
        assert_int_equal(c.zones.smart_zone, 0); /* defaults apply */
        lcm_config_free(&c);
    }
    char *err = NULL;
    const char *good = "{\"a\": [1, -2.5e3, 0, true, null, \"\\u00e9\\n\\ud83d\\ude00\", {}], \"b\": {}}";
    assert_int_equal(lcm_json_strict_check(good, strlen(good), &err), LC_OK);
    assert_null(err);
}

static void test_strict_error_names_line_and_column(void **state)
{
    (void)state;
    const char *text = "{\n  \"a\": 1,\n  \"b\": 2,\n}";
    char *err = NULL;
    assert_int_equal(lcm_json_strict_check(text, strlen(text), &err), LC_INVALID);
    assert_non_null(strstr(err, "line 4 column 1"));
    free(err);
}

static void test_unknown_keys_and_non_object_are_reported(void **state)
{
    (void)state;
    lcm_config c = parse("{\"swapAtRatioo\": 0.5}");
    assert_int_equal(c.n_problems, 1);
    assert_non_null(strstr(c.problems[0], "unknown key"));
    lcm_config_free(&c);
    c = parse("[1]");
    assert_int_equal(c.file_state, LCM_CONFIG_CORRUPT);
    lcm_config_free(&c);
}

static void test_per_model_zones_merge_over_global(void **state)
{
    (void)state;
    lcm_config c = parse("{\"smartZone\": 110000, \"recutAtRatio\": 0.8, \"zones\": {"
                         "\"openrouter/z-ai/glm\": {\"swapAtTokens\": 90000, \"recutAtTokens\": "
                         "120000}, \"x/y\": {\"summaryTokens\": 5, \"swapAtRatio\": 2}}}");
    assert_int_equal(c.n_model_zones, 2);
    assert_int_equal(c.n_problems, 2); /* not a threshold key; out of range */
    zones_cfg z = lcm_config_zones_for(&c, "openrouter/z-ai/glm");
    assert_int_equal(z.swap_tokens, 90000);
    assert_int_equal(z.recut_tokens, 120000);
    assert_int_equal(z.smart_zone, 110000);
    zones_cfg other = lcm_config_zones_for(&c, "anthropic/claude");
    assert_int_equal(other.swap_tokens, 0);
    assert_int_equal(other.smart_zone, 110000);
    zones_resolved r;
    assert_int_equal(zones_resolve(&z, c.keep_recent_tokens, 1000000, &r, NULL), LC_OK);
    assert_int_equal(r.swap_tokens, 90000);
    assert_int_equal(r.recut_tokens, 120000);
    lcm_config_free(&c);
}

/* The heal source tokens of the config `text`. */
static long heal_source_tokens_of(const char *text)
{
    lcm_config c = parse(text);
    long n = lcm_config_heal_source_tokens(&c);
    lcm_config_free(&c);
    return n;
}

static void test_heal_source_tokens_derive_from_summary_tokens(void **state)
{
    (void)state;
    assert_int_equal(heal_source_tokens_of("{\"summaryTokens\": 1000}"), 8000);
    assert_int_equal(heal_source_tokens_of("{\"summaryTokens\": 100}"), 3000);
    assert_int_equal(heal_source_tokens_of("{\"summaryTokens\": 5000, \"summarizerTokensPerCall\": 10000}"),
                     10000);
    assert_int_equal(heal_source_tokens_of("{\"healSourceTokens\": 700}"), 700);
}

static void test_base_urls_and_effective_json(void **state)
{
    (void)state;
    lcm_config c = parse("{\"baseUrls\": {\"local\": \"http://127.0.0.1:9/v1\", \"bad\": "
                         "\"ftp://x\"}, \"summarizer\": [\"local/m\"]}");
    assert_int_equal(c.n_problems, 1);
    assert_string_equal(lcm_config_base_url(&c, "local"), "http://127.0.0.1:9/v1");
    assert_null(lcm_config_base_url(&c, "bad"));
    cJSON *j = lcm_config_to_json(&c);
    assert_non_null(j);
    assert_true(cJSON_GetObjectItem(j, "swapAtRatio")->valuedouble > 0.69);
    assert_int_equal((long)cJSON_GetObjectItem(j, "keepRecentTokens")->valuedouble, 20000);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "summarizer"), 0)->valuestring,
                        "local/m");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "smartZone")));
    cJSON_Delete(j);
    lcm_config_free(&c);
}

/* A fresh folder for lcm.json (`path`) and its backup (`bak`); cfg_dir_close removes
 * it with all it holds. */
typedef struct cfg_dir {
    char d[64];
    char *path, *bak;
} cfg_dir;

static cfg_dir cfg_dir_open(void)
{
    cfg_dir c;
    temp_dir_make(c.d, sizeof c.d, "/tmp/lc-config-XXXXXX");
    c.path = lc_asprintf("%s/lcm.json", c.d);
    c.bak = lc_asprintf("%s/lcm.json.bak", c.d);
    return c;
}

static void cfg_dir_close(cfg_dir *c)
{
    temp_dir_remove(c->d);
    free(c->path);
    free(c->bak);
}

static char *slurp(const char *path)
{
    char *s = NULL;
    if (lc_read_file(path, &s, NULL, NULL) != LC_OK) return NULL;
    return s;
}

static void test_write_keeps_first_bak_and_never_replaces_it(void **state)
{
    (void)state;
    cfg_dir cd = cfg_dir_open();
    const char *path = cd.path, *bak = cd.bak;
    assert_int_equal(lcm_config_write(path, "{\"v\": 1}\n", NULL), LC_OK);
    struct stat st;
    assert_int_not_equal(stat(bak, &st), 0); /* nothing was replaced: no backup */
    assert_int_equal(lcm_config_write(path, "{\"v\": 2}\n", NULL), LC_OK);
    char *b = slurp(bak);
    assert_string_equal(b, "{\"v\": 1}\n");
    free(b);
    assert_int_equal(lcm_config_write(path, "{\"v\": 3}\n", NULL), LC_OK);
    b = slurp(bak);
    assert_string_equal(b, "{\"v\": 1}\n"); /* the existing backup stays */
    free(b);
    char *cur = slurp(path);
    assert_string_equal(cur, "{\"v\": 3}\n");
    free(cur);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    cfg_dir_close(&cd);
}

static void test_set_validates_writes_and_refuses_corrupt_file(void **state)
{
    (void)state;
    cfg_dir cd = cfg_dir_open();
    const char *path = cd.path;
    lcm_config c = {0};
    char *err = NULL;
    assert_int_equal(lcm_config_set(path, "swapAtRatio", "0.6", &c, &err), LC_OK);
    assert_true(c.zones.swap_ratio > 0.59 && c.zones.swap_ratio < 0.61);
    lcm_config_free(&c);
    assert_int_equal(lcm_config_set(path, "summaryTokens", "900", &c, &err), LC_OK);
    assert_int_equal(c.summary_tokens, 900);
    assert_true(c.zones.swap_ratio > 0.59); /* earlier key kept */
    lcm_config_free(&c);
    /* out of range, unknown key: refused, nothing written */
    char *before = slurp(path);
    assert_int_equal(lcm_config_set(path, "summaryTokens", "0", NULL, &err), LC_INVALID);
    assert_non_null(strstr(err, "summaryTokens"));
    assert_int_equal(lcm_config_set(path, "nope", "1", NULL, &err), LC_INVALID);
    assert_int_equal(lcm_config_set(path, "summaryTokens", "12,", NULL, &err), LC_INVALID);
    char *after = slurp(path);
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* a corrupt file is left untouched */
    assert_int_equal(lc_write_atomic(path, "{\"a\":1,}", 8, 0600, NULL), LC_OK);
    assert_int_equal(lcm_config_set(path, "summaryTokens", "900", NULL, &err), LC_INVALID);
    after = slurp(path);
    assert_string_equal(after, "{\"a\":1,}");
    free(after);
    free(err);
    cfg_dir_close(&cd);
}

static void test_home_guard_refuses_real_home_in_a_test_run(void **state)
{
    (void)state;
    char *err = NULL;
    unsetenv("NODE_ENV");
    unsetenv("VITEST");
    unsetenv("LCM_ALLOW_REAL_HOME");
    unsetenv("LCM_TEST_GUARD");
    assert_int_equal(lcm_config_home_guard("/home/someone/.pi/agent", &err), LC_OK);
    setenv("LCM_TEST_GUARD", "1", 1);
    assert_int_equal(lcm_config_home_guard("/home/someone/.pi/agent", &err), LC_INVALID);
    assert_non_null(strstr(err, "LCM_ALLOW_REAL_HOME"));
    assert_int_equal(lcm_config_home_guard("/tmp/lc-x/home", &err), LC_OK);
    assert_int_equal(lcm_config_home_guard("/tmpfoo/home", &err), LC_INVALID);
    setenv("LCM_ALLOW_REAL_HOME", "1", 1);
    assert_int_equal(lcm_config_home_guard("/home/someone/.pi/agent", &err), LC_OK);
    unsetenv("LCM_ALLOW_REAL_HOME");
    unsetenv("LCM_TEST_GUARD");
    free(err);
}

TEST_MAIN(
    cmocka_unit_test(test_defaults_without_a_file),
    cmocka_unit_test(test_every_integer_key_type_and_range),
    cmocka_unit_test(test_ratios_must_lie_in_zero_one),
    cmocka_unit_test(test_booleans_take_only_true_or_false),
    cmocka_unit_test(test_summarizer_string_or_list_drops_duplicates_and_empties),
    cmocka_unit_test(test_strict_json_rejects_comments_trailing_commas_and_lenient_forms),
    cmocka_unit_test(test_strict_error_names_line_and_column),
    cmocka_unit_test(test_unknown_keys_and_non_object_are_reported),
    cmocka_unit_test(test_per_model_zones_merge_over_global),
    cmocka_unit_test(test_heal_source_tokens_derive_from_summary_tokens),
    cmocka_unit_test(test_base_urls_and_effective_json),
    cmocka_unit_test(test_write_keeps_first_bak_and_never_replaces_it),
    cmocka_unit_test(test_set_validates_writes_and_refuses_corrupt_file),
    cmocka_unit_test(test_home_guard_refuses_real_home_in_a_test_run),
)
