/*
 * config.c -- lcm.json: strict JSON, per-key rules, problems, zones merge, writes with
 * .bak, the test-run home guard (see config.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* ------------------------------------------------------------------------------------
 * Strict JSON check. cJSON is lenient (numbers like "01" or "+1", raw control characters,
 * invalid UTF-8), so the file is validated against RFC 8259 before cJSON sees it.
 * ---------------------------------------------------------------------------------- */

typedef struct jchk {
    const char *start, *p, *end;
    const char *fault;
    int depth;
} jchk;

#define JCHK_MAX_DEPTH 256

static int jc_fail(jchk *c, const char *what)
{
    if (!c->fault) c->fault = what;
    return -1;
}

static void jc_ws(jchk *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int jc_value(jchk *c);

static int jc_utf8(jchk *c)
{
    const unsigned char *s = (const unsigned char *)c->p;
    size_t left = (size_t)(c->end - c->p);
    unsigned char b = s[0];
    size_t n;
    unsigned cp;
    if (b >= 0xC2 && b <= 0xDF) {
        n = 2;
        cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        cp = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        cp = b & 0x07;
    } else {
        return jc_fail(c, "invalid UTF-8");
    }
    if (left < n) return jc_fail(c, "invalid UTF-8");
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return jc_fail(c, "invalid UTF-8");
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return jc_fail(c, "invalid UTF-8");
    c->p += n;
    return 0;
}

/* The four hex digits at `at` as a number, -1 when they are not there. */
static long jc_hex4(const jchk *c, const char *at)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        if (at + i >= c->end || !isxdigit((unsigned char)at[i])) return -1;
        int d = (unsigned char)at[i];
        v = v * 16 + (isdigit(d) ? d - '0' : (d | 0x20) - 'a' + 10);
    }
    return v;
}

static int jc_string(jchk *c)
{
    c->p++; /* opening quote */
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"') {
            c->p++;
            return 0;
        }
        if (ch < 0x20) return jc_fail(c, "control character in string");
        if (ch == '\\') {
            c->p++;
            if (c->p >= c->end) break;
            char e = *c->p;
            if (e == 'u') {
                /* A UTF-16 surrogate is half a character: the high one needs its low one
                 * next (cJSON, the parser behind this check, refuses anything else). */
                long v = jc_hex4(c, c->p + 1);
                if (v < 0) return jc_fail(c, "bad \\u escape");
                c->p += 5;
                if (v >= 0xDC00 && v <= 0xDFFF) return jc_fail(c, "lone UTF-16 surrogate in a \\u escape");
                if (v >= 0xD800 && v <= 0xDBFF) {
                    long lo = c->end - c->p >= 2 && c->p[0] == '\\' && c->p[1] == 'u' ? jc_hex4(c, c->p + 2) : -1;
                    if (lo < 0xDC00 || lo > 0xDFFF) return jc_fail(c, "lone UTF-16 surrogate in a \\u escape");
                    c->p += 6;
                }
            } else if (strchr("\"\\/bfnrt", e) && e) {
                c->p++;
            } else {
                return jc_fail(c, "bad escape in string");
            }
            continue;
        }
        if (ch >= 0x80) {
            if (jc_utf8(c) != 0) return -1;
            continue;
        }
        c->p++;
    }
    return jc_fail(c, "unterminated string");
}

static int jc_digits(jchk *c)
{
    if (c->p >= c->end || !isdigit((unsigned char)*c->p)) return jc_fail(c, "bad number");
    while (c->p < c->end && isdigit((unsigned char)*c->p)) c->p++;
    return 0;
}

static int jc_number(jchk *c)
{
    if (*c->p == '-') c->p++;
    if (c->p < c->end && *c->p == '0') {
        c->p++;
        if (c->p < c->end && isdigit((unsigned char)*c->p))
            return jc_fail(c, "number with a leading zero");
    } else if (jc_digits(c) != 0) {
        return -1;
    }
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (jc_digits(c) != 0) return -1;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (jc_digits(c) != 0) return -1;
    }
    return 0;
}

static int jc_literal(jchk *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return jc_fail(c, "unexpected word");
    c->p += n;
    return 0;
}

