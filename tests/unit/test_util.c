/* test_util.c -- the shared mechanisms: sbuf growth and detach, error strings, folder
 * creation with modes, whole-file reads and atomic replacement. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"

#include "expect_text.h"

/* A fresh temporary folder per test, removed (with its files) afterwards. */
static int make_tmpdir(void **state)
{
    char *dir = strdup("/tmp/lc-test-util-XXXXXX");
    if (!dir || !mkdtemp(dir)) return -1;
    *state = dir;
    return 0;
}

static int remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
                char *child = lc_asprintf("%s/%s", path, e->d_name);
                remove_tree(child);
                free(child);
            }
            closedir(d);
        }
        return rmdir(path);
    }
    return unlink(path);
}

static int drop_tmpdir(void **state)
{
    remove_tree(*state);
    free(*state);
    return 0;
}

/* The path of `name` in the case's temporary folder, a heap string. */
static char *in_tmpdir(void **state, const char *name)
{
    return lc_asprintf("%s/%s", (const char *)*state, name);
}

/* The file at `path` reads back as exactly the n bytes of `want`, NUL-terminated. */
static void expect_file_holds(const char *path, const char *want, size_t n)
{
    char *data = NULL, *err = NULL;
    size_t len = 0;
    assert_int_equal(lc_read_file(path, &data, &len, &err), LC_OK);
    assert_int_equal(len, n);
    assert_memory_equal(data, want, n);
    assert_int_equal(data[n], '\0');
    free(data);
}

static int count_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    }
    closedir(d);
    return n;
}

static void test_zeroed_sbuf_detaches_to_empty_string(void **state)
{
    (void)state;
    sbuf b = {0};
    char *s = sb_detach(&b);
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
}

static void test_sbuf_grows_across_many_appends_and_keeps_bytes(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 10000; i++) assert_int_equal(sb_putc(&b, (char)('a' + i % 26)), LC_OK);
    assert_int_equal(b.len, 10000);
    assert_true(b.cap > b.len);
    for (int i = 0; i < 10000; i++) assert_int_equal(b.p[i], 'a' + i % 26);
    assert_int_equal(b.p[b.len], '\0');
    sb_free(&b);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
}

static void test_sbuf_printf_longer_than_stack_buffer(void **state)
{
    (void)state;
    sbuf b = {0};
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(sb_puts(&b, "<"), LC_OK);
    assert_int_equal(sb_printf(&b, "%s|%d", big, 42), LC_OK);
    assert_int_equal(b.len, 1 + 999 + 3);
    assert_memory_equal(b.p + 1 + 999, "|42", 4);
    char *s = sb_detach(&b);
    assert_null(b.p);
    assert_int_equal(strlen(s), 1003);
    free(s);
}

static void test_sbuf_append_keeps_embedded_nul(void **state)
{
    (void)state;
    sbuf b = {0};
    assert_int_equal(sb_append(&b, "a\0b", 3), LC_OK);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.p, "a\0b", 4);
    sb_free(&b);
}

static void test_errf_replaces_previous_message_and_returns_code(void **state)
{
    (void)state;
    char *err = NULL;
    assert_int_equal(lc_errf(&err, LC_INVALID, "first %d", 1), LC_INVALID);
    assert_string_equal(err, "first 1");
    assert_int_equal(lc_errf(&err, LC_NOTFOUND, "second %s", "x"), LC_NOTFOUND);
    assert_string_equal(err, "second x");
    free(err);
    assert_int_equal(lc_errf(NULL, LC_ERR, "nobody listens"), LC_ERR);
}

static void test_strndup_copies_exactly_n_bytes(void **state)
{
    (void)state;
    char *s = lc_strndup("abcdef", 3);
    assert_string_equal(s, "abc");
    free(s);
    assert_null(lc_strdup(NULL));
}

