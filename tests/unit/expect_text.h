/*
 * expect_text.h -- checks on the text an engine call returned: expect_has(text, ...) fails
 * naming the first of the listed pieces the text lacks, expect_lacks(text, ...) the first
 * it holds. One call states what a report, notice or rendering must (not) say.
 */
#ifndef TEST_EXPECT_TEXT_H
#define TEST_EXPECT_TEXT_H

#include <string.h>

static inline void expect_text_(const char *text, const char *const *pieces, int present)
{
    assert_non_null(text);
    for (; *pieces; pieces++)
        if ((strstr(text, *pieces) != NULL) != present)
            fail_msg("expected %s\"%s\" in: %s", present ? "" : "no ", *pieces, text);
}

#define expect_has(text, ...) expect_text_((text), (const char *const[]){__VA_ARGS__, NULL}, 1)
#define expect_lacks(text, ...) expect_text_((text), (const char *const[]){__VA_ARGS__, NULL}, 0)

#endif
