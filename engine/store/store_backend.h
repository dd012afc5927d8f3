/*
 * store_backend.h -- the backends' interface of the store, apart from its API (store.h):
 * the method table a backend fills and the open/list table that names it. Included only by
 * store.c (the seam that dispatches through the tables) and the backends (store/sqlite/,
 * store/postgres/, through their private headers), and by the tests of the seam; every
 * other caller sees a backend as store.h's opaque `store_backend`. In the manner of git's
 * refs.h / refs/refs-internal.h.
 */
#ifndef LC_STORE_BACKEND_H
#define LC_STORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* ---- backends: the method table ----------------------------------------------------------
 * In the manner of SQLite's VFS (its vfs and io-methods tables). A backend (the embedded
 * SQLite store, store_sqlite*.c; later a shared PostgreSQL one) fills a `store_backend` (how to
 * open a store) and a `store_methods` (one slot per function above that takes a store);
 * store.c dispatches every such call through the store's table and knows nothing else of
 * the backend. A backend's struct store begins with its `const store_methods *`, the only
 * field store.c reads.
 *
 * Both tables are size- and version-stamped and append-only: a slot is never removed or
 * changed, a new one goes at the end with STORE_METHODS_VERSION bumped, and a table built
 * against an older header (smaller `size`) simply lacks the newer slots. A NULL slot is
 * "not supported": the administration slots are optional (a status call answers LC_INVALID
 * naming the backend), every other one a backend fills. */
#define STORE_METHODS_VERSION 4 /* 2: store_methods gained the DAG's children and vectors;
                                  * store_backend gained x_open_session_readonly, x_list;
                                  * 3: store_methods gained run renewal and named leases;
                                  * 4: store_methods gained search_row, store_backend the
                                  * home index (x_index_open),
                                  * vectors read by row id and checkpoints_defer */

/* The slots of store_methods in the table's order, as lists of X(return type, name,
 * parameters): the table's fields below, each backend's table and each backend's
 * declarations of its slot functions (<backend prefix>_<name>) are all written from them,
 * so a slot's signature stands once. Every backend fills STORE_SLOTS_CORE. The
 * administration slots (STORE_SLOTS_TX, _BACKUP, _ADMIN) are optional, NULL = not
 * supported; STORE_SLOTS_V2 (version 2) holds a condensed node's children (the terminal
 * browser), the vectors (hybrid recall; NULL = cannot store vectors) and the bulk ingest
 * (NULL = a plain transaction: see store_bulk_begin). */
