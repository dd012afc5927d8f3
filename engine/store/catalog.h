/*
 * catalog.h -- the stores under an agent home: <agent home>/lcm/<session id>.sqlite.
 * Owns where a session's store lives, the one listing of the store folder (with a filter:
 * all but one session, one project's cwd, older schema), the cheap facts each entry
 * carries (meta session id / cwd / session file / created, schema, damage, bytes), opening
 * a store by session id read-only or read-write, and retiring one (its files deleted).
 * Cross-session search, maintenance (gc, migrate) and the MCP server list stores through
 * it instead of reading the folder themselves.
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

/* Delete a listed store's files (the store, then its -wal and -shm). The entry is kept
 * for the caller to report. */
int catalog_retire(const catalog_entry *e, char **err);

#endif
