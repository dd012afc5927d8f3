/*
 * clm_validate.h -- the acceptance rules of an edited mirror (docs/DESIGN.md §3.5, §3.6):
 * metadata and nonce freshness, block ids, the legality of the lowered message sequence,
 * and the extra rules of conservative mode. Each check returns 0 when it passes, or 1
 * with *reason set to a malloc'd sentence that names the problem for the model.
 */
#ifndef LC_CLM_VALIDATE_H
#define LC_CLM_VALIDATE_H

#include <stddef.h>

#include "clm_apply.h"
#include "clm_doc.h"

/* Rules 1 and 2 (and the conservative ban on insertions / outside text): structural
 * problems, metadata line, nonces, unknown and duplicate ids. On success src_of_block[i]
 * (caller-sized n_blocks) holds each block's view index, or -1 for a new-* block.
 * Returns -1 on out-of-memory. */
int clm_validate_document(const clm_view *v, const clm_doc *d, long *src_of_block,
                          char **reason);

/* Rule 3: tool results directly follow the assistant that made their calls (structured
 * items only; lowered ones are plain text). item_line[i] is the mirror line of item i's
 * block (0 when it has none). The context must also not be empty. */
int clm_validate_sequence(const clm_view *v, const clm_item *items, size_t n,
                          const size_t *item_line, char **reason);

/* Conservative mode: source order kept, first/latest user turns untouched, smaller. */
int clm_validate_conservative(const clm_view *v, const clm_item *items, size_t n,
                              const size_t *item_line, size_t tokens_before,
                              size_t tokens_after, char **reason);

/* The sentence that quotes the exact metadata line expected (malloc'd). */
char *clm_expected_first_line(const clm_view *v);

#endif
