/* test_summarize.c -- the extractive summarizer, truncation, the chain's failure rules,
 * demotion, reporting, budgets, the breaker and the three-level escalation
 * (engine/lcm/summarize.c), against scripted in-process models. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "summarize.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

/* ---- a scripted model: each call pops the next answer of the entry it names ---- */

typedef struct answer {
    int rc;            /* LC_OK, LC_ERR (throw), LC_NOTFOUND */
    const char *text;  /* NULL: echo a text of `echo_tokens` tokens */
    const char *stop;
    long echo_tokens;
    long bill;         /* input tokens the provider reports; 0 = 100 */
} answer;

typedef struct script {
    const char *entry;
    answer answers[8];
    int n, next;
} script;

typedef struct world {
    script scripts[4];
    int n_scripts;
    char calls[32][64];
    int n_calls;
    char events[32][32];
    char event_data[32][256];
    int n_events;
} world;

static int world_answer(world *w, const char *entry, long max_tokens, summ_completion *out,
                        char **err)
{
    (void)max_tokens;
    if (w->n_calls < 32) snprintf(w->calls[w->n_calls++], 64, "%s", entry);
    for (int i = 0; i < w->n_scripts; i++) {
        script *s = &w->scripts[i];
        if (strcmp(s->entry, entry) != 0) continue;
        answer a = s->n ? s->answers[s->next < s->n ? s->next++ : s->n - 1] : (answer){0};
        if (a.rc != LC_OK) return lc_errf(err, a.rc, "scripted failure of %s", entry);
        if (a.text) {
            out->text = lc_strdup(a.text);
        } else {
            size_t n = (size_t)a.echo_tokens * 4;
            out->text = malloc(n + 1);
            memset(out->text, 'w', n);
            out->text[n] = '\0';
        }
        out->stop_reason = lc_strdup(a.stop ? a.stop : "stop");
        out->input_tokens = a.bill ? a.bill : 100;
        out->output_tokens = 10;
        return LC_OK;
    }
    return lc_errf(err, LC_NOTFOUND, "no such model %s", entry);
}

static int auto_fn(void *ud, const char *sys, const char *prompt, long max_tokens,
                   summ_completion *out, char **err)
{
    (void)sys;
    (void)prompt;
    return world_answer(ud, "auto", max_tokens, out, err);
}

static int model_fn(void *ud, const char *provider, const char *model, const char *sys,
                    const char *prompt, long max_tokens, summ_completion *out, char **err)
{
    (void)sys;
    (void)prompt;
    char entry[128];
    snprintf(entry, sizeof entry, "%s/%s", provider, model);
    return world_answer(ud, entry, max_tokens, out, err);
}

static void event_fn(void *ud, const char *kind, const cJSON *data)
{
    world *w = ud;
    if (strcmp(kind, "summarizer-call") == 0 || w->n_events >= 32) return;
    snprintf(w->events[w->n_events], 32, "%s", kind);
    char *j = cJSON_PrintUnformatted(data);
    snprintf(w->event_data[w->n_events], 256, "%s", j);
    free(j);
    w->n_events++;
}

static int count_events(const world *w, const char *kind)
{
    int n = 0;
    for (int i = 0; i < w->n_events; i++) n += strcmp(w->events[i], kind) == 0;
    return n;
}

static int count_calls(const world *w, const char *entry)
{
    int n = 0;
    for (int i = 0; i < w->n_calls; i++) n += strcmp(w->calls[i], entry) == 0;
    return n;
}

static summ_ctx *make_ctx(world *w, const char *const *chain, size_t n, long per_call,
                          long per_pass)
{
    summ_config cfg = {.chain = chain, .n_chain = n, .tokens_per_call = per_call,
                       .tokens_per_pass = per_pass, .auto_fn = auto_fn, .model_fn = model_fn,
                       .event_fn = event_fn, .ud = w};
    summ_ctx *s = NULL;
    char *err = NULL;
    assert_int_equal(summ_create(&cfg, &s, &err), LC_OK);
    return s;
}

/* A source of ~2,000 tokens with filler, one needle and one path in the middle; built once
 * for the suite. */