static int jc_container(jchk *c, char close)
{
    if (++c->depth > JCHK_MAX_DEPTH) return jc_fail(c, "nesting too deep");
    c->p++;
    jc_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        c->depth--;
        return 0;
    }
    for (;;) {
        jc_ws(c);
        if (close == '}') {
            if (c->p >= c->end || *c->p != '"') {
                if (c->p < c->end && *c->p == '/') return jc_fail(c, "comment");
                return jc_fail(c, "expected a string key");
            }
            if (jc_string(c) != 0) return -1;
            jc_ws(c);
            if (c->p >= c->end || *c->p != ':') return jc_fail(c, "expected ':'");
            c->p++;
            jc_ws(c);
        }
        if (jc_value(c) != 0) return -1;
        jc_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            jc_ws(c);
            if (c->p < c->end && (*c->p == '}' || *c->p == ']'))
                return jc_fail(c, "trailing comma");
            continue;
        }
        if (c->p < c->end && *c->p == close) {
            c->p++;
            c->depth--;
            return 0;
        }
        if (c->p < c->end && *c->p == '/') return jc_fail(c, "comment");
        return jc_fail(c, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int jc_value(jchk *c)
{
    jc_ws(c);
    if (c->p >= c->end) return jc_fail(c, "unexpected end of input");
    switch (*c->p) {
    case '{': return jc_container(c, '}');
    case '[': return jc_container(c, ']');
    case '"': return jc_string(c);
    case 't': return jc_literal(c, "true");
    case 'f': return jc_literal(c, "false");
    case 'n': return jc_literal(c, "null");
    case '/': return jc_fail(c, "comment");
    default:
        if (*c->p == '-' || isdigit((unsigned char)*c->p)) return jc_number(c);
        return jc_fail(c, "unexpected character");
    }
}

int lcm_json_strict_check(const char *text, size_t len, char **err)
{
    jchk c = {.start = text, .p = text, .end = text + len};
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        c.fault = "byte-order mark";
    } else if (jc_value(&c) == 0) {
        jc_ws(&c);
        if (c.p < c.end) jc_fail(&c, *c.p == '/' ? "comment" : "text after the JSON value");
    }
    if (!c.fault) return LC_OK;
    long line = 1, col = 1;
    for (const char *q = text; q < c.p && q < c.end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return lc_errf(err, LC_INVALID, "not strict JSON at line %ld column %ld: %s", line, col,
                   c.fault);
}

/* ------------------------------------------------------------------------------------
 * Keys
 * ---------------------------------------------------------------------------------- */

typedef struct cfg_long_key {
    const char *name;
    size_t offset;
    long min, max, dflt;
} cfg_long_key;

static const cfg_long_key cfg_long_keys[] = {
    {"keepRecentTokens", offsetof(lcm_config, keep_recent_tokens), 1000, 10000000, 20000},
    {"summaryTokens", offsetof(lcm_config, summary_tokens), 100, 100000, 1200},
    {"leafChunkTokens", offsetof(lcm_config, leaf_chunk_tokens), 1000, 1000000, 20000},
    {"asyncChunkTokens", offsetof(lcm_config, async_chunk_tokens), 1000, 10000000, 40000},
    {"largeFileChars", offsetof(lcm_config, large_file_chars), 1000, 1000000000, 32000},
    {"summarizerTokensPerCall", offsetof(lcm_config, summarizer_tokens_per_call), 1000,
     1000000000, 60000},
    {"summarizerTokensPerPass", offsetof(lcm_config, summarizer_tokens_per_pass), 1000,
     LONG_MAX / 2, 400000},
    {"summarizerTokensPerHeal", offsetof(lcm_config, summarizer_tokens_per_heal), 1000,
     LONG_MAX / 2, 120000},
    {"healSourceTokens", offsetof(lcm_config, heal_source_tokens), 500, 10000000, 0},
    {"summaryTimeoutMs", offsetof(lcm_config, summary_timeout_ms), 1000, 3600000, 60000},
    {"summaryPassDeadlineMs", offsetof(lcm_config, summary_pass_deadline_ms), 1000, 86400000, 300000},
    {"summaryWaitMs", offsetof(lcm_config, summary_wait_ms), 0, 600000, 15000},
    {"bundleTokens", offsetof(lcm_config, bundle_tokens), 200, 100000, 1000},
    {"dreamTokens", offsetof(lcm_config, dream_tokens), 1000, 100000000, 200000},
    {"dreamTimeMs", offsetof(lcm_config, dream_time_ms), 1000, 3600000, 60000},
    {"dreamContractsPerRun", offsetof(lcm_config, dream_contracts_per_run), 0, 50, 3},
    {"dreamBundleTokens", offsetof(lcm_config, dream_bundle_tokens), 0, 20000, 400},
    {"dreamAfterSessions", offsetof(lcm_config, dream_after_sessions), 1, 100000, 5},
    {"dreamAfterHours", offsetof(lcm_config, dream_after_hours), 1, 87600, 24},
};

typedef struct cfg_bool_key {
    const char *name;
    size_t offset;
    int dflt;
} cfg_bool_key;

static const cfg_bool_key cfg_bool_keys[] = {
    {"externalizeFiles", offsetof(lcm_config, externalize_files), 1},
    {"redactSecrets", offsetof(lcm_config, redact_secrets), 1},
    {"eagerSummaries", offsetof(lcm_config, eager_summaries), 0},
    {"summaryWorker", offsetof(lcm_config, summary_worker), 1},
    {"sessionBundle", offsetof(lcm_config, session_bundle), 0},
    {"autoDream", offsetof(lcm_config, auto_dream), 0},
    {"dreamSystemPrompt", offsetof(lcm_config, dream_system_prompt), 0},
    {"dreamUnapprovedPatterns", offsetof(lcm_config, dream_unapproved_patterns), 0},
    {"fleetRecall", offsetof(lcm_config, fleet_recall), 0},
    {"redactAtIngest", offsetof(lcm_config, redact_at_ingest), 0},
};

#define CFG_N(a) (sizeof(a) / sizeof((a)[0]))
#define CFG_TOKENS_MIN 1000L
#define CFG_TOKENS_MAX 100000000L

static int cfg_problem(lcm_config *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int cfg_problem(lcm_config *cfg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    if (!msg) return LC_NOMEM;
    char **np = realloc(cfg->problems, (cfg->n_problems + 1) * sizeof *np);
    if (!np) {
        free(msg);
        return LC_NOMEM;
    }
    cfg->problems = np;
    cfg->problems[cfg->n_problems++] = msg;
    return LC_OK;
}

/* The `embeddings` object's numeric keys (the strings and hybridWeights are read by
 * cfg_embeddings itself). */
static const cfg_long_key cfg_embed_keys[] = {
    {"dimensions", offsetof(lcm_embeddings, dimensions), 1, 65536, 0},
    {"batchSize", offsetof(lcm_embeddings, batch), 1, 2048, 16},
    {"maxChars", offsetof(lcm_embeddings, max_chars), 100, 1000000, 8000},
    {"timeoutMs", offsetof(lcm_embeddings, timeout_ms), 1000, 600000, 30000},
    {"passRows", offsetof(lcm_embeddings, pass_rows), 1, 100000, 64},
    {"rrfK", offsetof(lcm_embeddings, rrf_k), 1, 100000, 60},
};

static void cfg_embeddings_defaults(lcm_embeddings *e)
{
    memset(e, 0, sizeof *e);
    for (size_t i = 0; i < CFG_N(cfg_embed_keys); i++)
        *(long *)((char *)e + cfg_embed_keys[i].offset) = cfg_embed_keys[i].dflt;
    e->w_fts = 1.0;
    e->w_vector = 1.0;
}

static void cfg_embeddings_free(lcm_embeddings *e)
{
    LC_FREE(e->url, e->model, e->api_key_env);
    cfg_embeddings_defaults(e);
}

int lcm_config_defaults(lcm_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->zones = zones_cfg_unset();
    for (size_t i = 0; i < CFG_N(cfg_long_keys); i++)
        *(long *)((char *)cfg + cfg_long_keys[i].offset) = cfg_long_keys[i].dflt;
    for (size_t i = 0; i < CFG_N(cfg_bool_keys); i++)
        *(int *)((char *)cfg + cfg_bool_keys[i].offset) = cfg_bool_keys[i].dflt;
    cfg->file_state = LCM_CONFIG_ABSENT;
    cfg_embeddings_defaults(&cfg->embeddings);
    cfg->retention.archive = 1;
    return LC_OK;
}

static void cfg_free_summarizer(lcm_config *cfg)
{
    for (size_t i = 0; i < cfg->n_summarizer; i++) free(cfg->summarizer[i]);
    free(cfg->summarizer);
    cfg->summarizer = NULL;
    cfg->n_summarizer = 0;
}

void lcm_config_free(lcm_config *cfg)
{
    if (!cfg) return;
    for (size_t i = 0; i < cfg->n_model_zones; i++) free(cfg->model_zones[i].model);
    free(cfg->model_zones);
    cfg_free_summarizer(cfg);
    for (size_t i = 0; i < cfg->n_base_urls; i++) {
        free(cfg->base_urls[i].provider);
        free(cfg->base_urls[i].url);
    }
    free(cfg->base_urls);
    for (size_t i = 0; i < cfg->n_problems; i++) free(cfg->problems[i]);
    free(cfg->problems);
    free(cfg->store_url);
    cfg_embeddings_free(&cfg->embeddings);
    for (size_t i = 0; i < cfg->n_prices; i++) free(cfg->prices[i].model);
    free(cfg->prices);
    for (size_t i = 0; i < cfg->n_limits; i++) free(cfg->limits[i].kind);
    free(cfg->limits);
    for (size_t i = 0; i < cfg->n_exclude; i++) free(cfg->exclude[i]);
    free(cfg->exclude);
    memset(cfg, 0, sizeof *cfg);
}

static const char *cfg_type_name(const cJSON *v)
{
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "invalid";
}

/* An integer-valued number within [min, max]; else a problem and 0. `where` prefixes the
 * key name for per-model entries. */
static int cfg_take_long(lcm_config *cfg, const char *where, const char *name, const cJSON *v,
                         long min, long max, long *out, int *rc)
{
    if (!cJSON_IsNumber(v)) {
        *rc = cfg_problem(cfg, "%s%s: expected an integer, got %s; ignored", where, name,
                          cfg_type_name(v));
        return 0;
    }
    double d = v->valuedouble;
    if (d != floor(d) || !isfinite(d)) {
        *rc = cfg_problem(cfg, "%s%s: %g is not a whole number; ignored", where, name, d);
        return 0;
    }
    if (d < (double)min || d > (double)max) {
        *rc = cfg_problem(cfg, "%s%s: %.0f is outside [%ld, %ld]; ignored", where, name, d, min,
                          max);
        return 0;
    }
    *out = (long)d;
    return 1;
}

/* Threshold keys, valid both at the top level and inside a `zones` entry. Returns 1 when
 * `name` is a threshold key (handled, possibly with a problem). */
static int cfg_zone_key(lcm_config *cfg, const char *where, const char *name, const cJSON *v,
                        zones_cfg *z, int *rc)
{
    int is_swap_ratio = strcmp(name, "swapAtRatio") == 0;
    if (is_swap_ratio || strcmp(name, "recutAtRatio") == 0) {
        if (!cJSON_IsNumber(v)) {
            *rc = cfg_problem(cfg, "%s%s: expected a number, got %s; ignored", where, name,
                              cfg_type_name(v));
        } else if (!(v->valuedouble > 0.0 && v->valuedouble <= 1.0)) {
            *rc = cfg_problem(cfg, "%s%s: %g is outside (0, 1]; ignored", where, name,
                              v->valuedouble);
        } else if (is_swap_ratio) {
            z->swap_ratio = v->valuedouble;
        } else {
            z->recut_ratio = v->valuedouble;
        }
        return 1;
    }
    long *slot = NULL;
    if (strcmp(name, "smartZone") == 0) slot = &z->smart_zone;
    else if (strcmp(name, "swapAtTokens") == 0) slot = &z->swap_tokens;
    else if (strcmp(name, "recutAtTokens") == 0) slot = &z->recut_tokens;
    if (!slot) return 0;
    long val;
    if (cfg_take_long(cfg, where, name, v, CFG_TOKENS_MIN, CFG_TOKENS_MAX, &val, rc)) *slot = val;
    return 1;
}

static int cfg_add_summarizer(lcm_config *cfg, const char *entry)
{
    for (size_t i = 0; i < cfg->n_summarizer; i++)
        if (strcmp(cfg->summarizer[i], entry) == 0)
            return cfg_problem(cfg, "summarizer: duplicate entry \"%s\" dropped", entry);
    char **np = realloc(cfg->summarizer, (cfg->n_summarizer + 1) * sizeof *np);
    if (!np) return LC_NOMEM;
    cfg->summarizer = np;
    if (!(cfg->summarizer[cfg->n_summarizer] = lc_strdup(entry))) return LC_NOMEM;
    cfg->n_summarizer++;
    return LC_OK;
}

static int cfg_summarizer(lcm_config *cfg, const cJSON *v)
{
    int rc = LC_OK;
    if (cJSON_IsString(v)) {
        if (v->valuestring[0] == '\0') return cfg_problem(cfg, "summarizer: empty entry dropped");
        return cfg_add_summarizer(cfg, v->valuestring);
    }
    if (!cJSON_IsArray(v))
        return cfg_problem(cfg, "summarizer: expected a string or an array of strings, got %s; "
                                "ignored", cfg_type_name(v));
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsString(e)) rc = cfg_problem(cfg, "summarizer: %s entry dropped", cfg_type_name(e));
        else if (e->valuestring[0] == '\0') rc = cfg_problem(cfg, "summarizer: empty entry dropped");
        else rc = cfg_add_summarizer(cfg, e->valuestring);
        if (rc != LC_OK) break;
    }
    return rc;
}

