/*
 * test_clm_settings.c -- the live-context settings table: parsing to canonical values,
 * environment defaults, stored overrides holding only non-default values, and malformed
 * stored values ignored with a problem instead of breaking the load.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clm_settings.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

static const char *fake_env(const char *name)
{
    if (strcmp(name, "LC_CLM_BUDGET") == 0) return "32k";
    if (strcmp(name, "LC_CLM_RESERVE") == 0) return "lots";
    return NULL;
}

static void test_normalize_gives_canonical_values_and_rejects_bad_ones(void **state)
{
    (void)state;
    /* Each value and its canonical form; `want` NULL: refused, the reason naming `why`
     * (NULL: any reason). */
    static const struct {
        clm_setting_id id;
        const char *value, *want, *why;
    } t[] = {
        {CLM_SET_BUDGET, " 32k ", "32000", NULL},
        {CLM_SET_BUDGET, "Window", "window", NULL},
        {CLM_SET_BUDGET, "12", NULL, "at least 1000"},
        {CLM_SET_OBS_CAP, "10000:0.5", "10000:0.5", NULL},
        {CLM_SET_OBS_CAP, "10000:0.8", "10000", NULL},
        {CLM_SET_OBS_CAP, "10000:1.5", NULL, NULL},
        {CLM_SET_ONE_TOOL, "TRUE", "on", NULL},
        {CLM_SET_HOST_COMPACTION, "sometimes", NULL, "auto, on or off"},
        {CLM_SET_EDITING_MODE, "Conservative", "conservative", NULL},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char *c = NULL, *err = NULL;
        int rc = clm_setting_normalize(t[i].id, t[i].value, &c, &err);
        if (t[i].want && (rc != LC_OK || !c || strcmp(c, t[i].want)))
            fail_msg("\"%s\": got rc %d, \"%s\", expected \"%s\"", t[i].value, rc,
                     c ? c : "(none)", t[i].want);
        if (!t[i].want && (rc != LC_INVALID || c || (t[i].why && !strstr(err, t[i].why))))
            fail_msg("\"%s\": got rc %d, reason \"%s\", expected a refusal naming \"%s\"",
                     t[i].value, rc, err ? err : "(none)", t[i].why ? t[i].why : "");
        free(c);
        free(err);
    }
}

static void test_environment_sets_defaults_and_bad_values_are_reported(void **state)
{
    (void)state;
    clm_settings s;
    char *problems = NULL;
    assert_int_equal(clm_settings_init(&s, fake_env, &problems, NULL), LC_OK);
    assert_int_equal(s.budget, 32000);
    assert_int_equal(s.reserve, 2048);
    assert_non_null(problems);
    assert_non_null(strstr(problems, "LC_CLM_RESERVE ignored"));
    /* an environment default is not an override */
    char *j = clm_settings_overrides_json(&s);
    assert_string_equal(j, "{\"overrides\":{},\"version\":1}");
    free(j);
    free(problems);
    clm_settings_free(&s);
}

static void test_overrides_hold_only_non_default_values(void **state)
{
    (void)state;
    clm_settings s;
    assert_int_equal(clm_settings_init(&s, NULL, NULL, NULL), LC_OK);
    assert_int_equal(s.budget, 0);
    assert_int_equal(clm_settings_set(&s, "sizeTrailer", "on", NULL), LC_OK);
    assert_int_equal(clm_settings_set(&s, "reserve", "2048", NULL), LC_OK);
    assert_int_equal(clm_settings_set(&s, "OBSERVATIONCAP", "5000:0.5", NULL), LC_OK);
    assert_true(s.size_trailer);
    assert_int_equal(s.obs_cap, 5000);
    assert_true(s.obs_head > 0.49 && s.obs_head < 0.51);
    char *j = clm_settings_overrides_json(&s);
    expect_has(j, "\"sizeTrailer\":\"on\"", "\"observationCap\":\"5000:0.5\"");
    assert_null(strstr(j, "reserve"));
    /* and they come back on another instance */
    clm_settings t;
    assert_int_equal(clm_settings_init(&t, NULL, NULL, NULL), LC_OK);
    char *problems = NULL;
    assert_int_equal(clm_settings_apply_overrides(&t, j, strlen(j), NULL, &problems, NULL), LC_OK);
    assert_null(problems);
    assert_true(t.size_trailer);
    assert_int_equal(t.obs_cap, 5000);
    assert_true(clm_settings_changed(&t, CLM_SET_SIZE_TRAILER));
    assert_false(clm_settings_changed(&t, CLM_SET_BUDGET));
    free(j);
    clm_settings_free(&t);
    clm_settings_free(&s);
}

static void test_malformed_stored_values_are_skipped_with_a_problem(void **state)
{
    (void)state;
    clm_settings s;
    char *problems = NULL;
    assert_int_equal(clm_settings_init(&s, NULL, NULL, NULL), LC_OK);
    assert_int_equal(clm_settings_set(&s, "oneToolPerTurn", "on", NULL), LC_OK);
    const char *stored = "{\"version\":1,\"overrides\":{\"budget\":\"tiny\",\"colour\":\"red\","
                         "\"reserve\":\"4096\"}}";
    assert_int_equal(clm_settings_apply_overrides(&s, stored, strlen(stored), NULL, &problems, NULL),
                     LC_OK);
    /* applying overrides starts from the defaults: the earlier change is gone */
    assert_false(s.one_tool);
    assert_int_equal(s.reserve, 4096);
    assert_int_equal(s.budget, 0);
    expect_has(problems, "'budget' ignored", "'colour' ignored: unknown setting");
    free(problems);
    problems = NULL;
    assert_int_equal(clm_settings_apply_overrides(&s, "[1]", 3, NULL, &problems, NULL), LC_OK);
    assert_non_null(strstr(problems, "no overrides object"));
    assert_int_equal(s.reserve, 2048);
    free(problems);
    char *err = NULL;
    assert_int_equal(clm_settings_set(&s, "colour", "red", &err), LC_INVALID);
    assert_non_null(strstr(err, "settings: budget, reserve"));
    free(err);
    clm_settings_free(&s);
}

TEST_MAIN(
    cmocka_unit_test(test_normalize_gives_canonical_values_and_rejects_bad_ones),
    cmocka_unit_test(test_environment_sets_defaults_and_bad_values_are_reported),
    cmocka_unit_test(test_overrides_hold_only_non_default_values),
    cmocka_unit_test(test_malformed_stored_values_are_skipped_with_a_problem),
)