#define STORE_SLOTS_CORE(X) \
    X(void, close, (store *s)) \
    X(void, set_options, (store *s, const store_options *opt)) \
    X(const char *, path, (const store *s)) \
    X(const char *, mode_note, (const store *s)) \
    X(char *, meta_get, (store *s, const char *key)) \
    X(int, meta_put, (store *s, const char *key, const char *value, char **err)) \
    X(int, schema_version, (store *s)) \
    X(int, ingest, (store *s, const store_msg *msgs, size_t n, store_ingest_stats *stats, char **err)) \
    X(int, mark_branch, (store *s, const char *const *active_ids, size_t n, size_t *marked, size_t *cleared, char **err)) \
    X(int, set_removed, (store *s, const char *const *entry_ids, size_t n, int removed, size_t *changed, char **err)) \
    X(int, dag_progress, (store *s, int64_t *watermark, int64_t *pending, char **err)) \
    X(int, dag_set_watermark, (store *s, int64_t expect, int64_t value, int *moved, char **err)) \
    X(int, dag_block_get, (store *s, int64_t *tokens)) \
    X(int, dag_block_put, (store *s, int64_t tokens, char **err)) \
    X(int, get_message, (store *s, const char *entry_id, store_row *out, char **err)) \
    X(int64_t, message_count, (store *s)) \
    X(int64_t, summary_count, (store *s)) \
    X(int64_t, db_bytes, (store *s)) \
    X(int, summary_add, (store *s, const store_summary *in, int64_t *out_id, char **err)) \
    X(int, summary_set_text, (store *s, int64_t id, const char *text, int64_t tokens, char **err)) \
    X(int, dag_walk_tail, (store *s, store_msg_visit visit, void *ud, int *stopped, char **err)) \
    X(int, walk_newest, (store *s, store_msg_visit visit, void *ud, int *stopped, char **err)) \
    X(long long, last_activity_ms, (store *s)) \
    X(int, dag_walk_uncovered, (store *s, int64_t after, int64_t before, store_msg_visit visit, void *ud, int *stopped, char **err)) \
    X(int, dag_count_uncovered, (store *s, int64_t from, int64_t before, int64_t *count, char **err)) \
    X(int, dag_walk_frontier, (store *s, store_node_visit visit, void *ud, char **err)) \
    X(int, dag_walk_prefixed, (store *s, const char *prefix, store_node_visit visit, void *ud, char **err)) \
    X(int, dag_walk_source, (store *s, int64_t id, int leaf, store_msg_visit visit, void *ud, char **err)) \
    X(int64_t, run_begin, (store *s, const char *kind)) \
    X(void, run_end, (store *s, int64_t id, const char *status)) \
    X(int, event_add, (store *s, const char *kind, const char *data_json, char **err)) \
    X(int64_t, event_count, (store *s, const char *kind)) \
    X(int, cut_get, (store *s, store_cut_which which, int64_t id, store_cut *out, char **err)) \
    X(int, cut_add, (store *s, const store_cut *in, int64_t tokens, int64_t *out_id, char **err)) \
    X(int, pin_get, (store *s, store_pin *out, char **err)) \
    X(int, pin_set, (store *s, const store_pin *pin, char **err)) \
    X(int, pin_clear, (store *s, char **err)) \
    X(int, search_count, (store *s, const char *query, const store_search_scope *scope, int64_t *count, char **err)) \
    X(int, search_page, (store *s, const char *query, const store_search_scope *scope, int newest_first, size_t limit, size_t offset, store_search_visit visit, void *ud, char **err)) \
    X(int, search_top, (store *s, const char *query, int newest_first, size_t limit, store_search_visit visit, void *ud, char **err)) \
    X(int64_t, search_unindexed, (store *s)) \
    X(int, search_scan, (store *s, const store_search_scope *scope, store_search_visit visit, void *ud, int *stopped, char **err)) \
    X(void, search_cover, (store *s, const char *entry_id, int64_t *top, int64_t *leaf)) \
    X(int, summary_exists, (store *s, int64_t id)) \
    X(int, summary_get, (store *s, int64_t id, store_node_visit visit, void *ud, char **err)) \
    X(int, scope_totals_get, (store *s, int64_t summary_id, store_scope_totals *out, char **err)) \
    X(int, scope_handles, (store *s, int64_t summary_id, store_handle_visit visit, void *ud, char **err)) \
    X(int, handle_find, (store *s, const char *key, store_handle_visit visit, void *ud, char **err))
#define STORE_SLOTS_TX(X) \
    X(int, tx_begin, (store *s, char **err)) \
    X(int, tx_commit, (store *s, char **err)) \
    X(void, tx_rollback, (store *s))
#define STORE_SLOTS_BACKUP(X) \
    X(int, backup_to, (store *from, const char *dest_path, char **err))
#define STORE_SLOTS_ADMIN(X) \
    X(int, dump, (store *s, const store_dump_visitor *v, void *ud, char **err)) \
    X(int, table_loadable, (store *s, const char *table)) \
    X(int, row_load, (store *s, const char *table, size_t ncol, const char *const *cols, const store_value *vals, int *inserted, char **err)) \
    X(int, rebuild_index, (store *s, char **err)) \
    X(int, facts_get, (store *s, store_facts *out, char **err)) \
    X(int, check, (store *s, store_check_kind kind, store_id_visit visit, void *ud, char **err)) \
    X(int, runs_open, (store *s, store_run_visit visit, void *ud, char **err)) \
    X(int, run_reap, (store *s, int64_t id, char **err)) \
    X(int, prune_broken, (store *s, int64_t *orphans, int64_t *dropped, char **err)) \
    X(int, dedupe_spans, (store *s, int64_t *removed, char **err))
#define STORE_SLOTS_V2(X) \
    X(int, dag_walk_children, (store *s, int64_t id, store_node_visit visit, void *ud, char **err)) \
    X(int, vec_put, (store *s, const store_vec *v, size_t n, char **err)) \
    X(int, vec_walk, (store *s, const char *model, int include_removed, store_vec_visit visit, void *ud, char **err)) \
    X(int, vec_walk_missing, (store *s, const char *model, int other_models, store_vec_pending_visit visit, void *ud, int *stopped, char **err)) \
    X(int, vec_coverage_get, (store *s, const char *model, store_vec_coverage *out, char **err)) \
    X(int, bulk_begin, (store *s, char **err)) \
    X(int, bulk_commit, (store *s, char **err))
/* Version 3, optional: a run's lease renewed (without it a backend's runs are judged by
 * pid) and named leases (without them store_lease_take answers LC_INVALID). */
