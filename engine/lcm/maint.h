/*
 * maint.h -- store maintenance behind /lcm backup, export, import, doctor, gc and migrate
 * (the diagnose block is maint_diag.h). Works on an open store (the live one, or one a
 * command-line tool opened) and on the stores of the catalog, so a second host or a CLI
 * reuses it unchanged. Owns the integrity checks and their repairs, the verbatim JSONL
 * export format, the retired-store and older-schema rules.
 */
#ifndef LC_MAINT_H
#define LC_MAINT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "catalog.h" /* catalog_list; and `store` */

#define MAINT_SAMPLE 8              /* offending ids named per check */
#define MAINT_MAX_DEPTH 8           /* the DAG depth cap (node shape check) */

/* ---- backup / export / import ---------------------------------------------------------- */

/* A copy of the store `from`, written to `dest_path` (mode 0600) with SQLite's online
 * backup in one step: the copy is one read snapshot, consistent while another connection
 * writes. dest_path must not exist. */
int maint_backup(store *from, const char *dest_path, char **err);
/* Remove the `lcm-backup-*.tmp.<pid>` files (and their -journal, -wal, -shm) in `dir` whose
 * process is gone: what a backup killed mid-copy left. Run at every session start and before
 * every backup. Returns how many files were removed. */
int maint_backup_sweep_dir(const char *dir);

/* Every row of every ordinary table (FTS shadow tables excluded: the index is derived)
 * as JSONL, inside one read transaction: a header line
 * {"lcmExport":1,"store":TAG,"schema":N,"tables":[...]} then {"table":T,"row":{...}} per
 * row. Text is written byte for byte (only JSON's mandatory escapes), integers exactly,
 * blobs as {"blob":"hex"}. The file is written to a temp name, fsynced and renamed, mode
 * 0600. *rows (may be NULL) counts the rows. */
int maint_export(store *s, const char *tag, const char *path, int64_t *rows, char **err);

/* 1 when a `runs` row has no finish and its pid is alive (this process included): a pass
 * is running. *run_id (may be NULL) names it. 0 otherwise (also with no runs table). */
int maint_pass_running(store *s, int64_t *run_id);

/* Load an export into store `s`: rows are inserted unless their primary key exists (meta keeps
 * the target's values), then the full-text indexes are rebuilt, all in one transaction.
 * Refused (LC_BUSY) while a pass is running. *rows (may be NULL) counts inserted rows. */
int maint_import(store *s, const char *path, int64_t *rows, char **err);

/* ---- doctor ------------------------------------------------------------------------------ */

typedef struct maint_check {
    const char *name;   /* static: "fts", "spans", "shape", "children", "duplicates",
                           "foreign-keys", "schema", "dead-runs", "unleafed" */
    int64_t count;      /* offending rows; 0 = the check passes */
    char *sample;       /* up to MAINT_SAMPLE offending ids, ", "-joined (malloc'd) or NULL */
    int info;           /* informational only (messages with no leaf yet is not a fault) */
} maint_check;

typedef struct maint_report {
    maint_check *checks;
    size_t n_checks;
    int schema_version;
    int64_t messages, summaries, removed, payload_bytes, file_handles, runs;
    int64_t db_bytes;   /* page_count x page_size */
    int64_t depth_hist[MAINT_MAX_DEPTH + 1];
} maint_report;

/* Run every check. `self` is this process's pid (its runs are never dead). The checks
 * tolerate tables a build has not created yet. */
int maint_doctor(store *s, pid_t self, maint_report *out, char **err);
void maint_report_free(maint_report *r);
/* Faults (non-info checks with count > 0). */
int64_t maint_report_faults(const maint_report *r);
/* The checks as text lines ("fts: ok", "spans: 2 (#4, #9)"). malloc'd. */
char *maint_report_format(const maint_report *r);

typedef struct maint_repair_stats {
    int fts_rebuilt;          /* both indexes re-derived from their rows */
    int64_t dropped;          /* summaries whose span entry or child is gone (and parents) */
    int64_t duplicates;       /* duplicate-span summaries removed */
    int64_t reaped;           /* dead-writer runs closed */
    int64_t orphans;          /* provenance rows that named no summary */
} maint_repair_stats;

