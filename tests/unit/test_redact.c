/*
 * test_redact.c -- the outbound masking rules against the one table of positive and
 * negative cases (tests/contract/redact_cases.json, shared with the seam contract test),
 * and the summarizer's request seam: every stage masks what it sends to a model, the
 * extractive summarizer (which sends nothing) and redactSecrets: false do not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "redact.h"
#include "summarize.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

static cJSON *cases_doc;

/* The table lives beside the contract test; ROOT (tests/run.sh) or this file's own path
 * finds it. A missing table fails the suite instead of passing it empty. */
static int load_cases(void **state)
{
    (void)state;
    const char *root = getenv("ROOT");
    char *path = root ? lc_asprintf("%s/tests/contract/redact_cases.json", root) : NULL;
    size_t len = 0;
    char *text = NULL;
    if (!path || lc_read_file(path, &text, &len, NULL) != LC_OK) {
        free(path);
        const char *self = __FILE__; /* .../tests/unit/test_redact.c */
        const char *cut = strstr(self, "unit/test_redact.c");
        path = lc_asprintf("%.*scontract/redact_cases.json", cut ? (int)(cut - self) : 0, self);
        if (!path || lc_read_file(path, &text, &len, NULL) != LC_OK) {
            print_error("cannot read the case table (%s); set ROOT to the repository\n", path ? path : "?");
            free(path);
            return -1;
        }
    }
    free(path);
    cases_doc = cJSON_Parse(text);
    free(text);
    return cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(cases_doc, "cases")) ? 0 : -1;
}

static int free_cases(void **state)
{
    (void)state;
    cJSON_Delete(cases_doc);
    cases_doc = NULL;
    return 0;
}

static const cJSON *cases(void) { return cJSON_GetObjectItemCaseSensitive(cases_doc, "cases"); }

static const char *field(const cJSON *c, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, k));
}

static int is_positive(const cJSON *c) { return !strcmp(field(c, "kind"), "positive"); }

/* Every case's text, one per line, as a conversation excerpt would carry them. */
static char *all_case_texts(void)
{
    sbuf b = {0};
    const cJSON *c;
    cJSON_ArrayForEach(c, cases()) sb_printf(&b, "case %s: %s\n", field(c, "name"), field(c, "text"));
    return sb_detach(&b);
}

static void assert_masked_for_a_model(const char *sent)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cases())
    {
        if (is_positive(c) && strstr(sent, field(c, "secret"))) {
            print_error("case %s: its secret was sent to the model\n", field(c, "name"));
            fail();
        }
    }
}

static void test_redaction_table_masks_positives_and_keeps_negatives(void **state)
{
    (void)state;
    const cJSON *c;
    int failures = 0;
    cJSON_ArrayForEach(c, cases())
    {
        const char *in = field(c, "text"), *want = field(c, "want");
        size_t n = 0;
        char *out = redact_text(in, strlen(in), 1, &n);
        assert_non_null(out);
        if (strcmp(out, want) != 0 || (n > 0) != is_positive(c)) {
            print_error("case %s: in  \"%s\"\n        got \"%s\" (%zu masked)\n       want \"%s\"\n",
                        field(c, "name"), in, out, n, want);
            failures++;
        }
        free(out);
    }
    assert_int_equal(failures, 0);
}

static void test_redaction_table_holds_both_kinds_and_named_secrets(void **state)
{
    (void)state;
    int pos = 0, neg = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases())
    {
        assert_non_null(field(c, "name"));
        assert_non_null(field(c, "text"));
        assert_non_null(field(c, "want"));
        if (is_positive(c)) {
            pos++;
            assert_non_null(field(c, "secret"));
            assert_non_null(strstr(field(c, "text"), field(c, "secret")));
        } else {
            neg++;
            assert_string_equal(field(c, "want"), field(c, "text"));
        }
    }
    assert_true(pos >= 20);
    assert_true(neg >= 20);
}

static void test_redaction_is_idempotent_on_its_own_output(void **state)
{
    (void)state;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases())
    {
        const char *want = field(c, "want");
        size_t n = 1;
        char *again = redact_text(want, strlen(want), 1, &n);
        if (strcmp(again, want)) print_error("case %s: \"%s\"\n", field(c, "name"), again);
        assert_string_equal(again, want);
        assert_int_equal(n, 0);
        free(again);
    }
}

static void test_redaction_disabled_returns_text_unchanged(void **state)
{
    (void)state;
    char *all = all_case_texts();
    size_t n = 7;
    char *out = redact_text(all, strlen(all), 0, &n);
    assert_string_equal(out, all);
    assert_int_equal(n, 0);
    free(out);
    free(all);
}

static void test_redaction_handles_embedded_length_not_nul(void **state)
{
    (void)state;
    const char *in = "x sk-abcdefghijklmnopqrstuvwxyz tail-not-included";
    char *out = redact_text(in, 30, 1, NULL);
    assert_string_equal(out, "x [REDACTED]");
    free(out);
}