static int cfg_zones(lcm_config *cfg, const cJSON *v)
{
    int rc = LC_OK;
    if (!cJSON_IsObject(v))
        return cfg_problem(cfg, "zones: expected an object keyed \"provider/id\", got %s; ignored",
                           cfg_type_name(v));
    const cJSON *m;
    cJSON_ArrayForEach(m, v) {
        if (!cJSON_IsObject(m)) {
            rc = cfg_problem(cfg, "zones.%s: expected an object, got %s; ignored", m->string,
                             cfg_type_name(m));
            if (rc != LC_OK) return rc;
            continue;
        }
        zones_cfg z = zones_cfg_unset();
        char *where = lc_asprintf("zones.%s.", m->string);
        if (!where) return LC_NOMEM;
        const cJSON *k;
        cJSON_ArrayForEach(k, m) {
            if (!cfg_zone_key(cfg, where, k->string, k, &z, &rc))
                rc = cfg_problem(cfg, "%s%s: not a threshold key; ignored", where, k->string);
            if (rc != LC_OK) break;
        }
        free(where);
        if (rc != LC_OK) return rc;
        lcm_zone_entry *np = realloc(cfg->model_zones, (cfg->n_model_zones + 1) * sizeof *np);
        if (!np) return LC_NOMEM;
        cfg->model_zones = np;
        if (!(np[cfg->n_model_zones].model = lc_strdup(m->string))) return LC_NOMEM;
        np[cfg->n_model_zones].zones = z;
        cfg->n_model_zones++;
    }
    return rc;
}

