/* test_jsonw.c -- jsonw_print gives cJSON_PrintUnformatted's bytes for every tree: every
 * byte in a string, numbers of every kind, keys, nesting, and what neither can print. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "jsonw.h"
#include "test_main.h"

static void expect_same_print(const cJSON *t, const char *what)
{
    char *want = cJSON_PrintUnformatted(t), *got = jsonw_print(t);
    if (!want || !got || strcmp(want, got) != 0)
        fail_msg("%s: cJSON printed %s, jsonw %s", what, want ? want : "(null)", got ? got : "(null)");
    free(want);
    free(got);
}

static void test_print_matches_cjson_for_every_byte_in_a_string(void **state)
{
    (void)state;
    char s[256];
    for (int i = 1; i < 256; i++) s[i - 1] = (char)i;
    s[255] = '\0';
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, s, s);
    cJSON_AddStringToObject(o, "", "");
    expect_same_print(o, "all bytes 1..255 as key and value");
    cJSON_Delete(o);
}

/* The printer skips eight bytes at a time over what needs no escape: an escape at any
 * offset of a run, before, inside or after a word of eight, prints as cJSON prints it. */
static void test_print_matches_cjson_for_an_escape_at_every_offset_of_a_run(void **state)
{
    (void)state;
    static const char specials[] = {'"', '\\', '\n', '\t', 0x01, 0x1f, 0x7f};
    char s[64];
    for (size_t k = 0; k < sizeof specials; k++)
        for (size_t len = 1; len < sizeof s - 1; len++)
            for (size_t at = 0; at < len; at++) {
                for (size_t i = 0; i < len; i++) s[i] = (char)('a' + i % 26);
                s[at] = specials[k];
                if ((at + 3) % len != at) s[(at + 3) % len] = (char)0xE9; /* a high byte stays as it is */
                s[len] = '\0';
                cJSON *o = cJSON_CreateString(s);
                expect_same_print(o, "one escape in a run");
                cJSON_Delete(o);
            }
}

static void test_print_matches_cjson_for_numbers_of_every_kind(void **state)
{
    (void)state;
    static const double nums[] = {0, -0.0, 1, -1, 2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0,
                                  1764435601500.0, 0.1, 1.0 / 3, 1e-300, 1e300, 123456789.125, 5e-324,
                                  1.7976931348623157e308, 0.30000000000000004};
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(nums[i]));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(NAN));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(INFINITY));
    expect_same_print(a, "numbers");
    cJSON_Delete(a);
}

static uint32_t xorshift(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static void test_print_matches_cjson_for_random_trees(void **state)
{
    (void)state;
    uint32_t x = 88172645u;
#define NEXT() xorshift(&x)
    for (int round = 0; round < 2000; round++) {
        cJSON *stack[8];
        int depth = 0;
        stack[0] = NEXT() % 2 ? cJSON_CreateObject() : cJSON_CreateArray();
        for (int k = 0; k < 40; k++) {
            cJSON *v;
            char str[24];
            size_t n = NEXT() % sizeof str;
            for (size_t i = 0; i < n; i++) str[i] = (char)(1 + NEXT() % 255);
            str[n] = '\0';
            switch (NEXT() % 8) {
            case 0: v = cJSON_CreateNull(); break;
            case 1: v = cJSON_CreateBool(NEXT() % 2); break;
            case 2: {
                double num = (double)(int32_t)NEXT();
                v = cJSON_CreateNumber(num / (double)(1 + NEXT() % 1000));
                break;
            }
            case 3: v = cJSON_CreateNumber((double)NEXT() * 4096.0); break;
            case 4: v = cJSON_CreateString(str); break;
            case 5: v = cJSON_CreateRaw("[1,2]"); break;
            default: v = NEXT() % 2 ? cJSON_CreateObject() : cJSON_CreateArray();
            }
            if (cJSON_IsArray(stack[depth])) cJSON_AddItemToArray(stack[depth], v);
            else cJSON_AddItemToObject(stack[depth], str, v);
            if ((cJSON_IsArray(v) || cJSON_IsObject(v)) && depth < 7) stack[++depth] = v;
            else if (depth > 0 && NEXT() % 4 == 0) depth--;
        }
        char what[32];
        snprintf(what, sizeof what, "random tree %d", round);
        expect_same_print(stack[0], what);
        cJSON_Delete(stack[0]);
    }
#undef NEXT
}

static void test_print_refuses_what_cjson_cannot_print(void **state)
{
    (void)state;
    cJSON *a = cJSON_CreateArray(), *bad = cJSON_CreateNull();
    bad->type = cJSON_Invalid;
    cJSON_AddItemToArray(a, bad);
    assert_null(cJSON_PrintUnformatted(a));
    assert_null(jsonw_print(a));
    assert_null(jsonw_print(NULL));
    cJSON_Delete(a);
}

TEST_MAIN(cmocka_unit_test(test_print_matches_cjson_for_every_byte_in_a_string),
          cmocka_unit_test(test_print_matches_cjson_for_an_escape_at_every_offset_of_a_run),
          cmocka_unit_test(test_print_matches_cjson_for_numbers_of_every_kind),
          cmocka_unit_test(test_print_matches_cjson_for_random_trees),
          cmocka_unit_test(test_print_refuses_what_cjson_cannot_print))