static void test_redaction_masks_a_pem_block_cut_before_its_end_line(void **state)
{
    (void)state;
    const char *in = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7";
    char *out = redact_text(in, strlen(in), 1, NULL);
    assert_string_equal(out, REDACT_MASK);
    free(out);
}

static void test_keys_only_masks_credentials_and_keeps_setting_names(void **state)
{
    (void)state;
    const char *in = "{\"summaryTokens\":1200,\"password_hint\":\"x9\",\"baseUrls\":{\"fake\":"
                     "\"https://u:pw9@h/v1?key=AIzaSyA1234567890abcdefghijklmnopqrstuv\"}}";
    size_t n = 0;
    char *out = redact_keys(in, strlen(in), &n);
    assert_string_equal(out, "{\"summaryTokens\":1200,\"password_hint\":\"x9\",\"baseUrls\":{\"fake\":"
                             "\"https://u:[REDACTED]@h/v1?key=[REDACTED]\"}}");
    assert_int_equal(n, 2);
    free(out);
}

/* ---- the summarizer's request seam ----------------------------------------------------- */

typedef struct fake_model {
    const char *answers[4]; /* answer of call k; NULL = fail the call */
    const char *fail_text;  /* the error text of a failed call */
    char *prompts[8];
    int calls;
    char *events;           /* every event, as JSON lines */
    summ_ctx *chain;        /* the summarizer that calls it, freed with it */
} fake_model;

static int fake_complete(void *ud, const char *provider, const char *model, const char *system,
                         const char *prompt, long max_tokens, summ_completion *out, char **err)
{
    (void)provider, (void)model, (void)system, (void)max_tokens;
    fake_model *f = ud;
    int k = f->calls++;
    if (k < 8) f->prompts[k] = lc_strdup(prompt);
    const char *a = k < 4 ? f->answers[k] : "short.";
    if (!a) return lc_errf(err, LC_ERR, "%s", f->fail_text ? f->fail_text : "HTTP 500");
    out->text = lc_strdup(a);
    out->stop_reason = lc_strdup("stop");
    return LC_OK;
}

static void fake_event(void *ud, const char *kind, const cJSON *data)
{
    fake_model *f = ud;
    char *j = cJSON_PrintUnformatted(data);
    char *line = lc_asprintf("%s%s %s\n", f->events ? f->events : "", kind, j ? j : "");
    free(f->events);
    f->events = line;
    cJSON_free(j);
}

static void fake_free(fake_model *f)
{
    summ_free(f->chain);
    for (int i = 0; i < 8; i++) free(f->prompts[i]);
    free(f->events);
}

static summ_ctx *fake_chain(fake_model *f, const char *entry, int unmasked)
{
    const char *chain[] = {entry};
    summ_config cfg = {.chain = chain, .n_chain = 1, .model_fn = fake_complete, .event_fn = fake_event,
                       .ud = f, .send_unmasked = unmasked};
    assert_int_equal(summ_create(&cfg, &f->chain, NULL), LC_OK);
    return f->chain;
}

/* A long echo of every case: the kind of answer a model gives when it repeats secrets. */
static char *echo_answer(size_t min_chars)
{
    char *all = all_case_texts();
    sbuf b = {0};
    while (b.len < min_chars) sb_puts(&b, all);
    free(all);
    return sb_detach(&b);
}

static char *padded_source(size_t pad_chars)
{
    char *all = all_case_texts();
    sbuf b = {0};
    sb_puts(&b, all);
    while (b.len < pad_chars) sb_puts(&b, "The build ran and the tests passed without a change. ");
    free(all);
    return sb_detach(&b);
}

static void test_summarizer_details_and_make_smaller_requests_are_masked(void **state)
{
    (void)state;
    char *src = padded_source(40000);
    char *echo = echo_answer(9000); /* smaller than the source, over twice the target */
    fake_model f = {.answers = {echo, "- short bullets"}};
    summ_ctx *s = fake_chain(&f, "fake/m", 0);
    summ_result r = {0};
    assert_int_equal(summ_summarize(s, src, 1000, &r, NULL), LC_OK);
    assert_int_equal(f.calls, 2); /* preserve-details, then make-smaller over its answer */
    assert_int_equal(r.level, 2);
    assert_non_null(strstr(f.prompts[0], "<excerpt>"));
    assert_masked_for_a_model(f.prompts[0]);
    assert_masked_for_a_model(f.prompts[1]);
    const cJSON *c;
    cJSON_ArrayForEach(c, cases()) if (!is_positive(c)) assert_non_null(strstr(f.prompts[0], field(c, "text")));
    /* the stored result is what the model answered: storage is not masking's business */
    assert_string_equal(r.rich_text, echo);
    summ_result_free(&r);
    fake_free(&f);
    free(echo);
    free(src);
}

