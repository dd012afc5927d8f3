/*
 * homestore.h -- the agent home's own store: one database per agent home,
 * <home>/lcm-home/home.sqlite (folder 0700, file 0600), beside and never among the
 * session stores (catalog.h lists <home>/lcm/ only). It holds what is learned across
 * sessions: dream's patterns with their lineage (session + entry id / summary id), the
 * dream log and the per-store watermarks that make a rerun idempotent, the consolidation
 * records (summaries recorded as merged; originals untouched in their session stores),
 * the behavior contracts with their append-only trail, and the cost ledger (every model
 * call LCM makes, ledger.h).
 * Owns the schema and its rows; the policy (what a pattern is, the contract state
 * machine) is dream.c's and contracts.c's. The SQL lives in store_sqlite_home.c; nothing
 * here names a SQLite type. Every function returns an LC_* status with *err a sentence.
 */
#ifndef LC_HOMESTORE_H
#define LC_HOMESTORE_H

#include <stddef.h>
#include <stdint.h>

#define HOMESTORE_DIR "lcm-home"
#define HOMESTORE_FILE "home.sqlite"
#define HOMESTORE_SCHEMA_VERSION 2

typedef struct homestore homestore;

/* <home>/lcm-home/home.sqlite (malloc'd; NULL on OOM). */
char *homestore_path(const char *home);
/* Open the home store; with `create` make the folder (0700) and the file (0600) when
 * absent, else LC_NOTFOUND when there is none (a reader that must not leave files behind:
 * the bundle, status). */
int homestore_open(const char *home, int create, homestore **out, char **err);
void homestore_close(homestore *h);

/* One write transaction over several calls (BEGIN IMMEDIATE: the write lock is taken at
 * once, so two writers never both read then write). Rollback is safe with none open. */
int homestore_begin(homestore *h, char **err);
int homestore_commit(homestore *h, char **err);
void homestore_rollback(homestore *h);

/* meta: key -> value (malloc'd, NULL when absent). */
char *homestore_meta_get(homestore *h, const char *key);
int homestore_meta_put(homestore *h, const char *key, const char *value, char **err);

/* ---- the dream log ---------------------------------------------------------------------- */
typedef struct homestore_run {
    const char *scope;        /* "project" | "global" */
    const char *project;      /* the folder (NULL for global) */
    long long started, finished; /* epoch ms */
    const char *status;       /* "done" | "nothing-new" | "budget" | "failed" */
    int64_t sessions, messages, summaries, patterns, consolidations, contracts;
    const char *model;        /* "heuristics" or "provider/id" */
    const char *report_path;  /* NULL when no report was written */
    const char *note;         /* e.g. the model failure that made heuristics run */
} homestore_run;
int homestore_run_add(homestore *h, const homestore_run *r, int64_t *id, char **err);
/* The newest run's finish (epoch ms), 0 when none. */
long long homestore_run_last(homestore *h);
int64_t homestore_run_count(homestore *h);

/* ---- watermarks: how far a scope's dream has read one session store --------------------- */
typedef struct homestore_mark {
    int64_t ordinal, row;     /* the last message read (store_search_scope's after_*) */
    int64_t summary;          /* the highest summary id read */
} homestore_mark;
/* Zeros when the scope never read the session. */
int homestore_mark_get(homestore *h, const char *scope_key, const char *session, homestore_mark *out,
                       char **err);
int homestore_mark_put(homestore *h, const char *scope_key, const char *session, const homestore_mark *m,
                       char **err);
/* Sessions some scope has read (for "N sessions since the last dream"). */
int64_t homestore_marked_sessions(homestore *h);

/* ---- patterns and their lineage ---------------------------------------------------------- */
typedef struct homestore_pattern {
    int64_t id;
    char *kind, *text, *project;   /* project NULL: global */
    int64_t count, score;          /* count: distinct sources */
    long long first_seen, last_seen;
} homestore_pattern;
void homestore_patterns_free(homestore_pattern *v, size_t n);

/* The pattern with `key` in `project` (NULL = global), created when new (*is_new); the
 * score kept is the highest seen. */
int homestore_pattern_note(homestore *h, const char *kind, const char *text, const char *key,
                           const char *project, int64_t score, long long now, int64_t *id, int *is_new,
                           char **err);
/* One source of a pattern: a message (entry_id, summary_id 0) or a summary (summary_id,
 * entry_id NULL) of `session`. *added is 0 when it was already recorded; the pattern's
 * count is its number of sources. */
int homestore_source_add(homestore *h, int64_t pattern_id, const char *session, const char *entry_id,
                         int64_t summary_id, int64_t ordinal, const char *excerpt, long long now, int *added,
                         char **err);
/* The strongest patterns (score x count, then newest): of `project` and, with
 * include_global, the global ones; project NULL = the global ones only. */
int homestore_patterns_top(homestore *h, const char *project, int include_global, size_t limit,
                           homestore_pattern **out, size_t *n, char **err);
int64_t homestore_pattern_count(homestore *h);

typedef struct homestore_source {
    char *session, *entry_id;     /* entry_id NULL for a summary */
    int64_t summary_id, ordinal;
    char *excerpt;
} homestore_source;
void homestore_sources_free(homestore_source *v, size_t n);
int homestore_sources(homestore *h, int64_t pattern_id, size_t limit, homestore_source **out, size_t *n,
                      char **err);

