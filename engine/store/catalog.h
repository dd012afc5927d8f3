/*
 * catalog.h -- the stores under an agent home: <agent home>/lcm/<session id>.sqlite.
 * Owns where a session's store lives, the one listing of the store folder (with a filter:
 * all but one session, one project's cwd, older schema), the cheap facts each entry
 * carries (meta session id / cwd / session file / created, schema, damage, bytes), opening
 * a store by session id read-only or read-write, retiring one (its files deleted), and the
 * one walk over the listed stores (catalog_walk / catalog_each: each opened, checked, handed
 * to a callback). Cross-session search, maintenance (gc, migrate), dream, the bundle and the
 * MCP server list and walk stores through it instead of reading the folder themselves.
 */
#ifndef LC_CATALOG_H
#define LC_CATALOG_H

#include <stddef.h>
#include <stdint.h>

typedef struct store store;

/* One store as the listing saw it (all strings malloc'd; catalog_list_free). */
typedef struct catalog_entry {
    char *path;          /* the store file */
    char *name;          /* the file name without .sqlite: the store's address */
    char *session_id;    /* meta session_id, else name */
    char *cwd;           /* meta cwd; NULL when absent or unreadable */
    char *session_file;  /* meta session_file: where the session lived when last opened */
    char *parent_session; /* meta parent_session: a sub-agent's store names its session's; NULL */
    char *subagent;      /* meta subagent: {"id","type","call"} of a sub-agent's store; NULL */
    char *subagents;     /* meta subagents: a session's {id: {type, call, ...}} of its sub-agents; NULL */
    char *damaged;       /* store_file_damaged's sentence; NULL when the file looks sound */
    long long created;   /* meta created (epoch ms); 0 when unknown */
    int schema_version;  /* -1 when no schema could be read */
    int64_t bytes;       /* file size (+ -wal) */
    /* Only with catalog_filter.counts (one query each); -1 / 0 otherwise. */
    int64_t messages, summaries, db_bytes;
} catalog_entry;
void catalog_entry_free(catalog_entry *e);

typedef struct catalog_list {
    catalog_entry *v;
    size_t n;
    /* The listing is of a store other agent homes write too (a shared database), so
     * `all_homes` reached past this home's sessions. 0 for the embedded SQLite store: its
     * stores are this home's alone, whatever the filter asked. */
    int shared;
} catalog_list;
void catalog_list_free(catalog_list *l);

typedef enum catalog_order {
    CATALOG_BY_NAME = 0,    /* file name order */
    CATALOG_NEWEST_FIRST    /* meta created, newest first, then file name: an order a write to
                             * a store (its session running) does not change */
} catalog_order;

/* What to list. A zeroed filter lists every store, by name, without counts. */
typedef struct catalog_filter {
    const char *except_session;  /* leave this session's store out (by file name) */
    const char *cwd;             /* only stores that recorded this cwd */
    int older_schema;            /* only readable stores below STORE_SCHEMA_VERSION */
    int counts;                  /* fill messages, summaries and db_bytes */
    catalog_order order;
    /* Every session the store holds, whoever wrote it (recall's `fleet` scope; the caller
     * has checked the policy). 0: only the sessions this agent home wrote. On the embedded
     * SQLite store the two are the same: every store under <agent_home>/lcm/. */
    int all_homes;
    /* The embedded SQLite store files under <agent_home>/lcm/ whatever store this process
     * is configured for (`lcm migrate --to` copies them out of the folder into another). */
    int local_files;
} catalog_filter;

/* The stores under <agent_home>/lcm/ that pass `f` (NULL = every store). Each is looked at
 * once, read-only and never migrated; a damaged file is listed (with its sentence) but not
 * opened. A missing folder is an empty list. */
int catalog_list_stores(const char *agent_home, const catalog_filter *f, catalog_list *out,
                        char **err);

/* With a shared store (store_url set for `agent_home`): the sessions `agent_home` wrote
 * or, with `all_homes`, every session in the database (whoever wrote it), that pass `f`
 * (NULL = all); *listed = 1. An entry's name and session_id are the session id, its path
 * what store_open_readonly takes, its bytes 0. Without one: *listed = 0 and an empty list.
 * catalog_list_stores calls it for `agent_home`'s own sessions. */
int catalog_list_sessions(const char *agent_home, const catalog_filter *f, int all_homes, catalog_list *out,
                          int *listed, char **err);

