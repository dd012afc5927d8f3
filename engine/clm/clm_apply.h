/*
 * clm_apply.h -- turning an edited mirror into the next effective context (docs/DESIGN.md
 * §3.2-§3.5): block states to messages (reuse, edit, role lowering, insertion,
 * removal, outside text), tool-call group repair, and the accept/reject decision with the
 * notice text the model reads next. Owns the outcome it returns.
 */
#ifndef LC_CLM_APPLY_H
#define LC_CLM_APPLY_H

#include <stddef.h>

#include "clm_doc.h"

/* One message of the new effective context. */
typedef struct clm_item {
    long src;     /* >= 0: view->msgs[src] reused unchanged (its exact bytes) */
    char *json;   /* src < 0: a new AgentMessage JSON text (owned) */
} clm_item;

typedef enum clm_trace_kind {
    CLM_TRACE_KEPT = 0,
    CLM_TRACE_EDITED,
    CLM_TRACE_REMOVED,
    CLM_TRACE_INSERTED
} clm_trace_kind;

/* One row of the per-message edit trace persisted with a revision. */
typedef struct clm_trace {
    clm_trace_kind kind;
    long src;                   /* view index, -1 for an insertion */
    long dst;                   /* index in the new context, -1 for a removal */
    char id[CLM_ID_MAX];
    char label[CLM_LABEL_MAX];  /* role label after the edit (before, for removals) */
    const char *why;            /* static detail: "body edited", "tool group flattened" */
} clm_trace;

typedef struct clm_outcome {
    int accepted;
    int rewrite;                /* a whole-context rewrite (no block headers) */
    char *notice;               /* text for the model's next request (owned) */
    char *reason;               /* on rejection: the problem alone (owned) */
    clm_item *items;            /* on acceptance: the new context */
    size_t n_items;
    clm_trace *trace;
    size_t n_trace;
    size_t tokens_before;       /* estimate of the rendered context */
    size_t tokens_after;        /* estimate of the new context */
} clm_outcome;

/* Parse, validate and apply an edited mirror against the view it was rendered from.
 * LC_OK whether accepted or rejected (see out->accepted, out->notice); a failure status
 * only for out-of-memory. */
int clm_edit(const clm_view *v, const char *text, size_t len, clm_outcome *out, char **err);
void clm_outcome_free(clm_outcome *out);

/* The JSON text of an item (borrowed from the view or the item). */
const char *clm_item_json(const clm_view *v, const clm_item *it, size_t *len);

/* The lowered form of authored text: a `custom` message that reaches the provider as
 * user-role text and renders back under `label`. malloc'd JSON. */
char *clm_lower_custom(const char *label, const char *text, size_t text_len, double timestamp);

#endif