static int cfg_base_urls(lcm_config *cfg, const cJSON *v)
{
    int rc = LC_OK;
    if (!cJSON_IsObject(v))
        return cfg_problem(cfg, "baseUrls: expected an object of provider -> URL, got %s; "
                                "ignored", cfg_type_name(v));
    const cJSON *u;
    cJSON_ArrayForEach(u, v) {
        if (!cJSON_IsString(u) || (strncmp(u->valuestring, "http://", 7) != 0 &&
                                   strncmp(u->valuestring, "https://", 8) != 0)) {
            rc = cfg_problem(cfg, "baseUrls.%s: expected an http(s) URL; ignored", u->string);
            if (rc != LC_OK) return rc;
            continue;
        }
        lcm_base_url *np = realloc(cfg->base_urls, (cfg->n_base_urls + 1) * sizeof *np);
        if (!np) return LC_NOMEM;
        cfg->base_urls = np;
        np[cfg->n_base_urls].provider = lc_strdup(u->string);
        np[cfg->n_base_urls].url = lc_strdup(u->valuestring);
        cfg->n_base_urls++;
        if (!np[cfg->n_base_urls - 1].provider || !np[cfg->n_base_urls - 1].url) return LC_NOMEM;
    }
    return rc;
}

static int cfg_embed_string(lcm_config *cfg, const cJSON *v, char **slot, int url)
{
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return cfg_problem(cfg, "embeddings.%s: expected a non-empty string, got %s; ignored", v->string,
                           cJSON_IsString(v) ? "an empty one" : cfg_type_name(v));
    if (url && strncmp(v->valuestring, "http://", 7) != 0 && strncmp(v->valuestring, "https://", 8) != 0)
        return cfg_problem(cfg, "embeddings.url: expected an http(s) URL; ignored");
    free(*slot);
    return (*slot = lc_strdup(v->valuestring)) ? LC_OK : LC_NOMEM;
}

static int cfg_embed_weights(lcm_config *cfg, const cJSON *v)
{
    lcm_embeddings *e = &cfg->embeddings;
    if (!cJSON_IsObject(v))
        return cfg_problem(cfg, "embeddings.hybridWeights: expected an object {\"fts\", \"vector\"}, got %s;"
                                " ignored", cfg_type_name(v));
    double w[2] = {e->w_fts, e->w_vector};
    const cJSON *k;
    cJSON_ArrayForEach(k, v) {
        int which = !strcmp(k->string, "fts") ? 0 : !strcmp(k->string, "vector") ? 1 : -1;
        int rc = LC_OK;
        if (which < 0) rc = cfg_problem(cfg, "embeddings.hybridWeights.%s: unknown key; ignored", k->string);
        else if (!cJSON_IsNumber(k) || !(k->valuedouble >= 0.0 && k->valuedouble <= 100.0))
            rc = cfg_problem(cfg, "embeddings.hybridWeights.%s: expected a number in [0, 100]; ignored", k->string);
        else w[which] = k->valuedouble;
        if (rc != LC_OK) return rc;
    }
    if (w[0] <= 0.0 && w[1] <= 0.0)
        return cfg_problem(cfg, "embeddings.hybridWeights: fts and vector cannot both be 0; ignored");
    e->w_fts = w[0];
    e->w_vector = w[1];
    return LC_OK;
}

static int cfg_embeddings(lcm_config *cfg, const cJSON *v)
{
    lcm_embeddings *e = &cfg->embeddings;
    int rc = LC_OK;
    if (!cJSON_IsObject(v))
        return cfg_problem(cfg, "embeddings: expected an object {\"url\", \"model\", ...}, got %s; ignored",
                           cfg_type_name(v));
    const cJSON *k;
    cJSON_ArrayForEach(k, v) {
        const char *name = k->string;
        int done = 0;
        for (size_t i = 0; i < CFG_N(cfg_embed_keys) && !done; i++) {
            if (strcmp(name, cfg_embed_keys[i].name) != 0) continue;
            long val;
            if (cfg_take_long(cfg, "embeddings.", name, k, cfg_embed_keys[i].min, cfg_embed_keys[i].max, &val, &rc))
                *(long *)((char *)e + cfg_embed_keys[i].offset) = val;
            done = 1;
        }
        if (done) {
        } else if (!strcmp(name, "url")) rc = cfg_embed_string(cfg, k, &e->url, 1);
        else if (!strcmp(name, "model")) rc = cfg_embed_string(cfg, k, &e->model, 0);
        else if (!strcmp(name, "apiKeyEnv")) rc = cfg_embed_string(cfg, k, &e->api_key_env, 0);
        else if (!strcmp(name, "hybridWeights")) rc = cfg_embed_weights(cfg, k);
        else rc = cfg_problem(cfg, "embeddings.%s: unknown key; ignored", name);
        if (rc != LC_OK) return rc;
    }
    e->enabled = e->url && e->model;
    if (!e->enabled)
        rc = cfg_problem(cfg, "embeddings: needs both url and model; hybrid recall stays off");
    return rc;
}