static void test_mkdir_p_creates_parents_with_mode(void **state)
{
    char *path = in_tmpdir(state, "a/b/c");
    char *err = NULL;
    mode_t old = umask(0);
    int rc = lc_mkdir_p(path, 0700, &err);
    umask(old);
    assert_int_equal(rc, LC_OK);
    assert_null(err);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    char *parent = in_tmpdir(state, "a");
    assert_int_equal(stat(parent, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* Existing folders are fine and keep their mode. */
    assert_int_equal(lc_mkdir_p(path, 0755, &err), LC_OK);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    free(parent);
    free(path);
}

static void test_mkdir_p_through_a_file_fails_with_reason(void **state)
{
    char *file = in_tmpdir(state, "plain");
    char *path = in_tmpdir(state, "plain/sub");
    char *err = NULL;
    assert_int_equal(lc_write_atomic(file, "x", 1, 0600, &err), LC_OK);
    assert_int_not_equal(lc_mkdir_p(path, 0700, &err), LC_OK);
    expect_has(err, "plain");
    free(err);
    free(file);
    free(path);
}

static void test_write_atomic_replaces_content_and_leaves_no_temp_file(void **state)
{
    char *path = in_tmpdir(state, "state.json");
    char *err = NULL;
    assert_int_equal(lc_write_atomic(path, "old content, longer", 19, 0600, &err), LC_OK);
    assert_int_equal(lc_write_atomic(path, "new", 3, 0600, &err), LC_OK);
    assert_null(err);
    expect_file_holds(path, "new", 3);
    assert_int_equal(count_entries(*state), 1);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0077, 0);
    free(path);
}

static void test_write_atomic_into_missing_folder_fails_without_leftovers(void **state)
{
    char *path = in_tmpdir(state, "missing/state.json");
    char *err = NULL;
    assert_int_equal(lc_write_atomic(path, "x", 1, 0600, &err), LC_ERR);
    assert_non_null(err);
    assert_int_equal(count_entries(*state), 0);
    free(err);
    free(path);
}

static void test_read_file_missing_is_notfound(void **state)
{
    char *path = in_tmpdir(state, "nothing");
    char *err = NULL;
    char *data = NULL;
    assert_int_equal(lc_read_file(path, &data, NULL, &err), LC_NOTFOUND);
    assert_null(data);
    assert_non_null(err);
    free(err);
    free(path);
}

static void test_read_file_larger_than_one_read_chunk(void **state)
{
    char *path = in_tmpdir(state, "big");
    size_t n = 200000;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++) big[i] = (char)(i % 251);
    char *err = NULL;
    assert_int_equal(lc_write_atomic(path, big, n, 0600, &err), LC_OK);
    expect_file_holds(path, big, n);
    free(big);
    free(path);
}

static void test_iso_ms_reads_utc_timestamps_and_refuses_others(void **state)
{
    (void)state;
    assert_true(lc_iso_ms("1970-01-01T00:00:00Z") == 0);
    assert_true(lc_iso_ms("2025-11-29T17:00:01.5Z") == 1764435601500LL);
    assert_true(lc_iso_ms("2025-11-29T17:00:01.123456Z") == 1764435601123LL);
    assert_true(lc_iso_ms("2025-11-29T17:00:01Z") == 1764435601000LL);
    assert_true(lc_iso_ms("yesterday") == -1);
    assert_true(lc_iso_ms(NULL) == -1);
    /* Days, hours and seconds past their range carry over as timegm carries them; a
     * stamp that is not plain digits (a sign, a one-digit field) is read as sscanf reads it. */
    assert_true(lc_iso_ms("2025-02-30T00:00:00Z") == lc_iso_ms("2025-03-02T00:00:00Z"));
    assert_true(lc_iso_ms("2024-02-29T24:00:60Z") == lc_iso_ms("2024-03-01T00:01:00Z"));
    assert_true(lc_iso_ms("0001-01-01T00:00:00Z") == -62135596800000LL);
    assert_true(lc_iso_ms("2025-1-02T03:04:05Z") == lc_iso_ms("2025-01-02T03:04:05Z"));
    assert_true(lc_iso_ms("2025-13-01T00:00:00Z") == lc_iso_ms("2026-01-01T00:00:00Z"));
}

/* FNV-1a with the offset basis the engine's hash tables and replay seeds were built on
 * (the published basis is 14695981039346656037): the values they always had, and the
 * string form agreeing with the byte form. */
static void test_fnv1a_keeps_the_engines_values(void **state)
{
    (void)state;
    assert_true(lc_fnv1a("", 0) == 1469598103934665603ULL);
    assert_true(lc_fnv1a("a", 1) == 0x44bd8ad473cd9906ULL);
    assert_true(lc_fnv1a("foobar", 6) == 0x88fad7c0a8ff07f2ULL);
    assert_true(lc_fnv1a_str("foobar") == lc_fnv1a("foobar", 6));
    assert_true(lc_fnv1a_str(NULL) == lc_fnv1a("", 0));
}

static void test_utc_format_formats_epoch_ms_and_says_unknown(void **state)
{
    (void)state;
    char *a = lc_utc_format(1767225601000LL, "%Y-%m-%d %H:%M:%S", "?");
    char *b = lc_utc_format(0, "%Y-%m-%d", "date unknown");
    assert_string_equal(a, "2026-01-01 00:00:01");
    assert_string_equal(b, "date unknown");
    free(a);
    free(b);
}

static void test_grow_keeps_elements_and_refuses_overflow(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0;
    for (int i = 0; i < 1000; i++) {
        int *nv = lc_grow(v, &cap, (size_t)i + 1, sizeof *nv);
        assert_non_null(nv);
        v = nv;
        v[i] = i * 7;
    }
    assert_true(cap >= 1000);
    for (int i = 0; i < 1000; i++) assert_int_equal(v[i], i * 7);
    /* Room already there: the same array, the capacity as it was. */
    size_t before = cap;
    assert_ptr_equal(lc_grow(v, &cap, 10, sizeof *v), v);
    assert_int_equal(cap, before);
    /* A size that cannot be allocated leaves the array and its capacity alone. */
    assert_null(lc_grow(v, &cap, SIZE_MAX / 2, sizeof *v));
    assert_int_equal(cap, before);
    assert_int_equal(v[999], 999 * 7);
    free(v);
}