static const char *long_source(void)
{
    static char *src;
    if (src) return src;
    sbuf b = {0};
    for (int i = 0; i < 60; i++) {
        sb_printf(&b, "The assistant looked at the output again and it seemed fine overall "
                      "for this step number %d of the long walk. ", i);
        if (i == 30) sb_puts(&b, "We decided to keep N07=4821 as the seed for src/engine/lcm/dag.c "
                                 "runs.\n");
    }
    src = sb_detach(&b);
    return src;
}

/* A chain of the one scripted entry or/m1, answering `a` every call, with these budgets. */
static summ_ctx *one_model(world *w, answer a, long per_call, long per_pass)
{
    static const char *const chain[] = {"or/m1"};
    *w = (world){.n_scripts = 1};
    w->scripts[0] = (script){"or/m1", {a}, 1, 0};
    return make_ctx(w, chain, 1, per_call, per_pass);
}

/* The default chain, whose auto entry answers `first` and then `second`. */
static summ_ctx *auto_answers(world *w, answer first, answer second)
{
    *w = (world){.n_scripts = 1};
    w->scripts[0] = (script){"auto", {first, second}, 2, 0};
    return make_ctx(w, NULL, 0, 0, 0);
}

/* The summary of src at a 200-token target, which must succeed. */
static summ_result summarized(summ_ctx *s, const char *src)
{
    summ_result r;
    assert_int_equal(summ_summarize(s, src, 200, &r, NULL), LC_OK);
    return r;
}

/* ---- extractive and truncate ---- */

static void test_extractive_keeps_needles_and_paths_verbatim_within_target(void **state)
{
    (void)state;
    const char *src = long_source();
    char *out = summ_extractive(src, 100, SUMM_DETAILS);
    assert_non_null(out);
    assert_true(summ_estimate_tokens(out) <= 100);
    expect_has(out, "N07=4821", "src/engine/lcm/dag.c");
    free(out);
}

static void test_extractive_facts_line_rescues_needles_of_unchosen_sentences(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 20; i++)
        sb_printf(&b, "Step %d set K%02d=%d in a long sentence about config/file%d.json and "
                      "what happened to the rest of the build afterwards, at length.\n",
                  i, i, 1000 + i, i);
    char *src = sb_detach(&b);
    char *out = summ_extractive(src, 150, SUMM_DETAILS);
    assert_true(summ_estimate_tokens(out) <= 150);
    assert_non_null(strstr(out, "Key facts:"));
    for (int i = 0; i < 20; i++) {
        char needle[32];
        snprintf(needle, sizeof needle, "K%02d=%d", i, 1000 + i);
        if (!strstr(out, needle)) fail_msg("%s lost from:\n%s", needle, out);
    }
    free(out);
    free(src);
}

static void test_extractive_bullets_keep_source_order_and_drop_duplicates(void **state)
{
    (void)state;
    const char *src = "First we read src/a.c today.\nThen the build failed with E42.\n"
                      "First we read src/a.c today.\nFinally we decided to use mode=fast.";
    char *out = summ_extractive(src, 1000, SUMM_BULLETS);
    assert_string_equal(out, "- First we read src/a.c today.\n- Then the build failed with E42.\n"
                             "- Finally we decided to use mode=fast.");
    free(out);
    out = summ_extractive("", 100, SUMM_DETAILS);
    assert_string_equal(out, "");
    free(out);
}

static void test_extractive_long_sentence_keeps_its_facts(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 80; i++) sb_puts(&b, "word ");
    sb_puts(&b, "and finally SECRET_ID=77 at lib/x.py");
    char *src = sb_detach(&b);
    char *out = summ_extractive(src, 90, SUMM_DETAILS);
    expect_has(out, "SECRET_ID=77", "lib/x.py");
    assert_true(strlen(out) < strlen(src));
    free(out);
    free(src);
}

static void test_truncate_tags_and_respects_budget_at_utf8_boundaries(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 500; i++) sb_puts(&b, "é€");
    char *src = sb_detach(&b);
    char *t = summ_truncate(src, 50);
    assert_true(strncmp(t, SUMM_TRUNCATED_TAG, strlen(SUMM_TRUNCATED_TAG)) == 0);
    assert_true(summ_estimate_tokens(t) <= 50);
    assert_non_null(strstr(t, " [...] "));
    /* every byte sequence is whole: no stray continuation byte after the cut */
    const char *cut = strstr(t, " [...] ");
    assert_true(((unsigned char)cut[7] & 0xC0) != 0x80);
    free(t);
    t = summ_truncate("short", 50);
    assert_string_equal(t, "[lcm:truncated] short");
    free(t);
    free(src);
}

