/*
 * test_ledger.c -- the cost ledger: the cost of a call (the provider's figure, else the
 * price table, else none), the limits rule, the rows in a real home store, the refusal said
 * once a window, and the summarizer chain going extractive at a limit and recording what
 * its model calls used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "homestore.h"
#include "ledger.h"
#include "summarize.h"
#include "util.h"

#include "temp_home.h"

static void load_config(lcm_config *cfg, const char *json)
{
    char *err = NULL;
    assert_int_equal(lcm_config_parse(json, strlen(json), cfg, &err), LC_OK);
    free(err);
}

static ledger *new_ledger(const char *session, const char *json)
{
    lcm_config cfg;
    ledger *l = NULL;
    load_config(&cfg, json);
    assert_int_equal(ledger_new(home, session, &cfg, &l, NULL), LC_OK);
    lcm_config_free(&cfg);
    return l;
}

static void test_cost_is_the_providers_then_the_price_tables_then_none(void **state)
{
    (void)state;
    lcm_config cfg;
    load_config(&cfg, "{\"prices\": {\"openrouter/m\": {\"input\": 2, \"output\": 10, \"cached\": 0.5}}}");
    assert_int_equal(cfg.n_problems, 0);
    const char *src = NULL;
    /* 1M in of which 400k cached, 100k out: 600k x 2 + 400k x 0.5 + 100k x 10 = $2.40 */
    ledger_usage u = {1000000, 100000, 400000, 0, 0};
    assert_float_equal(ledger_cost(cfg.prices, cfg.n_prices, "openrouter/m", &u, &src), 2.4, 1e-9);
    assert_string_equal(src, "prices");
    u.has_cost = 1;
    u.cost = 0.125;
    assert_float_equal(ledger_cost(cfg.prices, cfg.n_prices, "openrouter/m", &u, &src), 0.125, 1e-12);
    assert_string_equal(src, "provider");
    u.has_cost = 0;
    assert_float_equal(ledger_cost(cfg.prices, cfg.n_prices, "other/model", &u, &src), 0.0, 0);
    assert_string_equal(src, "none");
    lcm_config_free(&cfg);
}

static void test_config_refuses_unknown_limit_kinds_and_negative_prices(void **state)
{
    (void)state;
    lcm_config cfg;
    load_config(&cfg, "{\"limits\": {\"summary\": {\"tokensPerDay\": 5000, \"costPerHour\": 0.5},"
                      " \"sumary\": {\"tokensPerDay\": 1}, \"embed\": {\"tokensPerWeek\": 3}},"
                      " \"prices\": {\"a/b\": {\"input\": -1, \"output\": 3}}}");
    assert_int_equal(cfg.n_limits, 2);
    assert_string_equal(cfg.limits[0].kind, "summary");
    assert_float_equal(cfg.limits[0].tokens_per_day, 5000, 0);
    assert_float_equal(cfg.limits[0].cost_per_hour, 0.5, 0);
    assert_int_equal(cfg.n_prices, 1);
    assert_float_equal(cfg.prices[0].input, 0, 0);
    assert_float_equal(cfg.prices[0].output, 3, 0);
    int saw_kind = 0, saw_key = 0, saw_price = 0;
    for (size_t i = 0; i < cfg.n_problems; i++) {
        saw_kind |= strstr(cfg.problems[i], "limits.sumary: unknown kind") != NULL;
        saw_key |= strstr(cfg.problems[i], "limits.embed.tokensPerWeek: unknown key") != NULL;
        saw_price |= strstr(cfg.problems[i], "prices.a/b.input") != NULL;
    }
    assert_true(saw_kind && saw_key && saw_price);
    lcm_config_free(&cfg);
}