/* <agent_home>/lcm/<session_id>.sqlite (malloc'd; NULL on OOM). */
char *catalog_path(const char *agent_home, const char *session_id);

typedef enum catalog_mode {
    CATALOG_READ = 0,  /* query_only, never migrated; *schema_version says what it holds */
    CATALOG_WRITE      /* created when absent, migrated to STORE_SCHEMA_VERSION */
} catalog_mode;

/* Open one session's store. CATALOG_READ: LC_INVALID for an id that is not plain
 * (store_valid_id), LC_NOTFOUND when there is no store (nothing is created).
 * schema_version may be NULL. */
int catalog_open(const char *agent_home, const char *session_id, catalog_mode mode,
                 store **out, int *schema_version, char **err);

/* Open a listed store read-only (never migrated) where the listing found it: the file, or
 * a shared store's session -- any home's, as a fleet listing (all_homes) gives, which
 * catalog_open by this home's session id would not find. LC_INVALID for a damaged entry. */
int catalog_open_entry(const catalog_entry *e, store **out, int *schema_version, char **err);

/* ---- the walk: every listed store, opened, handed to a callback -------------------------
 * Cross-session search (recall, hybrid), the MCP server's status, dream and the session
 * bundle each visit the stores of a listing; the walk is theirs in one place: which stores
 * are handed over, which are skipped and counted, and that out of memory is an error. */

/* How the walk treats a store's schema. */
typedef enum catalog_walk_mode {
    /* Only stores this build answers (STORE_SCHEMA_ANSWERS): an older one is counted in
     * `older`, never migrated (it is read once its session runs again); a newer one in `newer`. */
    CATALOG_ANSWERS = 0,
    /* Every store that opens with a schema (>= 0), older and newer ones too: the callback
     * asks only what every schema can say (last activity, vector coverage). */
    CATALOG_ANY_SCHEMA
} catalog_walk_mode;

/* What a walk did with the listing's entries. listed = the entries from `from` on
 * (before them: not counted) = opened + damaged + older + newer + unreached. */
typedef struct catalog_counts {
    size_t listed;
    size_t opened;       /* visited by the callback (a CATALOG_STOP_BEFORE one counts as unreached) */
    size_t damaged;      /* damaged, gone since the listing, or no schema could be read */
    size_t older;        /* CATALOG_ANSWERS: schema below what this build answers */
    size_t newer;        /* CATALOG_ANSWERS: schema above STORE_SCHEMA_VERSION */
    size_t unreached;    /* after a stop: entries the walk did not look at */
    size_t next;         /* the index of the first entry not looked at (== the list's n when none) */
} catalog_counts;

/* A callback's stops (positive, apart from every LC_ status). CATALOG_STOP: this store
 * was visited, look at no more. CATALOG_STOP_BEFORE: this store was not visited after all
 * (a bound the caller keeps, e.g. its time, ran out): it and the rest are unreached. */
enum { CATALOG_STOP = 1000, CATALOG_STOP_BEFORE = 1001 };

/* One store of a walk. `*s` is open read-only and answers as the mode says; the walk closes
 * it after the callback returns, unless the callback took it (set *s = NULL: then it is the
 * callback's to close). `i` is the entry's index in the listing. Returns LC_OK to go on,
 * CATALOG_STOP / CATALOG_STOP_BEFORE to stop (the walk then returns LC_OK), or an error,
 * which ends the walk and is its result (with *err filled by the callback). */
typedef int (*catalog_each_fn)(void *cb, const catalog_entry *e, size_t i, store **s, char **err);

/* Walk `l` from entry `from` (a walk resumed where a bounded one stopped) in its order:
 * each entry opened read-only (catalog_open_entry, never migrated) and, when it answers as
 * `mode` says, handed to `fn`; the others counted. An open that runs out of memory is
 * LC_NOMEM, not a skipped store. `counts` may be NULL. */
int catalog_walk(const catalog_list *l, size_t from, catalog_walk_mode mode, catalog_each_fn fn, void *cb,
                 catalog_counts *counts, char **err);

/* catalog_list_stores(agent_home, f) walked whole (catalog_walk from 0), then freed. */
int catalog_each(const char *agent_home, const catalog_filter *f, catalog_walk_mode mode, catalog_each_fn fn,
                 void *cb, catalog_counts *counts, char **err);

/* Delete a listed store's files (the store, then its -wal and -shm). The entry is kept
 * for the caller to report. */
int catalog_retire(const catalog_entry *e, char **err);

#endif