/* Fix what doctor finds, in one transaction: rebuild both full-text indexes; drop summaries
 * whose span names an entry the store lacks or whose child is gone (a parent of a dropped
 * node loses a child and goes too); of summaries with the same span and depth keep the
 * expandable one (all provenance present; then the oldest); close runs whose writer is
 * dead (never `self`'s; a pid held by any live process reads as live); delete provenance
 * rows that name no summary. */
int maint_repair(store *s, pid_t self, maint_repair_stats *out, char **err);

/* 1 when pid names a live process (kill(pid, 0) succeeds or is refused for permission). */
int maint_pid_alive(pid_t pid);

/* Move a damaged store aside, kept: `path` (and its -wal / -shm) renamed to
 * `path`.corrupt-`stamp` (a name no store scan reads), so a new store can be built in its
 * place. *moved_to (may be NULL) gets the new name. Nothing is deleted. */
int maint_store_set_aside(const char *path, const char *stamp, char **moved_to, char **err);

/* A string field (id, cwd) of a session file's {"type":"session",...} header line, as
 * written; NULL when the file, the header or the field is missing. */
char *maint_session_header(const char *path, const char *key);

/* ---- store folder: gc and migrate ----------------------------------------------------------- */

/* Stores under <agent_home>/lcm/ whose session has no session file any more. A store that
 * recorded its session file (meta session_file, written at every session start and by
 * `lcm import`) is retired only when that file is known to be gone: absent, or now holding
 * another session's header; a file that cannot be checked keeps the store. A store that
 * recorded none falls back to looking for a *.jsonl in one of `session_dirs` (or one
 * folder below) whose first line is a {"type":"session","id":ID} header. The current
 * session's store is never listed. */
int maint_gc_plan(const char *agent_home, const char *const *session_dirs, size_t n_dirs,
                  const char *current_session, catalog_list *out, char **err);
/* Export every planned store into one file `export_path` (its stores one after the other,
 * each with its header line), and only when the whole export is durably written, delete the
 * stores (with -wal / -shm). A failed export deletes nothing. *deleted may be NULL. */
int maint_gc_apply(const catalog_list *plan, const char *export_path, size_t *deleted,
                   char **err);

/* ---- retention (lcm.json `retention`) ------------------------------------------------------- */

/* A store written within this long is a live session's: retention never takes it. */
#define MAINT_RETENTION_LIVE_MS (60LL * 60 * 1000)

/* The stores `retention` would delete: those idle more than `days` (0: no age limit; idle =
 * since the store file was last written), then, while the home's stores together exceed
 * `max_bytes` (0: no cap), the oldest of the rest. Never the current session nor a store
 * written within MAINT_RETENTION_LIVE_MS of now_ms (a live session): a home whose live
 * stores alone exceed the cap stays over it. *total_bytes / *kept_bytes (may be NULL): the
 * home's stores now and after. SQLite homes only (a shared database has no per-home files:
 * LC_INVALID). */
int maint_retention_plan(const char *agent_home, long days, int64_t max_bytes, const char *current_session,
                         long long now_ms, catalog_list *out, int64_t *total_bytes, int64_t *kept_bytes,
                         char **err);
/* Archive every planned store into one gzip-compressed JSONL `archive_path` (maint_export's
 * format, each store's header tagged with its file name), and only once the archive is
 * durably written, delete the stores. A failed archive deletes nothing. */
int maint_retention_apply(const catalog_list *plan, const char *archive_path, size_t *deleted, char **err);
/* 1 when `path` (plain or gzip-compressed) begins with an export's header line. */
int maint_is_export(const char *path);
/* Restore an export or archive (plain or gzip) into the home's stores: each header's store
 * (by its tag) is opened or created and its rows loaded as maint_import does; a store the
 * restore created gets the archived meta values, so it is the archived store row for row.
 * *stores / *rows (may be NULL) count them. */
int maint_restore(const char *agent_home, const char *path, size_t *stores, int64_t *rows, char **err);

/* Stores under <agent_home>/lcm/ whose schema version is below the build's. */
int maint_migrate_plan(const char *agent_home, catalog_list *out, char **err);
/* Upgrade each planned store in place (a read-write open runs the forward migrations). */
int maint_migrate_apply(const char *agent_home, const catalog_list *plan, size_t *migrated,
                        char **err);

#endif