/* A non-negative finite number for `where`.`name`; else a problem and 0. */
static int cfg_take_amount(lcm_config *cfg, const char *where, const cJSON *v, double max, double *out, int *rc)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > max) {
        *rc = cfg_problem(cfg, "%s.%s: expected a number in [0, %g], got %s; ignored", where, v->string, max,
                          cJSON_IsNumber(v) ? "one out of range" : cfg_type_name(v));
        return 0;
    }
    *out = v->valuedouble;
    return 1;
}

/* `prices`: {"model": {"input", "output", "cached"}} in USD per million tokens. */
static int cfg_prices(lcm_config *cfg, const cJSON *v)
{
    if (!cJSON_IsObject(v))
        return cfg_problem(cfg, "prices: expected an object {\"model\": {\"input\", \"output\", \"cached\"}}, got %s;"
                                " ignored", cfg_type_name(v));
    const cJSON *m;
    cJSON_ArrayForEach(m, v) {
        int rc = LC_OK;
        lcm_price pr = {.cached = -1};
        char where[300];
        snprintf(where, sizeof where, "prices.%s", m->string);
        if (!cJSON_IsObject(m)) {
            if ((rc = cfg_problem(cfg, "%s: expected an object {\"input\", \"output\", \"cached\"}; ignored", where)))
                return rc;
            continue;
        }
        const cJSON *k;
        cJSON_ArrayForEach(k, m) {
            double *slot = !strcmp(k->string, "input") ? &pr.input : !strcmp(k->string, "output") ? &pr.output
                         : !strcmp(k->string, "cached") ? &pr.cached : NULL;
            if (!slot) rc = cfg_problem(cfg, "%s.%s: unknown key (input, output, cached); ignored", where, k->string);
            else cfg_take_amount(cfg, where, k, 1e6, slot, &rc);
            if (rc != LC_OK) return rc;
        }
        if (pr.cached < 0) pr.cached = pr.input;
        lcm_price *np = realloc(cfg->prices, (cfg->n_prices + 1) * sizeof *np);
        if (!np) return LC_NOMEM;
        cfg->prices = np;
        if (!(pr.model = lc_strdup(m->string))) return LC_NOMEM;
        cfg->prices[cfg->n_prices++] = pr;
    }
    return LC_OK;
}

/* `limits`: {"kind": {"tokensPerHour", "tokensPerDay", "costPerHour", "costPerDay"}}. */
static int cfg_limits(lcm_config *cfg, const cJSON *v)
{
    static const char *const kinds[] = {"summary", "heal", "dream", "expand", "embed", "all"};
    if (!cJSON_IsObject(v))
        return cfg_problem(cfg, "limits: expected an object {\"summary\": {\"tokensPerDay\", ...}, ...}, got %s;"
                                " ignored", cfg_type_name(v));
    const cJSON *m;
    cJSON_ArrayForEach(m, v) {
        int rc = LC_OK, known = 0;
        lcm_limit lim = {0};
        char where[300];
        snprintf(where, sizeof where, "limits.%s", m->string);
        for (size_t i = 0; i < CFG_N(kinds); i++) known |= !strcmp(m->string, kinds[i]);
        if (!known || !cJSON_IsObject(m)) {
            rc = known ? cfg_problem(cfg, "%s: expected an object {\"tokensPerDay\", ...}; ignored", where)
                       : cfg_problem(cfg, "%s: unknown kind (summary, heal, dream, expand, embed, all); ignored",
                                     where);
            if (rc != LC_OK) return rc;
            continue;
        }
        const cJSON *k;
        cJSON_ArrayForEach(k, m) {
            double *slot = !strcmp(k->string, "tokensPerHour") ? &lim.tokens_per_hour
                         : !strcmp(k->string, "tokensPerDay")  ? &lim.tokens_per_day
                         : !strcmp(k->string, "costPerHour")   ? &lim.cost_per_hour
                         : !strcmp(k->string, "costPerDay")    ? &lim.cost_per_day : NULL;
            if (!slot)
                rc = cfg_problem(cfg, "%s.%s: unknown key (tokensPerHour, tokensPerDay, costPerHour, costPerDay);"
                                      " ignored", where, k->string);
            else cfg_take_amount(cfg, where, k, 1e12, slot, &rc);
            if (rc != LC_OK) return rc;
        }
        lcm_limit *nl = realloc(cfg->limits, (cfg->n_limits + 1) * sizeof *nl);
        if (!nl) return LC_NOMEM;
        cfg->limits = nl;
        if (!(lim.kind = lc_strdup(m->string))) return LC_NOMEM;
        cfg->limits[cfg->n_limits++] = lim;
    }
    return LC_OK;
}

/* `exclude`: an array of folder globs. A relative entry would match nothing reliably (a
 * session's cwd is absolute): it is refused by name rather than silently never matching. */
static int cfg_exclude(lcm_config *cfg, const cJSON *v)
{
    int rc = LC_OK;
    if (!cJSON_IsArray(v))
        return cfg_problem(cfg, "exclude: expected an array of folder globs (\"/abs/path/*\", \"~/dir\"), got "
                                "%s; ignored", cfg_type_name(v));
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsString(e) || !e->valuestring[0])
            rc = cfg_problem(cfg, "exclude: %s entry dropped", cJSON_IsString(e) ? "an empty" : cfg_type_name(e));
        else if (e->valuestring[0] != '/' && strncmp(e->valuestring, "~/", 2) != 0 && strcmp(e->valuestring, "~"))
            rc = cfg_problem(cfg, "exclude: \"%s\" is not an absolute folder (start it with / or ~/); dropped",
                             e->valuestring);
        else {
            char **np = realloc(cfg->exclude, (cfg->n_exclude + 1) * sizeof *np);
            if (!np) return LC_NOMEM;
            cfg->exclude = np;
            if (!(np[cfg->n_exclude] = lc_strdup(e->valuestring))) return LC_NOMEM;
            cfg->n_exclude++;
        }
        if (rc != LC_OK) break;
    }
    return rc;
}

/* `retention`: {"days", "maxGB", "archive", "auto"}. A bad member is dropped with a problem;
 * without days or maxGB nothing is ever deleted. */
