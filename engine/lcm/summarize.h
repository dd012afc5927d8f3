/*
 * summarize.h -- the summarizer chain and the three-level escalation.
 *
 * Owns: the extractive summarizer (no model: ranks sentences and keeps identifiers,
 * numbers, paths, key=value pairs and decisions verbatim within a token target); the
 * deterministic truncation tagged [lcm:truncated]; the chain of model entries (`auto` =
 * the session model through the host, `provider/id` through a second completion function,
 * `extractive` = the embedded summarizer) with its failure rules, per-pass demotion,
 * once-per-session reporting of unknown entries, token budgets per call and per pass, and
 * a circuit breaker per provider; and the escalation preserve-details -> bullets ->
 * truncation, each level accepted only on strict token reduction.
 *
 * A summ_ctx is not thread-safe: one pass at a time, on one thread (the worker).
 */
#ifndef LC_SUMMARIZE_H
#define LC_SUMMARIZE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define SUMM_TRUNCATED_TAG "[lcm:truncated]"
#define SUMM_EXTRACTIVE "extractive"
#define SUMM_AUTO "auto"

/* Token estimate used everywhere in this module: ceil(bytes / 4), as message.h. */
size_t summ_estimate_tokens(const char *text);

/* Output style of a summary. */
typedef enum summ_style { SUMM_DETAILS = 1, SUMM_BULLETS = 2 } summ_style;

/* The extractive summarizer: sentences ranked by what they carry (identifiers, numbers,
 * paths, key=value pairs, decisions, errors), chosen within `target_tokens`, printed in
 * source order (as "- " bullets for SUMM_BULLETS); key=value pairs and paths of unchosen
 * sentences follow on a "Key facts:" line while the budget allows. The result never
 * exceeds target_tokens (estimate). malloc'd, "" for an empty source; NULL on OOM. */
char *summ_extractive(const char *source, size_t target_tokens, summ_style style);

/* Deterministic truncation: "[lcm:truncated] " + head of the source + " [...] " + tail,
 * cut at UTF-8 boundaries, at most target_tokens (estimate; at least the tag). malloc'd. */
char *summ_truncate(const char *source, size_t target_tokens);

/* What one model call returned. The callee fills it with malloc'd strings. */
typedef struct summ_completion {
    char *text;          /* the answer's text */
    char *stop_reason;   /* "stop", "length", "error", ... (may be NULL = "stop") */
    long input_tokens;   /* what the provider billed (0 when unknown) */
    long output_tokens;
    long cached_tokens;  /* of input_tokens, served from the provider's prompt cache */
    int has_cost;        /* the provider reported the call's cost (USD) in `cost` */
    double cost;
    char *model;         /* the model that answered as the provider names it (may be NULL) */
} summ_completion;
void summ_completion_free(summ_completion *c);

/* One completion with the session model (the `auto` entry), through the host.
 * Return LC_OK (fill *out), LC_NOTFOUND when no session model is available (the entry is
 * then reported once and skipped), or another status with *err for a failed call. */
typedef int (*summ_auto_fn)(void *ud, const char *system_prompt, const char *prompt,
                            long max_tokens, summ_completion *out, char **err);
/* One completion with a named model: `provider` is the text before the first '/', `model`
 * the rest ("openrouter", "z-ai/glm-5.3-flash"). Same return contract as summ_auto_fn;
 * LC_NOTFOUND = the registry does not know this entry. */
typedef int (*summ_model_fn)(void *ud, const char *provider, const char *model,
                             const char *system_prompt, const char *prompt, long max_tokens,
                             summ_completion *out, char **err);
/* An event: kind is "summarizer-fallback", "summarizer-model", "summarizer-capped",
 * "summarizer-call", "summarizer-breaker" or "summarizer-limited" (a ledger limit made the
 * call extractive: data has spendKind, reason and first, 1 for the first refusal of its window,
 * which the user is told of); data is borrowed for the call. */
typedef void (*summ_event_fn)(void *ud, const char *kind, const cJSON *data);

