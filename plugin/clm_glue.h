/*
 * clm_glue.h -- the live-context glue's private state, shared by clm.c (the lifecycle:
 * events, mirror, revisions, budget) and clm_pages.c (the /clm text pages). Not part of
 * the plugin's interface to plugin.c, which sees only the clm_glue_* functions.
 */
#ifndef LC_CLM_GLUE_H
#define LC_CLM_GLUE_H

#include <stddef.h>
#include <stdint.h>

#include "clm_apply.h"
#include "clm_budget.h"
#include "clm_doc.h"
#include "clm_eff.h"
#include "clm_folder.h"
#include "clm_marks.h"
#include "clm_raw.h"
#include "clm_revision.h"
#include "clm_settings.h"
#include "plugin.h"
#include "sha256.h"
#include "util.h"

#define CLM_NOTICE_TYPE "live-context-notice"

typedef struct clm_glue {
    lc_plugin *p;
    int enabled;
    clm_settings set;
    char *set_problems;        /* stored or environment values ignored (owned) */
    /* Path settings the user typed in this run (/clm config steering PATH): the only
     * paths a settings entry of the session file may bring back (owned; NULL none). */
    char *typed_path[CLM_N_SETTINGS];
    /* the revision in force */
    int has_rev;
    clm_revision rev;
    long *rev_raw;             /* per revision message: raw index with the same bytes, -1 */
    size_t *rev_tokens;
    char *rev_entry_id;        /* the state entry it came from (owned), NULL if unknown */
    clm_marks marks;           /* the branch's state/settings/compaction entries */
    int marks_ok;              /* marks describe the branch: tree moves can be incremental */
    char *settings_entry_id;   /* the settings entry in force (owned), NULL: defaults */
    unsigned long tree_fast, tree_full; /* tree moves done incrementally / by a full read */
    long last_revision;        /* highest revision number on the branch */
    unsigned accepted, rejected; /* on this branch, since start */
    clm_raw_cache raw;
    clm_eff_list effl;         /* the last request's effective context (clm_eff.h) */
    unsigned long rev_gen;     /* bumped whenever the revision in force is set or dropped */
    /* the last rendering */
    clm_view view;
    int have_view;
    int view_stale;            /* the baseline moved since (tree, reset, compaction) */
    char stale_why[96];
    size_t view_raw_n;         /* raw messages the view covered: the anchor of an edit */
    char view_digest[65];
    size_t view_rev_n;         /* messages of the view that came from the revision */
    int view_synced;           /* the view rendered the last composition (clm_render) */
    int render_off;            /* no model (replay): nobody can edit, nothing rendered */
    clm_folder folder;         /* the mirror folder and LIVE_CONTEXT.md (clm_folder.h) */
    /* one-call notices for the next request */
    sbuf notices;
    /* budget */
    clm_tiers tiers;
    clm_calibrator cal;
    clm_guard_cache guard;
    size_t est_next;           /* calibrated estimate of the last request built */
    size_t observed_prev;      /* provider's count of the previous request */
    int observed_stale;
    size_t withheld;           /* tool results withheld in the last request */
    size_t capped_n;           /* tool results capped in the last request */
    unsigned long repairs;     /* max_tokens raised */
    unsigned invalidations;    /* consecutive revision invalidations */
    /* what the last request carried */
    size_t eff_n, eff_raw_n;
    /* steering */
    char *steering_text;
    char steering_hash[13];
    /* /clm-compact */
    int compact_pending;
    int compact_wait;          /* 1: waiting for agent_end to send it as a user message;
                                * 0: it rides on the next request as a notice (level 1) */
    char *compact_baseline;    /* the typed instructions of the waiting request (owned) */
    unsigned long stale_epoch; /* bumped by every baseline change (tree, reset, reload...) */
    unsigned long compact_epoch; /* stale_epoch when /clm-compact was asked */
    int compact_enabled;       /* live context on/off then */
    unsigned tools_this_turn;
} clm_glue;

/* ---- clm.c services used by the commands ---- */
size_t clm_budget_of(const clm_glue *g);
/* Queue a one-call notice for the next request. */
void clm_notice(clm_glue *g, const char *text);
/* Persist a custom entry whose data is JSON text, and mark it on the branch (clm_marks.h);
 * its id in *out_id (optional, malloc'd). */
int clm_append_raw(clm_glue *g, const char *type, const char *json, clm_mark_kind kind,
                   long revision, int enabled, char **out_id, char **err);
/* The baseline moved (`why`): a draft is discarded, a waiting /clm-compact cancelled. */
void clm_mark_stale(clm_glue *g, const char *why);
/* Back to the raw transcript, recorded as a reset entry saying `why`. */
int clm_to_raw(clm_glue *g, const char *why, const char *stale_why, char **err);
/* The /clm-compact prompt for `instructions` (malloc'd), NULL when its file is unreadable. */
char *clm_compact_prompt(clm_glue *g, const char *instructions);
/* A path setting resolved against the session's folder (malloc'd). */
char *clm_resolve(clm_glue *g, const char *path);
int clm_redact_on(const clm_glue *g);
/* Load the steering document named by `s`: *text (masked; NULL when none) and its hash. */
int clm_load_steering(clm_glue *g, const clm_settings *s, char **text, char hash[13], char **err);
/* Persist the settings in `next` (an overrides entry), then make them the ones in force.
 * On failure nothing changes. */
int clm_settings_commit(clm_glue *g, clm_settings *next, char **err);

/* ---- clm_pages.c: the pages and the commands ---- */
char *clm_page_status(clm_glue *g);
char *clm_page_input(clm_glue *g);
char *clm_page_edits(clm_glue *g, const char *args);
char *clm_page_overview(clm_glue *g, const char *args);
char *clm_page_settings(clm_glue *g);
/* The /clm and /clm-compact command handlers (plugin_register_command). */
int clm_page_command(void *ud, const char *args, char **out_text, char **err);
int clm_page_compact_command(void *ud, const char *args, char **out_text, char **err);

#endif
