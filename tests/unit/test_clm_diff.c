/*
 * test_clm_diff.c -- the side-by-side line diff of /clm edits: identical texts claim no
 * difference, a changed line is paired with word emphasis, removed and added lines are
 * one-sided, long unchanged runs fold, and a bounded display says it was truncated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clm_diff.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

static void test_identical_texts_report_no_difference(void **state)
{
    (void)state;
    char *d = clm_diff_side_by_side("a\nb\nc", "a\nb\nc", NULL);
    assert_string_equal(d, "(no difference)\n");
    free(d);
}

static void test_changed_line_is_paired_with_word_emphasis(void **state)
{
    (void)state;
    clm_diff_opts o = {.width = 80};
    char *d = clm_diff_side_by_side("keep\nthe value is 41\nend", "keep\nthe value is 42\nend", &o);
    expect_has(d, "the value is [-41-]", "| the value is {+42+}", "keep");
    free(d);
}

static void test_removed_and_added_lines_are_one_sided(void **state)
{
    (void)state;
    char *d = clm_diff_side_by_side("a\nGONE\nb", "a\nb\nNEW", NULL);
    const char *gone = strstr(d, "GONE");
    assert_non_null(gone);
    assert_non_null(strstr(gone, " <"));
    assert_non_null(strstr(d, " > NEW"));
    free(d);
}

static void test_long_unchanged_runs_fold_to_context(void **state)
{
    (void)state;
    sbuf a = {0}, b = {0};
    for (int i = 0; i < 50; i++) {
        sb_printf(&a, "line %d\n", i);
        sb_printf(&b, "line %d\n", i == 25 ? 999 : i);
    }
    char *d = clm_diff_side_by_side(a.p, b.p, NULL);
    expect_has(d, "... 22 unchanged lines ...", "... 21 unchanged lines ...", "line 24");
    assert_null(strstr(d, "line 10\n"));
    free(d);
    sb_free(&a);
    sb_free(&b);
}

static void test_bounded_display_says_it_was_truncated(void **state)
{
    (void)state;
    sbuf a = {0}, b = {0};
    for (int i = 0; i < 100; i++) {
        sb_printf(&a, "old %d\n", i);
        sb_printf(&b, "new %d\n", i);
    }
    clm_diff_opts o = {.max_rows = 10};
    char *d = clm_diff_side_by_side(a.p, b.p, &o);
    size_t rows = 0;
    for (const char *c = d; *c; c++) rows += *c == '\n';
    assert_int_equal(rows, 11);
    expect_has(d, "[diff preview truncated at 10 rows", "100 -> 100 lines");
    free(d);
    sb_free(&a);
    sb_free(&b);
}

TEST_MAIN(
    cmocka_unit_test(test_identical_texts_report_no_difference),
    cmocka_unit_test(test_changed_line_is_paired_with_word_emphasis),
    cmocka_unit_test(test_removed_and_added_lines_are_one_sided),
    cmocka_unit_test(test_long_unchanged_runs_fold_to_context),
    cmocka_unit_test(test_bounded_display_says_it_was_truncated),
)