/* ---- the chain ---- */

static void test_first_entry_success_needs_no_fallback(void **state)
{
    (void)state;
    world w;
    summ_ctx *s = one_model(&w, (answer){LC_OK, "a short summary N07=4821", NULL, 0, 0}, 0, 0);
    summ_result r = summarized(s, long_source());
    assert_int_equal(r.level, 1);
    assert_string_equal(r.entry, "or/m1");
    assert_string_equal(r.text, "a short summary N07=4821");
    assert_int_equal(count_events(&w, "summarizer-fallback"), 0);
    char *d = summ_chain_describe(s);
    assert_string_equal(d, "or/m1 -> auto -> extractive");
    free(d);
    summ_result_free(&r);
    summ_free(s);
}

static void test_error_length_empty_and_throw_are_failures_that_fall_back(void **state)
{
    (void)state;
    static const answer bad[] = {
        {LC_OK, "partial", "error", 0, 0},
        {LC_OK, "half a summ", "length", 0, 0},
        {LC_OK, "   \n", NULL, 0, 0},
        {LC_ERR, NULL, NULL, 0, 0},
    };
    for (size_t i = 0; i < 4; i++) {
        world w = {.n_scripts = 2};
        w.scripts[0] = (script){"or/m1", {bad[i]}, 1, 0};
        w.scripts[1] = (script){"or/m2", {{LC_OK, "good summary", NULL, 0, 0}}, 1, 0};
        const char *chain[] = {"or/m1", "or/m2"};
        summ_ctx *s = make_ctx(&w, chain, 2, 0, 0);
            summ_result r = summarized(s, long_source());
        assert_string_equal(r.entry, "or/m2");
        assert_string_equal(r.text, "good summary");
        assert_int_equal(count_events(&w, "summarizer-fallback"), 1);
        assert_non_null(strstr(w.event_data[0], "\"from\":\"or/m1\""));
        summ_result_free(&r);
        summ_free(s);
    }
}

static void test_failing_entry_is_demoted_for_the_rest_of_the_pass_only(void **state)
{
    (void)state;
    world w = {.n_scripts = 2};
    w.scripts[0] = (script){"or/m1", {{LC_ERR, NULL, NULL, 0, 0}, {LC_OK, "m1 back", NULL, 0, 0}}, 2, 0};
    w.scripts[1] = (script){"or/m2", {{LC_OK, "m2 answer", NULL, 0, 0}}, 1, 0};
    const char *chain[] = {"or/m1", "or/m2"};
    summ_ctx *s = make_ctx(&w, chain, 2, 0, 0);
    const char *src = long_source();
    for (int i = 0; i < 3; i++) {
        summ_result r = summarized(s, src);
        assert_string_equal(r.entry, "or/m2");
        summ_result_free(&r);
    }
    /* paid for once per pass, not once per chunk */
    assert_int_equal(count_calls(&w, "or/m1"), 1);
    summ_pass_stats st;
    summ_pass_stats_get(s, &st);
    assert_int_equal(st.failures, 1);
    assert_int_equal(st.fallbacks, 1);
    summ_pass_begin(s);
    summ_result r = summarized(s, src);
    assert_string_equal(r.entry, "or/m1"); /* the order is restored for a new pass */
    summ_result_free(&r);
    summ_free(s);
}

