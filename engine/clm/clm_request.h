/*
 * clm_request.h -- one request of the live context (docs/DESIGN.md §3, §5.3): the revision
 * in force ++ LCM's projection of the raw suffix, the observation cap (clm_eff), the
 * overflow guard, the one-call notices, and the mirror rendered in O(new). Works on the
 * session's state (clm_live.h) and hands back items in engine types.
 */
#ifndef LC_CLM_REQUEST_H
#define LC_CLM_REQUEST_H

#include "clm_live.h"

/* An item of the composed request: raw input `raw` (>= 0), or new JSON `json`/`len`
 * (raw < 0; borrowed from the result). */
typedef struct clm_request_item {
    long raw;
    const char *json;
    size_t len;
} clm_request_item;

typedef struct clm_request_result {
    int changed;               /* 0: send the input as it came */
    size_t n;                  /* items (clm_request_at), then the notice when not NULL */
    char *notice;              /* a one-call notice message (JSON, owned) */
    clm_guard_result gr;       /* owns the guard's notes the items may point at */
    const clm_live *g;         /* what the items are read from (borrowed, as `in`) */
    const clm_input *in;
} clm_request_result;

/* Compose the request for raw input `in`: the revision in force ++ `suffix` (LCM's
 * projection of the raw suffix past clm_live_anchor, NULL: the raw suffix), capped,
 * guarded and rendered to the mirror. `system_prompt` may be NULL. */
int clm_request_compose(clm_live *g, const clm_input *in, const char *system_prompt,
                        const clm_eff_suffix *suffix, clm_request_result *out, char **err);
void clm_request_result_free(clm_request_result *r);
/* Item i < r->n of a changed request, read in place (no copy of the list is made). */
clm_request_item clm_request_at(const clm_request_result *r, size_t i);

#endif
