/*
 * clm_budget.h -- budget awareness for live context (docs/DESIGN.md §5.1-§5.4): reminder
 * tiers that fire once and re-arm, the estimate calibrator, the overflow guard that
 * withholds the oldest raw-suffix tool results behind notes, and the max_tokens repair.
 * Owns the guard cache (notes per source message) and nothing else.
 */
#ifndef LC_CLM_BUDGET_H
#define LC_CLM_BUDGET_H

#include <stddef.h>

#include "clm_revision.h"

#define CLM_DEFAULT_RESERVE 2048
#define CLM_PROVIDER_MARGIN 4096   /* the host clamps max_tokens to window - est - this */

/* ---- reminder tiers: 50%, 75%, 90% of the budget, and budget - reserve ---- */
#define CLM_N_TIERS 4
typedef struct clm_tiers {
    unsigned fired;   /* bit i: tier i fired and has not re-armed */
} clm_tiers;

/* Judge `used` tokens. Returns the tier (1..4, 4 = budget - reserve) that fires now, or 0.
 * A tier fires once; it re-arms when usage drops below its threshold. When usage jumps
 * over several tiers only the highest fires, and the lower ones count as fired. */
int clm_tiers_check(clm_tiers *t, size_t used, size_t budget, size_t reserve);
/* Reminder text (malloc'd) naming both size numbers separately. observed == 0: unknown. */
char *clm_budget_notice(int tier, size_t estimated_next, size_t observed_prev,
                        int observed_stale, size_t budget, size_t reserve);

/* ---- estimate calibrator ---- */
typedef struct clm_calibrator {
    double factor;          /* >= 1, <= 4, applied to every estimate */
    double seed;
    size_t pending;         /* raw estimate of the request awaiting its usage */
    unsigned samples;
} clm_calibrator;

/* Seed from an environment value such as LC_CLM_ESTIMATE_FACTOR (NULL/invalid: 1). */
void clm_calib_init(clm_calibrator *c, const char *seed_text);
void clm_calib_sent(clm_calibrator *c, size_t raw_estimate);
/* The provider reported the size of the request last sent: update the EMA. */
void clm_calib_observed(clm_calibrator *c, size_t provider_tokens);
size_t clm_calib_apply(const clm_calibrator *c, size_t raw_estimate);

/* ---- overflow guard ---- */
typedef struct clm_guard_note {
    char key[65];          /* SHA-256 of the source message JSON */
    char *json;            /* the note message (owned) */
    size_t tokens;
} clm_guard_note;

typedef struct clm_guard_cache {
    clm_guard_note *notes;
    size_t n, cap;
} clm_guard_cache;

void clm_guard_cache_free(clm_guard_cache *c);

typedef struct clm_guard_result {
    const char **replace;  /* per message: note JSON (borrowed from the cache) or NULL */
    size_t n_withheld;     /* replaced in this call, cached ones included */
    size_t tokens;         /* calibrated estimate after the guard */
    int still_over;
    char *notice;          /* "[CLM BUDGET] Overflow guard ..." or NULL when nothing */
} clm_guard_result;

void clm_guard_result_free(clm_guard_result *r);

/* The request limit: min(budget - reserve, window - 4096 - reserve), never below 1. */
size_t clm_guard_limit(size_t budget, size_t reserve, size_t window);

/* msgs: the effective context; the first `prefix` belong to the accepted revision and are
 * never touched. fixed_tokens: system prompt + notices. tokens: per-message estimates
 * (NULL: computed). Files go to <mirror_dir>/withheld/. Previously withheld messages stay
 * withheld (identical notes across calls); then the oldest tool results of the raw
 * suffix, except those answering the newest assistant turn, are withheld one at a time
 * until the calibrated estimate fits `limit`. */
int clm_guard_apply(clm_guard_cache *cache, const char *mirror_dir, const clm_text *msgs,
                    size_t n, size_t prefix, const size_t *tokens, size_t fixed_tokens,
                    size_t limit, const clm_calibrator *cal, clm_guard_result *out,
                    char **err);

/* ---- max_tokens repair ---- */
/* Raise max_tokens / max_completion_tokens / max_output_tokens in a provider payload to
 * min(model_max, window - estimate - 4096) (at least 1) when set lower; never lower.
 * *out_json is NULL when nothing changed. */
int clm_max_tokens_repair(const char *payload, size_t len, size_t window, size_t model_max,
                          size_t calibrated_estimate, char **out_json, char **err);
/* The same on a parsed payload: *fixed is NULL when nothing is raised, else a repaired
 * copy (the caller's). */
int clm_max_tokens_repair_doc(const cJSON *payload, size_t window, size_t model_max,
                              size_t calibrated_estimate, cJSON **fixed, char **err);
/* 1 when a provider's error text says the request was over the model's context window. */
int clm_budget_is_overflow(const char *error);

#endif
