/*
 * test_redact.c -- the outbound masking rules as a table of positive and negative cases:
 * exact provider key shapes, secret-named assignments with a digit or env-file style, and
 * the cases that must pass through untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "redact.h"

typedef struct redact_case {
    const char *in;
    const char *want; /* exact expected output */
} redact_case;

static const redact_case cases[] = {
    /* provider key shapes: masked */
    {"key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12 here", "key [REDACTED] here"},
    {"sk-abcdefghijklmnopqrstuvwxyz", "[REDACTED]"},
    {"aws AKIAIOSFODNN7EXAMPLE.", "aws [REDACTED]."},
    {"token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "token [REDACTED]"},
    {"slack xoxb-1234567890-abcdefghij", "slack [REDACTED]"},
    {"google AIzaSyA1234567890abcdefghijklmnopqrstuv", "google [REDACTED]"},
    {"hf hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "hf [REDACTED]"},
    {"gitlab glpat-abcdefghij0123456789", "gitlab [REDACTED]"},
    /* assignments: value with a digit, or env-file style */
    {"OPENAI_API_KEY=abcdefgh", "OPENAI_API_KEY=[REDACTED]"},
    {"export DB_PASSWORD=hunter", "export DB_PASSWORD=[REDACTED]"},
    {"password: hunter2", "password: [REDACTED]"},
    {"\"api_key\": \"abc123\"", "\"api_key\": \"[REDACTED]\""},
    {"my_token = xyz9", "my_token = [REDACTED]"},
    /* passes through */
    {"password: hunter", "password: hunter"},
    {"my_token = abcdef", "my_token = abcdef"},
    {"the sk- prefix names OpenAI keys", "the sk- prefix names OpenAI keys"},
    {"sk-short1", "sk-short1"},
    {"AKIA is a prefix", "AKIA is a prefix"},
    {"a bare word.broken.up secret", "a bare word.broken.up secret"},
    {"count=3 items", "count=3 items"},
    {"ordinary prose about tokens and keys", "ordinary prose about tokens and keys"},
};

static void test_redaction_table_masks_positives_and_keeps_negatives(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = 0;
        char *out = redact_text(cases[i].in, strlen(cases[i].in), 1, &n);
        assert_non_null(out);
        if (strcmp(out, cases[i].want) != 0) {
            print_error("case %zu: in  \"%s\"\n        got \"%s\"\n       want \"%s\"\n", i, cases[i].in, out,
                        cases[i].want);
            free(out);
            fail();
        }
        assert_int_equal(n > 0, strcmp(cases[i].in, cases[i].want) != 0);
        free(out);
    }
}

static void test_redaction_disabled_returns_text_unchanged(void **state)
{
    (void)state;
    const char *in = "OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12";
    size_t n = 7;
    char *out = redact_text(in, strlen(in), 0, &n);
    assert_string_equal(out, in);
    assert_int_equal(n, 0);
    free(out);
}

static void test_redaction_handles_embedded_length_not_nul(void **state)
{
    (void)state;
    const char *in = "x sk-abcdefghijklmnopqrstuvwxyz tail-not-included";
    char *out = redact_text(in, 30, 1, NULL);
    assert_string_equal(out, "x [REDACTED]");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redaction_table_masks_positives_and_keeps_negatives),
        cmocka_unit_test(test_redaction_disabled_returns_text_unchanged),
        cmocka_unit_test(test_redaction_handles_embedded_length_not_nul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