static void test_summarizer_bullets_and_heal_requests_are_masked(void **state)
{
    (void)state;
    char *src = padded_source(6000);
    char *huge = echo_answer(20000); /* not smaller than the source: level 1 is refused */
    fake_model f = {.answers = {huge, "- bullets", "healed."}};
    summ_ctx *s = fake_chain(&f, "fake/m", 0);
    summ_result r = {0};
    assert_int_equal(summ_summarize(s, src, 300, &r, NULL), LC_OK);
    assert_int_equal(r.level, 2);
    assert_int_equal(f.calls, 2);
    assert_non_null(strstr(f.prompts[1], "bullet"));
    assert_masked_for_a_model(f.prompts[1]);
    summ_result_free(&r);
    char *out = NULL;
    const char *entry = NULL;
    assert_int_equal(summ_run_chain(s, src, 300, SUMM_DETAILS, "heal", &out, &entry, NULL), LC_OK);
    assert_masked_for_a_model(f.prompts[2]);
    free(out);
    fake_free(&f);
    free(huge);
    free(src);
}

static void test_summarizer_sends_stored_text_when_redact_secrets_is_false(void **state)
{
    (void)state;
    char *src = padded_source(6000);
    fake_model f = {.answers = {"short."}};
    summ_ctx *s = fake_chain(&f, "fake/m", 1);
    summ_result r = {0};
    assert_int_equal(summ_summarize(s, src, 300, &r, NULL), LC_OK);
    const cJSON *c;
    cJSON_ArrayForEach(c, cases()) if (is_positive(c)) assert_non_null(strstr(f.prompts[0], field(c, "secret")));
    summ_result_free(&r);
    fake_free(&f);
    free(src);
}

static void test_extractive_summary_keeps_the_stored_text_unmasked(void **state)
{
    (void)state;
    const char *src = "We set DB_PASSWORD=hunter2x in the env file and restarted the service. "
                      "The service came back and answered on port 8080 after the restart. "
                      "Nothing else changed in the deployment that afternoon at all.";
    fake_model f = {0};
    summ_ctx *s = fake_chain(&f, SUMM_EXTRACTIVE, 0);
    char *out = NULL;
    const char *entry = NULL;
    assert_int_equal(summ_run_chain(s, src, 30, SUMM_DETAILS, "preserve-details", &out, &entry, NULL), LC_OK);
    assert_string_equal(entry, SUMM_EXTRACTIVE);
    assert_non_null(strstr(out, "DB_PASSWORD=hunter2x"));
    assert_int_equal(f.calls, 0);
    free(out);
    fake_free(&f);
}

static void test_provider_error_text_is_masked_before_it_reaches_events(void **state)
{
    (void)state;
    const char *key = "sk-proj-Zq8vN3xR5tY7uI9oP1aS2dF4gH6jK8lL0zX";
    char *why = lc_asprintf("HTTP 401: Incorrect API key provided: %s", key);
    fake_model f = {.answers = {NULL}, .fail_text = why};
    summ_ctx *s = fake_chain(&f, "fake/m", 0);
    char *out = NULL, *err = NULL;
    const char *entry = NULL;
    assert_int_equal(summ_run_chain(s, "some stored text to summarize here", 30, SUMM_DETAILS,
                                    "preserve-details", &out, &entry, &err), LC_OK);
    assert_string_equal(entry, SUMM_EXTRACTIVE); /* fell back down the chain */
    assert_non_null(f.events);
    expect_has(f.events, "summarizer-fallback", "Incorrect API key provided: [REDACTED]");
    assert_null(strstr(f.events, key));
    free(out);
    free(err);
    fake_free(&f);
    free(why);
}

TEST_MAIN_GROUP(load_cases, free_cases,
    cmocka_unit_test(test_redaction_table_masks_positives_and_keeps_negatives),
    cmocka_unit_test(test_redaction_table_holds_both_kinds_and_named_secrets),
    cmocka_unit_test(test_redaction_is_idempotent_on_its_own_output),
    cmocka_unit_test(test_redaction_disabled_returns_text_unchanged),
    cmocka_unit_test(test_redaction_handles_embedded_length_not_nul),
    cmocka_unit_test(test_redaction_masks_a_pem_block_cut_before_its_end_line),
    cmocka_unit_test(test_keys_only_masks_credentials_and_keeps_setting_names),
    cmocka_unit_test(test_summarizer_details_and_make_smaller_requests_are_masked),
    cmocka_unit_test(test_summarizer_bullets_and_heal_requests_are_masked),
    cmocka_unit_test(test_summarizer_sends_stored_text_when_redact_secrets_is_false),
    cmocka_unit_test(test_extractive_summary_keeps_the_stored_text_unmasked),
    cmocka_unit_test(test_provider_error_text_is_masked_before_it_reaches_events),
)