#define STORE_SLOTS_RUN_LEASE(X) \
    X(void, run_renew, (store *s, int64_t id))
#define STORE_SLOTS_LEASE(X) \
    X(int, lease_take, (store *s, const char *name, const char *holder, long ttl_ms, char **other, char **err)) \
    X(void, lease_drop, (store *s, const char *name, const char *holder))
/* Version 4, optional: the vectors of given rows (without it the vector cache keeps every
 * float in memory for its re-rank). */
#define STORE_SLOTS_VEC_GET(X) \
    X(int, vec_get, (store *s, const char *model, store_vec_kind kind, const int64_t *ids, size_t n, store_vec_visit visit, void *ud, char **err))

/* Version 4, optional: one row by id as a page shows it (the home index's hits). */
#define STORE_SLOTS_V4(X) \
    X(int, search_row, (store *s, int64_t id, int thinking, store_search_visit visit, void *ud, char **err))

/* Version 4, optional: this connection leaves the log's checkpoints to another (without it
 * nothing changes). */
#define STORE_SLOTS_CKPT(X) \
    X(void, checkpoints_defer, (store *s, int on))

#define STORE_METHOD_FIELD(ret, name, params) ret(*x_##name) params;
typedef struct store_methods {
    int i_version;    /* STORE_METHODS_VERSION the backend was built against */
    size_t size;      /* sizeof(store_methods) as the backend was built */
    const char *name; /* "sqlite" */
    STORE_SLOTS_CORE(STORE_METHOD_FIELD)
    STORE_SLOTS_TX(STORE_METHOD_FIELD)
    STORE_SLOTS_BACKUP(STORE_METHOD_FIELD)
    STORE_SLOTS_ADMIN(STORE_METHOD_FIELD)
    STORE_SLOTS_V2(STORE_METHOD_FIELD)
    STORE_SLOTS_RUN_LEASE(STORE_METHOD_FIELD)
    STORE_SLOTS_LEASE(STORE_METHOD_FIELD)
    STORE_SLOTS_V4(STORE_METHOD_FIELD)
    STORE_SLOTS_VEC_GET(STORE_METHOD_FIELD)
    STORE_SLOTS_CKPT(STORE_METHOD_FIELD)
} store_methods;

/* A home index's methods (store.h, store_index_*): a backend's struct store_index begins
 * with its `const store_index_methods *`. */
typedef struct store_index_methods {
    void (*x_close)(store_index *ix);
    int (*x_catch_up)(store_index *ix, store_index_source *v, size_t n, double deadline_ms, store_index_stats *st,
                      char **err);
    int (*x_search)(store_index *ix, const store_index_query *q, store_index_visit visit, void *ud, int64_t *total,
                    int *newest_first, char **err);
} store_index_methods;

/* The stamp and name that begin a backend's store_backend or store_methods table. */
#define STORE_TABLE_HEAD(table_type, backend_name) \
    .i_version = STORE_METHODS_VERSION, .size = sizeof(table_type), .name = backend_name

struct store_backend {
    int i_version;        /* STORE_METHODS_VERSION the backend was built against */
    size_t size;          /* sizeof(store_backend) as the backend was built */
    const char *name;
    /* store_open_wait and store_open_readonly, for this backend. */
    int (*x_open)(const char *agent_home, const char *session_id, const char *session_cwd, long wait_ms,
                  store **out, char **err);
    int (*x_open_readonly)(const char *path, store **out, int *schema_version, char **err);
    const char *(*x_version)(void);   /* the library's version, for a bug report */
    /* A shared store (store_url set): open session `session_id` of this agent home
     * read-only (LC_NOTFOUND when the database holds none), and list the sessions this
     * agent home wrote, or every session in the database with `all_homes`. NULL for a
     * backend whose stores are files (the catalog reads the folder). */
    int (*x_open_session_readonly)(const char *agent_home, const char *session_id, store **out,
                                   int *schema_version, char **err);
    int (*x_list)(const char *agent_home, int all_homes, int counts,
                  int (*visit)(void *ud, const struct store_session_info *si, char **err), void *ud,
                  char **err);
    /* A shared store: delete the session `path` names (as store_open_readonly takes it),
     * every row of it. NULL for a backend whose stores are files (the catalog deletes
     * them). */
    int (*x_retire)(const char *path, char **err);
    /* Version 4: the home index (store.h, store_index_open); NULL: none (recall walks the
     * stores). */
    int (*x_index_open)(const char *agent_home, store_index **out, char **err);
};

/* The backends this build carries. */
extern const store_backend store_sqlite_backend;
extern const store_backend store_pg_backend;

#endif
