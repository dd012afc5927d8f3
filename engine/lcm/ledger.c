/*
 * ledger.c -- the cost ledger (ledger.h): cost arithmetic, the limits rule, the rows in the
 * home store and the spend texts.
 */
#include "ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "util.h"

struct ledger {
    char *home;
    char *session;
    lcm_price *prices;
    size_t n_prices;
    lcm_limit *limits;
    size_t n_limits;
};

double ledger_cost(const lcm_price *prices, size_t n_prices, const char *model, const ledger_usage *u,
                   const char **source)
{
    if (u->has_cost) {
        *source = "provider";
        return u->cost;
    }
    for (size_t i = 0; model && i < n_prices; i++) {
        if (strcmp(prices[i].model, model) != 0) continue;
        long cached = u->cached < u->input ? u->cached : u->input;
        *source = "prices";
        return ((double)(u->input - cached) * prices[i].input + (double)cached * prices[i].cached +
                (double)u->output * prices[i].output) / 1e6;
    }
    *source = "none";
    return 0.0;
}

int ledger_limit_check(const lcm_limit *lim, const homestore_spend_total *hour, const homestore_spend_total *day,
                       char **why, long long *window_ms)
{
    const struct {
        double limit, spent;
        const char *key, *what, *window;
        long long ms;
    } rules[] = {
        {lim->tokens_per_hour, (double)(hour->input + hour->output), "tokensPerHour", "tokens", "60 minutes",
         LEDGER_HOUR_MS},
        {lim->cost_per_hour, hour->cost, "costPerHour", "USD", "60 minutes", LEDGER_HOUR_MS},
        {lim->tokens_per_day, (double)(day->input + day->output), "tokensPerDay", "tokens", "24 hours",
         LEDGER_DAY_MS},
        {lim->cost_per_day, day->cost, "costPerDay", "USD", "24 hours", LEDGER_DAY_MS},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        if (rules[i].limit <= 0 || rules[i].spent < rules[i].limit) continue;
        if (window_ms) *window_ms = rules[i].ms;
        if (why)
            *why = lc_asprintf("%s: %.*f %s in the last %s reached limits.%s.%s %g", lim->kind,
                               rules[i].what[0] == 'U' ? 4 : 0, rules[i].spent, rules[i].what, rules[i].window,
                               lim->kind, rules[i].key, rules[i].limit);
        return LC_BUSY;
    }
    return LC_OK;
}

void ledger_free(ledger *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->n_prices; i++) free(l->prices[i].model);
    for (size_t i = 0; i < l->n_limits; i++) free(l->limits[i].kind);
    LC_FREE(l->prices, l->limits, l->home, l->session, l);
}

int ledger_new(const char *home, const char *session, const lcm_config *cfg, ledger **out, char **err)
{
    ledger *l = calloc(1, sizeof *l);
    *out = NULL;
    if (!l || !(l->home = lc_strdup(home ? home : "")) || !(l->session = lc_strdup(session ? session : "-")))
        goto oom;
    if (cfg && cfg->n_prices) {
        if (!(l->prices = calloc(cfg->n_prices, sizeof *l->prices))) goto oom;
        for (; l->n_prices < cfg->n_prices; l->n_prices++) {
            l->prices[l->n_prices] = cfg->prices[l->n_prices];
            if (!(l->prices[l->n_prices].model = lc_strdup(cfg->prices[l->n_prices].model))) goto oom;
        }
    }
    if (cfg && cfg->n_limits) {
        if (!(l->limits = calloc(cfg->n_limits, sizeof *l->limits))) goto oom;
        for (; l->n_limits < cfg->n_limits; l->n_limits++) {
            l->limits[l->n_limits] = cfg->limits[l->n_limits];
            if (!(l->limits[l->n_limits].kind = lc_strdup(cfg->limits[l->n_limits].kind))) goto oom;
        }
    }
    *out = l;
    return LC_OK;
oom:
    ledger_free(l);
    return lc_errf(err, LC_NOMEM, "ledger: out of memory");
}

static int ledger_add(const ledger *l, const homestore_spend *row, char **err)
{
    homestore *h = NULL;
    int rc = homestore_open(l->home, 1, &h, err);
    if (rc == LC_OK) rc = homestore_spend_add(h, row, NULL, err);
    homestore_close(h);
    return rc;
}

