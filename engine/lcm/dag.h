/*
 * dag.h -- the summary DAG of LCM: the compaction pass (leaves over the messages no leaf
 * covers yet, then condensation of the frontier one depth at a time), the frontier the
 * projection renders, the node header the model sees, coverage checks, the DAG's event
 * rows, and heal (re-deriving mechanical nodes with a model).
 *
 * Owns the writes to `summaries` (through store_summary_add: one transaction per node, so
 * a pass killed at any point leaves a consistent store the next pass resumes), the
 * `runs` rows of its passes and the `lcm_events` rows. Runs between turns or on a worker
 * with its own connection -- never inside the `context` hook.
 */
#ifndef LC_DAG_H
#define LC_DAG_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "summarize.h"

#define DAG_MAX_FANOUT 8   /* children of one condensed node */
#define DAG_MAX_DEPTH 8    /* structural: 8^8 leaf chunks; asserted */
#define DAG_STUB_CHARS 200 /* the slice a stubbed pointer keeps */

typedef struct dag_opts {
    long keep_recent_tokens;   /* the fresh tail, never summarized (<= 0: none) */
    long leaf_chunk_tokens;    /* source tokens per leaf (<= 0: 20,000) */
    long summary_tokens;       /* target per node (<= 0: 1,200) */
    long block_budget;         /* condense while the pointer block is over this (<= 0: never) */
    long max_source_tokens;    /* source tokens one pass may read (asyncChunkTokens); 0 = no cap */
    int flush;                 /* also summarize the final partial chunk before the boundary */
    int64_t before_ordinal;    /* > 0: the boundary is this ordinal instead of the fresh tail */
    int max_nodes;             /* stop after this many new nodes; 0 = no limit */
    /* Asked before every node (NULL: always go on). 0 stops the pass where it is, with
     * what it committed kept: a pass deadline, results that no longer apply, shutdown. */
    int (*keep_going)(void *ud);
    void *keep_going_ud;
    /* A model call that returns LC_CANCELLED (its caller gave it up) ends the pass the
     * same way: dag_pass returns LC_CANCELLED with stats.stopped, and nothing of that node
     * is written. */
} dag_opts;

typedef struct dag_stats {
    int leaves;                /* leaves written by this pass */
    int64_t messages;          /* the messages those leaves cover */
    int condensed;             /* condensed nodes written */
    long source_tokens;        /* source tokens the leaves read */
    long summary_tokens;       /* tokens of the nodes written */
    int stalled;               /* the block stayed over budget: condensation-stalled recorded */
    int capped;                /* stopped at max_source_tokens or max_nodes with work left */
    int stopped;               /* keep_going said stop with work left */
    int conflicts;             /* a node another pass had made first (not written) */
    long block_tokens;         /* the pointer block's tokens after the pass (-1: not measured,
                                  the pass ended at max_nodes before condensing) */
    int64_t boundary_ordinal;  /* messages at or past this ordinal were not eligible */
} dag_stats;

/* One pass. A node that no longer applies when it is written (another pass covered its
 * messages or children first, store_summary_add's LC_BUSY) ends the pass without error
 * (stats.conflicts); the next pass starts from what is committed. Leaves: eligible messages (not removed, not summaries of a host compaction,
 * ordinal before the boundary) that no leaf covers, in ordinal order, in chunks of
 * leaf_chunk_tokens that never end right before a toolResult (a tool group stays in one
 * leaf); a final partial chunk only with `flush`. Then, while the block is over budget,
 * the oldest run of adjacent same-depth frontier nodes at the shallowest depth that has
 * one (at most DAG_MAX_FANOUT) becomes one node a depth up. */
int dag_pass(store *s, summ_ctx *sc, const dag_opts *o, dag_stats *out, char **err);

/* A node as the projection and heal read it (strings malloc'd). */
typedef struct dag_node {
    int64_t id;
    int depth;
    int leaf;
    char *text;        /* primary tier */
    char *rich;        /* the thorough tier, or NULL */
    long tokens;
    int64_t first_ordinal, last_ordinal;
    char *first_entry, *last_entry;
    int64_t entry_count;
} dag_node;
void dag_nodes_free(dag_node *v, size_t n);

/* The frontier: nodes no other node has as a child, in span order. */
int dag_frontier(store *s, dag_node **out, size_t *n, char **err);

/* "[lcm:summary #12 depth 0 span e12..e40]" (malloc'd). */
char *dag_header(const dag_node *n);

/* The tokens a node costs in the pointer block at its primary tier (header + text). */
long dag_node_block_tokens(const dag_node *n);

/* Messages that are eligible for the DAG (see dag_pass) with ordinal < before_ordinal
 * and that no leaf covers. before_ordinal <= 0 means all of them. */
int dag_uncovered(store *s, int64_t before_ordinal, int64_t *count, char **err);

/* The ordinal where the fresh tail of keep_recent_tokens starts (moved back so it never
 * starts at a toolResult); one past the newest message when keep_recent <= 0. */
int dag_fresh_boundary(store *s, long keep_recent_tokens, int64_t *ordinal, char **err);

/* Record an event row (kind, data JSON or NULL). */
int dag_event(store *s, const char *kind, const char *data_json, char **err);
/* How many events of `kind` are recorded. */
int64_t dag_event_count(store *s, const char *kind);

/* ---- heal ---------------------------------------------------------------------------- */

typedef struct dag_heal_opts {
    int apply;                 /* 0: dry run, no model call */
    int max_nodes;             /* 0 = no limit */
    long tokens_per_heal;      /* summarizerTokensPerHeal; 0 = no cap */
    long heal_source_tokens;   /* one map window (lcm_config_heal_source_tokens) */
    long summary_tokens;       /* the node target */
} dag_heal_opts;

typedef struct dag_heal_report {
    int candidates;            /* mechanical ([lcm:truncated]) nodes found */
    int healed;                /* replaced by a model-made text */
    int unchanged;             /* the model's text was not an improvement */
    int blocked;               /* source beyond eight windows: no call */
    int budget_stopped;        /* the heal budget ran out */
    long billed_tokens;
    char *text;                /* one line per node and a total line (malloc'd) */
} dag_heal_report;
void dag_heal_report_free(dag_heal_report *r);

/* Find mechanical nodes and, with apply, re-derive each within the budgets: a source that
 * fits one window is summarized once; up to eight windows are mapped and reduced once;
 * beyond eight windows the node is blocked without a model call. A node is replaced only
 * by a text that is not itself truncation. Pinned cuts keep their bytes; the next cut
 * renders the healed text. Records a `heal` event. */
int dag_heal(store *s, summ_ctx *sc, const dag_heal_opts *o, dag_heal_report *out,
             char **err);

#endif
