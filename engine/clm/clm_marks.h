/*
 * clm_marks.h -- the live-context facts of one branch kept incrementally (docs/DESIGN.md
 * §4.4), so that a tree move costs O(distance moved) instead of O(branch): the ordered stack
 * of the branch's state, settings and compaction entries ("marks"), what they say (the
 * revision in force, the newest settings, the switch, the counters), and the walk from an
 * old and a new leaf to their common ancestor. Owns the marks and the walk results.
 */
#ifndef LC_CLM_MARKS_H
#define LC_CLM_MARKS_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef enum clm_mark_kind {
    CLM_MARK_NONE = 0,
    CLM_MARK_ACCEPT,       /* a full payload: a revision */
    CLM_MARK_RESET,        /* back to the raw transcript */
    CLM_MARK_REJECT,
    CLM_MARK_TOGGLE,
    CLM_MARK_SETTINGS,
    CLM_MARK_COMPACTION,   /* the host's compaction: a new baseline */
    CLM_MARK_MALFORMED,    /* a state entry that cannot be read */
    CLM_MARK_OTHER         /* a state entry of a kind this version does not know */
} clm_mark_kind;

typedef struct clm_mark {
    char *id;              /* entry id (owned; never NULL once pushed) */
    clm_mark_kind kind;
    long revision;         /* -1 when the entry names none */
    int enabled;           /* CLM_MARK_TOGGLE */
} clm_mark;

typedef struct clm_marks {
    clm_mark *v;           /* root to leaf */
    size_t n, cap;
} clm_marks;

/* Is this session entry a mark? Fills *out (kind, revision, enabled; id left NULL) and
 * returns its kind, or CLM_MARK_NONE. Reads like clm_branch_reconstruct does. */
clm_mark_kind clm_mark_classify(const cJSON *entry, clm_mark *out);
int clm_marks_push(clm_marks *m, const char *id, clm_mark_kind kind, long revision,
                   int enabled);
/* Classify and push in one step; LC_OK also when the entry is no mark. */
int clm_marks_push_entry(clm_marks *m, const cJSON *entry);
void clm_marks_free(clm_marks *m);

/* What the marks say, exactly as clm_branch_reconstruct would over the whole branch. */
typedef struct clm_marks_view {
    const clm_mark *in_force;   /* the accepted revision in force, or NULL */
    const clm_mark *settings;   /* the newest settings entry, or NULL */
    long last_revision;
    int enabled;
    unsigned accepted, rejected;
    size_t malformed;
    char why[160];              /* why there is no revision in force */
} clm_marks_view;

void clm_marks_summarize(const clm_marks *m, clm_marks_view *out);

/* ---- a tree move ---- */

/* Fetch one entry by id, parsed (caller deletes); LC_NOTFOUND when absent. */
typedef int (*clm_fetch_fn)(void *ud, const char *id, cJSON **out, char **err);

typedef struct clm_tree_move {
    cJSON **came;          /* entries of the new branch past the common ancestor, oldest first */
    size_t n_came;
    char *ancestor;        /* the common ancestor's id, NULL when the branches share none */
    void *left;            /* ids of the old branch past the ancestor (a set) */
    size_t n_left;
} clm_tree_move;

/* Walk up from both leaves in lock step until they meet: O(distance moved) fetches.
 * A NULL leaf is the empty branch (before the first entry). */
int clm_tree_diff(const char *old_leaf, const char *new_leaf, clm_fetch_fn fetch, void *ud,
                  clm_tree_move *out, char **err);
/* Did `id` belong to the old branch only? */
int clm_tree_left(const clm_tree_move *mv, const char *id);
void clm_tree_move_free(clm_tree_move *mv);

/* Drop the newest marks that left the branch with `mv`, then push those that came.
 * Returns the number of marks popped plus pushed (0: nothing branch-local changed). */
int clm_marks_move(clm_marks *m, const clm_tree_move *mv, size_t *changed);
/* The provider's count of the newest request on the branch after the move `mv`: usually a
 * message of the new path; otherwise a few entries (at most CLM_USAGE_WALK) above the
 * common ancestor, fetched. 0 when unknown, which only delays the observed-size reminder. */
#define CLM_USAGE_WALK 64
size_t clm_marks_usage_after_move(const clm_tree_move *mv, clm_fetch_fn fetch, void *ud);

#endif
