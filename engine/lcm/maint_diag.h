/*
 * maint_diag.h -- the diagnose block behind /lcm diagnose and `lcm diagnose`: the facts a bug
 * report needs in one bounded block (at most MAINT_DIAG_BYTES), with no message body, no
 * summary text, no query, `~` for home and secrets masked, so it can be pasted in public.
 */
#ifndef LC_MAINT_DIAG_H
#define LC_MAINT_DIAG_H

#include <cjson/cJSON.h>

#include "store.h"

#define MAINT_DIAG_BYTES 8192 /* the diagnose block's cap */
#define MAINT_DIAG_ROWS 25    /* recent metric rows in the block */

typedef struct maint_diag_input {
    const char *home;              /* the user's home (for `~`); NULL = $HOME */
    const char *plugin_version;
    const char *host_name;         /* may be NULL */
    unsigned abi_version, api_level;
    const char *mode;              /* "print", "interactive", ... may be NULL */
    const char *session_id;        /* the store tag */
    const char *session_file;      /* only its basename is printed */
    int session_format;            /* session file format version (0 = unknown) */
    store *st;                     /* the live store, or NULL */
    const char *store_path;
    const char *pin;               /* "pinned at cut 3 (applied at 71%)" or "none" */
    const char *thresholds;        /* zones_format_thresholds() text */
    const char *model;             /* provider/id */
    long window;
    const char *chain;             /* the summarizer chain that runs */
    const cJSON *config;           /* effective config (lcm_config_to_json) */
    const char *config_path;
    const cJSON *metrics_rows;     /* this session's rows, file order */
} maint_diag_input;

/* The one-block bug report: at most MAINT_DIAG_BYTES bytes. Carries no message body, no
 * summary text, no query; every path inside home prints with `~` and any other absolute
 * path as "[path]"; metric rows pass metrics_row_sanitized. When the block would exceed
 * the cap, older recent rows are left out (the count left out is always printed).
 * malloc'd; NULL on OOM. */
char *maint_diagnose(const maint_diag_input *in);

/* `path` with the home prefix replaced by `~`; a path outside home becomes "[path]".
 * malloc'd. */
char *maint_diag_tilde(const char *home, const char *path);

/* Write a diagnose block to `path` (mode 0600) with a final newline. An empty path is
 * refused (LC_INVALID). */
int maint_diag_save(const char *path, const char *text, char **err);

#endif