static void test_unknown_and_missing_entries_are_reported_once(void **state)
{
    (void)state;
    world w = {.n_scripts = 0};
    const char *chain[] = {"bogus", "nowhere/model", "", "nowhere/model"};
    summ_ctx *s = make_ctx(&w, chain, 4, 0, 0);
    assert_int_equal(count_events(&w, "summarizer-model"), 1); /* "bogus" at creation */
    for (int i = 0; i < 3; i++) {
        summ_result r = summarized(s, long_source());
        assert_string_equal(r.entry, "extractive");
        assert_non_null(strstr(r.text, "N07=4821"));
        summ_result_free(&r);
        summ_pass_begin(s);
    }
    /* nowhere/model and auto (no script) are missing: each reported once, called once */
    assert_int_equal(count_events(&w, "summarizer-model"), 3);
    assert_int_equal(count_calls(&w, "nowhere/model"), 1);
    assert_int_equal(count_calls(&w, "auto"), 1);
    char *d = summ_chain_describe(s);
    assert_string_equal(d, "nowhere/model (missing) -> auto (missing) -> extractive");
    free(d);
    summ_free(s);
}

static void test_per_call_budget_refuses_before_calling_and_truncates(void **state)
{
    (void)state;
    world w;
    summ_ctx *s = one_model(&w, (answer){LC_OK, "never", NULL, 0, 0}, 1000, 0);
    /* long_source() is ~2,000 tokens: the request is over 1,000 */
    for (int i = 0; i < 2; i++) {
        summ_result r = summarized(s, long_source());
        assert_int_equal(r.level, 3);
        assert_true(r.truncated);
        assert_true(strncmp(r.text, SUMM_TRUNCATED_TAG, 15) == 0);
        assert_true(r.tokens <= 200);
        summ_result_free(&r);
    }
    assert_int_equal(w.n_calls, 0);
    assert_int_equal(count_events(&w, "summarizer-capped"), 1);
    expect_has(w.event_data[0], "\"source\":\"budget\"", "perCall");
    summ_free(s);
}

static void test_per_pass_budget_counts_billed_tokens(void **state)
{
    (void)state;
    world w;
    /* each call bills 2,010; a request is estimated at ~2,300 (source + output budget):
     * the first fits, the second would cross */
    summ_ctx *s = one_model(&w, (answer){LC_OK, "fine summary", NULL, 0, 2000}, 0, 2800);
    const char *src = long_source();
    summ_result r = summarized(s, src);
    assert_int_equal(r.level, 1);
    summ_result_free(&r);
    r = summarized(s, src);
    assert_int_equal(r.level, 3);
    summ_result_free(&r);
    assert_int_equal(count_calls(&w, "or/m1"), 1);
    assert_int_equal(count_events(&w, "summarizer-capped"), 1);
    summ_pass_stats st;
    summ_pass_stats_get(s, &st);
    assert_int_equal(st.billed_tokens, 2010);
    assert_true(st.capped);
    summ_pass_begin(s); /* a new pass has a fresh budget */
    r = summarized(s, src);
    assert_int_equal(r.level, 1);
    summ_result_free(&r);
    summ_free(s);
}

static void test_breaker_stops_calling_a_provider_that_keeps_failing(void **state)
{
    (void)state;
    world w = {.n_scripts = 1};
    w.scripts[0] = (script){"or/m1", {{LC_ERR, NULL, NULL, 0, 0}}, 1, 0};
    const char *chain[] = {"or/m1"};
    summ_config cfg = {.chain = chain, .n_chain = 1, .breaker_threshold = 2,
                       .breaker_cooldown_passes = 2, .model_fn = model_fn,
                       .event_fn = event_fn, .ud = &w};
    summ_ctx *s = NULL;
    assert_int_equal(summ_create(&cfg, &s, NULL), LC_OK);
    const char *src = long_source();
    summ_result r;
    for (int pass = 0; pass < 4; pass++) {
        summ_pass_begin(s);
        r = summarized(s, src);
        assert_string_equal(r.entry, "extractive");
        summ_result_free(&r);
    }
    /* passes 1-2 fail (opens after 2), passes 3-4 skip it */
    assert_int_equal(count_calls(&w, "or/m1"), 2);
    assert_int_equal(count_events(&w, "summarizer-breaker"), 1);
    char *d = summ_chain_describe(s);
    assert_non_null(strstr(d, "or/m1 (breaker open)"));
    free(d);
    summ_pass_begin(s); /* cooldown over: half-open, one attempt, which reopens it */
    r = summarized(s, src);
    summ_result_free(&r);
    assert_int_equal(count_calls(&w, "or/m1"), 3);
    assert_int_equal(count_events(&w, "summarizer-breaker"), 2);
    summ_free(s);
}

/* ---- escalation ---- */

