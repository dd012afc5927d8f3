/*
 * test_store_raw.c -- the packed form of a message's verbatim JSON (store_sqlite_raw.c) on
 * real SQLite stores: every shape of string comes back byte for byte through the read, the
 * dump and a reopen; long strings the text or payload holds cost a few bytes; rows of a
 * schema-3 store (TEXT) stay readable and migrate; a damaged value is an error;  bulk
 * ingests leave no free pages; and the packer alone round-trips random
 * bytes against random texts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_sqlite.h"
#include "store_sqlite_raw.h"
#include "util.h"

#include "store_q.h"
#include "temp_home.h"

/* A long run of varied text, with every byte class a JSON string escapes. */
static char *long_text(size_t n, int escapes)
{
    char *b = malloc(n + 1);
    static const char words[] = "alpha beta gamma delta epsilon zeta eta theta iota kappa ";
    for (size_t i = 0; i < n; i++) b[i] = words[(i * 7 + i / 13) % (sizeof words - 1)];
    if (escapes)
        for (size_t i = 50; i + 12 < n; i += 97) memcpy(b + i, "\\n\\t\\\"q\\\\", 9);
    b[n] = '\0';
    return b;
}

static char *msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    assert_non_null(s);
    return s;
}

/* Messages whose strings take every path of the packer. */
static size_t shapes(char **out)
{
    char *t = long_text(3000, 1), *plain = long_text(200, 0);
    size_t n = 0;
    /* a long tool result (text), escaped the one way */
    out[n++] = msg("{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"read\",\"content\":[{\"type\":\"text\","
                   "\"text\":\"%s\"}],\"isError\":false,\"timestamp\":1}", t);
    /* the same string twice, and a thinking block (payload) as long as it */
    out[n++] = msg("{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"%s\"},{\"type\":\"text\","
                   "\"text\":\"%s\"},{\"type\":\"text\",\"text\":\"%s\"}],\"timestamp\":2}", plain, t, t);
    /* escapes the one way never writes: \/, \u beyond control bytes, upper-case hex, a long
     * form where a short one exists, an escaped NUL, an escaped surrogate pair */
    out[n++] = msg("{\"role\":\"user\",\"content\":\"a\\/b path\\/to\\/file and \\u00e9\\u4e2d words words words\","
                   "\"timestamp\":3}");
    out[n++] = msg("{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"upper \\u001F hex and long \\u000a form"
                   " and more words to be long\"}],\"timestamp\":4}");
    out[n++] = msg("{\"role\":\"user\",\"content\":\"nul \\u0000 inside a string that is long enough\",\"timestamp\":5}");
    out[n++] = msg("{\"role\":\"user\",\"content\":\"a pair \\ud83d\\ude00 of surrogates in a string long enough\","
                   "\"timestamp\":6}");
    /* control escapes the one way writes, non-ASCII bytes as they are */
    out[n++] = msg("{\"role\":\"user\",\"content\":\"bell \\u0007 and \\u001f and \\b\\f\\r \xc3\xa9\xe4\xb8\xad words\","
                   "\"timestamp\":7}");
    /* pretty-printed JSON, an image (payload), an unknown block */
    out[n++] = msg("{\n  \"role\" : \"user\",\n  \"content\" : [ { \"type\" : \"text\", \"text\" : \"%s\" },\n"
                   "    { \"type\" : \"image\", \"data\" : \"%s\", \"mimeType\" : \"image/png\" } ],\n"
                   "  \"timestamp\" : 8\n}", plain, plain);
    /* a bash execution: its text is built around the strings */
    out[n++] = msg("{\"role\":\"bashExecution\",\"command\":\"ls -la /some/long/path/name\",\"output\":\"%s\","
                   "\"exitCode\":0,\"timestamp\":9}", t);
    /* a long string neither the text nor the payload holds (a result's details): deflated */
    out[n++] = msg("{\"role\":\"toolResult\",\"toolCallId\":\"c2\",\"toolName\":\"edit\",\"content\":[{\"type\":\"text\","
                   "\"text\":\"ok\"}],\"details\":{\"diff\":\"%s\"},\"isError\":false,\"timestamp\":10}", t);
    /* short, and nothing to refer to */
    out[n++] = msg("{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":11}");
    free(t);
    free(plain);
    return n;
}

