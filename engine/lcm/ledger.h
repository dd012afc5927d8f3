/*
 * ledger.h -- the cost ledger: every model call LCM itself makes (summaries, heal, dream,
 * expand_query's reader, embeddings) as one row of the home store (homestore.h): when,
 * which session, which kind of call, provider and model, tokens in / out / cached and the
 * cost -- the provider's own figure when its usage carries one, else the `prices` table of
 * lcm.json, else none. Owns the cost arithmetic, the `limits` rule (tokens or cost per
 * hour and per day, per kind and for all kinds together, over the last 60 minutes / 24
 * hours) and its refusal row, and the spend texts `status` and `report` print.
 *
 * Why the home store: the spend of one home is summed across its sessions (a daily limit
 * is the home's, not one session's), and the session stores are derived indexes a user may
 * delete. A ledger is immutable once made: safe from any thread; every call opens its own
 * connection, so the worker's rows and the host thread's never share one.
 */
#ifndef LC_LEDGER_H
#define LC_LEDGER_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "homestore.h"
#include "summarize.h"

/* The kinds of call (lcm.json's `limits` keys, with "all"). */
#define LEDGER_SUMMARY "summary"
#define LEDGER_HEAL "heal"
#define LEDGER_DREAM "dream"
#define LEDGER_EXPAND "expand"
#define LEDGER_EMBED "embed"
#define LEDGER_ALL "all"

#define LEDGER_HOUR_MS 3600000LL
#define LEDGER_DAY_MS 86400000LL

/* What one call's answer said it used. */
typedef struct ledger_usage {
    long input, output, cached;   /* tokens; input includes the cached ones */
    int has_cost;                 /* the provider reported its own cost */
    double cost;                  /* USD, when has_cost */
} ledger_usage;

/* The call's cost in USD: the provider's when reported (*source "provider"), else the
 * `prices` entry named exactly `model` (*source "prices": cached input at the cached price,
 * the rest of the input at the input price, output at the output price; per million tokens),
 * else 0 (*source "none"). */
double ledger_cost(const lcm_price *prices, size_t n_prices, const char *model, const ledger_usage *u,
                   const char **source);

/* Whether the spend of the last hour and of the last day stays under `lim`: LC_OK, or LC_BUSY
 * with *why (malloc'd) naming the limit reached and the spend ("summary: 1200 tokens in the
 * last 24 hours reached limits.summary.tokensPerDay 1000"); *window_ms is that limit's
 * window. A limit of 0 is none. */
int ledger_limit_check(const lcm_limit *lim, const homestore_spend_total *hour, const homestore_spend_total *day,
                       char **why, long long *window_ms);

typedef struct ledger ledger;

/* A ledger for `session` (may be NULL) of the home, with cfg's prices and limits copied. */
int ledger_new(const char *home, const char *session, const lcm_config *cfg, ledger **out, char **err);
void ledger_free(ledger *l);

/* Record one call made (ok: the answer was used; else failed, with `note`). A ledger that
 * cannot be written never fails the call: the status is for tests and logs. */
int ledger_record(const ledger *l, const char *kind, const char *provider, const char *model,
                  const ledger_usage *u, int ok, const char *note, char **err);

/* Before a call of `kind`: LC_OK when no limit of the kind (or of "all") is reached;
 * LC_BUSY when one is, with *why (malloc'd) saying which and *first = 1 when this is the
 * first refusal of the kind in the limit's window -- then a `limited` row holding *why was
 * written, and the caller says so once. A ledger that cannot be read allows the call (the
 * limit is a guard, not a reason to stop summarizing). */
int ledger_allow(const ledger *l, const char *kind, char **why, int *first);

/* A summ_model_fn that records its calls: `ud` is a ledger_model. A limit reached refuses
 * the call (LC_BUSY with the limit's sentence: the caller runs without a model, as for any
 * failed call, and the ledger holds the refusal); else fn(fn_ud, ...) runs and its usage is
 * recorded under `kind`. For the callers outside the summarizer chain: dream, expand. */
typedef struct ledger_model {
    const ledger *l;              /* NULL: fn runs unrecorded */
    const char *kind;
    summ_model_fn fn;
    void *fn_ud;
} ledger_model;
int ledger_model_fn(void *ud, const char *provider, const char *model, const char *system_prompt,
                    const char *prompt, long max_tokens, summ_completion *out, char **err);

/* One line for `status`: the last 24 hours' calls, tokens and cost per kind, and the newest
 * refusal in that window; NULL when the ledger is empty or absent (malloc'd). */
char *ledger_status_line(const char *home);

/* The `report` section: spend per day, per session, per kind (and model) since `since`, of
 * `session` when non-NULL, and the refusals; the same figures into `json` (may be NULL)
 * under "ledger". malloc'd; NULL on OOM. */
char *ledger_report(const char *home, const char *session, long long since, cJSON *json);

#endif
