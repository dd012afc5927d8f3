/*
 * clm_settings.h -- the one table of live-context settings (docs/DESIGN.md §5.8, §12.2): each
 * setting's key, label, description, environment variable, parsing and formatting; the
 * defaults taken from the environment at load; and the overrides a session stores as a
 * `live-context-settings` custom entry (only the values that differ from the defaults).
 * Values are held in a canonical text form; the typed fields are derived from it after
 * every change. Owns the strings of the settings it returns.
 */
#ifndef LC_CLM_SETTINGS_H
#define LC_CLM_SETTINGS_H

#include <stddef.h>

#define CLM_SETTINGS_TYPE "live-context-settings"

typedef enum clm_setting_id {
    CLM_SET_BUDGET = 0,       /* tokens; "window" = the model's context window */
    CLM_SET_RESERVE,          /* tokens of generation headroom */
    CLM_SET_REMINDERS,        /* on | off */
    CLM_SET_GUARD,            /* overflow guard: on | off */
    CLM_SET_HOST_COMPACTION,  /* piCompaction: auto | on | off */
    CLM_SET_OBS_CAP,          /* off | CHARS | CHARS:HEAD_FRACTION */
    CLM_SET_STEERING,         /* none | path of a markdown document */
    CLM_SET_ONE_TOOL,         /* oneToolPerTurn: on | off */
    CLM_SET_SIZE_TRAILER,     /* sizeTrailer: on | off */
    CLM_SET_COMPACT_PROMPT,   /* default | path of a markdown template */
    CLM_SET_EDITING_MODE,     /* clm | conservative */
    CLM_N_SETTINGS
} clm_setting_id;

/* Host compaction policy (piCompaction). */
enum { CLM_HC_AUTO = 0, CLM_HC_ON = 1, CLM_HC_OFF = 2 };

typedef struct clm_setting_def {
    const char *key;          /* as typed in `/clm config KEY VALUE` and stored */
    const char *label;
    const char *env;          /* environment variable that sets the default */
    const char *builtin;      /* default when the environment says nothing */
    const char *description;
} clm_setting_def;

typedef struct clm_settings {
    char *dflt[CLM_N_SETTINGS];  /* canonical defaults (environment at load) */
    char *val[CLM_N_SETTINGS];   /* canonical values in effect */
    /* typed view of val, refreshed by every change */
    long budget;                 /* 0 = the model window */
    long reserve;
    int reminders, guard, host_compaction;
    long obs_cap;                /* 0 = off */
    double obs_head;             /* fraction of the cap kept from the head */
    const char *steering;        /* NULL = none (borrowed from val) */
    int one_tool, size_trailer;
    const char *compact_prompt;  /* NULL = built in (borrowed from val) */
    int conservative;
} clm_settings;

/* The table, CLM_N_SETTINGS rows in clm_setting_id order. */
const clm_setting_def *clm_setting_def_of(int id);
/* Index of a key (case-insensitive), -1 when unknown. */
int clm_setting_find(const char *key);
/* Parse a typed value into its canonical form (malloc'd). LC_INVALID with *err naming
 * the setting and the accepted forms when the text is not a value of the setting. */
int clm_setting_normalize(int id, const char *text, char **canon, char **err);

/* Defaults from the environment through `getenv_fn` (NULL: no environment). An invalid
 * environment value keeps the built-in default and is reported in *problems (malloc'd
 * sentences joined by newlines, NULL when none). */
int clm_settings_init(clm_settings *s, const char *(*getenv_fn)(const char *),
                      char **problems, char **err);
void clm_settings_free(clm_settings *s);
int clm_settings_clone(const clm_settings *src, clm_settings *dst, char **err);
/* Set one value (already validated or not: it is normalized here). */
int clm_settings_set(clm_settings *s, const char *key, const char *text, char **err);
/* Back to the defaults. */
int clm_settings_reset(clm_settings *s, char **err);
/* {"version":1,"overrides":{key:canonical,...}} with only the non-default values. */
char *clm_settings_overrides_json(const clm_settings *s);
/* Reset to the defaults, then apply a stored overrides object. A malformed payload or
 * value is skipped and reported in *problems (malloc'd, NULL when none). A stored value
 * comes from a session file, which may be someone else's: a path-valued setting
 * (clm_setting_is_path) is applied only when it equals typed[id], the value the user typed
 * in this run (typed may be NULL, and so may its entries); any other path is ignored and
 * named in *problems, so a session file can never make the plugin read a file. */
int clm_settings_apply_overrides(clm_settings *s, const char *json, size_t len,
                                 const char *const *typed, char **problems, char **err);
/* Does the setting name a file the plugin reads (steering, compactPrompt)? */
int clm_setting_is_path(int id);
/* Is the value in effect different from the default? */
int clm_settings_changed(const clm_settings *s, int id);

#endif