static void test_limit_check_names_the_limit_reached(void **state)
{
    (void)state;
    lcm_limit lim = {.kind = "summary", .tokens_per_day = 1000, .cost_per_hour = 0.5};
    homestore_spend_total hour = {.input = 100, .output = 50, .cost = 0.1};
    homestore_spend_total day = {.input = 800, .output = 199, .cost = 0.1};
    char *why = NULL;
    long long window = 0;
    assert_int_equal(ledger_limit_check(&lim, &hour, &day, &why, &window), LC_OK);
    assert_null(why);
    day.output = 200; /* 1000 tokens: at the limit */
    assert_int_equal(ledger_limit_check(&lim, &hour, &day, &why, &window), LC_BUSY);
    assert_non_null(strstr(why, "limits.summary.tokensPerDay 1000"));
    assert_non_null(strstr(why, "1000 tokens in the last 24 hours"));
    assert_int_equal(window, LEDGER_DAY_MS);
    free(why);
    why = NULL;
    day.output = 0;
    hour.cost = 0.5;
    assert_int_equal(ledger_limit_check(&lim, &hour, &day, &why, &window), LC_BUSY);
    assert_non_null(strstr(why, "costPerHour"));
    assert_int_equal(window, LEDGER_HOUR_MS);
    free(why);
}

static void test_daily_limit_refuses_once_spent_and_says_so_once(void **state)
{
    (void)state;
    ledger *l = new_ledger("s1", "{\"limits\": {\"summary\": {\"tokensPerDay\": 1000}}}");
    char *why = NULL;
    int first = -1;
    assert_int_equal(ledger_allow(l, LEDGER_SUMMARY, &why, &first), LC_OK);
    ledger_usage u = {600, 100, 0, 0, 0};
    assert_int_equal(ledger_record(l, LEDGER_SUMMARY, "fake", "fake/m", &u, 1, NULL, NULL), LC_OK);
    assert_int_equal(ledger_allow(l, LEDGER_SUMMARY, &why, &first), LC_OK);
    assert_int_equal(ledger_record(l, LEDGER_SUMMARY, "fake", "fake/m", &u, 1, NULL, NULL), LC_OK);
    /* 1400 tokens in the last 24 hours: refused, said the first time only */
    assert_int_equal(ledger_allow(l, LEDGER_SUMMARY, &why, &first), LC_BUSY);
    assert_int_equal(first, 1);
    assert_non_null(strstr(why, "tokensPerDay"));
    free(why);
    assert_int_equal(ledger_allow(l, LEDGER_SUMMARY, &why, &first), LC_BUSY);
    assert_int_equal(first, 0);
    free(why);
    /* another kind has its own (no) limit */
    assert_int_equal(ledger_allow(l, LEDGER_EMBED, &why, &first), LC_OK);
    /* the ledger says when and why */
    cJSON *j = cJSON_CreateObject();
    char *text = ledger_report(home, NULL, 0, j);
    assert_non_null(strstr(text, "by kind summary: 2 calls, 1200 in (0 cached) / 200 out tokens"));
    assert_non_null(strstr(text, "limit reached"));
    assert_non_null(strstr(text, "limits.summary.tokensPerDay 1000"));
    const cJSON *lim = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "ledger"), "limited");
    assert_int_equal(cJSON_GetArraySize(lim), 1);
    free(text);
    cJSON_Delete(j);
    char *line = ledger_status_line(home);
    assert_non_null(strstr(line, "spend (24 h): summary 2 calls, 1400 tokens"));
    assert_non_null(strstr(line, "limit reached"));
    free(line);
    ledger_free(l);
}

static void test_all_limit_sums_every_kind(void **state)
{
    (void)state;
    ledger *l = new_ledger("s1", "{\"limits\": {\"all\": {\"costPerDay\": 0.01}},"
                                 " \"prices\": {\"emb\": {\"input\": 100, \"output\": 0}}}");
    char *why = NULL;
    int first = 0;
    ledger_usage u = {100, 0, 0, 0, 0}; /* 100 tokens at $100/M = $0.01 */
    assert_int_equal(ledger_record(l, LEDGER_EMBED, "embeddings", "emb", &u, 1, NULL, NULL), LC_OK);
    assert_int_equal(ledger_allow(l, LEDGER_SUMMARY, &why, &first), LC_BUSY);
    assert_non_null(strstr(why, "limits.all.costPerDay"));
    assert_int_equal(first, 1);
    free(why);
    ledger_free(l);
}

