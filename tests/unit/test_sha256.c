/* test_sha256.c -- SHA-256 against the FIPS 180-4 / NIST example vectors, and the
 * incremental interface against the one-shot digest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sha256.h"
#include "test_main.h"

static void assert_hex(const char *msg, size_t len, const char *want)
{
    char hex[65];
    sha256_hex(msg, len, hex);
    assert_string_equal(hex, want);
}

static void test_empty_message_matches_nist_vector(void **state)
{
    (void)state;
    assert_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_abc_matches_nist_vector(void **state)
{
    (void)state;
    assert_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_two_block_448_bit_message_matches_nist_vector(void **state)
{
    (void)state;
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_int_equal(strlen(m) * 8, 448);
    assert_hex(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_896_bit_message_matches_nist_vector(void **state)
{
    (void)state;
    const char *m = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                    "klmnopqrlmnopqrsmnopqrstnopqrstu";
    assert_hex(m, strlen(m), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void test_one_million_a_in_uneven_chunks_matches_nist_vector(void **state)
{
    (void)state;
    char chunk[997];
    memset(chunk, 'a', sizeof chunk);
    sha256_ctx c;
    sha256_init(&c);
    size_t left = 1000000;
    while (left > 0) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        sha256_update(&c, chunk, n);
        left -= n;
    }
    uint8_t d[32];
    char hex[65];
    sha256_final(&c, d);
    sha256_to_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_updates_split_at_every_offset_equal_one_shot(void **state)
{
    (void)state;
    /* 150 bytes: splits cross the 55/56/64-byte padding and block boundaries. */
    char msg[150];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (char)(i * 7 + 3);
    for (size_t total = 0; total <= sizeof msg; total++) {
        uint8_t want[32];
        sha256(msg, total, want);
        for (size_t cut = 0; cut <= total; cut++) {
            for (size_t cut2 = cut; cut2 <= total; cut2 += 13) {
                sha256_ctx c;
                uint8_t got[32];
                sha256_init(&c);
                sha256_update(&c, msg, cut);
                sha256_update(&c, msg + cut, cut2 - cut);
                sha256_update(&c, msg + cut2, total - cut2);
                sha256_final(&c, got);
                assert_memory_equal(got, want, 32);
            }
        }
    }
}

static void test_different_inputs_give_different_digests(void **state)
{
    (void)state;
    char a[65], b[65];
    sha256_hex("abc", 3, a);
    sha256_hex("abd", 3, b);
    assert_string_not_equal(a, b);
}

TEST_MAIN(
    cmocka_unit_test(test_empty_message_matches_nist_vector),
    cmocka_unit_test(test_abc_matches_nist_vector),
    cmocka_unit_test(test_two_block_448_bit_message_matches_nist_vector),
    cmocka_unit_test(test_896_bit_message_matches_nist_vector),
    cmocka_unit_test(test_one_million_a_in_uneven_chunks_matches_nist_vector),
    cmocka_unit_test(test_updates_split_at_every_offset_equal_one_shot),
    cmocka_unit_test(test_different_inputs_give_different_digests),
)