typedef struct summ_config {
    const char *const *chain;   /* configured entries in order; NULL/0 = unset ("auto") */
    size_t n_chain;
    long tokens_per_call;       /* refuse a request estimated above this; 0 = no cap */
    long tokens_per_pass;       /* refuse once billed + estimate would cross; 0 = no cap */
    int breaker_threshold;      /* consecutive failures that open a provider; 0 = 3 */
    int breaker_cooldown_passes;/* passes an open provider is skipped; 0 = 5 */
    summ_auto_fn auto_fn;       /* NULL: `auto` is unavailable */
    summ_model_fn model_fn;     /* NULL: every provider/id entry is unknown */
    summ_event_fn event_fn;     /* may be NULL */
    void *ud;                   /* passed to the three functions */
    int send_unmasked;          /* redactSecrets: false. 0 (the default): the text a model
                                 * request carries, and the provider error text an event
                                 * carries, pass redact_text first */
    int truncate_only;          /* every summary is level 3, made at once without a call:
                                 * the cover the host thread lays when summaries are late */
    const struct ledger *ledger;/* every model call is recorded there and its limits are
                                 * checked before one (ledger.h); NULL: neither */
    const char *ledger_kind;    /* the ledger's kind of these calls; NULL = "summary" */
} summ_config;

typedef struct summ_ctx summ_ctx;

/* Build the chain that runs: configured entries (duplicates and empties dropped), then
 * `auto` unless named, then `extractive` unless named (the embedded last resort, which
 * cannot fail). An entry that is neither `auto`, `extractive` nor "provider/id" is
 * reported once (summarizer-model, reason "unknown") and left out. */
int summ_create(const summ_config *cfg, summ_ctx **out, char **err);
void summ_free(summ_ctx *s);

/* The chain that actually runs, joined with " -> " (for /lcm doctor). malloc'd. */
char *summ_chain_describe(const summ_ctx *s);

/* A pass: the order is reset to the configured one, the pass budget restarts, open
 * breakers count down one pass. */
void summ_pass_begin(summ_ctx *s);

typedef struct summ_pass_stats {
    long billed_tokens;   /* input + output the providers reported this pass */
    int calls;            /* model calls made (not counting refusals) */
    int failures;
    int fallbacks;        /* summaries that needed more than one entry */
    int capped;           /* 1 once a budget refused a call this pass */
    int limited;          /* 1 once a ledger limit made this pass extractive */
} summ_pass_stats;
void summ_pass_stats_get(const summ_ctx *s, summ_pass_stats *out);

/* One summary through the chain at one level. style SUMM_DETAILS (preserve details) or
 * SUMM_BULLETS. Every model entry (auto, provider/id) receives the source masked (unless
 * send_unmasked); the extractive entry reads it as stored, because it sends nothing
 * anywhere and what it returns is stored, which redactSecrets must never change. On
 * success *out_text (malloc'd) and *out_entry (borrowed from the ctx, e.g. "auto",
 * "extractive") are set. When the pass is capped (or this call is refused by a
 * budget) returns LC_BUSY without calling anything: the caller truncates. */
int summ_run_chain(summ_ctx *s, const char *source, size_t target_tokens, summ_style style,
                   const char *stage, char **out_text, const char **out_entry, char **err);

typedef struct summ_result {
    char *text;        /* primary text (malloc'd) */
    char *rich_text;   /* the thorough text, kept when a make-smaller pass won; else NULL */
    int level;         /* 1 preserve-details, 2 bullets, 3 truncation */
    int truncated;     /* level 3: text starts with [lcm:truncated] */
    size_t tokens;     /* summ_estimate_tokens(text) */
    const char *entry; /* who produced text: a chain entry, or "truncate" (borrowed) */
} summ_result;
void summ_result_free(summ_result *r);

/* The three-level escalation over `source` for a node whose target is target_tokens:
 * level 1 (preserve details) and level 2 (bullets, same output budget) through the chain,
 * each accepted only when its estimate is strictly below the source's; level 3 truncation
 * otherwise (and for the rest of a capped pass). A level-1 text over twice the target earns
 * one level-2 make-smaller pass over it: the smaller becomes primary, the thorough one
 * rich_text. LC_INVALID for an empty source. */
int summ_summarize(summ_ctx *s, const char *source, size_t target_tokens, summ_result *out,
                   char **err);

#endif
