/* test_jsonl.c -- the JSONL line reader: line splitting, "\r\n", a last line without a
 * newline, blank lines, very long lines, resuming from an offset, missing files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "jsonl.h"
#include "util.h"

#include "expect_text.h"

static int make_file_path(void **state)
{
    char *dir = strdup("/tmp/lc-test-jsonl-XXXXXX");
    if (!dir || !mkdtemp(dir)) return -1;
    *state = dir;
    return 0;
}

static int drop_file_path(void **state)
{
    char *path = lc_asprintf("%s/s.jsonl", (char *)*state);
    unlink(path);
    rmdir(*state);
    free(path);
    free(*state);
    return 0;
}

/* Writes `data` to the test's session file and opens a reader on it. */
static jsonl_reader *open_with(void **state, const char *data, size_t len)
{
    char *path = lc_asprintf("%s/s.jsonl", (char *)*state);
    char *err = NULL;
    assert_int_equal(lc_write_atomic(path, data, len, 0600, &err), LC_OK);
    jsonl_reader *r = NULL;
    assert_int_equal(jsonl_open(path, &r, &err), LC_OK);
    assert_null(err);
    free(path);
    return r;
}

static void expect_line(jsonl_reader *r, const char *want, size_t want_lineno)
{
    const char *line = NULL;
    size_t len = 0, lineno = 0;
    assert_int_equal(jsonl_next(r, &line, &len, &lineno), LC_OK);
    assert_int_equal(len, strlen(want));
    assert_string_equal(line, want);
    assert_int_equal(lineno, want_lineno);
}

static void expect_end(jsonl_reader *r)
{
    const char *line = NULL;
    size_t len = 0;
    assert_int_equal(jsonl_next(r, &line, &len, NULL), LC_NOTFOUND);
    assert_null(jsonl_error(r));
}

/* `d` opened: {"a":1} on line la, {"b":2} on line lb, then the end. */
static jsonl_reader *expect_a_then_b(void **state, const char *d, size_t la, size_t lb)
{
    jsonl_reader *r = open_with(state, d, strlen(d));
    expect_line(r, "{\"a\":1}", la);
    expect_line(r, "{\"b\":2}", lb);
    expect_end(r);
    return r;
}

static void test_splits_lines_and_numbers_them(void **state)
{
    const char *d = "{\"a\":1}\n{\"b\":2}\n";
    jsonl_reader *r = expect_a_then_b(state, d, 1, 2);
    assert_int_equal(jsonl_offset(r), (long long)strlen(d));
    jsonl_close(r);
}

static void test_crlf_line_endings_are_stripped(void **state)
{
    jsonl_close(expect_a_then_b(state, "{\"a\":1}\r\n{\"b\":2}\r\n", 1, 2));
}

static void test_final_line_without_newline_is_returned_and_marked_incomplete(void **state)
{
    const char *d = "{\"a\":1}\n{\"b\":";
    jsonl_reader *r = open_with(state, d, strlen(d));
    expect_line(r, "{\"a\":1}", 1);
    assert_true(jsonl_last_complete(r));
    expect_line(r, "{\"b\":", 2);
    assert_false(jsonl_last_complete(r));
    expect_end(r);
    jsonl_close(r);
}

static void test_blank_lines_are_skipped_but_counted(void **state)
{
    jsonl_close(expect_a_then_b(state, "\n{\"a\":1}\n  \r\n\t\n{\"b\":2}\n\n", 2, 5));
}

static void test_empty_file_has_no_lines(void **state)
{
    jsonl_reader *r = open_with(state, "", 0);
    expect_end(r);
    assert_int_equal(jsonl_offset(r), 0);
    jsonl_close(r);
}

static void test_lines_far_longer_than_any_buffer_come_back_whole(void **state)
{
    size_t n = 3 * 1000 * 1000;
    char *d = malloc(n + 16);
    memcpy(d, "{\"t\":\"", 6);
    memset(d + 6, 'x', n);
    memcpy(d + 6 + n, "\"}\nz\n", 5);
    jsonl_reader *r = open_with(state, d, n + 11);
    const char *line = NULL;
    size_t len = 0, lineno = 0;
    assert_int_equal(jsonl_next(r, &line, &len, &lineno), LC_OK);
    assert_int_equal(len, n + 8);
    assert_memory_equal(line, d, n + 8);
    assert_int_equal(line[len], '\0');
    expect_line(r, "z", 2);
    expect_end(r);
    jsonl_close(r);
    free(d);
}