static void test_escalation_accepts_only_strict_reduction(void **state)
{
    (void)state;
    world w;
    /* the model answers longer than the source at both levels */
    summ_ctx *s = auto_answers(&w, (answer){LC_OK, NULL, NULL, 5000, 0},
                               (answer){LC_OK, NULL, NULL, 5000, 0});
    const char *src = long_source();
    size_t src_tokens = summ_estimate_tokens(src);
    summ_result r = summarized(s, src);
    assert_int_equal(r.level, 3);
    assert_true(r.truncated);
    assert_true(r.tokens < src_tokens);
    assert_int_equal(count_calls(&w, "auto"), 2); /* level 1 and level 2 were tried */
    summ_result_free(&r);
    summ_free(s);
}

static void test_level2_bullets_when_level1_does_not_reduce(void **state)
{
    (void)state;
    world w;
    summ_ctx *s = auto_answers(&w, (answer){LC_OK, NULL, NULL, 5000, 0},
                               (answer){LC_OK, "- bullet", NULL, 0, 0});
    summ_result r = summarized(s, long_source());
    assert_int_equal(r.level, 2);
    assert_string_equal(r.text, "- bullet");
    assert_null(r.rich_text);
    summ_result_free(&r);
    summ_free(s);
}

static void test_over_twice_target_earns_one_make_smaller_pass_and_keeps_rich_tier(void **state)
{
    (void)state;
    world w;
    /* 500 tokens for a 200 target: under the source, over twice the target */
    summ_ctx *s = auto_answers(&w, (answer){LC_OK, NULL, NULL, 500, 0},
                               (answer){LC_OK, "- terse", NULL, 0, 0});
    summ_result r = summarized(s, long_source());
    assert_int_equal(r.level, 2);
    assert_string_equal(r.text, "- terse");
    assert_non_null(r.rich_text);
    assert_int_equal(summ_estimate_tokens(r.rich_text), 500);
    assert_int_equal(count_calls(&w, "auto"), 2);
    summ_result_free(&r);
    summ_free(s);
}

static void test_no_model_at_all_uses_extractive(void **state)
{
    (void)state;
    summ_config cfg = {0};
    summ_ctx *s = NULL;
    assert_int_equal(summ_create(&cfg, &s, NULL), LC_OK);
    summ_result r = summarized(s, long_source());
    assert_int_equal(r.level, 1);
    assert_string_equal(r.entry, "extractive");
    assert_true(r.tokens <= 200);
    assert_non_null(strstr(r.text, "N07=4821"));
    summ_result_free(&r);
    char *err = NULL;
    assert_int_equal(summ_summarize(s, "", 200, &r, &err), LC_INVALID);
    free(err);
    summ_free(s);
}

TEST_MAIN(
    cmocka_unit_test(test_extractive_keeps_needles_and_paths_verbatim_within_target),
    cmocka_unit_test(test_extractive_facts_line_rescues_needles_of_unchosen_sentences),
    cmocka_unit_test(test_extractive_bullets_keep_source_order_and_drop_duplicates),
    cmocka_unit_test(test_extractive_long_sentence_keeps_its_facts),
    cmocka_unit_test(test_truncate_tags_and_respects_budget_at_utf8_boundaries),
    cmocka_unit_test(test_first_entry_success_needs_no_fallback),
    cmocka_unit_test(test_error_length_empty_and_throw_are_failures_that_fall_back),
    cmocka_unit_test(test_failing_entry_is_demoted_for_the_rest_of_the_pass_only),
    cmocka_unit_test(test_unknown_and_missing_entries_are_reported_once),
    cmocka_unit_test(test_per_call_budget_refuses_before_calling_and_truncates),
    cmocka_unit_test(test_per_pass_budget_counts_billed_tokens),
    cmocka_unit_test(test_breaker_stops_calling_a_provider_that_keeps_failing),
    cmocka_unit_test(test_escalation_accepts_only_strict_reduction),
    cmocka_unit_test(test_level2_bullets_when_level1_does_not_reduce),
    cmocka_unit_test(test_over_twice_target_earns_one_make_smaller_pass_and_keeps_rich_tier),
    cmocka_unit_test(test_no_model_at_all_uses_extractive),
)