static void ingest_all(store *s, char **json, size_t n)
{
    store_msg m[16];
    char ids[16][24];
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof ids[i], "m%zu", i);
        m[i] = (store_msg){ids[i], json[i], strlen(json[i]), NULL};
    }
    char *err = NULL;
    int rc = store_ingest(s, m, n, NULL, &err);
    if (rc) fprintf(stderr, "ingest: %s\n", err ? err : "?");
    assert_int_equal(rc, LC_OK);
}

static void assert_rows_verbatim(store *s, char **json, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char id[24];
        snprintf(id, sizeof id, "m%zu", i);
        store_row r;
        char *err = NULL;
        int rc = store_get_message(s, id, &r, &err);
        if (rc) fprintf(stderr, "%s: %s\n", id, err ? err : "?");
        assert_int_equal(rc, LC_OK);
        assert_int_equal(r.raw_len, strlen(json[i]));
        assert_memory_equal(r.raw_json, json[i], r.raw_len);
        assert_int_equal(r.raw_json[r.raw_len], '\0');
        store_row_free(&r);
    }
}

static int64_t stored_bytes(store *s, const char *id)
{
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    assert_int_equal(sqlite3_prepare_v2(store_db(s), "SELECT length(raw_json) FROM messages WHERE entry_id = ?"
                                        " AND typeof(raw_json) = 'blob'", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* The fixture of the cases on shapes(): a fresh home whose store "raw" holds every shape
 * as messages m0..; a case that closes the store reopens it into st. */
typedef struct raw_fx {
    char *json[16];
    size_t n;
    store *st;
} raw_fx;

static int shapes_setup(void **state)
{
    setup(state);
    raw_fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->n = shapes(f->json);
    f->st = home_store("raw", "/p");
    ingest_all(f->st, f->json, f->n);
    *state = f;
    return 0;
}

static int shapes_teardown(void **state)
{
    raw_fx *f = *state;
    store_close(f->st);
    for (size_t i = 0; i < f->n; i++) free(f->json[i]);
    free(f);
    return teardown(state);
}

static void shapes_reopen(raw_fx *f)
{
    store_close(f->st);
    f->st = home_store("raw", "/p");
}

#define SHAPES_TEST(fn) cmocka_unit_test_setup_teardown(fn, shapes_setup, shapes_teardown)

static void test_every_string_shape_comes_back_byte_for_byte(void **state)
{
    raw_fx *f = *state;
    assert_rows_verbatim(f->st, f->json, f->n);
    shapes_reopen(f);
    assert_rows_verbatim(f->st, f->json, f->n);
}

static void test_strings_the_row_holds_cost_a_few_bytes(void **state)
{
    raw_fx *f = *state;
    /* a 3,000-byte tool result and a message carrying it twice beside a thinking block */
    int64_t a = stored_bytes(f->st, "m0"), b = stored_bytes(f->st, "m1");
    assert_true(a > 0 && a < 200);
    assert_true(b > 0 && b < 300);
    assert_true((size_t)a < strlen(f->json[0]) / 10);
    /* the details string is in no column: deflated, not kept as it is */
    int64_t d = stored_bytes(f->st, "m9");
    assert_true(d > 0 && (size_t)d < strlen(f->json[9]) / 3);
}

typedef struct dump_check {
    char **json;
    size_t n, seen;
} dump_check;

static int dump_tables(void *ud, int v, const char *const *names, size_t n, char **err)
{
    (void)ud, (void)v, (void)names, (void)n, (void)err;
    return LC_OK;
}

static int dump_row(void *ud, const char *table, size_t ncol, const char *const *cols, const store_value *vals,
                    char **err)
{
    dump_check *d = ud;
    (void)err;
    if (strcmp(table, "messages") != 0) return LC_OK;
    const char *id = NULL;
    const store_value *raw = NULL;
    for (size_t c = 0; c < ncol; c++) {
        if (!strcmp(cols[c], "entry_id")) id = vals[c].p;
        if (!strcmp(cols[c], "raw_json")) raw = &vals[c];
    }
    assert_non_null(id);
    assert_non_null(raw);
    size_t i = (size_t)atoi(id + 1);
    assert_true(i < d->n);
    assert_int_equal(raw->type, STORE_VALUE_TEXT);
    assert_int_equal(raw->n, strlen(d->json[i]));
    assert_memory_equal(raw->p, d->json[i], raw->n);
    d->seen++;
    return LC_OK;
}

static void test_dump_gives_every_message_as_its_original_text(void **state)
{
    raw_fx *f = *state;
    dump_check d = {f->json, f->n, 0};
    char *err = NULL;
    assert_int_equal(store_dump(f->st, &(store_dump_visitor){dump_tables, dump_row}, &d, &err), LC_OK);
    assert_int_equal(d.seen, f->n);
}

static void test_schema3_store_with_text_rows_is_read_then_migrated(void **state)
{
    raw_fx *f = *state;
    /* What a schema-3 build wrote: every raw_json the JSON as TEXT. */
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(store_db(f->st), "UPDATE messages SET raw_json = ?2 WHERE entry_id = ?1", -1,
                                        &st, NULL), SQLITE_OK);
    for (size_t i = 0; i < f->n; i++) {
        char id[24];
        snprintf(id, sizeof id, "m%zu", i);
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, f->json[i], -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_exec(store_db(f->st), "PRAGMA user_version = 3", NULL, NULL, NULL), SQLITE_OK);
    store_close(f->st);
    f->st = NULL; /* closed while the file is read as an older build's */

    char path[512];
    snprintf(path, sizeof path, "%s/lcm/raw.sqlite", home);
    store *ro = NULL;
    int v = -1;
    assert_int_equal(store_open_readonly(path, &ro, &v, NULL), LC_OK);
    assert_int_equal(v, 3);
    assert_true(STORE_SCHEMA_ANSWERS(v));
    assert_rows_verbatim(ro, f->json, f->n);
    store_close(ro);

    f->st = home_store("raw", "/p");
    assert_int_equal(store_schema_version(f->st), STORE_SCHEMA_VERSION);
    assert_true(STORE_SCHEMA_VERSION >= 4);
    assert_rows_verbatim(f->st, f->json, f->n);
    assert_int_equal(stored_bytes(f->st, "m0"), -1); /* the migration rewrote no row */
    /* New rows are packed beside the old ones. */
    char *more = msg("{\"role\":\"user\",\"content\":\"%s\",\"timestamp\":11}", "a newer message long enough to pack");
    store_msg m = {"new1", more, strlen(more), NULL};
    assert_int_equal(store_ingest(f->st, &m, 1, NULL, NULL), LC_OK);
    assert_true(stored_bytes(f->st, "new1") > 0);
    store_row r;
    assert_int_equal(store_get_message(f->st, "new1", &r, NULL), LC_OK);
    assert_string_equal(r.raw_json, more);
    store_row_free(&r);
    assert_rows_verbatim(f->st, f->json, f->n);
    free(more);
}

static void test_damaged_packed_value_is_an_error_not_other_bytes(void **state)
{
    raw_fx *f = *state;
    /* cut short, and its stated length changed */
    assert_int_equal(sqlite3_exec(store_db(f->st),
                                  "UPDATE messages SET raw_json = substr(raw_json, 1, length(raw_json) - 3)"
                                  " WHERE entry_id = 'm0';"
                                  "UPDATE messages SET raw_json = CAST(x'01ff7f' || substr(raw_json, 3) AS BLOB)"
                                  " WHERE entry_id = 'm1';"
                                  "UPDATE messages SET raw_json = x'09' WHERE entry_id = 'm2';",
                                  NULL, NULL, NULL), SQLITE_OK);
    const char *ids[] = {"m0", "m1", "m2"};
    for (size_t i = 0; i < 3; i++) {
        store_row r;
        char *err = NULL;
        assert_int_not_equal(store_get_message(f->st, ids[i], &r, &err), LC_OK);
        assert_non_null(err);
        assert_non_null(strstr(err, "stored JSON"));
        free(err);
    }
}

static void test_bulk_ingests_leave_no_free_pages(void **state)
{
    (void)state;
    store *s = home_store("raw-f", "/p");
    assert_int_equal(store_q1(s, "PRAGMA auto_vacuum"), 2); /* incremental, chosen at creation */
    /* Bulk after bulk: each commit writes an index segment and merges earlier ones. */
    char *json[200];
    char ids[200][24];
    uint64_t seed = 7;
    for (size_t i = 0; i < 200; i++) {
        /* distinct words, as a real session has: an index of some size */
        sbuf w = {0};
        for (size_t k = 0; k < 900; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            sb_printf(&w, "w%05x ", (unsigned)(seed >> 44));
        }
        char *t = sb_detach(&w);
        json[i] = msg("{\"role\":\"user\",\"content\":\"%s\",\"timestamp\":%zu}", t, i);
        free(t);
        snprintf(ids[i], sizeof ids[i], "b%zu", i);
    }
    for (size_t round = 0; round < 40; round++) {
        store_msg m[5];
        for (size_t j = 0; j < 5; j++) {
            size_t i = round * 5 + j;
            m[j] = (store_msg){ids[i], json[i], strlen(json[i]), NULL};
        }
        assert_int_equal(store_bulk_begin(s, NULL), LC_OK);
        assert_int_equal(store_ingest(s, m, 5, NULL, NULL), LC_OK);
        assert_int_equal(store_bulk_commit(s, NULL), LC_OK);
    }
    assert_int_equal(store_q1(s, "PRAGMA freelist_count"), 0);
    store_row r;
    assert_int_equal(store_get_message(s, "b199", &r, NULL), LC_OK);
    assert_string_equal(r.raw_json, json[199]);
    store_row_free(&r);
    store_close(s);
    for (size_t i = 0; i < 200; i++) free(json[i]);
}

/* The packer on its own: random bytes of every class, strings of them, a text holding
 * some of them unescaped and a payload holding others as they are. */
static void test_packer_round_trips_random_json_like_bytes(void **state)
{
    (void)state;
    static const char alphabet[] = "ab \"\\\n\t\x01\x1f/u0\xc3\xa9{}:,";
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    store_sqlite_raw *p = store_sqlite_raw_new();
    assert_non_null(p);
    for (int round = 0; round < 400; round++) {
        sbuf json = {0}, text = {0}, payload = {0};
        int strings = 1 + (int)(seed % 12);
        for (int k = 0; k < strings; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t len = (size_t)(seed >> 33) % ((seed >> 60) ? 120 : 900);
            sbuf body = {0}, plain = {0};
            for (size_t i = 0; i < len; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                char c = alphabet[(seed >> 40) % (sizeof alphabet - 1)];
                /* an escaped form in the body, its byte in the plain copy */
                if (c == '"' || c == '\\') {
                    sb_putc(&body, '\\');
                    sb_putc(&body, c);
                } else if (c == '\n') {
                    sb_puts(&body, (seed >> 20) & 1 ? "\\n" : "\\u000a");
                } else if ((unsigned char)c < 0x20) {
                    sb_printf(&body, (seed >> 21) & 1 ? "\\u%04x" : "\\u%04X", (unsigned)c);
                } else {
                    sb_putc(&body, c);
                }
                sb_putc(&plain, c == '\n' ? '\n' : c);
            }
            sb_printf(&json, "%s\"", k ? "," : "{");
            sb_append(&json, body.p ? body.p : "", body.len);
            sb_puts(&json, "\"");
            if ((seed >> 50) % 3 == 0) sb_append(&text, plain.p ? plain.p : "", plain.len);
            else if ((seed >> 50) % 3 == 1) sb_append(&payload, body.p ? body.p : "", body.len);
            sb_puts(&text, " | ");
            sb_free(&body);
            sb_free(&plain);
        }
        sb_puts(&json, "}");
        const unsigned char *packed = NULL;
        size_t plen = 0;
        char *err = NULL;
        assert_int_equal(store_sqlite_raw_pack(p, json.p, json.len, text.p ? text.p : "", text.len, payload.p,
                                               payload.len, &packed, &plen, &err), LC_OK);
        char *back = NULL;
        size_t blen = 0;
        int rc = store_sqlite_raw_unpack(packed, plen, text.p ? text.p : "", text.len, payload.p, payload.len, &back,
                                         &blen, &err);
        if (rc) fprintf(stderr, "round %d: %s\n", round, err ? err : "?");
        assert_int_equal(rc, LC_OK);
        assert_int_equal(blen, json.len);
        assert_memory_equal(back, json.p, blen);
        free(back);
        sb_free(&json);
        sb_free(&text);
        sb_free(&payload);
    }
    store_sqlite_raw_free(p);
}

/* The packer unescapes a string eight bytes at a time up to its first escape: with one
 * escape at any offset of a long string whose text the row holds, the string is still
 * taken as a reference (the value is small) and comes back byte for byte. */
static void test_packer_references_a_string_with_an_escape_at_any_offset(void **state)
{
    (void)state;
    static const char *const escapes[] = {"\\n", "\\\"", "\\\\", "\\t", "\\u0001"};
    static const char plains[] = {'\n', '"', '\\', '\t', 0x01};
    store_sqlite_raw *p = store_sqlite_raw_new();
    assert_non_null(p);
    for (size_t e = 0; e < 5; e++)
        for (size_t len = 24; len < 64; len++)
            for (size_t at = 0; at < len; at++) {
                char plain[64];
                sbuf json = {0};
                for (size_t i = 0; i < len; i++) plain[i] = (char)('a' + i % 26);
                plain[at] = plains[e];
                sb_puts(&json, "{\"role\":\"toolResult\",\"text\":\"");
                sb_append(&json, plain, at);
                sb_puts(&json, escapes[e]);
                sb_append(&json, plain + at + 1, len - at - 1);
                sb_puts(&json, "\"}");
                const unsigned char *packed = NULL;
                size_t plen = 0;
                char *err = NULL;
                assert_int_equal(store_sqlite_raw_pack(p, json.p, json.len, plain, len, NULL, 0, &packed, &plen, &err),
                                 LC_OK);
                if (plen + len / 2 > json.len)
                    fail_msg("escape %zu at %zu of %zu: not referenced (%zu of %zu bytes)", e, at, len, plen, json.len);
                char *back = NULL;
                size_t blen = 0;
                assert_int_equal(store_sqlite_raw_unpack(packed, plen, plain, len, NULL, 0, &back, &blen, &err), LC_OK);
                assert_int_equal(blen, json.len);
                assert_memory_equal(back, json.p, blen);
                free(back);
                sb_free(&json);
            }
    store_sqlite_raw_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SHAPES_TEST(test_every_string_shape_comes_back_byte_for_byte),
        SHAPES_TEST(test_strings_the_row_holds_cost_a_few_bytes),
        SHAPES_TEST(test_dump_gives_every_message_as_its_original_text),
        SHAPES_TEST(test_schema3_store_with_text_rows_is_read_then_migrated),
        SHAPES_TEST(test_damaged_packed_value_is_an_error_not_other_bytes),
        HOME_TEST(test_bulk_ingests_leave_no_free_pages),
        cmocka_unit_test(test_packer_round_trips_random_json_like_bytes),
        cmocka_unit_test(test_packer_references_a_string_with_an_escape_at_any_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