static void test_embedded_nul_is_kept_in_the_length(void **state)
{
    jsonl_reader *r = open_with(state, "a\0b\nc\n", 6);
    const char *line = NULL;
    size_t len = 0;
    assert_int_equal(jsonl_next(r, &line, &len, NULL), LC_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(line, "a\0b", 3);
    jsonl_close(r);
}

static void test_open_at_offset_reads_only_appended_lines(void **state)
{
    const char *d = "{\"a\":1}\n{\"b\":2}\n";
    jsonl_reader *r = open_with(state, d, strlen(d));
    expect_line(r, "{\"a\":1}", 1);
    long long off = jsonl_offset(r);
    assert_int_equal(off, 8);
    jsonl_close(r);

    char *path = lc_asprintf("%s/s.jsonl", (char *)*state);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs("{\"c\":3}\n", f);
    fclose(f);
    char *err = NULL;
    assert_int_equal(jsonl_open_at(path, off, &r, &err), LC_OK);
    expect_line(r, "{\"b\":2}", 1);
    expect_line(r, "{\"c\":3}", 2);
    expect_end(r);
    assert_int_equal(jsonl_offset(r), 24);
    jsonl_close(r);
    free(path);
}

static void test_missing_file_is_notfound_with_reason(void **state)
{
    char *path = lc_asprintf("%s/absent.jsonl", (char *)*state);
    jsonl_reader *r = (jsonl_reader *)1;
    char *err = NULL;
    assert_int_equal(jsonl_open(path, &r, &err), LC_NOTFOUND);
    assert_null(r);
    expect_has(err, "absent.jsonl");
    free(err);
    free(path);
    jsonl_close(NULL);
}

static void test_reading_a_folder_reports_an_error(void **state)
{
    jsonl_reader *r = NULL;
    char *err = NULL;
    /* fopen succeeds on a folder on Linux; the first read fails with EISDIR. */
    int rc = jsonl_open(*state, &r, &err);
    if (rc == LC_OK) {
        const char *line;
        size_t len;
        assert_int_equal(jsonl_next(r, &line, &len, NULL), LC_ERR);
        assert_non_null(jsonl_error(r));
        jsonl_close(r);
    } else {
        assert_int_equal(rc, LC_ERR);
        assert_non_null(err);
        free(err);
    }
}

/* A line past JSONL_LINE_MAX (a hole of a sparse file) comes back cut at the bound and
 * marked, the reader's offset past its newline, and the next line whole. */
static void test_a_line_past_the_bound_is_cut_and_the_next_read_whole(void **state)
{
    char *path = lc_asprintf("%s/s.jsonl", (char *)*state);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"a\":1}\n", f);
    long long hole = (long long)JSONL_LINE_MAX + 4096;
    assert_int_equal(fseeko(f, (off_t)(8 + hole), SEEK_SET), 0);
    fputs("\n{\"b\":2}\n", f);
    fclose(f);
    jsonl_reader *r = NULL;
    assert_int_equal(jsonl_open(path, &r, NULL), LC_OK);
    expect_line(r, "{\"a\":1}", 1);
    assert_int_equal(jsonl_clipped(r), 0);
    const char *line = NULL;
    size_t len = 0, lineno = 0;
    assert_int_equal(jsonl_next(r, &line, &len, &lineno), LC_OK);
    assert_int_equal(len, JSONL_LINE_MAX);
    assert_int_equal(lineno, 2);
    assert_int_equal(jsonl_clipped(r), 1);
    assert_int_equal(jsonl_last_complete(r), 1);
    assert_int_equal(jsonl_offset(r), 8 + hole + 1);
    expect_line(r, "{\"b\":2}", 3);
    assert_int_equal(jsonl_clipped(r), 0);
    expect_end(r);
    jsonl_close(r);
    free(path);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, make_file_path, drop_file_path)
    const struct CMUnitTest tests[] = {
        T(test_splits_lines_and_numbers_them),
        T(test_crlf_line_endings_are_stripped),
        T(test_final_line_without_newline_is_returned_and_marked_incomplete),
        T(test_blank_lines_are_skipped_but_counted),
        T(test_empty_file_has_no_lines),
        T(test_lines_far_longer_than_any_buffer_come_back_whole),
        T(test_embedded_nul_is_kept_in_the_length),
        T(test_open_at_offset_reads_only_appended_lines),
        T(test_missing_file_is_notfound_with_reason),
        T(test_reading_a_folder_reports_an_error),
        T(test_a_line_past_the_bound_is_cut_and_the_next_read_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