static int cfg_retention(lcm_config *cfg, const cJSON *v)
{
    lcm_retention *r = &cfg->retention;
    int rc = LC_OK;
    if (!cJSON_IsObject(v))
        return cfg_problem(cfg, "retention: expected an object {\"days\", \"maxGB\", \"archive\", \"auto\"}, got %s; "
                                "ignored", cfg_type_name(v));
    const cJSON *k;
    cJSON_ArrayForEach(k, v) {
        const char *name = k->string;
        long val;
        if (strcmp(name, "days") == 0) {
            if (cfg_take_long(cfg, "retention.", name, k, 1, 365000, &val, &rc)) r->days = val;
        } else if (strcmp(name, "maxGB") == 0) {
            if (!cJSON_IsNumber(k) || !isfinite(k->valuedouble) || k->valuedouble <= 0 || k->valuedouble > 1e6)
                rc = cfg_problem(cfg, "retention.maxGB: expected a number of gigabytes above 0 (0.5 = 500 MB); "
                                      "ignored");
            else
                r->max_gb = k->valuedouble;
        } else if (strcmp(name, "archive") == 0 || strcmp(name, "auto") == 0) {
            int *slot = strcmp(name, "archive") == 0 ? &r->archive : &r->auto_apply;
            if (cJSON_IsBool(k)) *slot = cJSON_IsTrue(k);
            else rc = cfg_problem(cfg, "retention.%s: expected true or false, got %s; ignored", name, cfg_type_name(k));
        } else {
            rc = cfg_problem(cfg, "retention.%s: unknown key; ignored", name);
        }
        if (rc != LC_OK) return rc;
    }
    r->enabled = r->days > 0 || r->max_gb > 0;
    if (!r->enabled) rc = cfg_problem(cfg, "retention: needs days or maxGB; nothing is deleted");
    return rc;
}

/* Apply one top-level key. */
static int cfg_apply_key(lcm_config *cfg, const cJSON *k)
{
    int rc = LC_OK;
    const char *name = k->string;
    if (cfg_zone_key(cfg, "", name, k, &cfg->zones, &rc)) return rc;
    for (size_t i = 0; i < CFG_N(cfg_long_keys); i++) {
        if (strcmp(name, cfg_long_keys[i].name) != 0) continue;
        long val;
        if (cfg_take_long(cfg, "", name, k, cfg_long_keys[i].min, cfg_long_keys[i].max, &val,
                          &rc))
            *(long *)((char *)cfg + cfg_long_keys[i].offset) = val;
        return rc;
    }
    for (size_t i = 0; i < CFG_N(cfg_bool_keys); i++) {
        if (strcmp(name, cfg_bool_keys[i].name) != 0) continue;
        if (cJSON_IsBool(k))
            *(int *)((char *)cfg + cfg_bool_keys[i].offset) = cJSON_IsTrue(k);
        else
            rc = cfg_problem(cfg, "%s: expected true or false, got %s; ignored", name,
                             cfg_type_name(k));
        return rc;
    }
    if (strcmp(name, "summarizer") == 0) return cfg_summarizer(cfg, k);
    if (strcmp(name, "zones") == 0) return cfg_zones(cfg, k);
    if (strcmp(name, "baseUrls") == 0) return cfg_base_urls(cfg, k);
    if (strcmp(name, "store") == 0) {
        /* The value is never echoed: the URI may carry a password. */
        if (!cJSON_IsString(k) || (strncmp(k->valuestring, "postgresql://", 13) != 0 &&
                                   strncmp(k->valuestring, "postgres://", 11) != 0))
            return cfg_problem(cfg, "store: expected a postgresql:// URI; ignored");
        free(cfg->store_url);
        return (cfg->store_url = lc_strdup(k->valuestring)) ? LC_OK : LC_NOMEM;
    }
    if (strcmp(name, "embeddings") == 0) return cfg_embeddings(cfg, k);
    if (strcmp(name, "prices") == 0) return cfg_prices(cfg, k);
    if (strcmp(name, "limits") == 0) return cfg_limits(cfg, k);
    if (strcmp(name, "exclude") == 0) return cfg_exclude(cfg, k);
    if (strcmp(name, "retention") == 0) return cfg_retention(cfg, k);
    return cfg_problem(cfg, "%s: unknown key; ignored", name);
}

int lcm_config_parse(const char *text, size_t len, lcm_config *cfg, char **err)
{
    int rc = lcm_config_defaults(cfg);
    cJSON *root = NULL;
    char *why = NULL;
    if (rc != LC_OK) goto done;
    if (lcm_json_strict_check(text, len, &why) != LC_OK) {
        cfg->file_state = LCM_CONFIG_CORRUPT;
        rc = cfg_problem(cfg, "lcm.json is %s; the file is left untouched and defaults apply",
                         why ? why : "not strict JSON");
        goto done;
    }
    root = cJSON_ParseWithLength(text, len);
    if (!root) {
        rc = lc_errf(err, LC_NOMEM, "out of memory parsing lcm.json");
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        cfg->file_state = LCM_CONFIG_CORRUPT;
        rc = cfg_problem(cfg, "lcm.json holds %s, not an object; defaults apply",
                         cfg_type_name(root));
        goto done;
    }
    cfg->file_state = LCM_CONFIG_LOADED;
    const cJSON *k;
    cJSON_ArrayForEach(k, root) {
        if ((rc = cfg_apply_key(cfg, k)) != LC_OK) break;
    }
    cfg->embeddings.send_unmasked = !cfg->redact_secrets;
done:
    if (rc == LC_NOMEM) {
        lc_errf(err, LC_NOMEM, "out of memory reading lcm.json");
        /* what was read so far freed: a failed load holds nothing, only the defaults */
        lcm_config_free(cfg);
        lcm_config_defaults(cfg);
    }
    free(why);
    cJSON_Delete(root);
    return rc;
}

int lcm_config_load(const char *path, lcm_config *cfg, char **err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = lc_read_file(path, &text, &len, err);
    if (rc == LC_NOTFOUND) {
        if (err) {
            free(*err);
            *err = NULL;
        }
        rc = lcm_config_defaults(cfg);
        goto done;
    }
    if (rc != LC_OK) goto done;
    rc = lcm_config_parse(text, len, cfg, err);
done:
    free(text);
    return rc;
}

