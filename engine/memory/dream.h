/*
 * dream.h -- what the history teaches: a bounded pass over the messages and summaries the
 * session stores gained since the last dream of a scope (a project folder, or every
 * folder), extracting patterns of five kinds -- correction, preference, anti-pattern,
 * convention, decision -- from what the person said (their requests, carry.h; never a
 * tool result, a page, a file, the assistant's prose or a summary), each with its lineage
 * (session + entry id, which lcm_expand reads back); summaries are read for consolidation. With a model (a provider/id entry of the summarizer chain) a
 * structured prompt asks for JSON patterns; with none, or when a call fails (the report
 * says so), a table of phrase rules does. Also: recording summaries whose sources overlap
 * by more than half as merged (consolidation records in the home store; the originals are
 * never touched), proposing a few Pending contracts from the strongest patterns, a
 * timestamped markdown report, the dream log, the one-run-at-a-time lock, the automatic
 * trigger's test, and the patterns' lines of the start-of-session bundle.
 * Session stores are only read (catalog_list_stores, store_open_readonly); everything
 * dream writes goes to the home store (homestore.h).
 */
#ifndef LC_DREAM_H
#define LC_DREAM_H

#include <stddef.h>
#include <stdint.h>

#include "summarize.h"

typedef struct lcm_config lcm_config;

#define DREAM_KINDS "correction, preference, anti-pattern, convention, decision"
#define DREAM_DEFAULT_TOKENS 200000L    /* source tokens one run reads */
#define DREAM_DEFAULT_TIME_MS 60000L
#define DREAM_DEFAULT_CONTRACTS 3
#define DREAM_CALL_TOKENS 6000L         /* source tokens per model call */
#define DREAM_LOCK_STALE_MS (2L * 3600 * 1000)
#define DREAM_PATTERN_CHARS 240

/* The model dream may call (NULL fn: heuristics only). */
typedef struct dream_model {
    summ_model_fn fn;
    void *ud;
    char provider[128];             /* "openai" */
    const char *model;              /* "gpt-4.1-mini" (borrowed) */
    long max_tokens;                /* answer bound; 0 = 1500 */
    int send_unmasked;              /* redactSecrets false; 0: the excerpts are masked
                                     * (redact_text) before they leave, as the summarizer's */
} dream_model;

typedef struct dream_opts {
    const char *home;
    const char *project;      /* the folder of a project dream (NULL with global) */
    int global;               /* every folder; patterns recorded as global */
    long token_budget;        /* 0 = DREAM_DEFAULT_TOKENS */
    long time_budget_ms;      /* 0 = DREAM_DEFAULT_TIME_MS */
    int max_contracts;        /* Pending proposals per run; < 0 = DREAM_DEFAULT_CONTRACTS */
    dream_model model;
    const char *actor;        /* who proposes, for the contracts' trail */
} dream_opts;

typedef struct dream_result {
    char *text;               /* what to print (malloc'd) */
    char *json;               /* the same as a JSON document (malloc'd) */
    char *report_path;        /* NULL when nothing new was read */
    int64_t sessions, messages, summaries, patterns_new, sources_new, consolidations, contracts;
    int nothing_new, budget_hit, model_failed;
} dream_result;
void dream_result_free(dream_result *r);

/* One run. LC_BUSY when another run holds the lock (nothing done). */
int dream_run(const dream_opts *o, dream_result *out, char **err);

/* The options of `lcm dream` / `/lcm dream` from lcm.json (budgets, contracts per run) and
 * the model from the summarizer chain's first provider/id entry, routed through `routes_ud`
 * with `fn` (llm_http_summarizer and its routes; fn NULL = heuristics). Strings borrowed
 * from cfg. */
void dream_opts_from_config(const lcm_config *cfg, summ_model_fn fn, void *routes_ud, dream_opts *o);

/* The command body shared by `lcm dream` and `/lcm dream`: argv is [--project DIR |
 * --global] [--json] (argv[0] the first option); `cwd` the default project. *out is the
 * text (or the JSON document with --json). */
int dream_command(const dream_opts *base, const char *cwd, int argc, const char *const *argv, char **out,
                  char **err);
extern const char dream_usage[];
/* The same from one command line (`/lcm dream --global`). */
int dream_command_line(const dream_opts *base, const char *cwd, const char *line, char **out, char **err);

/* The automatic trigger (autoDream in lcm.json, off by default): 1 when at least
 * dreamAfterSessions session stores changed since the last run or dreamAfterHours have
 * passed since it (a home never dreamed counts from its first session store). */
int dream_due(const char *home, const lcm_config *cfg);

/* The start-of-session lines: the Active contracts (a person approved each), then, only
 * with `with_patterns` (lcm.json dreamUnapprovedPatterns), the strongest patterns of `cwd`
 * and the global ones, each with its lineage, marked as unapproved; within
 * `budget_tokens`. *out malloc'd, NULL when there is nothing to carry (no home store:
 * nothing created). */
int dream_bundle_text(const char *home, const char *cwd, long budget_tokens, int with_patterns, char **out,
                      char **err);

#endif
