/*
 * store_common.h -- what both store backends (store_sqlite*.c, store_pg*.c) do alike
 * around their SQL: the step of a walk after each visit, the DAG's progress numbers read
 * from meta (and computed once when a store lacks them), the row buffers of an export and of
 * a vector walk, and the SQL of the doctor's DAG checks. Backend-neutral: it reaches a store only through
 * store.h; only the backends include it.
 */
#ifndef LC_STORE_COMMON_H
#define LC_STORE_COMMON_H

#include <stdint.h>

#include "store.h"

/* The walk's next step after a visitor returned `v` (store.h's visitor protocol): 1 to go
 * on; 0 to end the walk with *rc its status (LC_OK after STORE_VISIT_STOP, setting
 * *stopped when it is not NULL; the visitor's error otherwise). */
int store_common_visit_next(int v, int *rc, int *stopped);

/* A vector walk's row buffer made room for `dim` floats (*buf grows, *cap counts them):
 * LC_OK, or LC_NOMEM with *err set. */
int store_common_vec_room(float **buf, int *cap, int dim, char **err);

/* Where an ingest of msgs[0..n) begins: *first_new is the index after the newest entry
 * already stored (a branch only grows at its leaf, so all before it is stored too; n when
 * all is), *ordinal the next ordinal after it (-1 when none of msgs is stored), and
 * stats->examined counts the entries looked at. `last_entry`/`last_ordinal` are the newest
 * entry this store ingested (NULL: none), which needs no lookup; `lookup` gives a stored
 * entry's ordinal, -1 when it is not stored, -2 when the store could not be read (then
 * this returns LC_ERR, with *err as lookup set it). */
int store_common_ingest_from(store *s, const store_msg *msgs, size_t n, const char *last_entry, int64_t last_ordinal,
                             int64_t (*lookup)(store *s, const char *entry_id, char **err), size_t *first_new,
                             int64_t *ordinal, store_ingest_stats *stats, char **err);

/* Remember `newest` (NULL: nothing stored), the last entry an ingest stored, at `ordinal`,
 * in the backend's *last_entry / *last_ordinal for store_common_ingest_from. */
void store_common_ingest_done(char **last_entry, int64_t *last_ordinal, const char *newest, int64_t ordinal);

/* 1 with *out when meta holds `key` as an integer; 0 when it does not. */
int store_common_meta_int(store *s, const char *key, int64_t *out);

/* The DAG's progress numbers (store_dag_progress) from meta. A store without them gets
 * them from `recompute` (the backend's one full scan) unless it is `read_only`, which
 * reports "everything may be uncovered" (0, INT64_MAX). */
int store_common_dag_progress(store *s, int read_only, int (*recompute)(store *s, char **err), int64_t *watermark,
                              int64_t *pending, char **err);

/* A read's last step: LC_OK when the copies a cut (a message row) must have were made;
 * otherwise the read is freed and LC_NOMEM. */
int store_common_cut_read(store_cut *c, char **err);
int store_common_row_read(store_row *r, char **err);

/* The column names and values of an export's row, for `ncol` columns (the caller frees
 * both, also on failure). LC_OK or LC_NOMEM. */
int store_common_dump_buffers(int ncol, const char ***names, store_value **vals, char **err);

/* The doctor's DAG checks: SQL both dialects read alike, so both backends run the same text.
 * Each selects one column, the id of every summary that fails it. */
/* Summaries whose span names an entry the store lacks. */
#define STORE_COMMON_BAD_SPANS_SQL                                                                              \
    "SELECT DISTINCT sm.summary_id FROM summary_messages sm"                                                    \
    " WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.entry_id = sm.entry_id)"                               \
    " UNION SELECT sp.summary_id FROM summary_spans sp"                                                         \
    " WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.entry_id = sp.first_entry)"                            \
    "    OR NOT EXISTS (SELECT 1 FROM messages m WHERE m.entry_id = sp.last_entry)"
/* Summaries whose child is gone. */
#define STORE_COMMON_BAD_CHILDREN_SQL                                                                           \
    "SELECT DISTINCT c.parent_id FROM summary_children c"                                                       \
    " WHERE NOT EXISTS (SELECT 1 FROM summaries s WHERE s.id = c.child_id)"
/* Summaries out of the DAG's shape: a depth outside 0..8, no span, a leaf that has
 * children or no messages, a condensed node without children or not above them all. */
_Static_assert(STORE_MAX_DEPTH == 8, "the shape check's literal depth cap");
#define STORE_COMMON_BAD_SHAPE_SQL                                                                              \
    "SELECT s.id FROM summaries s WHERE s.depth < 0 OR s.depth > 8"                                             \
    " OR NOT EXISTS (SELECT 1 FROM summary_spans sp WHERE sp.summary_id = s.id)"                                \
    " OR (s.kind = 'leaf' AND (s.depth <> 0"                                                                    \
    "     OR EXISTS (SELECT 1 FROM summary_children c WHERE c.parent_id = s.id)"                                \
    "     OR NOT EXISTS (SELECT 1 FROM summary_messages m WHERE m.summary_id = s.id)))"                         \
    " OR (s.kind = 'condensed' AND (NOT EXISTS (SELECT 1 FROM summary_children c WHERE c.parent_id = s.id)"     \
    "     OR s.depth <= (SELECT max(k.depth) FROM summary_children c JOIN summaries k ON k.id = c.child_id"     \
    "                    WHERE c.parent_id = s.id)))"
/* The later rows of every group of summaries that share a depth and a span. */
#define STORE_COMMON_DUPLICATES_SQL                                                                             \
    "SELECT sp.summary_id FROM summary_spans sp JOIN summaries s ON s.id = sp.summary_id"                       \
    " WHERE EXISTS (SELECT 1 FROM summary_spans sp2 JOIN summaries s2 ON s2.id = sp2.summary_id"                \
    "   WHERE sp2.first_entry = sp.first_entry AND sp2.last_entry = sp.last_entry"                              \
    "   AND s2.depth = s.depth AND sp2.summary_id < sp.summary_id)"
/* What a prune of the broken drops: every summary a span or child check names and,
 * transitively, every parent that loses a child. */
#define STORE_COMMON_PRUNE_SET_SQL                                                                              \
    "WITH RECURSIVE d(id) AS (" STORE_COMMON_BAD_SPANS_SQL " UNION " STORE_COMMON_BAD_CHILDREN_SQL              \
    " UNION SELECT c.parent_id FROM summary_children c JOIN d ON c.child_id = d.id)"                            \
    " SELECT DISTINCT id FROM d"

#endif
