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
#include "clm_marks.h"
#include "clm_revision.h"
#include "clm_settings.h"
#include "plugin.h"
#include "sha256.h"
#include "util.h"

#define CLM_NOTICE_TYPE "live-context-notice"

/* Digest checkpoints are kept every this many raw messages: a tree move re-hashes at
 * most this many messages of the common prefix, plus what is new. */
#define CLM_RAW_CKPT 64

/* The raw messages seen so far, keyed on entry ids so that a request whose prefix did not
 * change costs O(new), and one after a tree move O(distance moved): a running digest with
 * checkpoints, per-message ids, estimates and capped forms. */
typedef struct clm_raw_cache {
    size_t n;                 /* raw messages folded into ctx */
    sha256_ctx ctx;
    sha256_ctx *ckpt;         /* ckpt[j]: the digest state after j * CLM_RAW_CKPT messages */
    size_t n_ckpt, ckpt_cap;
    char **ids;               /* per raw message: its entry id (owned) or NULL */
    size_t n_anon;            /* raw messages with no entry id (a full pass each time) */
    size_t *tokens;           /* per raw message */
    char **capped;            /* per raw message: observation-capped JSON or NULL */
    unsigned char *excluded;  /* per raw message: kept out of the request (host rule) */
    size_t cap;
    int rev_checked;          /* the revision's anchor was compared with this prefix */
    int rev_ok;
    char *rev_why;            /* why it did not match (owned) */
} clm_raw_cache;

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
    /* the last rendering */
    clm_view view;
    int have_view;
    int view_stale;            /* the baseline moved since (tree, reset, compaction) */
    char stale_why[96];
    size_t view_raw_n;         /* raw messages the view covered: the anchor of an edit */
    char view_digest[65];
    size_t view_rev_n;         /* messages of the view that came from the revision */
    uint8_t mirror_hash[32];   /* clm_mirror_digest of what the plugin last wrote or read: a later
                                * write by anyone else is a draft */
    int mirror_current;        /* the file holds exactly the last rendering */
    int render_off;            /* no model (replay): nobody can edit, nothing rendered */
    char *dir, *path;          /* the mirror folder this process uses, and its LIVE_CONTEXT.md */
    char *base_dir;            /* the session's folder, TMP/lossless-context-SID; when another live
                                * process owns it, dir is BASE.PID (our own) */
    int own_fd;                /* holds the owner lock of dir (clm_safefs.h); -1 none */
    long other_pid;            /* the owner of base_dir when it is not us (0 none, told once) */
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

/* ---- clm.c services used by the pages ---- */
size_t clm_budget_of(const clm_glue *g);
/* Persist the settings in `next` (an overrides entry), then make them the ones in force.
 * On failure nothing changes. */
int clm_settings_commit(clm_glue *g, clm_settings *next, char **err);

/* ---- clm_pages.c ---- */
char *clm_page_status(clm_glue *g);
char *clm_page_input(clm_glue *g);
char *clm_page_edits(clm_glue *g, const char *args);
char *clm_page_overview(clm_glue *g, const char *args);
char *clm_page_settings(clm_glue *g);

#endif
