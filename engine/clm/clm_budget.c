/*
 * clm_budget.c -- reminder tiers, the estimate calibrator, the overflow guard and the
 * max_tokens repair (see clm_budget.h).
 */
#include "clm_budget.h"
#include "clm_safefs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "sha256.h"

/* ------------------------------------------------------------------ tiers */

static size_t tier_threshold(int i, size_t budget, size_t reserve)
{
    switch (i) {
    case 0: return budget / 2;
    case 1: return budget * 3 / 4;
    case 2: return budget * 9 / 10;
    default: return budget > reserve ? budget - reserve : 0;
    }
}

int clm_tiers_check(clm_tiers *t, size_t used, size_t budget, size_t reserve)
{
    int fire = 0;
    if (budget == 0) return 0;
    for (int i = 0; i < CLM_N_TIERS; i++) {
        unsigned bit = 1u << i;
        if (used < tier_threshold(i, budget, reserve)) {
            t->fired &= ~bit; /* usage dropped below: re-arm */
        } else if (!(t->fired & bit)) {
            t->fired |= bit;
            /* a large reserve can put budget - reserve below 90%: report the highest */
            if (!fire || tier_threshold(i, budget, reserve) >=
                             tier_threshold(fire - 1, budget, reserve))
                fire = i + 1;
        }
    }
    return fire;
}

char *clm_budget_notice(int tier, size_t estimated_next, size_t observed_prev,
                        int observed_stale, size_t budget, size_t reserve)
{
    static const char *const names[] = {"50% of", "75% of", "90% of", "the reserve line of"};
    char obs[96];
    if (tier < 1 || tier > CLM_N_TIERS) return NULL;
    if (observed_prev)
        snprintf(obs, sizeof obs, "%zu tokens%s", observed_prev,
                 observed_stale ? " (stale: before your last accepted edit)" : "");
    else
        snprintf(obs, sizeof obs, "not yet known");
    return lc_asprintf("[CLM BUDGET] The context has reached %s the budget: estimated next "
                       "request ~%zu tokens; observed previous request %s; budget %zu tokens "
                       "with %zu reserved for the answer (%zu left). Edit LIVE_CONTEXT.md to "
                       "make room if you need it.",
                       names[tier - 1], estimated_next, obs, budget, reserve,
                       budget > reserve + estimated_next ? budget - reserve - estimated_next : 0);
}

/* ------------------------------------------------------------------ calibrator */

#define CLM_CALIB_MAX 4.0
#define CLM_CALIB_ALPHA 0.3

static double clamp_factor(double f)
{
    if (!(f >= 1.0)) return 1.0; /* also catches NaN */
    return f > CLM_CALIB_MAX ? CLM_CALIB_MAX : f;
}

void clm_calib_init(clm_calibrator *c, const char *seed_text)
{
    memset(c, 0, sizeof *c);
    double f = 1.0;
    if (seed_text && *seed_text) {
        char *end = NULL;
        double x = strtod(seed_text, &end);
        if (end && *end == '\0') f = x;
    }
    c->factor = c->seed = clamp_factor(f);
}

void clm_calib_sent(clm_calibrator *c, size_t raw_estimate) { c->pending = raw_estimate; }

void clm_calib_observed(clm_calibrator *c, size_t provider_tokens)
{
    if (c->pending == 0 || provider_tokens == 0) return;
    double ratio = clamp_factor((double)provider_tokens / (double)c->pending);
    /* The first sample replaces the seed outright: one real measurement beats a guess. */
    c->factor = c->samples == 0 ? ratio
                                : clamp_factor(CLM_CALIB_ALPHA * ratio +
                                               (1.0 - CLM_CALIB_ALPHA) * c->factor);
    c->samples++;
    c->pending = 0;
}

size_t clm_calib_apply(const clm_calibrator *c, size_t raw_estimate)
{
    double f = c ? clamp_factor(c->factor) : 1.0;
    return (size_t)ceil((double)raw_estimate * f);
}

/* ------------------------------------------------------------------ guard */

void clm_guard_cache_free(clm_guard_cache *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) free(c->notes[i].json);
    free(c->notes);
    memset(c, 0, sizeof *c);
}

void clm_guard_result_free(clm_guard_result *r)
{
    if (!r) return;
    free(r->replace);
    free(r->notice);
    memset(r, 0, sizeof *r);
}

size_t clm_guard_limit(size_t budget, size_t reserve, size_t window)
{
    size_t a = budget > reserve ? budget - reserve : 1;
    if (window) {
        size_t b = window > CLM_PROVIDER_MARGIN + reserve ? window - CLM_PROVIDER_MARGIN - reserve
                                                          : 1;
        if (b < a) a = b;
    }
    return a ? a : 1;
}

static clm_guard_note *cache_find(clm_guard_cache *c, const char *key)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->notes[i].key, key) == 0) return &c->notes[i];
    return NULL;
}

