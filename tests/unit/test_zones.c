/* test_zones.c -- swap / re-cut resolution, the clamp, classification and window
 * corrections (engine/core/zones.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"
#include "zones.h"
#include "test_main.h"

static zones_resolved resolve(zones_cfg c, long keep, long window)
{
    zones_resolved r;
    char *err = NULL;
    assert_int_equal(zones_resolve(&c, keep, window, &r, &err), LC_OK);
    assert_null(err);
    return r;
}

/* A config with only the fields of `set` set, layered on nothing as the engine layers settings. */
static zones_cfg cfg_of(zones_cfg set)
{
    return zones_cfg_merge(zones_cfg_unset(), set);
}

/* The resolved lines read as `want` ("swap 70% / recut 85%"). */
static void expect_thresholds(const zones_resolved *r, const char *want)
{
    char *s = zones_format_thresholds(r);
    assert_string_equal(s, want);
    free(s);
}

static void test_defaults_are_70_and_85_percent(void **state)
{
    (void)state;
    zones_resolved r = resolve(zones_cfg_unset(), 0, 400000);
    assert_int_equal(r.swap_tokens, 280000);
    assert_int_equal(r.recut_tokens, 340000);
    assert_int_equal(r.keep_recent_tokens, 20000);
    assert_int_equal(r.swap_source, ZONES_SRC_RATIO);
    assert_false(r.clamped);
    expect_thresholds(&r, "swap 70% / recut 85%");
}

static void test_smart_zone_derives_recut_at_1_18(void **state)
{
    (void)state;
    zones_resolved r = resolve(cfg_of((zones_cfg){.smart_zone = 100000}), 0, 1000000);
    assert_int_equal(r.swap_tokens, 100000);
    assert_int_equal(r.recut_tokens, 118000);
    assert_int_equal(r.swap_source, ZONES_SRC_SMART);
    assert_int_equal(r.recut_source, ZONES_SRC_SMART);
}

static void test_explicit_tokens_win_over_smart_zone_and_ratio_per_level(void **state)
{
    (void)state;
    /* swap level: tokens win */
    zones_cfg c =
        cfg_of((zones_cfg){.smart_zone = 100000, .swap_ratio = 0.5, .swap_tokens = 90000});
    zones_resolved r = resolve(c, 0, 1000000);
    assert_int_equal(r.swap_tokens, 90000);
    assert_int_equal(r.swap_source, ZONES_SRC_TOKENS);
    /* re-cut level has no tokens: smartZone x 1.18 */
    assert_int_equal(r.recut_tokens, 118000);
    assert_int_equal(r.recut_source, ZONES_SRC_SMART);
}

static void test_token_pair_recut_at_or_below_swap_is_folded_up(void **state)
{
    (void)state;
    zones_cfg c = cfg_of((zones_cfg){.swap_tokens = 100000, .recut_tokens = 100000});
    zones_resolved r = resolve(c, 0, 1000000);
    assert_true(r.folded);
    assert_false(r.clamped);
    assert_int_equal(r.recut_tokens, 118000);
    assert_true(r.recut_tokens > r.swap_tokens);
}

static void test_clamp_caps_swap_at_90_and_recut_at_95_and_says_so(void **state)
{
    (void)state;
    /* swap above a 128k window: unreachable without the clamp */
    zones_cfg c = cfg_of((zones_cfg){.swap_tokens = 150000, .recut_tokens = 200000});
    zones_resolved r = resolve(c, 0, 128000);
    assert_true(r.clamped);
    assert_int_equal(r.swap_tokens, (long)(0.9 * 128000));
    assert_int_equal(r.recut_tokens, (long)(0.95 * 128000));
    expect_thresholds(&r, "swap 90% / recut 95% (clamped)");
}

static void test_ratio_recut_below_swap_is_folded_into_the_open_interval(void **state)
{
    (void)state;
    zones_cfg c = cfg_of((zones_cfg){.swap_ratio = 0.8, .recut_ratio = 0.6});
    zones_resolved r = resolve(c, 0, 100000);
    assert_true(r.clamped);
    assert_true(r.recut_fraction > r.swap_fraction);
    assert_true(r.recut_fraction <= 0.95);
}

static void test_keep_recent_shrinks_on_a_small_window(void **state)
{
    (void)state;
    zones_resolved r = resolve(zones_cfg_unset(), 20000, 16000);
    assert_true(r.keep_recent_clamped);
    assert_true(r.keep_recent_tokens < r.swap_tokens);
}

static void test_zero_window_is_refused(void **state)
{
    (void)state;
    zones_cfg c = zones_cfg_unset();
    zones_resolved r;
    char *err = NULL;
    assert_int_equal(zones_resolve(&c, 0, 0, &r, &err), LC_INVALID);
    assert_non_null(err);
    free(err);
}

