/*
 * test_privacy.c -- what is never stored (privacy.h): <private> spans become a mark in any
 * message string, an unclosed span masks to the end of its message and a span that opened
 * in an earlier message masks up to its closing tag; the message keeps its shape; secrets
 * are masked at ingest only when redactAtIngest asks; `exclude` matches a folder and the
 * folders below it. The store-level tests read the bytes the store file holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "privacy.h"
#include "redact.h"
#include "store.h"
#include "util.h"
#include "temp_home.h"
#include "test_main.h"

#define KEY "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"

static char *masked(const char *json, int redact)
{
    cJSON *t = cJSON_Parse(json);
    assert_non_null(t);
    assert_int_equal(privacy_mask_tree(t, redact, NULL, NULL), LC_OK);
    char *out = cJSON_PrintUnformatted(t);
    cJSON_Delete(t);
    return out;
}

static void test_private_span_in_a_text_becomes_the_mark(void **state)
{
    (void)state;
    char *out = masked("{\"role\":\"user\",\"content\":\"my pin is <private>4711 at home</private>, thanks\"}", 0);
    assert_string_equal(out, "{\"role\":\"user\",\"content\":\"my pin is " PRIVACY_MARK ", thanks\"}");
    free(out);
}

static void test_tags_are_matched_in_any_case(void **state)
{
    (void)state;
    char *out = masked("{\"role\":\"user\",\"content\":\"a <PRIVATE>b</Private> c <private>d</private>\"}", 0);
    assert_string_equal(out, "{\"role\":\"user\",\"content\":\"a " PRIVACY_MARK " c " PRIVACY_MARK "\"}");
    free(out);
}

static void test_unclosed_span_masks_to_the_end_of_the_message_and_keeps_its_shape(void **state)
{
    (void)state;
    char *out = masked("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"ok <private>secret one\"},"
                       "{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"bash\",\"arguments\":{\"command\":\"cat pw\"}}],"
                       "\"model\":\"m\"}", 0);
    assert_non_null(strstr(out, "\"text\":\"ok " PRIVACY_MARK "\""));
    assert_null(strstr(out, "secret one"));
    assert_null(strstr(out, "cat pw"));
    /* type, id, name and model are the message's shape: kept */
    assert_non_null(strstr(out, "\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"bash\""));
    assert_non_null(strstr(out, "\"model\":\"m\""));
    cJSON *back = cJSON_Parse(out);
    assert_non_null(back);
    cJSON_Delete(back);
    free(out);
}

static void test_a_closing_tag_first_masks_what_precedes_it(void **state)
{
    (void)state;
    char *out = masked("{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"rest of it</private> public\"}]}", 0);
    assert_non_null(strstr(out, "\"text\":\"" PRIVACY_MARK " public\""));
    assert_null(strstr(out, "rest of it"));
    free(out);
}

static void test_a_message_without_tags_is_not_touched(void **state)
{
    (void)state;
    const char *j = "{\"role\":\"user\",\"content\":\"nothing to hide, " KEY "\"}";
    size_t np = 9, ns = 9;
    assert_int_equal(privacy_may_hold(j, strlen(j)), 0);
    cJSON *t = cJSON_Parse(j);
    assert_int_equal(privacy_mask_tree(t, 0, &np, &ns), LC_OK);
    assert_int_equal(np, 0);
    assert_int_equal(ns, 0);
    char *out = cJSON_PrintUnformatted(t);
    assert_string_equal(out, j);
    free(out);
    cJSON_Delete(t);
}

static void test_redact_at_ingest_masks_a_key_and_a_named_member(void **state)
{
    (void)state;
    char *out = masked("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"use " KEY " now\"},"
                       "{\"type\":\"toolCall\",\"id\":\"c\",\"name\":\"env\",\"arguments\":{\"password\":\"hunter22\"}}]}",
                       1);
    assert_null(strstr(out, KEY));
    assert_null(strstr(out, "hunter22"));
    assert_non_null(strstr(out, "use " REDACT_MASK " now"));
    free(out);
}

/* The scan for a tag looks at eight bytes at a time while none is a 'p': the word is found
 * at every offset and in any case among many other p's, and a text that only comes close
 * ("privat" at its end, "p r i v a t e") holds none. */