int ledger_record(const ledger *l, const char *kind, const char *provider, const char *model,
                  const ledger_usage *u, int ok, const char *note, char **err)
{
    if (!l) return LC_OK;
    const char *source = "none";
    ledger_usage none = {0};
    if (!u) u = &none;
    /* A provider's error can quote the request or the key it refused: a note is a log line,
     * never a place for a secret. */
    char *masked = note ? redact_text(note, strlen(note), 1, NULL) : NULL;
    homestore_spend row = {
        .at = lc_epoch_ms(), .session = l->session, .kind = kind, .provider = provider, .model = model,
        .input = u->input, .output = u->output, .cached = u->cached,
        .cost = ledger_cost(l->prices, l->n_prices, model, u, &source), .status = ok ? "ok" : "failed",
        .note = note ? (masked ? masked : "(withheld)") : NULL,
    };
    row.cost_source = source;
    int rc = ledger_add(l, &row, err);
    free(masked);
    return rc;
}

int ledger_allow(const ledger *l, const char *kind, char **why, int *first)
{
    homestore *h = NULL;
    char *e = NULL;
    int rc = LC_OK;
    *why = NULL;
    *first = 0;
    if (!l || !l->n_limits) return LC_OK;
    if (homestore_open(l->home, 1, &h, &e) != LC_OK) goto done;
    long long now = lc_epoch_ms(), window = 0;
    for (size_t i = 0; i < l->n_limits && rc == LC_OK; i++) {
        const lcm_limit *lim = &l->limits[i];
        int all = !strcmp(lim->kind, LEDGER_ALL);
        if (!all && strcmp(lim->kind, kind) != 0) continue;
        homestore_spend_total hour, day;
        if (homestore_spend_sum(h, all ? NULL : kind, now - LEDGER_HOUR_MS, &hour, NULL) != LC_OK ||
            homestore_spend_sum(h, all ? NULL : kind, now - LEDGER_DAY_MS, &day, NULL) != LC_OK)
            continue;
        rc = ledger_limit_check(lim, &hour, &day, why, &window);
    }
    if (rc == LC_OK || !*why) goto done;
    /* Once a window: the refusal row is the memory of having said so, shared by every
     * process and thread of the home. */
    if (!homestore_spend_limited_since(h, kind, now - window)) {
        homestore_spend row = {.at = now, .session = l->session, .kind = kind, .provider = "", .model = "",
                               .cost_source = "none", .status = "limited", .note = *why};
        *first = homestore_spend_add(h, &row, NULL, NULL) == LC_OK;
    }
done:
    homestore_close(h);
    free(e);
    return rc;
}

int ledger_model_fn(void *ud, const char *provider, const char *model, const char *system_prompt,
                    const char *prompt, long max_tokens, summ_completion *out, char **err)
{
    const ledger_model *m = ud;
    char *why = NULL, *name = NULL;
    int first = 0;
    if (m->l && ledger_allow(m->l, m->kind, &why, &first) != LC_OK) {
        int rc = lc_errf(err, LC_BUSY, "spend limit reached: %s", why ? why : "?");
        free(why);
        return rc;
    }
    int rc = m->fn(m->fn_ud, provider, model, system_prompt, prompt, max_tokens, out, err);
    if (m->l && rc != LC_NOTFOUND && rc != LC_CANCELLED && (name = lc_asprintf("%s/%s", provider, model))) {
        ledger_usage u = {out->input_tokens, out->output_tokens, out->cached_tokens, out->has_cost, out->cost};
        ledger_record(m->l, m->kind, provider, name, &u, rc == LC_OK, rc == LC_OK ? NULL : (err ? *err : NULL), NULL);
    }
    free(name);
    return rc;
}

/* ---- the texts --------------------------------------------------------------------------- */

static void ledger_total_text(sbuf *b, const homestore_spend_total *t)
{
    sb_printf(b, "%lld calls, %lld in (%lld cached) / %lld out tokens, $%.4f", (long long)t->calls,
              (long long)t->input, (long long)t->cached, (long long)t->output, t->cost);
}

static cJSON *ledger_total_json(const homestore_spend_total *t, int64_t limited)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "calls", (double)t->calls);
    cJSON_AddNumberToObject(o, "input", (double)t->input);
    cJSON_AddNumberToObject(o, "output", (double)t->output);
    cJSON_AddNumberToObject(o, "cached", (double)t->cached);
    cJSON_AddNumberToObject(o, "cost", t->cost);
    cJSON_AddNumberToObject(o, "limited", (double)limited);
    return o;
}

static void ledger_stamp(long long ms, char *buf, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%d %H:%M:%SZ", &tm);
}

