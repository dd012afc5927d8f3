/*
 * clm_eff.h -- the effective context of a request (docs/DESIGN.md §1.1): the revision's
 * messages followed by the raw suffix (or a projection of it), with the observation cap
 * applied, each item carrying its token estimate. Kept across requests, so that a request
 * whose context only grew costs O(new): the items, their running token sums and how many
 * of them equal the previous request's (which the mirror render keeps) are extended, not
 * rebuilt. Owns the item list and copies of projected texts; borrows the rest.
 */
#ifndef LC_CLM_EFF_H
#define LC_CLM_EFF_H

#include <stddef.h>

#include "clm_raw.h"

typedef struct clm_eff {
    const char *json;   /* the text when it is not the raw input's (raw items: NULL) */
    size_t len;
    long raw;           /* input index with exactly these bytes, or -1 */
    long src;           /* raw index it stands for (raw and capped items), else -1 */
    const char *key;    /* entry id of raw messages (borrowed from the raw cache): block ids */
    size_t tokens;
    char *own;          /* a projected text (owned copy; json points at it) */
} clm_eff;

/* The revision in force as the composition sees it; gen changes whenever it does. */
typedef struct clm_eff_rev {
    size_t n;
    char *const *messages;
    const size_t *lens;
    const long *raw;       /* per message: raw index with the same bytes, or -1 */
    const size_t *tokens;
    size_t anchor;         /* raw messages it replaces */
    unsigned long gen;
} clm_eff_rev;

/* A projection of the raw suffix (LCM's): item k is raw input `index` (>= 0) or a new
 * message `json` (index < 0). */
typedef struct clm_eff_suffix {
    size_t n;
    const void *ud;
    void (*get)(const void *ud, size_t k, long *index, const char **json);
} clm_eff_suffix;

typedef struct clm_eff_list {
    clm_eff *items;
    size_t n, cap;
    size_t *sum;           /* sum[i]: tokens of items[0..i) */
    size_t *ncap;          /* ncap[i]: capped items among items[0..i) */
    size_t same;           /* leading items equal to the previous build's */
    /* what the previous build was made of: a build of the same kind only grows */
    int valid, had_suffix;
    unsigned long rev_gen;
    size_t n_rev, anchor, raw_n;
    long cap_chars;
    double cap_head;
} clm_eff_list;

void clm_eff_free(clm_eff_list *l);
/* Compose the request's effective context from the revision (NULL: none), the raw
 * suffix of `in` past the revision's anchor (`suffix` NULL) or its projection, with the
 * observation cap `cap` (0: off). Excluded raw messages are left out. Then l->items[0..n)
 * is the context and l->same tells how many items are unchanged since the previous build.
 * Raw facts come from `raw`, which must have folded `in` in (clm_raw_update). */
int clm_eff_build(clm_eff_list *l, const clm_eff_rev *rev, const clm_eff_suffix *suffix,
                  clm_raw_cache *raw, const clm_input *in, long cap, double head, char **err);
/* The text of item i during the request that built it. */
const char *clm_eff_json(const clm_eff_list *l, size_t i, const clm_input *in, size_t *len);
static inline size_t clm_eff_tokens(const clm_eff_list *l) { return l->n ? l->sum[l->n] : 0; }
static inline size_t clm_eff_capped(const clm_eff_list *l) { return l->n ? l->ncap[l->n] : 0; }

#endif