static void test_classify_by_occupancy(void **state)
{
    (void)state;
    zones_resolved r = resolve(zones_cfg_unset(), 0, 100000);
    assert_int_equal(zones_classify(&r, 69999), ZONES_BELOW_SWAP);
    assert_int_equal(zones_classify(&r, 70000), ZONES_SWAP);
    assert_int_equal(zones_classify(&r, 84999), ZONES_SWAP);
    assert_int_equal(zones_classify(&r, 85000), ZONES_RECUT);
    assert_string_equal(zones_zone_name(ZONES_RECUT), "recut");
}

static void test_merge_overrides_only_fields_the_model_sets(void **state)
{
    (void)state;
    zones_cfg g = zones_cfg_unset();
    g.smart_zone = 110000;
    g.recut_ratio = 0.8;
    zones_cfg m = zones_cfg_unset();
    m.swap_tokens = 50000;
    zones_cfg z = zones_cfg_merge(g, m);
    assert_int_equal(z.smart_zone, 110000);
    assert_int_equal(z.swap_tokens, 50000);
    assert_true(z.recut_ratio > 0.79 && z.recut_ratio < 0.81);
}

static void test_window_from_common_provider_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        long window;
    } cases[] = {
        {"This model's maximum context length is 128000 tokens. However, your messages "
         "resulted in 130512 tokens.", 128000},
        {"HTTP 400: prompt is too long: 210345 tokens > 200000 maximum", 200000},
        {"Input exceeds the context window of 1,000,000 tokens", 1000000},
        {"The input token count (1200000) exceeds the maximum number of tokens allowed "
         "(1048576).", 1048576},
        {"max context length of 32768 exceeded", 32768},
        {"Requested 9000 tokens, context length is 8,192", 8192},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long w = 0;
        assert_int_equal(zones_window_from_error(cases[i].text, &w), 1);
        assert_int_equal(w, cases[i].window);
    }
    long w = 0;
    assert_int_equal(zones_window_from_error("rate limited, retry in 20 seconds", &w), 0);
    assert_int_equal(zones_window_from_error("context_length_exceeded", &w), 0);
    assert_int_equal(zones_window_from_error(NULL, &w), 0);
}

static void test_correction_applies_only_to_the_window_it_corrected(void **state)
{
    (void)state;
    zones_window_correction c;
    assert_int_equal(zones_correction_from_error(400000, "maximum context length is 1000000 "
                                                 "tokens", &c), 1);
    assert_int_equal(c.corrected, 1000000);
    assert_string_equal(c.source, "provider-error");
    assert_int_equal(zones_effective_window(400000, &c), 1000000);
    assert_int_equal(zones_effective_window(128000, &c), 128000);
    assert_int_equal(zones_effective_window(400000, NULL), 400000);
    /* the same window is no correction */
    assert_int_equal(zones_correction_from_error(128000, "maximum context length is 128000 "
                                                 "tokens", &c), 0);
}

static void test_summaries_are_due_only_within_a_chunk_of_the_next_line(void **state)
{
    (void)state;
    zones_cfg c = zones_cfg_unset();
    zones_resolved z;
    assert_int_equal(zones_resolve(&c, 0, 64000, &z, NULL), 0);
    /* 64k: swap at 44,800, re-cut at 54,400; one leaf chunk of 20,000 ahead of each. */
    assert_false(zones_summaries_due(&z, 22400, 0, 20000)); /* 35% of the window */
    assert_false(zones_summaries_due(&z, 24799, 0, 20000));
    assert_true(zones_summaries_due(&z, 24800, 0, 20000));
    /* Once a cut is pinned the next line is the re-cut line. */
    assert_false(zones_summaries_due(&z, 30000, 1, 20000));
    assert_true(zones_summaries_due(&z, 34400, 1, 20000));
    /* A window too small for a chunk of lead: always due. */
    assert_int_equal(zones_resolve(&c, 0, 16000, &z, NULL), 0);
    assert_true(zones_summaries_due(&z, 1000, 0, 20000));
    assert_int_equal(zones_fit_tokens(&z), 15200);
}

TEST_MAIN(
    cmocka_unit_test(test_defaults_are_70_and_85_percent),
    cmocka_unit_test(test_smart_zone_derives_recut_at_1_18),
    cmocka_unit_test(test_explicit_tokens_win_over_smart_zone_and_ratio_per_level),
    cmocka_unit_test(test_token_pair_recut_at_or_below_swap_is_folded_up),
    cmocka_unit_test(test_clamp_caps_swap_at_90_and_recut_at_95_and_says_so),
    cmocka_unit_test(test_ratio_recut_below_swap_is_folded_into_the_open_interval),
    cmocka_unit_test(test_keep_recent_shrinks_on_a_small_window),
    cmocka_unit_test(test_zero_window_is_refused),
    cmocka_unit_test(test_classify_by_occupancy),
    cmocka_unit_test(test_merge_overrides_only_fields_the_model_sets),
    cmocka_unit_test(test_window_from_common_provider_errors),
    cmocka_unit_test(test_correction_applies_only_to_the_window_it_corrected),
    cmocka_unit_test(test_summaries_are_due_only_within_a_chunk_of_the_next_line),
)
