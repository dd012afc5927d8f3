/*
 * clm_live.h -- the live context of one session (docs/DESIGN.md §1.1, §3, §4, §5): its
 * state (the revision in force, the branch marks, the one-call notices, the budget state,
 * the settings in force, the last rendering), the rules of every session event (start,
 * restore and tree moves, the edit read at turn end, compaction, the tool hooks). The
 * composition of a request on this state (revision ++ LCM's projection of the raw suffix,
 * the observation cap, the overflow guard, the mirror rendered in O(new)) is
 * clm_request.h.
 *
 * The host is reached only through clm_live_hooks, in engine types: a plugin (or another
 * host) fills them once and converts its own types at the edge. The /clm pages that read
 * this state are clm_pages.h.
 */
#ifndef LC_CLM_LIVE_H
#define LC_CLM_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "clm_apply.h"
#include "clm_budget.h"
#include "clm_doc.h"
#include "clm_eff.h"
#include "clm_folder.h"
#include "clm_marks.h"
#include "clm_raw.h"
#include "clm_revision.h"
#include "clm_settings.h"
#include "util.h"

#define CLM_NOTICE_TYPE "live-context-notice"

/* How a hook's `say` reaches the user: logged, or notified (shown); info or warning. */
enum { CLM_LIVE_INFO = 1, CLM_LIVE_WARNING = 2, CLM_LIVE_NOTIFY = 0x10 };

/* What the host side knows at the moment of a call (borrowed until the call returns). */
typedef struct clm_live_facts {
    long window;                 /* the host's window (or its correction); <= 0 unknown */
    const char *cwd;             /* the session's folder; NULL or "" unknown */
    const char *session_id;      /* NULL or "" unknown */
    int redact;                  /* redactSecrets */
    unsigned long context_calls; /* requests composed in this process */
    size_t branch_tokens;        /* the branch's estimate as counted at session start */
} clm_live_facts;

/* The host, as the live context uses it. Statuses are LC_*, or the host's own status
 * passed through unchanged. */
typedef struct clm_live_hooks {
    void *ud;
    void (*say)(void *ud, int how, const char *text);
    /* Persist a custom entry whose data is JSON text (kept byte for byte); *out_id its id
     * (malloc'd, NULL when the host gave none). */
    int (*append)(void *ud, const char *type, const char *json, char **out_id, char **err);
    /* The active branch as JSON text (malloc'd). */
    int (*branch)(void *ud, char **out, char **err);
    /* One entry by id, parsed; LC_NOTFOUND when there is none. NULL: the host cannot. */
    int (*entry)(void *ud, const char *id, cJSON **out, char **err);
    void (*facts)(void *ud, clm_live_facts *out);
} clm_live_hooks;

typedef struct clm_live {
    clm_live_hooks hooks;
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
} clm_live;

/* A new state (enabled, settings from the environment); *out owned by the caller. */
int clm_live_new(const clm_live_hooks *hooks, const char *tmp_dir, const char *session_id,
                 clm_live **out, char **err);
void clm_live_free(clm_live *g);

/* ---- services (for the pages, the commands and the plugin) ---- */
void clm_live_facts_get(const clm_live *g, clm_live_facts *f);
/* The window every budget is measured against: the host's, else LC_WINDOW_DEFAULT. */
size_t clm_live_window(const clm_live *g);
void clm_live_say(const clm_live *g, int how, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
size_t clm_live_budget(const clm_live *g);
/* Queue a one-call notice for the next request. */
void clm_live_notice(clm_live *g, const char *text);
/* Persist a custom entry whose data is JSON text, and mark it on the branch (clm_marks.h);
 * its id in *out_id (optional, malloc'd). */
int clm_live_append(clm_live *g, const char *type, const char *json, clm_mark_kind kind,
                    long revision, int enabled, char **out_id, char **err);
/* The baseline moved (`why`): a draft is discarded, a waiting /clm-compact cancelled. */
void clm_live_mark_stale(clm_live *g, const char *why);
/* Back to the raw transcript, recorded as a reset entry saying `why`. */
int clm_live_to_raw(clm_live *g, const char *why, const char *stale_why, char **err);
/* The /clm-compact prompt for `instructions` (malloc'd), NULL when its file is unreadable. */
char *clm_live_compact_prompt(clm_live *g, const char *instructions);
/* A path setting resolved against the session's folder (malloc'd). */
char *clm_live_resolve(const clm_live *g, const char *path);
/* Persist the settings in `next` (an overrides entry), then make them the ones in force.
 * On failure nothing changes. */
int clm_live_settings_commit(clm_live *g, clm_settings *next, char **err);
/* The raw messages the revision in force owns (0 when none or off). */
size_t clm_live_anchor(const clm_live *g);

/* For clm_request.c: the mirror folder claimed (1: it changed), the anchor of the
 * revision in force (NULL: none), the revision dropped. */
int clm_live_claim_dir(clm_live *g);
const clm_raw_anchor *clm_live_anchor_of(const clm_live *g, clm_raw_anchor *a);
void clm_live_drop_revision(clm_live *g);

/* ---- events ---- */
/* A session starts (or starts again): its folder is claimed, the branch read. */
int clm_live_session_start(clm_live *g, const char *tmp_dir, const char *session_id,
                           const char *model, const char *reason, char **err);
void clm_live_session_shutdown(clm_live *g);
/* The system prompt with the protocol and the steering appended (malloc'd); NULL when off. */
char *clm_live_system_prompt(clm_live *g, const char *system_prompt);
/* A tool call: the reason to block it (static text), or NULL. */
const char *clm_live_tool_call(clm_live *g);
/* A tool result of `chars` characters: the size trailer to append (malloc'd), or NULL. */
char *clm_live_tool_trailer(clm_live *g, size_t chars);
/* The turn's final message (`msg`, borrowed): usage observed, the mirror read, an edit
 * accepted or rejected. */
int clm_live_turn_end(clm_live *g, const cJSON *msg, char **err);
/* A host compaction is about to run (`reason`, the provider's `error`): 1 to cancel it. */
int clm_live_before_compact(clm_live *g, const char *reason, const char *error);
/* A host compaction made entry `compaction_id`: the transcript is the new baseline. */
void clm_live_compact(clm_live *g, const char *compaction_id);
/* The leaf moved: incrementally when the marks can follow, else the branch is read again. */
int clm_live_tree(clm_live *g, const char *old_leaf, const char *new_leaf, char **err);

#endif
