/*
 * admin.h -- the bodies of the maintenance and inspection commands, shared by the /lcm
 * command inside the agent (plugin/lcm_cmd.c) and the `lcm` command line (tools/lcm):
 * status, the settings page, backup, export, import, report, doctor (and --repair), gc,
 * heal and compact (migrate is admin_migrate.h). Each takes its engine inputs in an admin_env (agent home,
 * session, open store, effective config, window) and returns the text a user reads and a
 * cJSON object with stable field names (the CLI's --json). Owns the wording of those texts
 * and the field names; the checks and the store work themselves are engine/maint.h,
 * engine/dag.h and the store's. Knows nothing of the ABI: a caller records metrics and
 * notifies from what the result carries.
 */
#ifndef LC_ADMIN_H
#define LC_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "catalog.h"
#include "config.h"
#include "maint.h"
#include "maint_diag.h"
#include "summarize.h"

/* done of total units so far (bytes, messages, stores). Called often: the callee rates. */
typedef void (*admin_progress_fn)(void *ud, long long done, long long total);

typedef struct admin_env {
    const char *cmd;            /* how the texts name the command: "/lcm" or "lcm" */
    const char *home;           /* the agent home (stores in home/lcm/) */
    const char *session_id;     /* the session, or NULL */
    store *st;                  /* that session's open store, or NULL */
    const char *no_store_why;   /* why st is NULL (printed), or NULL */
    const lcm_config *cfg;      /* the effective config (never NULL for status/doctor) */
    const char *model;          /* provider/id, or NULL */
    long window;                /* the host's window; <= 0: unknown */
    long window_effective;      /* the window the thresholds use (a default when unknown) */
    size_t occupancy;           /* tokens in context now (0 outside a session) */
    admin_progress_fn progress; /* may be NULL */
    void *progress_ud;
    const struct offline_state *offline; /* the session's store offline (offline.h), or NULL */
} admin_env;

/* What a command produced. status: 0 ok; 1 a check failed or there is something to do
 * (a dry run that would change something); text and json are malloc'd. */
typedef struct admin_result {
    char *text;
    cJSON *json;
    int status;
    /* doctor on a damaged store with repair: where it went (the caller rebuilds) */
    char *moved_to;
    int64_t metric;             /* the count the caller's maintenance metric carries */
} admin_result;
void admin_result_free(admin_result *r);

/* The paths and names the commands share. malloc'd. */
char *admin_config_path(const char *home);
char *admin_metrics_path(const char *home);
/* `path` with ~ for home; a path outside home is printed whole. */
char *admin_tilde(const char *path);
/* A sortable UTC stamp, unique to the millisecond (for file names). */
void admin_stamp(char *buf, size_t n);
/* "400.0k", "1.0M", "950". */
void admin_tokens(char *buf, size_t n, double t);
/* The summarizer chain that runs for cfg ("auto" expanded, the floor appended). */
char *admin_chain(const lcm_config *cfg);

/* The store line of a status: the backend (sqlite, postgresql, ...), where (st's address,
 * else LCM_STORE_URL when a backend other than the embedded one serves it, else
 * <home>/lcm; secrets masked) and whether it is online, or
 * offline with `offline_why` (malloc'd; NULL on OOM). */
char *admin_store_line(const char *home, store *st, const char *offline_why);

/* Store, projection, context and thresholds lines (the caller appends its own state). */
int admin_status(const admin_env *env, admin_result *out, char **err);
/* The settings cockpit. */
int admin_settings_page(const admin_env *env, admin_result *out, char **err);
/* `settings KEY VALUE`: written to lcm.json (the replaced file kept as lcm.json.bak) and
 * loaded into *ncfg (a bare word is a string value); the text is the line and the page as
 * ncfg makes it. status 1 (and *ncfg untouched or freed) when refused. */
int admin_settings_set(const admin_env *env, const char *key, const char *value, lcm_config *ncfg,
                       admin_result *out, char **err);
/* A timestamped online copy of env->st beside the stores. */
int admin_backup(const admin_env *env, admin_result *out, char **err);
/* env->st as JSONL to path (NULL: a stamped file beside the stores). */
int admin_export(const admin_env *env, const char *path, admin_result *out, char **err);
/* An export loaded into env->st. */
int admin_import(const admin_env *env, const char *path, admin_result *out, char **err);
/* The metrics summary of env->session_id (every session when NULL). */
int admin_report(const admin_env *env, admin_result *out, char **err);
/* Checks (after repairs with `repair`) of env->st; with no store, of the session's store
 * file when it is damaged (repair moves it aside: out->moved_to). LC_NOTFOUND when there
 * is no store and no damaged file. */
int admin_doctor(const admin_env *env, int repair, admin_result *out, char **err);
/* Retired stores (dry run) or exported then deleted (apply). */
int admin_gc(const admin_env *env, const char *const *session_dirs, size_t n_dirs, int apply,
             admin_result *out, char **err);
/* lcm.json `retention` (env->cfg): the stores it would delete (dry run), or with apply
 * archives them to <home>/lcm/lcm-archive-<ts>.jsonl.gz (archive: true) and deletes them;
 * the home's size before and after. Not configured: says so, nothing done. */
int admin_retention(const admin_env *env, int apply, admin_result *out, char **err);
/* `lcm import` of an export or retention archive: its stores restored into the home. */
int admin_restore(const admin_env *env, const char *path, admin_result *out, char **err);
/* The one-block bug report (maint_diagnose) from env and the caller's host facts in
 * `host` (versions, mode, session file; the rest is filled here); save != NULL writes it
 * there (mode 0600) instead of returning it. */
int admin_diagnose(const admin_env *env, const maint_diag_input *host, const char *save, admin_result *out,
                   char **err);
/* Mechanical summaries found (dry run) or re-derived with sc (apply). */
int admin_heal(const admin_env *env, summ_ctx *sc, int apply, int max_nodes, admin_result *out,
               char **err);
/* The DAG over everything env->st holds: dag_pass with flush until a pass makes nothing
 * (at most max_rounds; 0 = 1000). Progress counts covered messages. */
int admin_compact(const admin_env *env, summ_ctx *sc, int max_rounds, admin_result *out, char **err);

#endif
