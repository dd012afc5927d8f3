/*
 * clm_diff.h -- the side-by-side line diff of the /clm edits page (docs/DESIGN.md §5.9):
 * an LCS line diff over the full texts (common prefix and suffix trimmed first), replaced
 * runs paired like `diff -y`, word-level emphasis inside changed pairs, unchanged runs
 * folded to a few lines of context, and a bounded display with an explicit truncation row.
 * Plain text out; owns nothing it does not return.
 */
#ifndef LC_CLM_DIFF_H
#define LC_CLM_DIFF_H

#include <stddef.h>

typedef struct clm_diff_opts {
    size_t width;       /* total columns of a side-by-side row (0: 120) */
    size_t max_rows;    /* rows shown before the truncation row (0: 400) */
    size_t context;     /* unchanged lines kept around a change (0: 3) */
    size_t max_line;    /* characters of one line considered for display (0: 2000) */
} clm_diff_opts;

/* Rows of a side-by-side diff of old -> new, malloc'd, each ending in '\n'. Markers in
 * the middle column: ' ' same, '|' changed, '<' removed, '>' added; changed words are
 * wrapped in [- -] on the left and {+ +} on the right; a folded run shows
 * "... N unchanged lines ...". Identical texts give "(no difference)\n". NULL on OOM. */
char *clm_diff_side_by_side(const char *old_text, const char *new_text, const clm_diff_opts *o);

#endif