zones_cfg lcm_config_zones_for(const lcm_config *cfg, const char *model)
{
    zones_cfg z = cfg->zones;
    if (!model) return z;
    for (size_t i = 0; i < cfg->n_model_zones; i++)
        if (strcmp(cfg->model_zones[i].model, model) == 0)
            z = zones_cfg_merge(z, cfg->model_zones[i].zones);
    return z;
}

long lcm_config_heal_source_tokens(const lcm_config *cfg)
{
    if (cfg->heal_source_tokens > 0) return cfg->heal_source_tokens;
    long v = cfg->summary_tokens * 8;
    if (v < 3000) v = 3000;
    if (v > 24000) v = 24000;
    if (cfg->summarizer_tokens_per_call > 0 && v > cfg->summarizer_tokens_per_call)
        v = cfg->summarizer_tokens_per_call;
    return v;
}

const char *lcm_config_base_url(const lcm_config *cfg, const char *provider)
{
    for (size_t i = 0; i < cfg->n_base_urls; i++)
        if (strcmp(cfg->base_urls[i].provider, provider) == 0) return cfg->base_urls[i].url;
    return NULL;
}

static int cfg_zones_json(cJSON *obj, const zones_cfg *z, int with_defaults)
{
    double sr = z->swap_ratio > 0 ? z->swap_ratio : (with_defaults ? ZONES_DEFAULT_SWAP_RATIO : -1);
    double rr = z->recut_ratio > 0 ? z->recut_ratio : (with_defaults ? ZONES_DEFAULT_RECUT_RATIO : -1);
    if (sr > 0 && !cJSON_AddNumberToObject(obj, "swapAtRatio", sr)) return LC_NOMEM;
    if (rr > 0 && !cJSON_AddNumberToObject(obj, "recutAtRatio", rr)) return LC_NOMEM;
    const struct { const char *n; long v; } t[] = {
        {"smartZone", z->smart_zone}, {"swapAtTokens", z->swap_tokens},
        {"recutAtTokens", z->recut_tokens}};
    for (size_t i = 0; i < 3; i++) {
        cJSON *item = t[i].v > 0 ? cJSON_AddNumberToObject(obj, t[i].n, (double)t[i].v)
                                 : (with_defaults ? cJSON_AddNullToObject(obj, t[i].n) : obj);
        if (!item) return LC_NOMEM;
    }
    return LC_OK;
}