/* Withhold one tool result: write its full text, build the note, cache it. */
static int withhold(clm_guard_cache *c, const char *dir, const char *key, const char *json,
                    size_t len, size_t tokens, size_t limit, clm_guard_note **out, char **err)
{
    int rc = LC_OK;
    cJSON *m = cJSON_ParseWithLength(json, len), *note = NULL;
    char *text = NULL, *path = NULL, *wdir = NULL, *msg = NULL;
    if (!m) return lc_errf(err, LC_INVALID, "overflow guard: a tool result is not JSON");
    const char *name = msg_tool_name(m), *cid = msg_tool_call_id(m);
    text = msg_derive_text(m, NULL);
    wdir = lc_asprintf("%s/withheld", dir);
    path = lc_asprintf("%s/withheld/%.16s.txt", dir, key);
    char fname[32];
    snprintf(fname, sizeof fname, "%.16s.txt", key);
    if (!text || !wdir || !path) { rc = LC_NOMEM; goto done; }
    /* The model can write in this folder: never through a planted symlink. */
    if ((rc = clm_safe_dir(dir, err)) != LC_OK) goto done;
    if ((rc = clm_safe_write(wdir, fname, text, strlen(text), err)) != LC_OK) goto done;
    msg = lc_asprintf("[CLM] Tool result withheld by the overflow guard: tool %s, call %s, "
                      "~%zu tokens; the request limit is %zu tokens. The full text is in %s "
                      "-- read it, or the part you need, if you still need it.",
                      name ? name : "?", cid ? cid : "?", tokens, limit, path);
    note = cJSON_CreateObject();
    if (!msg || !note) { rc = LC_NOMEM; goto done; }
    cJSON_AddStringToObject(note, "role", "toolResult");
    cJSON_AddStringToObject(note, "toolCallId", cid ? cid : "");
    cJSON_AddStringToObject(note, "toolName", name ? name : "");
    msg_add_text(cJSON_AddArrayToObject(note, "content"), msg);
    const cJSON *ie = cJSON_GetObjectItemCaseSensitive(m, "isError");
    cJSON_AddBoolToObject(note, "isError", cJSON_IsTrue(ie));
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(m, "timestamp");
    if (cJSON_IsNumber(ts)) cJSON_AddNumberToObject(note, "timestamp", ts->valuedouble);
    clm_guard_note *p = lc_grow(c->notes, &c->cap, c->n + 1, sizeof *p);
    if (!p) { rc = LC_NOMEM; goto done; }
    c->notes = p;
    clm_guard_note *g = &c->notes[c->n];
    memset(g, 0, sizeof *g);
    memcpy(g->key, key, 65);
    if (!(g->json = cJSON_PrintUnformatted(note))) { rc = LC_NOMEM; goto done; }
    g->tokens = msg_estimate_tokens(note);
    c->n++;
    *out = g;
done:
    cJSON_Delete(note);
    cJSON_Delete(m);
    free(text);
    free(path);
    free(wdir);
    free(msg);
    if (rc == LC_NOMEM) lc_errf(err, rc, "overflow guard: out of memory");
    return rc;
}

