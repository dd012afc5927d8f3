/*
 * fuzz_pattern_long.c -- libFuzzer target for patterns against long subjects: what made one
 * pcre2_match run for seconds (issue 14, item 1). Byte 0 picks one of the long subjects
 * built once (200,000 characters each: "a"*N+"!", "a-a-...", "token_token_...", repeated
 * PEM headers, prose with secrets, and the input itself repeated to that length); the rest
 * is the pattern, run the way lcm_grep runs it (rx.h: auto-callout deadline, limits, JIT
 * stack) with a 50 ms deadline, and the subject also goes through redaction. Checked:
 * a match call returns within its deadline plus a slack (the bound holds inside one call),
 * a result is one of rx.h's, and redaction returns (fail closed or masked, never NULL).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "rx.h"
#include "util.h"

#define LONG_CHARS 200000
#define DEADLINE_MS 50.0
/* Sanitizers slow everything; the slack is far below an unbounded call's seconds. */
#define SLACK_MS 1500.0

static char *subjects[6];

static char *fill(const char *unit, const char *tail)
{
    size_t ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(LONG_CHARS + tl + 1);
    if (!s) abort();
    for (size_t i = 0; i < LONG_CHARS; i++) s[i] = unit[i % ul];
    memcpy(s + LONG_CHARS, tail, tl + 1);
    return s;
}

static void cleanup(void)
{
    for (size_t i = 0; i < sizeof subjects / sizeof subjects[0]; i++) free(subjects[i]);
}

static void setup(void)
{
    subjects[0] = fill("a", "!");
    subjects[1] = fill("a-", "=x1");
    subjects[2] = fill("token_", "=s3cr3t");
    subjects[3] = fill("-----BEGIN PRIVATE KEY----- ", "");
    subjects[4] = fill("the quick api_key=1234 fox (aab) jumps\n", "aac");
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!subjects[0]) setup();
    if (size < 2) return 0;
    uint8_t sel = data[0];
    char *pat = lc_strndup((const char *)data + 1, size - 1);
    if (!pat) return 0;

    char *own = NULL;
    const char *subject;
    size_t which = sel % 6;
    if (which == 5) { /* the input repeated to a long subject */
        size_t pl = size - 1;
        own = malloc(LONG_CHARS + 1);
        if (!own) abort();
        for (size_t i = 0; i < LONG_CHARS; i++) own[i] = (char)data[1 + i % pl];
        own[LONG_CHARS] = '\0';
        subject = own;
    } else {
        subject = subjects[which];
    }
    size_t len = which == 5 ? LONG_CHARS : strlen(subject);

    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                   ((sel >> 3) & 1 ? 0 : PCRE2_CASELESS) | PCRE2_MULTILINE | RX_COMPILE_OPTIONS,
                                   &ec, &eo, NULL);
    if (re) {
        if ((sel >> 4) & 1) pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
        rx_ctx rx = {0};
        if (md && rx_ctx_init(&rx, lc_now_ms() + DEADLINE_MS) == 0) {
            double t0 = lc_now_ms();
            int m = rx_match(&rx, re, subject, len, 0, md);
            double took = lc_now_ms() - t0;
            if (m != RX_MATCH && m != RX_NOMATCH && m != RX_DEADLINE && m != RX_LIMIT && m != RX_FAIL) abort();
            if (m == RX_LIMIT && rx_limit_name(rx.last_rc)[0] == '\0') abort();
            if (took > DEADLINE_MS + SLACK_MS) {
                fprintf(stderr, "rx_match took %.0f ms past a %.0f ms deadline\n", took, DEADLINE_MS);
                abort();
            }
        }
        rx_ctx_free(&rx);
        pcre2_match_data_free(md);
        pcre2_code_free(re);
    }
    /* Redaction of a long text: bounded (REDACT_MS, fail closed), never NULL. */
    if ((sel >> 5) & 1) {
        size_t n = 0;
        char *r = redact_text(subject, len, 1, &n);
        if (!r) abort();
        free(r);
    }
    free(own);
    free(pat);
    return 0;
}