cJSON *lcm_config_to_json(const lcm_config *cfg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *zones = NULL, *chain = NULL, *urls = NULL;
    if (!o || cfg_zones_json(o, &cfg->zones, 1) != LC_OK) goto fail;
    if (!(zones = cJSON_AddObjectToObject(o, "zones"))) goto fail;
    for (size_t i = 0; i < cfg->n_model_zones; i++) {
        cJSON *m = cJSON_AddObjectToObject(zones, cfg->model_zones[i].model);
        if (!m || cfg_zones_json(m, &cfg->model_zones[i].zones, 0) != LC_OK) goto fail;
    }
    for (size_t i = 0; i < CFG_N(cfg_long_keys); i++) {
        long v = *(const long *)((const char *)cfg + cfg_long_keys[i].offset);
        cJSON *item = v > 0 ? cJSON_AddNumberToObject(o, cfg_long_keys[i].name, (double)v)
                            : cJSON_AddNullToObject(o, cfg_long_keys[i].name);
        if (!item) goto fail;
    }
    for (size_t i = 0; i < CFG_N(cfg_bool_keys); i++) {
        int v = *(const int *)((const char *)cfg + cfg_bool_keys[i].offset);
        if (!cJSON_AddBoolToObject(o, cfg_bool_keys[i].name, v)) goto fail;
    }
    if (!(chain = cJSON_AddArrayToObject(o, "summarizer"))) goto fail;
    if (cfg->n_summarizer == 0) {
        cJSON *s = cJSON_CreateString("auto");
        if (!s || !cJSON_AddItemToArray(chain, s)) goto fail;
    }
    for (size_t i = 0; i < cfg->n_summarizer; i++) {
        cJSON *s = cJSON_CreateString(cfg->summarizer[i]);
        if (!s || !cJSON_AddItemToArray(chain, s)) goto fail;
    }
    if (!(urls = cJSON_AddObjectToObject(o, "baseUrls"))) goto fail;
    for (size_t i = 0; i < cfg->n_base_urls; i++)
        if (!cJSON_AddStringToObject(urls, cfg->base_urls[i].provider, cfg->base_urls[i].url))
            goto fail;
    /* Only when configured: an unconfigured home reads exactly as before hybrid recall. */
    if (cfg->embeddings.enabled) {
        const lcm_embeddings *e = &cfg->embeddings;
        cJSON *eo = cJSON_AddObjectToObject(o, "embeddings"), *w = NULL;
        if (!eo || !cJSON_AddStringToObject(eo, "url", e->url) || !cJSON_AddStringToObject(eo, "model", e->model))
            goto fail;
        if (e->api_key_env && !cJSON_AddStringToObject(eo, "apiKeyEnv", e->api_key_env)) goto fail;
        for (size_t i = 0; i < CFG_N(cfg_embed_keys); i++) {
            long v = *(const long *)((const char *)e + cfg_embed_keys[i].offset);
            if (v > 0 && !cJSON_AddNumberToObject(eo, cfg_embed_keys[i].name, (double)v)) goto fail;
        }
        if (!(w = cJSON_AddObjectToObject(eo, "hybridWeights")) || !cJSON_AddNumberToObject(w, "fts", e->w_fts) ||
            !cJSON_AddNumberToObject(w, "vector", e->w_vector))
            goto fail;
    }
    if (cfg->n_prices || cfg->n_limits) {
        cJSON *po = cJSON_AddObjectToObject(o, "prices"), *lo = cJSON_AddObjectToObject(o, "limits");
        if (!po || !lo) goto fail;
        for (size_t i = 0; i < cfg->n_prices; i++) {
            const lcm_price *p = &cfg->prices[i];
            cJSON *e = cJSON_AddObjectToObject(po, p->model);
            if (!e || !cJSON_AddNumberToObject(e, "input", p->input) || !cJSON_AddNumberToObject(e, "output", p->output) ||
                !cJSON_AddNumberToObject(e, "cached", p->cached))
                goto fail;
        }
        for (size_t i = 0; i < cfg->n_limits; i++) {
            const lcm_limit *l = &cfg->limits[i];
            cJSON *e = cJSON_AddObjectToObject(lo, l->kind);
            if (!e || !cJSON_AddNumberToObject(e, "tokensPerHour", l->tokens_per_hour) ||
                !cJSON_AddNumberToObject(e, "tokensPerDay", l->tokens_per_day) ||
                !cJSON_AddNumberToObject(e, "costPerHour", l->cost_per_hour) ||
                !cJSON_AddNumberToObject(e, "costPerDay", l->cost_per_day))
                goto fail;
        }
    }
    cJSON *ex = cJSON_AddArrayToObject(o, "exclude");
    if (!ex) goto fail;
    for (size_t i = 0; i < cfg->n_exclude; i++) {
        cJSON *s = cJSON_CreateString(cfg->exclude[i]);
        if (!s || !cJSON_AddItemToArray(ex, s)) goto fail;
    }
    if (cfg->retention.enabled) {
        const lcm_retention *r = &cfg->retention;
        cJSON *ro = cJSON_AddObjectToObject(o, "retention");
        if (!ro || (r->days && !cJSON_AddNumberToObject(ro, "days", (double)r->days)) ||
            (r->max_gb > 0 && !cJSON_AddNumberToObject(ro, "maxGB", r->max_gb)) ||
            !cJSON_AddBoolToObject(ro, "archive", r->archive) || !cJSON_AddBoolToObject(ro, "auto", r->auto_apply))
            goto fail;
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

int lcm_config_write(const char *path, const char *text, char **err)
{
    int rc = LC_OK;
    char *bak = lc_asprintf("%s.bak", path);
    char *old = NULL;
    size_t old_len = 0;
    struct stat st;
    if (!bak) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if (stat(path, &st) == 0 && stat(bak, &st) != 0 && errno == ENOENT) {
        /* Keep what is about to be replaced; a backup that already exists is the older
         * recovery point and is never overwritten. */
        if ((rc = lc_read_file(path, &old, &old_len, err)) != LC_OK) goto done;
        if ((rc = lc_write_atomic(bak, old, old_len, 0600, err)) != LC_OK) goto done;
    }
    rc = lc_write_atomic(path, text, strlen(text), 0600, err);
done:
    free(bak);
    free(old);
    return rc;
}

int lcm_config_set(const char *path, const char *key, const char *value_json, lcm_config *cfg,
                   char **err)
{
    int rc = LC_OK;
    char *text = NULL, *why = NULL, *out = NULL;
    size_t len = 0;
    cJSON *root = NULL, *value = NULL, *probe = NULL;
    lcm_config check = {0};

    if (lcm_json_strict_check(value_json, strlen(value_json), &why) != LC_OK) {
        rc = lc_errf(err, LC_INVALID, "%s: value is %s", key, why);
        goto done;
    }
    value = cJSON_Parse(value_json);
    probe = cJSON_CreateObject();
    if (!value || !probe) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    cJSON *copy = cJSON_Duplicate(value, 1);
    if (!copy || !cJSON_AddItemToObject(probe, key, copy)) {
        cJSON_Delete(copy);
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    char *probe_text = cJSON_PrintUnformatted(probe);
    if (!probe_text) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    rc = lcm_config_parse(probe_text, strlen(probe_text), &check, err);
    free(probe_text);
    if (rc != LC_OK) goto done;
    if (check.n_problems > 0) {
        rc = lc_errf(err, LC_INVALID, "%s", check.problems[0]);
        goto done;
    }

    rc = lc_read_file(path, &text, &len, err);
    if (rc == LC_NOTFOUND) {
        free(text);
        text = lc_strdup("{}");
        len = 2;
        rc = text ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
    }
    if (rc != LC_OK) goto done;
    free(why);
    why = NULL;
    if (lcm_json_strict_check(text, len, &why) != LC_OK) {
        rc = lc_errf(err, LC_INVALID, "%s is %s; fix or remove it before changing settings",
                     path, why);
        goto done;
    }
    root = cJSON_ParseWithLength(text, len);
    if (!root || !cJSON_IsObject(root)) {
        rc = lc_errf(err, LC_INVALID, "%s does not hold a JSON object", path);
        goto done;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(root, key);
    if (!cJSON_AddItemToObject(root, key, value)) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    value = NULL; /* owned by root now */
    if (!(out = cJSON_Print(root))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    size_t olen = strlen(out);
    char *nl = realloc(out, olen + 2);
    if (!nl) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    out = nl;
    out[olen] = '\n';
    out[olen + 1] = '\0';
    if ((rc = lcm_config_write(path, out, err)) != LC_OK) goto done;
    if (cfg) rc = lcm_config_parse(out, strlen(out), cfg, err);
done:
    lcm_config_free(&check);
    cJSON_Delete(root);
    cJSON_Delete(value);
    cJSON_Delete(probe);
    free(text);
    free(why);
    free(out);
    return rc;
}

static int cfg_under(const char *path, const char *dir)
{
    if (!dir || !*dir) return 0;
    char real[PATH_MAX];
    const char *d = realpath(dir, real) ? real : dir;
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '/') n--;
    return strncmp(path, d, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

int lcm_config_home_guard(const char *home, char **err)
{
    const char *node_env = getenv("NODE_ENV");
    int test_run = (node_env && strcmp(node_env, "test") == 0) || getenv("VITEST") ||
                   getenv("LCM_TEST_GUARD");
    const char *allow = getenv("LCM_ALLOW_REAL_HOME");
    if (!test_run || (allow && strcmp(allow, "1") == 0)) return LC_OK;
    char real[PATH_MAX];
    const char *h = realpath(home, real) ? real : home;
    if (cfg_under(h, getenv("TMPDIR")) || cfg_under(h, "/tmp") || cfg_under(h, "/var/tmp"))
        return LC_OK;
    return lc_errf(err, LC_INVALID,
                   "refusing to touch %s: this looks like a test run and the home is not in a "
                   "temp dir (set LCM_ALLOW_REAL_HOME=1 to override)", home);
}
