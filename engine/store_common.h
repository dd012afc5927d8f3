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

/* 1 with *out when meta holds `key` as an integer; 0 when it does not. */
int store_common_meta_int(store *s, const char *key, int64_t *out);

/* The DAG's progress numbers (store_dag_progress) from meta. A store without them gets
 * them from `recompute` (the backend's one full scan) unless it is `read_only`, which
 * reports "everything may be uncovered" (0, INT64_MAX). */
int store_common_dag_progress(store *s, int read_only, int (*recompute)(store *s, char **err), int64_t *watermark,
                              int64_t *pending, char **err);

/* The column names and values of an export's row, for `ncol` columns (the caller frees
 * both, also on failure). LC_OK or LC_NOMEM. */
int store_common_dump_buffers(int ncol, const char ***names, store_value **vals, char **err);

#endif