/* ---- consolidation records ---------------------------------------------------------------- */
/* 1 when summary `id` of `session` is already a member of a consolidation. */
int homestore_consolidated(homestore *h, const char *session, int64_t summary_id);
/* Record `n` summaries (sessions[i], ids[i]) as merged into one node `text`. */
int homestore_consolidation_add(homestore *h, const char *text, int64_t tokens, double overlap,
                                const char *const *sessions, const int64_t *ids, size_t n, long long now,
                                int64_t *id, char **err);
int64_t homestore_consolidation_count(homestore *h);

/* ---- contracts and their trail ------------------------------------------------------------ */
typedef struct homestore_contract {
    int64_t id;
    char *kind, *body, *state, *project, *reason;  /* project NULL: global */
    int64_t pattern_id, supersedes, superseded_by;
    long long created, updated;
} homestore_contract;
void homestore_contract_free(homestore_contract *c);
void homestore_contracts_free(homestore_contract *v, size_t n);

int homestore_contract_add(homestore *h, const char *kind, const char *body, const char *state,
                           const char *project, int64_t pattern_id, int64_t supersedes, long long now,
                           int64_t *id, char **err);
/* LC_NOTFOUND when there is no contract `id`. */
int homestore_contract_get(homestore *h, int64_t id, homestore_contract *out, char **err);
/* Move contract `id` from state `from` to `to` (with reason and superseded_by, which may
 * be NULL / 0). *changed is 0 when it was not in `from` (nothing written). */
int homestore_contract_set_state(homestore *h, int64_t id, const char *from, const char *to, const char *reason,
                                 int64_t superseded_by, long long now, int *changed, char **err);
/* Contracts in `state` (NULL = every state), by id; `project` non-NULL keeps that folder's
 * and the global ones. */
int homestore_contracts_list(homestore *h, const char *state, const char *project, homestore_contract **out,
                             size_t *n, char **err);
/* 1 when a contract was ever proposed from pattern `pattern_id` or with this body. */
int homestore_contract_known(homestore *h, int64_t pattern_id, const char *body);
int64_t homestore_contract_count(homestore *h, const char *state);
/* 1 when an Active contract came from pattern `pattern_id`. */
int homestore_contract_active_for(homestore *h, int64_t pattern_id);

typedef struct homestore_trail {
    int64_t id, contract_id;
    long long at;
    char *actor, *action, *from_state, *to_state, *reason, *body;
} homestore_trail;
void homestore_trail_free(homestore_trail *v, size_t n);
/* Append one trail row; the table refuses UPDATE and DELETE. */
int homestore_trail_add(homestore *h, int64_t contract_id, long long at, const char *actor, const char *action,
                        const char *from_state, const char *to_state, const char *reason, const char *body,
                        char **err);
int homestore_trail_list(homestore *h, int64_t contract_id, homestore_trail **out, size_t *n, char **err);

/* ---- the cost ledger (policy: ledger.h) ----------------------------------------------------- */
typedef struct homestore_spend {
    long long at;                 /* epoch ms */
    const char *session;          /* the session that spent ("-" outside one) */
    const char *kind;             /* summary, heal, dream, expand, embed */
    const char *provider, *model;
    int64_t input, output, cached;   /* tokens; input includes cached */
    double cost;                  /* USD */
    const char *cost_source;      /* "provider", "prices" or "none" */
    const char *status;           /* "ok", "failed", "limited" (a refusal: no call made) */
    const char *note;             /* why (a limit's sentence, a failure) or NULL */
} homestore_spend;
int homestore_spend_add(homestore *h, const homestore_spend *r, int64_t *id, char **err);

typedef struct homestore_spend_total {
    int64_t calls, input, output, cached;
    double cost;
} homestore_spend_total;
/* Calls made (limited rows excluded) of `kind` (NULL: every kind) since `since` (epoch ms). */
int homestore_spend_sum(homestore *h, const char *kind, long long since, homestore_spend_total *out, char **err);
/* The newest `limited` row of `kind` at or after `since`, 0 when none. */
long long homestore_spend_limited_since(homestore *h, const char *kind, long long since);

typedef struct homestore_spend_group {
    char *key;                    /* the day (YYYY-MM-DD, UTC), the session, the kind, or "kind model" */
    homestore_spend_total total;
    int64_t limited;              /* refusals in the group */
} homestore_spend_group;
void homestore_spend_groups_free(homestore_spend_group *v, size_t n);
/* Totals since `since` (of `session` when non-NULL) grouped `by` "day", "session", "kind" or
 * "model", in key order. */
int homestore_spend_groups(homestore *h, const char *by, const char *session, long long since,
                           homestore_spend_group **out, size_t *n, char **err);

typedef struct homestore_spend_row {
    long long at;
    char *session, *kind, *model, *status, *note;
    int64_t input, output, cached;
    double cost;
} homestore_spend_row;
void homestore_spend_rows_free(homestore_spend_row *v, size_t n);
/* The newest `limited` rows (at most `limit`), newest first. */
int homestore_spend_limited(homestore *h, const char *session, long long since, size_t limit,
                            homestore_spend_row **out, size_t *n, char **err);

#endif
