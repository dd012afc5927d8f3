/*
 * expect_text.h -- checks on the text an engine call returned: expect_has(text, ...) fails
 * naming the first of the listed pieces the text lacks, expect_lacks(text, ...) the first
 * it holds. One call states what a report, notice or rendering must (not) say.
 */
#ifndef TEST_EXPECT_TEXT_H
#define TEST_EXPECT_TEXT_H

#include <string.h>

/* A failure names the caller's line. */
static inline void expect_text_(const char *file, int line, const char *text,
                                const char *const *pieces, int present)
{
    if (!text) {
        print_error("expected a text, got NULL\n");
        _fail(file, line);
    }
    for (; *pieces; pieces++)
        if ((strstr(text, *pieces) != NULL) != present) {
            print_error("expected %s\"%s\" in: %s\n", present ? "" : "no ", *pieces, text);
            _fail(file, line);
        }
}

#define expect_has(text, ...)                                                                 \
    expect_text_(__FILE__, __LINE__, (text), (const char *const[]){__VA_ARGS__, NULL}, 1)
#define expect_lacks(text, ...)                                                               \
    expect_text_(__FILE__, __LINE__, (text), (const char *const[]){__VA_ARGS__, NULL}, 0)

#endif
