/*
 * project.h -- the projection the model sees: which prefix of the raw messages (past the
 * live-context anchor) is replaced by the pointer block of the DAG frontier.
 *
 * Owns the prepared cuts (the pointer message rendered once, between turns, and stored
 * byte for byte), the pin (which cut is applied and at what occupancy), the per-request
 * plan (keep the pin: pure appends; apply a newer cut at the swap line when nothing is
 * pinned, or once past the re-cut line, monotonically and only to a smaller shape) and
 * the items of a request. The plan and the items are pure computations over what the
 * caller holds in memory, so the `context` hook reads nothing and writes nothing.
 */
#ifndef LC_PROJECT_H
#define LC_PROJECT_H

#include <stddef.h>
#include <stdint.h>

#include "dag.h"
#include "store.h"
#include "zones.h"

/* A prepared cut: the pointer message replaces every raw message up to and including
 * anchor_entry. */
typedef struct project_cut {
    int64_t id;
    char *anchor_entry;
    int64_t anchor_ordinal;
    char *message;        /* the pointer AgentMessage JSON, exactly as sent */
    size_t message_len;
    long tokens;          /* project_tokens(message_len) */
    size_t n_nodes;
    int stubbed;          /* nodes served as stubs */
} project_cut;
void project_cut_free(project_cut *c);

/* The token measure of the hot path: ceil(bytes / 4) of a message's JSON. It reads no
 * text, and it is never below the estimate of the text inside the JSON. */
long project_tokens(size_t json_len);

/* Render frontier nodes into one pointer message within `budget` tokens: every node
 * keeps its header; nodes are served at their richest tier that fits, and under pressure
 * the oldest nodes drop first to the primary text, then to a stub (header, a 200-character
 * slice, a note naming lcm_describe). No node is ever left out. *message malloc'd. */
int project_render(const dag_node *nodes, size_t n, long budget, char **message, int *stubbed,
                   char **err);
/* The same block as plain text (the blocking regime's compaction summary). */
int project_render_text(const dag_node *nodes, size_t n, long budget, char **text, int *stubbed,
                        char **err);

/* Render the current frontier and store it as a new cut (its anchor is the newest entry
 * the frontier covers). LC_NOTFOUND when the DAG is empty. Skips the write (returning the
 * newest cut's id) when the newest cut already has the same anchor and bytes. */
int project_prepare_cut(store *s, long budget, int64_t *cut_id, char **err);
int project_get_cut(store *s, int64_t id, project_cut *out, char **err);
/* The newest prepared cut; LC_NOTFOUND when there is none. */
int project_latest_cut(store *s, project_cut *out, char **err);
/* The newest cut anchored on the active branch (its anchor message is not removed). */
int project_branch_cut(store *s, project_cut *out, char **err);

/* The pin's fields are the store's row (store_pin): cut_id (0 = nothing swapped),
 * applied_tokens (occupancy when it was applied), window (what it was measured against). */
typedef store_pin project_pin;
/* LC_NOTFOUND (and a zeroed pin) when nothing is pinned. */
int project_pin_get(store *s, project_pin *out, char **err);
int project_pin_set(store *s, const project_pin *pin, char **err);
int project_pin_clear(store *s, char **err);
/* "pinned at cut 3 (applied at 71%)" or "none" (malloc'd). */
char *project_pin_describe(const project_pin *pin);

/* One message of the request as the plan sees it (borrowed). */
typedef struct project_msg {
    const char *entry_id;
    size_t json_len;
} project_msg;

typedef enum project_action {
    PROJECT_KEEP = 0,   /* the pinned cut (or the raw conversation) stays */
    PROJECT_SWAP,       /* nothing was pinned: the candidate is applied at the swap line */
    PROJECT_RECUT,      /* past the re-cut line: the candidate replaces the pin */
    PROJECT_DROP        /* the pinned anchor is gone (host compaction, tree move) */
} project_action;
const char *project_action_name(project_action a);

typedef struct project_plan {
    project_action action;
    const project_cut *use;   /* the cut this request is built with (NULL: raw) */
    size_t anchor_pos;        /* index of use->anchor_entry in the messages */
    long occupancy;           /* tokens of the request as built */
    long current_tokens;      /* tokens with the pin as it was (the occupancy a cut is applied at) */
    long raw_tokens;          /* tokens of the raw request */
    zones_zone zone;          /* of the occupancy before any change */
} project_plan;

/* Decide one request. messages[0, clm_anchor) belong to a live-context revision and are
 * never touched; anchors are searched past it, starting at *hint (updated), so a pinned
 * request costs O(1) lookups. */
void project_decide(const project_msg *msgs, size_t n, size_t clm_anchor,
                    const project_cut *pinned, const project_cut *candidate,
                    const zones_resolved *z, size_t *hint, project_plan *out);

/* The request's items: (index >= 0, NULL) reuses input `index`, (-1, json) is the pointer
 * message (borrowed from the cut). *items malloc'd; NULL/0 when the plan uses no cut. */
typedef struct project_item {
    int64_t index;
    const char *json;
} project_item;
int project_items(size_t n, size_t clm_anchor, const project_plan *plan, project_item **items,
                  size_t *n_items, char **err);

#endif