/* ---- the chain ------------------------------------------------------------------------- */

typedef struct chain_fx {
    int calls;
    int limited_events, limited_first;
} chain_fx;

static int fx_model(void *ud, const char *provider, const char *model, const char *system_prompt,
                    const char *prompt, long max_tokens, summ_completion *out, char **err)
{
    (void)provider, (void)model, (void)system_prompt, (void)prompt, (void)max_tokens, (void)err;
    chain_fx *fx = ud;
    fx->calls++;
    out->text = lc_strdup("- the model's summary: port=8080");
    out->stop_reason = lc_strdup("stop");
    out->input_tokens = 700;
    out->output_tokens = 50;
    out->cached_tokens = 300;
    return LC_OK;
}

static void fx_event(void *ud, const char *kind, const cJSON *data)
{
    chain_fx *fx = ud;
    if (strcmp(kind, "summarizer-limited") != 0) return;
    fx->limited_events++;
    fx->limited_first += cJSON_IsTrue(cJSON_GetObjectItem(data, "first"));
}

static void test_chain_goes_extractive_at_the_daily_limit(void **state)
{
    (void)state;
    ledger *l = new_ledger("s1", "{\"limits\": {\"summary\": {\"tokensPerDay\": 1000}}}");
    chain_fx fx = {0};
    const char *chain[] = {"fake/m"};
    summ_config sc = {.chain = chain, .n_chain = 1, .model_fn = fx_model, .event_fn = fx_event, .ud = &fx,
                      .ledger = l};
    summ_ctx *s = NULL;
    assert_int_equal(summ_create(&sc, &s, NULL), LC_OK);
    const char *src = "We set port=8080 in config/app.toml after the build failed twice. The deploy "
                      "script now reads PORT from the environment and the tests pass again on CI.";
    const char *used[3] = {0};
    for (int pass = 0; pass < 3; pass++) {
        char *text = NULL;
        summ_pass_begin(s);
        assert_int_equal(summ_run_chain(s, src, 40, SUMM_DETAILS, "preserve-details", &text, &used[pass], NULL),
                         LC_OK);
        free(text);
    }
    /* pass 1: the model (750 tokens); pass 2: the model again (1500 > 1000 only after it);
     * pass 3: refused before any call, extractive, said once */
    assert_string_equal(used[0], "fake/m");
    assert_string_equal(used[1], "fake/m");
    assert_string_equal(used[2], "extractive");
    assert_int_equal(fx.calls, 2);
    assert_int_equal(fx.limited_events, 1);
    assert_int_equal(fx.limited_first, 1);
    char *text = NULL;
    const char *e = NULL;
    summ_pass_begin(s);
    assert_int_equal(summ_run_chain(s, src, 40, SUMM_DETAILS, "preserve-details", &text, &e, NULL), LC_OK);
    free(text);
    assert_string_equal(e, "extractive");
    assert_int_equal(fx.limited_events, 2);
    assert_int_equal(fx.limited_first, 1); /* the window's notice was given already */
    /* what the calls used is in the ledger, cached tokens included */
    homestore *h = NULL;
    homestore_spend_total t;
    assert_int_equal(homestore_open(home, 0, &h, NULL), LC_OK);
    assert_int_equal(homestore_spend_sum(h, LEDGER_SUMMARY, 0, &t, NULL), LC_OK);
    assert_int_equal(t.calls, 2);
    assert_int_equal(t.input, 1400);
    assert_int_equal(t.output, 100);
    assert_int_equal(t.cached, 600);
    homestore_close(h);
    summ_free(s);
    ledger_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_is_the_providers_then_the_price_tables_then_none),
        cmocka_unit_test(test_config_refuses_unknown_limit_kinds_and_negative_prices),
        cmocka_unit_test(test_limit_check_names_the_limit_reached),
        HOME_TEST(test_daily_limit_refuses_once_spent_and_says_so_once),
        HOME_TEST(test_all_limit_sums_every_kind),
        HOME_TEST(test_chain_goes_extractive_at_the_daily_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