static void test_private_is_seen_at_every_offset_and_in_any_case(void **state)
{
    (void)state;
    char s[96];
    static const char *const forms[] = {"private", "PRIVATE", "PrIvAtE"};
    for (size_t f = 0; f < 3; f++)
        for (size_t len = 7; len < sizeof s; len++)
            for (size_t at = 0; at + 7 <= len; at++) {
                for (size_t i = 0; i < len; i++) s[i] = "pip pop Prv "[i % 12];
                memcpy(s + at, forms[f], 7);
                assert_int_equal(privacy_may_hold(s, len), 1);
                assert_int_equal(privacy_may_hold(s, at + 6), 0); /* cut one byte short */
            }
    for (size_t len = 0; len < sizeof s; len++) {
        for (size_t i = 0; i < len; i++) s[i] = "p r i v a t e privat"[i % 20];
        if (len >= 6) memcpy(s + len - 6, "privat", 6);
        assert_int_equal(privacy_may_hold(s, len), 0);
    }
}

static void test_exclude_matches_the_folder_and_below_but_not_a_sibling(void **state)
{
    (void)state;
    char *globs[] = {"/work/clients/*", "~/secret"};
    const char *which = NULL;
    setenv("HOME", "/home/u", 1);
    assert_int_equal(privacy_excluded(globs, 2, "/work/clients/acme", &which), 1);
    assert_string_equal(which, "/work/clients/*");
    assert_int_equal(privacy_excluded(globs, 2, "/work/clients/acme/src/deep/", NULL), 1);
    assert_int_equal(privacy_excluded(globs, 2, "/home/u/secret/x", NULL), 1);
    assert_int_equal(privacy_excluded(globs, 2, "/home/u/secrets", NULL), 0);
    assert_int_equal(privacy_excluded(globs, 2, "/work/clientsX/acme", NULL), 0);
    assert_int_equal(privacy_excluded(globs, 2, "/work", NULL), 0);
    assert_int_equal(privacy_excluded(globs, 2, "", NULL), 0);
}

static void test_config_reads_the_privacy_and_retention_keys_and_names_bad_values(void **state)
{
    (void)state;
    lcm_config c;
    const char *good = "{\"redactAtIngest\":true,\"exclude\":[\"/a/*\",\"~/b\"],"
                       "\"retention\":{\"days\":30,\"maxGB\":0.5,\"archive\":true}}";
    assert_int_equal(lcm_config_parse(good, strlen(good), &c, NULL), LC_OK);
    assert_int_equal(c.n_problems, 0);
    assert_int_equal(c.redact_at_ingest, 1);
    assert_int_equal(c.n_exclude, 2);
    assert_int_equal(c.retention.enabled, 1);
    assert_int_equal(c.retention.days, 30);
    assert_true(c.retention.max_gb == 0.5);
    assert_int_equal(c.retention.auto_apply, 0);
    lcm_config_free(&c);
    const char *bad = "{\"exclude\":[\"relative/dir\"],\"retention\":{\"maxGB\":-1},\"redactAtIngest\":\"yes\"}";
    assert_int_equal(lcm_config_parse(bad, strlen(bad), &c, NULL), LC_OK);
    assert_int_equal(c.n_exclude, 0);
    assert_int_equal(c.retention.enabled, 0);
    assert_int_equal(c.redact_at_ingest, 0);
    int named_exclude = 0, named_gb = 0;
    for (size_t i = 0; i < c.n_problems; i++) {
        named_exclude |= strstr(c.problems[i], "relative/dir") != NULL;
        named_gb |= strstr(c.problems[i], "retention.maxGB") != NULL;
    }
    assert_true(named_exclude && named_gb);
    lcm_config_free(&c);
}

/* The bytes of a file (and its write-ahead log) as one string, for a plain search. */
static char *file_bytes(const char *path)
{
    char *a = NULL, *b = NULL, *wal = lc_asprintf("%s-wal", path);
    size_t al = 0, bl = 0;
    lc_read_file(path, &a, &al, NULL);
    lc_read_file(wal, &b, &bl, NULL);
    char *all = malloc(al + bl + 1);
    assert_non_null(all);
    if (al) memcpy(all, a, al);
    if (bl) memcpy(all + al, b, bl);
    all[al + bl] = '\0';
    for (size_t i = 0; i < al + bl; i++)
        if (!all[i]) all[i] = ' ';
    free(a);
    free(b);
    free(wal);
    return all;
}

static void ingest_one(store *s, const char *id, const char *json)
{
    store_msg m = {id, json, strlen(json), NULL};
    char *err = NULL;
    int rc = store_ingest(s, &m, 1, NULL, &err);
    if (rc) print_error("ingest: %s\n", err ? err : "?");
    assert_int_equal(rc, LC_OK);
    free(err);
}