static void test_utf8_back_never_lands_inside_a_character(void **state)
{
    (void)state;
    const char *s = "a\xc3\xa9\xe2\x82\xac!"; /* a, e-acute (2 bytes), euro sign (3), ! */
    assert_int_equal(lc_utf8_back(s, 0), 0);
    assert_int_equal(lc_utf8_back(s, 1), 1);
    assert_int_equal(lc_utf8_back(s, 2), 1);
    assert_int_equal(lc_utf8_back(s, 3), 3);
    assert_int_equal(lc_utf8_back(s, 4), 3);
    assert_int_equal(lc_utf8_back(s, 5), 3);
    assert_int_equal(lc_utf8_back(s, 6), 6);
}

static void test_fold_line_folds_whitespace_and_cuts_at_a_character(void **state)
{
    (void)state;
    int clipped = -1;
    char *a = lc_fold_line("  one\n\ttwo   three ", 19, 100, &clipped);
    assert_string_equal(a, "one two three");
    assert_int_equal(clipped, 0);
    /* "ab" then e-acute: a cut at 3 bytes keeps the whole character, never half of it. */
    char *b = lc_fold_line("ab\xc3\xa9" "cd", 6, 3, &clipped);
    assert_string_equal(b, "ab\xc3\xa9");
    assert_int_equal(clipped, 1);
    free(a);
    free(b);
}

static void test_epoch_ms_is_wall_clock_milliseconds(void **state)
{
    (void)state;
    long long a = lc_epoch_ms();
    time_t t = time(NULL);
    /* The same second as time(2), give or take the one it may have ticked over. */
    assert_true(a / 1000 >= (long long)t - 1 && a / 1000 <= (long long)t + 1);
}

static void test_json_int_refuses_what_a_cast_would_wrap(void **state)
{
    (void)state;
    static const char *const bad[] = {"1e300", "9223372036854775807", "9223372036854775808", "-1", "1.5",
                                      "\"12x\"", "\"99999999999999999999\"", "\" 12\"", "null", "\"\""};
    int64_t v = 7;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cJSON *j = cJSON_Parse(bad[i]);
        assert_int_equal(lc_json_int(j, 0, LC_JSON_INT_MAX, &v), LC_INVALID);
        cJSON_Delete(j);
    }
    assert_int_equal(v, 7);
    assert_int_equal(lc_json_int(NULL, 0, 10, &v), LC_NOTFOUND);
    static const char *const good[][2] = {{"12", "12"}, {"\"#12\"", "12"}, {"\"12\"", "12"}, {"9007199254740991", "9007199254740991"}};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        cJSON *j = cJSON_Parse(good[i][0]);
        assert_int_equal(lc_json_int(j, 0, LC_JSON_INT_MAX, &v), LC_OK);
        assert_int_equal(v, strtoll(good[i][1], NULL, 10));
        cJSON_Delete(j);
    }
    cJSON *j = cJSON_Parse("-3");
    assert_int_equal(lc_json_int(j, -5, 5, &v), LC_OK);
    assert_int_equal(v, -3);
    assert_int_equal(lc_json_int(j, 0, 5, &v), LC_INVALID);
    cJSON_Delete(j);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, make_tmpdir, drop_tmpdir)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fnv1a_keeps_the_engines_values),
        cmocka_unit_test(test_json_int_refuses_what_a_cast_would_wrap),
        cmocka_unit_test(test_grow_keeps_elements_and_refuses_overflow),
        cmocka_unit_test(test_epoch_ms_is_wall_clock_milliseconds),
        cmocka_unit_test(test_fold_line_folds_whitespace_and_cuts_at_a_character),
        cmocka_unit_test(test_utf8_back_never_lands_inside_a_character),
        cmocka_unit_test(test_utc_format_formats_epoch_ms_and_says_unknown),
        cmocka_unit_test(test_iso_ms_reads_utc_timestamps_and_refuses_others),
        cmocka_unit_test(test_zeroed_sbuf_detaches_to_empty_string),
        cmocka_unit_test(test_sbuf_grows_across_many_appends_and_keeps_bytes),
        cmocka_unit_test(test_sbuf_printf_longer_than_stack_buffer),
        cmocka_unit_test(test_sbuf_append_keeps_embedded_nul),
        cmocka_unit_test(test_errf_replaces_previous_message_and_returns_code),
        cmocka_unit_test(test_strndup_copies_exactly_n_bytes),
        T(test_mkdir_p_creates_parents_with_mode),
        T(test_mkdir_p_through_a_file_fails_with_reason),
        T(test_write_atomic_replaces_content_and_leaves_no_temp_file),
        T(test_write_atomic_into_missing_folder_fails_without_leftovers),
        T(test_read_file_missing_is_notfound),
        T(test_read_file_larger_than_one_read_chunk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
