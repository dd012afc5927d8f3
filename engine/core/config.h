/*
 * config.h -- LCM's configuration file `<agent home>/lcm.json`.
 *
 * Owns the strict-JSON reading of the file (comments, trailing commas and every other
 * non-RFC-8259 form rejected: a corrupt file is left untouched and defaults apply), the
 * per-key type and range rules (a value out of range is ignored like a wrong type), the
 * problem list that reports every normalization, per-model `zones` merged over the global
 * thresholds, the effective config as JSON, and writing the file back with a `.bak` of
 * the replaced file that is never itself replaced. Also the test-run guard: a process that
 * looks like a test refuses to touch a home outside a temp dir.
 */
#ifndef LC_CONFIG_H
#define LC_CONFIG_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "zones.h"

typedef struct lcm_zone_entry {
    char *model;  /* "provider/id" */
    zones_cfg zones;
} lcm_zone_entry;

typedef struct lcm_base_url {
    char *provider;  /* "openrouter", "anthropic", ... */
    char *url;       /* http(s)://... */
} lcm_base_url;

/* The `embeddings` object: hybrid recall's OpenAI-compatible embeddings endpoint. Off
 * (enabled 0) unless both url and model are given; then nothing else in LCM changes. */
typedef struct lcm_embeddings {
    int enabled;                    /* url and model both set */
    char *url;                      /* base (".../v1" or the server root) or the full
                                     * ".../embeddings" path */
    char *model;
    char *api_key_env;              /* `apiKeyEnv`: the variable holding a bearer key */
    long dimensions;                /* 0: the model's own; else asked for and checked */
    long batch;                     /* 16: inputs per request */
    long max_chars;                 /* 8,000: code points of one input */
    long timeout_ms;                /* 30,000: one request */
    long pass_rows;                 /* 64: rows one background pass embeds */
    double w_fts, w_vector;         /* `hybridWeights`: 1.0 and 1.0 */
    long rrf_k;                     /* 60 */
    int send_unmasked;              /* redactSecrets: false (0, the default: texts are
                                     * masked before they are sent) */
} lcm_embeddings;

/* One `prices` entry: what a model's tokens cost, in USD per million tokens, for the calls
 * whose provider reports no cost itself (ledger.h). */
typedef struct lcm_price {
    char *model;                    /* as the ledger names it: "provider/id" of a summarizer
                                     * entry, the host's model for `auto`, embeddings.model */
    double input, output, cached;   /* cached: input tokens the provider served from its
                                     * cache (unset: the input price) */
} lcm_price;

/* One `limits` entry: the most one kind of model call may spend in the last hour / day
 * (0 = no limit). kind: summary, heal, dream, expand, embed, or all (every kind summed). */
typedef struct lcm_limit {
    char *kind;
    double tokens_per_hour, tokens_per_day, cost_per_hour, cost_per_day;
} lcm_limit;
/* The `retention` object: how long and how much of this home's history is kept. Off
 * (enabled 0) unless `days` or `maxGB` is given. */
typedef struct lcm_retention {
    int enabled;                    /* days or maxGB set */
    long days;                      /* 0: no age limit; else sessions idle longer go */
    double max_gb;                  /* 0: no size limit; else the home's stores are cut to
                                     * this many GB, oldest sessions first */
    int archive;                    /* 1: a session is exported to the home's archive
                                     * before its store is deleted */
    int auto_apply;                 /* `auto`, 0: `lcm hook session-end` applies it */
} lcm_retention;