static void test_store_file_never_holds_a_private_span(void **state)
{
    (void)state;
    store *s = home_store("s1", "/tmp/p");
    ingest_one(s, "e1", "{\"role\":\"user\",\"content\":\"the code is <private>zebra-quokka-991</private> ok\","
                        "\"timestamp\":1}");
    store_row row = {0};
    assert_int_equal(store_get_message(s, "e1", &row, NULL), LC_OK);
    assert_null(strstr(row.raw_json, "zebra-quokka"));
    assert_non_null(strstr(row.raw_json, PRIVACY_MARK));
    assert_null(strstr(row.text, "zebra-quokka"));
    char *path = lc_strdup(store_path(s));
    store_row_free(&row);
    store_close(s);
    char *bytes = file_bytes(path);
    assert_null(strstr(bytes, "zebra-quokka"));
    free(bytes);
    free(path);
}

static void write_config(const char *text)
{
    char *p = lc_asprintf("%s/lcm.json", home);
    assert_int_equal(lc_write_atomic(p, text, strlen(text), 0600, NULL), LC_OK);
    free(p);
}

static void test_store_keeps_a_secret_verbatim_unless_redact_at_ingest(void **state)
{
    (void)state;
    store *s = home_store("s1", "/tmp/p");
    ingest_one(s, "e1", "{\"role\":\"user\",\"content\":\"key " KEY "\",\"timestamp\":1}");
    store_row row = {0};
    assert_int_equal(store_get_message(s, "e1", &row, NULL), LC_OK);
    assert_non_null(strstr(row.raw_json, KEY)); /* verbatim recall is the default promise */
    store_row_free(&row);
    store_close(s);
    write_config("{\"redactAtIngest\": true}");
    s = home_store("s2", "/tmp/p");
    /* a caller's own options cannot turn it off */
    store_options o = {0, 1, 0};
    store_set_options(s, &o);
    ingest_one(s, "e1", "{\"role\":\"user\",\"content\":\"key " KEY "\",\"timestamp\":1}");
    assert_int_equal(store_get_message(s, "e1", &row, NULL), LC_OK);
    assert_null(strstr(row.raw_json, KEY));
    char *path = lc_strdup(store_path(s));
    store_row_free(&row);
    store_close(s);
    char *bytes = file_bytes(path);
    assert_null(strstr(bytes, KEY));
    free(bytes);
    free(path);
}

static void test_store_open_refuses_an_excluded_folder_and_makes_no_file(void **state)
{
    (void)state;
    write_config("{\"exclude\": [\"/tmp/excluded-*\"]}");
    store *s = NULL;
    char *err = NULL;
    assert_int_equal(store_open(home, "s1", "/tmp/excluded-a/sub", &s, &err), LC_EXCLUDED);
    assert_null(s);
    assert_non_null(strstr(err, "/tmp/excluded-*"));
    free(err);
    s = home_store("s2", "/tmp/included");
    /* the refused session's file would sit where s2's does, under its own name */
    char *p = lc_strdup(store_path(s)), *at = strstr(p, "/s2.");
    assert_non_null(at);
    at[2] = '1';
    assert_int_not_equal(access(p, F_OK), 0);
    free(p);
    store_close(s);
}

TEST_MAIN(
    cmocka_unit_test(test_private_span_in_a_text_becomes_the_mark),
    cmocka_unit_test(test_tags_are_matched_in_any_case),
    cmocka_unit_test(test_unclosed_span_masks_to_the_end_of_the_message_and_keeps_its_shape),
    cmocka_unit_test(test_a_closing_tag_first_masks_what_precedes_it),
    cmocka_unit_test(test_a_message_without_tags_is_not_touched),
    cmocka_unit_test(test_redact_at_ingest_masks_a_key_and_a_named_member),
    cmocka_unit_test(test_private_is_seen_at_every_offset_and_in_any_case),
    cmocka_unit_test(test_exclude_matches_the_folder_and_below_but_not_a_sibling),
    cmocka_unit_test(test_config_reads_the_privacy_and_retention_keys_and_names_bad_values),
    HOME_TEST(test_store_file_never_holds_a_private_span),
    HOME_TEST(test_store_keeps_a_secret_verbatim_unless_redact_at_ingest),
    HOME_TEST(test_store_open_refuses_an_excluded_folder_and_makes_no_file),
)