int clm_guard_apply(clm_guard_cache *cache, const char *mirror_dir, const clm_text *msgs,
                    size_t n, size_t prefix, const size_t *tokens, size_t fixed_tokens,
                    size_t limit, const clm_calibrator *cal, clm_guard_result *out,
                    char **err)
{
    int rc = LC_OK;
    size_t *tok = NULL;
    char (*keys)[65] = NULL;
    char *cand = NULL;
    sbuf ids = {0};
    size_t fresh = 0, fresh_tokens = 0;
    memset(out, 0, sizeof *out);
    out->replace = calloc(n ? n : 1, sizeof *out->replace);
    tok = calloc(n ? n : 1, sizeof *tok);
    keys = calloc(n ? n : 1, sizeof *keys);
    if (!out->replace || !tok || !keys) { rc = LC_NOMEM; goto done; }
    if (prefix > n) prefix = n;

    size_t total = fixed_tokens;
    long last_assistant = -1;
    for (size_t i = 0; i < n; i++) {
        tok[i] = tokens ? tokens[i] : msg_estimate_tokens_json(msgs[i].json);
        total += tok[i];
        if (strstr(msgs[i].json, "\"assistant\"")) {
            cJSON *m = cJSON_ParseWithLength(msgs[i].json, msgs[i].len);
            if (msg_role_of(m) == MSG_ROLE_ASSISTANT) last_assistant = (long)i;
            cJSON_Delete(m);
        }
    }
    /* Candidates: tool results of the raw suffix, except the newest turn's results. */
    cand = calloc(n ? n : 1, 1);
    if (!cand) { rc = LC_NOMEM; goto done; }
    for (size_t i = prefix; i < n; i++) {
        if ((long)i > last_assistant) break;
        if (!strstr(msgs[i].json, "toolResult")) continue;
        cJSON *m = cJSON_ParseWithLength(msgs[i].json, msgs[i].len);
        cand[i] = msg_role_of(m) == MSG_ROLE_TOOL_RESULT;
        cJSON_Delete(m);
        if (cand[i]) sha256_hex(msgs[i].json, msgs[i].len, keys[i]);
    }
    /* Sticky: what was withheld before stays withheld, byte for byte. */
    for (size_t i = prefix; i < n; i++) {
        if (!cand[i]) continue;
        clm_guard_note *g = cache_find(cache, keys[i]);
        if (!g) continue;
        out->replace[i] = g->json;
        total = total - tok[i] + g->tokens;
        out->n_withheld++;
    }
    for (size_t i = prefix; i < n && clm_calib_apply(cal, total) > limit; i++) {
        if (!cand[i] || out->replace[i]) continue;
        clm_guard_note *g = NULL;
        if ((rc = withhold(cache, mirror_dir, keys[i], msgs[i].json, msgs[i].len, tok[i],
                           limit, &g, err)) != LC_OK)
            goto done;
        /* the cache may have moved: re-point earlier replacements */
        for (size_t j = prefix; j < i; j++)
            if (out->replace[j]) out->replace[j] = cache_find(cache, keys[j])->json;
        out->replace[i] = g->json;
        total = total - tok[i] + g->tokens;
        out->n_withheld++;
        fresh++;
        fresh_tokens += tok[i];
        cJSON *m = cJSON_ParseWithLength(msgs[i].json, msgs[i].len);
        const char *cid = msg_tool_call_id(m);
        sb_printf(&ids, "%s%s", ids.len ? ", " : "", cid ? cid : "?");
        cJSON_Delete(m);
    }
    out->tokens = clm_calib_apply(cal, total);
    out->still_over = out->tokens > limit;
    if (fresh || out->still_over) {
        out->notice = lc_asprintf(
            "[CLM BUDGET] Overflow guard: the request limit is %zu tokens; withheld %zu new "
            "tool result(s) (~%zu tokens%s%s) and %zu earlier one(s); the estimate is now "
            "~%zu tokens.%s Withheld texts are under %s/withheld/.",
            limit, fresh, fresh_tokens, fresh ? ": " : "", ids.p ? ids.p : "",
            out->n_withheld - fresh, out->tokens,
            out->still_over ? " Still over the limit after every candidate: edit "
                              "LIVE_CONTEXT.md to make room."
                            : "",
            mirror_dir);
        if (!out->notice) rc = LC_NOMEM;
    }
done:
    sb_free(&ids);
    free(cand);
    free(tok);
    free(keys);
    if (rc != LC_OK) {
        clm_guard_result_free(out);
        if (rc == LC_NOMEM) lc_errf(err, rc, "overflow guard: out of memory");
    }
    return rc;
}

/* ------------------------------------------------------------------ max_tokens */

static const char *const clm_max_keys[] = {"max_tokens", "max_completion_tokens",
                                           "max_output_tokens"};

int clm_max_tokens_repair_doc(const cJSON *p, size_t window, size_t model_max,
                              size_t calibrated_estimate, cJSON **fixed, char **err)
{
    *fixed = NULL;
    if (!cJSON_IsObject(p))
        return lc_errf(err, LC_INVALID, "max_tokens repair: the payload is not a JSON object");
    double room = 1;
    if (window > calibrated_estimate + CLM_PROVIDER_MARGIN)
        room = (double)(window - calibrated_estimate - CLM_PROVIDER_MARGIN);
    if (model_max && (double)model_max < room) room = (double)model_max;
    if (room < 1) room = 1;
    /* Looked at first, copied only when raised: most requests need nothing, and the
     * payload is the whole request. */
    int low = 0;
    for (size_t i = 0; i < sizeof clm_max_keys / sizeof clm_max_keys[0]; i++) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(p, clm_max_keys[i]);
        if (cJSON_IsNumber(k) && k->valuedouble < room) low = 1;
    }
    if (!low) return LC_OK;
    if (!(*fixed = cJSON_Duplicate(p, 1)))
        return lc_errf(err, LC_NOMEM, "max_tokens repair: out of memory");
    for (size_t i = 0; i < sizeof clm_max_keys / sizeof clm_max_keys[0]; i++) {
        cJSON *k = cJSON_GetObjectItemCaseSensitive(*fixed, clm_max_keys[i]);
        if (cJSON_IsNumber(k) && k->valuedouble < room) cJSON_SetNumberValue(k, room);
    }
    return LC_OK;
}

int clm_max_tokens_repair(const char *payload, size_t len, size_t window, size_t model_max,
                          size_t calibrated_estimate, char **out_json, char **err)
{
    cJSON *fixed = NULL;
    *out_json = NULL;
    cJSON *p = cJSON_ParseWithLength(payload, len);
    int rc = clm_max_tokens_repair_doc(p, window, model_max, calibrated_estimate, &fixed, err);
    if (rc == LC_OK && fixed && !(*out_json = cJSON_PrintUnformatted(fixed)))
        rc = lc_errf(err, LC_NOMEM, "max_tokens repair: out of memory");
    cJSON_Delete(fixed);
    cJSON_Delete(p);
    return rc;
}

/* The words providers use when a request is over the model's context window. */
int clm_budget_is_overflow(const char *e)
{
    static const char *const marks[] = {"context length", "context_length", "maximum context",
                                        "context window", "too many tokens", "prompt is too long",
                                        NULL};
    for (size_t i = 0; e && marks[i]; i++)
        if (strcasestr(e, marks[i])) return 1;
    return 0;
}