typedef struct lcm_config {
    zones_cfg zones;                /* global thresholds (unset fields: see zones.h) */
    lcm_zone_entry *model_zones;    /* per-model overrides, `zones` key */
    size_t n_model_zones;
    long keep_recent_tokens;        /* 20,000 */
    long summary_tokens;            /* 1,200: summary target per node */
    long leaf_chunk_tokens;         /* 20,000: source tokens per leaf */
    long async_chunk_tokens;        /* 40,000: source tokens one between-turns pass takes */
    char **summarizer;              /* ordered chain, duplicates/empties dropped */
    size_t n_summarizer;            /* 0 = unset (behaves as "auto") */
    long large_file_chars;          /* 32,000 */
    int externalize_files;          /* 1 */
    long summarizer_tokens_per_call;  /* 60,000 */
    long summarizer_tokens_per_pass;  /* 400,000 */
    long summarizer_tokens_per_heal;  /* 120,000 */
    long heal_source_tokens;        /* 0 = derived (see lcm_config_heal_source_tokens) */
    int redact_secrets;             /* 1 */
    long summary_timeout_ms;        /* 60,000: one summarizer model call */
    long summary_pass_deadline_ms;  /* 300,000: a background pass starts no node after it */
    long summary_wait_ms;           /* 15,000: the longest a request waits for late
                                     * summaries before it is covered by truncation */
    int eager_summaries;            /* 0: summarize just ahead of the lines, not from the
                                     * first chunk on (every call costs the user money) */
    long bundle_tokens;             /* 1,000: the start-of-session reference bundle
                                     * (`lcm hook session-start`, sessionBundle) */
    int session_bundle;             /* 0: a new session's system prompt gets no bundle of
                                     * the folder's previous session unless asked */
    int summary_worker;             /* 1: passes run on a background thread; 0: between
                                     * turns on the host thread, in lockstep with the turns
                                     * (deterministic replays; the agent waits for them) */
    long dream_tokens;              /* 200,000: source tokens one dream reads */
    long dream_time_ms;             /* 60,000: one dream's time budget */
    long dream_contracts_per_run;   /* 3: Pending contracts one dream proposes at most */
    long dream_bundle_tokens;       /* 400: contracts + patterns in the bundle */
    long dream_after_sessions;      /* 5: autoDream after this many changed sessions ... */
    long dream_after_hours;         /* 24: ... or this many hours since the last dream */
    int auto_dream;                 /* 0: `lcm hook session-end` dreams when due */
    int dream_system_prompt;        /* 0: the plugin's new sessions get the contracts and
                                     * patterns in their system prompt */
    int dream_unapproved_patterns;  /* 0: dream's patterns (no person approved them) ride in
                                     * new sessions' bundles; off, only Active contracts do */
    lcm_base_url *base_urls;        /* `baseUrls` key: provider -> URL */
    size_t n_base_urls;
    char **problems;                /* every normalization, one sentence each */
    size_t n_problems;
    int file_state;                 /* LCM_CONFIG_ABSENT / _LOADED / _CORRUPT */
    char *store_url;                /* `store` key: a shared PostgreSQL store's URI (may
                                     * hold a password: never printed); NULL = SQLite */
    int fleet_recall;               /* 0: recall's `fleet` scope (every session in a shared
                                     * store, whoever wrote it) is refused; agents do not
                                     * read each other's history unless this home says so */
    lcm_embeddings embeddings;      /* `embeddings`: off by default */
    lcm_price *prices;              /* `prices`: none by default (cost then as reported) */
    size_t n_prices;
    lcm_limit *limits;              /* `limits`: none by default */
    size_t n_limits;
    int redact_at_ingest;           /* `redactAtIngest`, 0: secret shapes (redact.h) are
                                     * stored masked instead of verbatim */
    char **exclude;                 /* `exclude`: folder globs (absolute, ~ expanded) whose
                                     * sessions are not stored at all */
    size_t n_exclude;
    lcm_retention retention;        /* `retention`: off by default */
} lcm_config;

enum { LCM_CONFIG_ABSENT = 0, LCM_CONFIG_LOADED = 1, LCM_CONFIG_CORRUPT = 2 };

/* The defaults (no file). Never fails except on OOM (LC_NOMEM). */
int lcm_config_defaults(lcm_config *cfg);
void lcm_config_free(lcm_config *cfg);

/* Parse config text. Never fails on bad content: a text that is not strict JSON or not an
 * object yields the defaults with file_state CORRUPT and one problem naming line/column;
 * a key of the wrong type or out of range keeps its default and adds a problem; unknown
 * keys add a problem. Fails only on OOM, and then *cfg holds the defaults (nothing to free). */
int lcm_config_parse(const char *text, size_t len, lcm_config *cfg, char **err);
/* Load `path`: absent -> defaults (ABSENT); unreadable -> LC_ERR; else lcm_config_parse. */
int lcm_config_load(const char *path, lcm_config *cfg, char **err);

/* Strict RFC 8259 check. LC_OK, or LC_INVALID with *err naming line:column and the fault
 * ("comment", "trailing comma", ...). */
int lcm_json_strict_check(const char *text, size_t len, char **err);

/* The global thresholds with the `zones` entry for `model` (exact "provider/id") merged
 * over them field by field. model may be NULL. */
zones_cfg lcm_config_zones_for(const lcm_config *cfg, const char *model);

/* healSourceTokens, or when unset: 8 x summaryTokens clamped to [3,000, 24,000] and to
 * summarizerTokensPerCall. */
long lcm_config_heal_source_tokens(const lcm_config *cfg);

/* The base URL configured for a provider, or NULL (borrowed). */
const char *lcm_config_base_url(const lcm_config *cfg, const char *provider);

/* The effective config (defaults merged) as a JSON object the caller deletes; the shape
 * of lcm.json itself, every key present. NULL on OOM. */
cJSON *lcm_config_to_json(const lcm_config *cfg);

/* Set one key in the file at `path` to `value_json` (a JSON value text), validate it by
 * the same rules as loading, and write the file (see lcm_config_write). An absent file
 * starts as {}. A corrupt file, an unknown key, or a value its key rejects -> LC_INVALID
 * and nothing is written. On success *cfg (optional, freed first by the caller's
 * contract: pass a zeroed or freed struct) receives the reloaded config. */
int lcm_config_set(const char *path, const char *key, const char *value_json, lcm_config *cfg,
                   char **err);

/* Write `text` to `path` atomically (mode 0600). When `path` exists and `path`.bak does not,
 * the current file is first copied to `path`.bak; an existing .bak is never replaced. */
int lcm_config_write(const char *path, const char *text, char **err);

/* The test-run guard. When the environment looks like a test run (NODE_ENV=test, VITEST,
 * or LCM_TEST_GUARD set) and LCM_ALLOW_REAL_HOME is not "1", a `home` outside the temp
 * dir ($TMPDIR, /tmp, /var/tmp) is refused with LC_INVALID. LC_OK otherwise. */
int lcm_config_home_guard(const char *home, char **err);

#endif
