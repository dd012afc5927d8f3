/*
 * store_common.h -- what both store backends (store_sqlite*.c, store_pg*.c) do alike
 * around their SQL: the step of a walk after each visit, the DAG's progress numbers read
 * from meta (and computed once when a store lacks them), and the row buffers of an
 * export. Backend-neutral: it reaches a store only through store.h; only the backends
 * include it.
 */
#ifndef LC_STORE_COMMON_H
#define LC_STORE_COMMON_H

#include <stdint.h>

#include "store.h"

/* The walk's next step after a visitor returned `v` (store.h's visitor protocol): 1 to go
 * on; 0 to end the walk with *rc its status (LC_OK after STORE_VISIT_STOP, setting
 * *stopped when it is not NULL; the visitor's error otherwise). */
int store_common_visit_next(int v, int *rc, int *stopped);

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

#endif