char *ledger_status_line(const char *home)
{
    homestore *h = NULL;
    homestore_spend_group *g = NULL;
    homestore_spend_row *lim = NULL;
    size_t n = 0, nl = 0;
    sbuf b = {0};
    char *out = NULL;
    long long since = lc_epoch_ms() - LEDGER_DAY_MS;
    if (homestore_open(home, 0, &h, NULL) != LC_OK) return NULL;
    if (homestore_spend_groups(h, "kind", NULL, since, &g, &n, NULL) != LC_OK || n == 0) goto done;
    sb_puts(&b, "spend (24 h):");
    for (size_t i = 0; i < n; i++)
        sb_printf(&b, "%s %s %lld calls, %lld tokens, $%.4f", i ? ";" : "", g[i].key, (long long)g[i].total.calls,
                  (long long)(g[i].total.input + g[i].total.output), g[i].total.cost);
    if (homestore_spend_limited(h, NULL, since, 1, &lim, &nl, NULL) == LC_OK && nl) {
        char at[32];
        ledger_stamp(lim[0].at, at, sizeof at);
        sb_printf(&b, "\nlimit reached %s: %s (extractive until the window moves)", at,
                  lim[0].note ? lim[0].note : "?");
    }
    out = sb_detach(&b);
done:
    sb_free(&b);
    homestore_spend_groups_free(g, n);
    homestore_spend_rows_free(lim, nl);
    homestore_close(h);
    return out;
}

char *ledger_report(const char *home, const char *session, long long since, cJSON *json)
{
    static const char *const by[] = {"day", "session", "kind", "model"};
    homestore *h = NULL;
    sbuf b = {0};
    cJSON *lj = json ? cJSON_AddObjectToObject(json, "ledger") : NULL;
    if (homestore_open(home, 0, &h, NULL) != LC_OK) {
        sb_puts(&b, "model calls (ledger): none recorded\n");
        goto done;
    }
    homestore_spend_total all;
    if (homestore_spend_sum(h, NULL, since, &all, NULL) != LC_OK) memset(&all, 0, sizeof all);
    sb_puts(&b, "model calls (ledger, every session of this home): ");
    ledger_total_text(&b, &all);
    sb_putc(&b, '\n');
    if (lj) cJSON_AddItemToObject(lj, "total", ledger_total_json(&all, 0));
    for (size_t k = 0; k < sizeof by / sizeof by[0]; k++) {
        homestore_spend_group *g = NULL;
        size_t n = 0;
        /* per session over the home; the rest narrowed to the session asked for */
        const char *only = k == 1 ? NULL : session;
        if (homestore_spend_groups(h, by[k], only, since, &g, &n, NULL) != LC_OK) continue;
        cJSON *gj = lj ? cJSON_AddObjectToObject(lj, by[k]) : NULL;
        for (size_t i = 0; i < n; i++) {
            sb_printf(&b, "  by %s %s: ", by[k], g[i].key ? g[i].key : "?");
            ledger_total_text(&b, &g[i].total);
            if (g[i].limited) sb_printf(&b, ", %lld refused by a limit", (long long)g[i].limited);
            sb_putc(&b, '\n');
            if (gj) cJSON_AddItemToObject(gj, g[i].key ? g[i].key : "?", ledger_total_json(&g[i].total, g[i].limited));
        }
        homestore_spend_groups_free(g, n);
    }
    homestore_spend_row *lim = NULL;
    size_t nl = 0;
    if (homestore_spend_limited(h, session, since, 10, &lim, &nl, NULL) == LC_OK) {
        cJSON *la = lj ? cJSON_AddArrayToObject(lj, "limited") : NULL;
        for (size_t i = 0; i < nl; i++) {
            char at[32];
            ledger_stamp(lim[i].at, at, sizeof at);
            sb_printf(&b, "  limit reached %s (session %s): %s; that kind ran extractive / without a model\n", at,
                      lim[i].session ? lim[i].session : "?", lim[i].note ? lim[i].note : "?");
            cJSON *r = la ? cJSON_CreateObject() : NULL;
            if (r) {
                cJSON_AddNumberToObject(r, "at", (double)lim[i].at);
                cJSON_AddStringToObject(r, "kind", lim[i].kind ? lim[i].kind : "");
                cJSON_AddStringToObject(r, "session", lim[i].session ? lim[i].session : "");
                cJSON_AddStringToObject(r, "why", lim[i].note ? lim[i].note : "");
                cJSON_AddItemToArray(la, r);
            }
        }
        homestore_spend_rows_free(lim, nl);
    }
done:
    homestore_close(h);
    return sb_detach(&b);
}
