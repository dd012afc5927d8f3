/*
 * lcm_summ.c -- the summarizer glue: the chain's model calls through the host, the
 * host thread's two chains (the configured one, for the blocking regime and /lcm heal,
 * and the truncation-only cover for a request that cannot wait), and the session's
 * background worker (engine/lcm/worker.h): its start and bounded stop, the model calls it
 * makes from its own thread, what the host thread picks up from it, and the lines
 * /lcm status shows of it.
 *
 * A call from the worker goes through `complete_async` when the host has it (API level 3:
 * the answer arrives on a host thread while the worker waits on its own condition) and
 * through the blocking `complete` otherwise (any thread); either way it carries
 * summaryTimeoutMs and is abandoned at that bound or when the worker is stopped. A host
 * whose `done` may need its own thread is never waited for on that thread. The request and
 * answer texts, the call queue and the status lines are the engine's (engine/lcm/summ_host.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "ledger.h"
#include "llm_http.h"
#include "metrics.h"
#include "plugin.h"
#include "summ_host.h"
#include "summarize.h"
#include "util.h"
#include "worker.h"
#include "lcm.h"

/* What the worker's chain calls with: copies of everything it reads, so nothing the host
 * thread may replace (the config, the plugin's state) is shared with the worker. */
struct lcm_summ_ud {
    const ap_host_api *host;   /* valid until unload (the ABI's rule) */
    worker *w;
    long timeout_ms;
    llm_http_routes routes;
    lcm_base_url *urls;
    summ_host_calls *calls;    /* what the worker asked the host thread to start */
    struct ledger *ledger;     /* the worker's own copy: its calls' rows and limits */
    struct lcm_summ_ud *next_retired;
};

/* The blocking slot, from any thread. */
static int lcm_summ_call_sync(const ap_host_api *host, const char *req, char **resp, char **err)
{
    char *json = NULL, *herr = NULL;
    if (!AP_HOST_HAS(host, complete)) return lc_errf(err, LC_NOTFOUND, "the host has no session model");
    int hr = host->complete(host->host_ctx, req, &json, &herr);
    if (hr == AP_OK) *resp = lc_strdup(json ? json : "");
    else if (hr == AP_UNSUPPORTED && herr) lc_errf(err, LC_NOTFOUND, "the host has no session model: %s", herr);
    else if (hr == AP_UNSUPPORTED) lc_errf(err, LC_NOTFOUND, "the host has no session model");
    else lc_errf(err, LC_ERR, "%s", herr ? herr : "completion failed");
    if (AP_HOST_HAS(host, free)) {
        host->free(json);
        host->free(herr);
    }
    if (hr == AP_OK && !*resp) return lc_errf(err, LC_NOMEM, "out of memory");
    return hr == AP_OK ? LC_OK : hr == AP_UNSUPPORTED ? LC_NOTFOUND : LC_ERR;
}

#if AP_TARGET_API_LEVEL >= 3
/* complete_async's `done`: on a host thread, possibly long after the worker gave up. */
static void lcm_call_done(void *ud, int status, const char *out_json, const char *err)
{
    summ_host_calls_finish(ud, status == AP_OK ? SUMM_HOST_OK : status == AP_UNSUPPORTED
                                   ? SUMM_HOST_NO_MODEL : SUMM_HOST_FAILED, out_json, err);
}
#endif

/* The worker's `auto`: the session model through the host, bounded by timeout_ms and by
 * the worker being told to stop. With complete_async the request is queued for the host
 * thread to start (lcm_summ_pump): a host whose event loop is its host thread would
 * otherwise hold this thread until that loop turns, and a host thread joining this worker
 * (shutdown) could then never get there. */
static int lcm_summ_call_worker(struct lcm_summ_ud *u, const char *req, char **resp, char **err)
{
#if AP_TARGET_API_LEVEL >= 3
    if (AP_HOST_HAS(u->host, complete_async))
        return summ_host_calls_wait(u->calls, req, u->timeout_ms, u->w, resp, err);
#endif
    int rc = lcm_summ_call_sync(u->host, req, resp, err);
    /* A host aborts its calls when it shuts down: that is a stop, not a failed model. */
    if (rc != LC_OK && u->w && worker_should_stop(u->w)) rc = LC_CANCELLED;
    return rc;
}

/* `auto` on the host thread (the blocking regime, /lcm heal): the blocking slot. */
static int lcm_summ_auto_host(void *ud, const char *system_prompt, const char *prompt,
                              long max_tokens, summ_completion *out, char **err)
{
    lc_plugin *p = ud;
    const lcm_config *cfg = lcm_conf_get(p);
    char *req = summ_host_request(system_prompt, prompt, max_tokens, cfg ? cfg->summary_timeout_ms : 0);
    char *resp = NULL;
    int rc = req ? lcm_summ_call_sync(p->host, req, &resp, err) : lc_errf(err, LC_NOMEM, "out of memory");
    if (rc == LC_OK) rc = summ_host_answer(resp, out, err);
    free(req);
    free(resp);
    return rc;
}

/* `auto` on the worker thread. */
static int lcm_summ_auto_worker(void *ud, const char *system_prompt, const char *prompt,
                                long max_tokens, summ_completion *out, char **err)
{
    struct lcm_summ_ud *u = ud;
    char *req = summ_host_request(system_prompt, prompt, max_tokens, u->timeout_ms);
    char *resp = NULL;
    int rc = req ? lcm_summ_call_worker(u, req, &resp, err) : lc_errf(err, LC_NOMEM, "out of memory");
    if (rc == LC_OK) rc = summ_host_answer(resp, out, err);
    free(req);
    free(resp);
    return rc;
}

/* `provider/id`: the summarizer's own HTTP clients, routed by lcm.json's baseUrls. */
static int lcm_summ_model_host(void *ud, const char *provider, const char *model,
                               const char *system_prompt, const char *prompt, long max_tokens,
                               summ_completion *out, char **err)
{
    lc_plugin *p = ud;
    const lcm_config *cfg = lcm_conf_get(p);
    llm_http_routes r = {cfg ? cfg->base_urls : NULL, cfg ? cfg->n_base_urls : 0,
                         cfg ? (cfg->summary_timeout_ms + 999) / 1000 : 0};
    return llm_http_summarizer(&r, provider, model, system_prompt, prompt, max_tokens, out, err);
}

static int lcm_summ_model_worker(void *ud, const char *provider, const char *model,
                                 const char *system_prompt, const char *prompt, long max_tokens,
                                 summ_completion *out, char **err)
{
    struct lcm_summ_ud *u = ud;
    return llm_http_summarizer(&u->routes, provider, model, system_prompt, prompt, max_tokens,
                               out, err);
}

/* A model that failed (a timeout, an error) is named in /lcm status until the next one. */
static void lcm_summ_note_fallback(lc_plugin *p, const cJSON *d)
{
    const char *from = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "from"));
    const char *to = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "to"));
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "reason"));
    char *text = lc_asprintf("%s -> %s: %s", from ? from : "?", to ? to : "?", why ? why : "failed");
    if (!text) return;
    free(p->lcm->summ_fallback);
    p->lcm->summ_fallback = text;
    p->lcm->summ_fallback_at = (long long)time(NULL) * 1000LL;
}

/* `auto` found missing: the session's model could not be reached through the host at all
 * (none selected, no credentials, the host's model layer not loadable). The chain skips it
 * for the rest of the session, so this is an error, said once and kept in /lcm status,
 * not one more fallback. */
static void lcm_summ_note_model(lc_plugin *p, const cJSON *d)
{
    const char *entry = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "entry"));
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "reason"));
    const char *detail = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "detail"));
    if (!entry || strcmp(entry, "auto") || !reason || strcmp(reason, "missing") || p->lcm->summ_unreachable) return;
    p->lcm->summ_unreachable = lc_strdup(detail ? detail : "the host has no session model");
    p->lcm->summ_unreachable_at = (long long)time(NULL) * 1000LL;
    plugin_notify(p, AP_LEVEL_ERROR, "lcm: summaries cannot use the session's model, they fall back to "
                  "extractive for this session: %s", p->lcm->summ_unreachable ? p->lcm->summ_unreachable : "?");
}

/* A ledger limit made a pass extractive: said once a window (the ledger's `limited` row
 * is the memory of that, shared by every process of the home); /lcm status keeps it. */
static void lcm_summ_note_limited(lc_plugin *p, const cJSON *d)
{
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "reason"));
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "spendKind"));
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "first"))) return;
    plugin_notify(p, AP_LEVEL_WARNING, "lcm: spend limit reached (%s); %s until the window moves on "
                  "(lcm.json `limits`; `/lcm report` shows the ledger)", why ? why : "?",
                  kind && !strcmp(kind, "embed") ? "no new embeddings are made" : "summaries are extractive");
}

/* The chain's events that /lcm status keeps, from either thread's chain (on the host thread). */
static void lcm_summ_note_event(lc_plugin *p, const char *kind, const cJSON *d)
{
    if (!strcmp(kind, "summarizer-fallback")) lcm_summ_note_fallback(p, d);
    else if (!strcmp(kind, "summarizer-model")) lcm_summ_note_model(p, d);
    else if (!strcmp(kind, "summarizer-limited") || !strcmp(kind, "embeddings-limited")) lcm_summ_note_limited(p, d);
}

static void lcm_summ_event_host(void *ud, const char *kind, const cJSON *data)
{
    lcm_summ_note_event(ud, kind, data);
    lcm_conf_metric(ud, kind, data);
}

/* ---- the worker's state --------------------------------------------------------------- */

/* On the host thread: start the completions the worker queued. */
void lcm_summ_pump(lc_plugin *p)
{
#if AP_TARGET_API_LEVEL >= 3
    struct lcm_summ_ud *u = p->lcm ? p->lcm->wud : NULL;
    if (!u || !AP_HOST_HAS(u->host, complete_async)) return;
    const char *req;
    summ_host_call *c;
    while ((c = summ_host_calls_next(u->calls, &req))) {
        char *herr = NULL;
        int hr = u->host->complete_async(u->host->host_ctx, req, lcm_call_done, c, &herr);
        if (hr != AP_OK) {
            summ_host_calls_finish(c, hr == AP_UNSUPPORTED ? SUMM_HOST_NO_MODEL : SUMM_HOST_FAILED,
                                   NULL, herr ? herr : "completion failed");
            if (AP_HOST_HAS(u->host, free)) u->host->free(herr);
        }
    }
#else
    (void)p;
#endif
}

/* ---- the worker ------------------------------------------------------------------------ */

static void lcm_summ_ud_free(struct lcm_summ_ud *u)
{
    if (!u) return;
    /* Only at unload: the host calls no `done` after it, so what it dropped is ours. */
    summ_host_calls_free(u->calls);
    ledger_free(u->ledger);
    for (size_t i = 0; i < u->routes.n_base_urls; i++) {
        free(u->urls[i].provider);
        free(u->urls[i].url);
    }
    free(u->urls);
    free(u);
}

static struct lcm_summ_ud *lcm_summ_ud_new(lc_plugin *p, const lcm_config *cfg)
{
    struct lcm_summ_ud *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    u->host = p->host;
    u->timeout_ms = cfg->summary_timeout_ms;
    u->routes.timeout_seconds = (cfg->summary_timeout_ms + 999) / 1000;
    if (summ_host_calls_new(&u->calls) != LC_OK) goto fail;
    if (ledger_new(p->agent_home, p->session_id, cfg, &u->ledger, NULL) != LC_OK) goto fail;
    if (cfg->n_base_urls && !(u->urls = calloc(cfg->n_base_urls, sizeof *u->urls))) goto fail;
    for (size_t i = 0; i < cfg->n_base_urls; i++, u->routes.n_base_urls++)
        if (!(u->urls[i].provider = lc_strdup(cfg->base_urls[i].provider)) ||
            !(u->urls[i].url = lc_strdup(cfg->base_urls[i].url)))
            goto fail;
    u->routes.base_urls = u->urls;
    return u;
fail:
    u->routes.n_base_urls = cfg->n_base_urls;
    lcm_summ_ud_free(u);
    return NULL;
}

static summ_config lcm_summ_config(const lcm_config *cfg)
{
    summ_config sc = {
        .chain = (const char *const *)cfg->summarizer,
        .n_chain = cfg->n_summarizer,
        .tokens_per_call = cfg->summarizer_tokens_per_call,
        .tokens_per_pass = cfg->summarizer_tokens_per_pass,
        .send_unmasked = !cfg->redact_secrets,
    };
    return sc;
}

/* Stop the worker; a call still in flight is waited for up to its own bound, because the
 * callbacks it will return into are this plugin's code. */
static void lcm_summ_stop_worker(lc_plugin *p)
{
    struct lcm_glue *g = p->lcm;
    if (g->worker && !worker_stop(g->worker, 2000)) {
        long more = (g->wud ? g->wud->timeout_ms : 60000) + 5000;
        plugin_log(p, AP_LEVEL_WARNING, "lcm: waiting up to %ld ms for the summarizer call in flight", more);
        if (!worker_stop(g->worker, more))
            plugin_log(p, AP_LEVEL_ERROR, "lcm: the summarizer thread did not stop; it is left running");
    }
    /* Without the worker's commits the agent's thread checkpoints the log again. */
    if (g->worker && g->st) store_checkpoints_defer(g->st, 0);
    g->worker = NULL;
    if (g->wud) {
        /* Calls the host may still answer keep their owner until unload. */
        g->wud->next_retired = g->retired;
        g->retired = g->wud;
        g->wud = NULL;
    }
}

void lcm_summ_close(lc_plugin *p)
{
    if (!p->lcm) return;
    lcm_summ_stop_worker(p);
    summ_free(p->lcm->summ);
    summ_free(p->lcm->cover);
    p->lcm->summ = p->lcm->cover = NULL;
    ledger_free(p->lcm->ledger);
    p->lcm->ledger = NULL;
}

void lcm_summ_free(lc_plugin *p)
{
    if (!p->lcm) return;
    lcm_summ_close(p);
    while (p->lcm->retired) {
        struct lcm_summ_ud *u = p->lcm->retired;
        p->lcm->retired = u->next_retired;
        lcm_summ_ud_free(u);
    }
    free(p->lcm->summ_fallback);
    p->lcm->summ_fallback = NULL;
    free(p->lcm->summ_unreachable);
    p->lcm->summ_unreachable = NULL;
}

void lcm_summ_open(lc_plugin *p)
{
    const lcm_config *cfg = lcm_conf_get(p);
    char *e = NULL;
    lcm_summ_close(p);
    if (!cfg) return;
    summ_config sc = lcm_summ_config(cfg);
    sc.auto_fn = lcm_summ_auto_host;
    sc.model_fn = lcm_summ_model_host;
    sc.event_fn = lcm_summ_event_host;
    sc.ud = p;
    if (p->agent_home && ledger_new(p->agent_home, p->session_id, cfg, &p->lcm->ledger, NULL) == LC_OK)
        sc.ledger = p->lcm->ledger;
    if (summ_create(&sc, &p->lcm->summ, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: summarizer chain unavailable: %s", e ? e : "?");
        free(e);
        return;
    }
    summ_config cover = lcm_summ_config(cfg);
    cover.truncate_only = 1;
    if (summ_create(&cover, &p->lcm->cover, &e) != LC_OK) {
        free(e);
        e = NULL;
    }
    if (!p->lcm->st || !p->agent_home || !p->session_id || !cfg->summary_worker) return;
    struct lcm_summ_ud *u = lcm_summ_ud_new(p, cfg);
    if (!u) return;
    char *cwd = store_meta_get(p->lcm->st, "cwd");
    worker_config wc = {
        .agent_home = p->agent_home,
        .session_id = p->session_id,
        .session_cwd = cwd,
        .summ = lcm_summ_config(cfg),
        .pass_deadline_ms = cfg->summary_pass_deadline_ms,
        .embed = &cfg->embeddings,
    };
    wc.summ.auto_fn = lcm_summ_auto_worker;
    wc.summ.model_fn = lcm_summ_model_worker;
    wc.summ.ud = u;
    wc.summ.ledger = u->ledger;
    wc.ledger = u->ledger;
    int rc = worker_start(&wc, &p->lcm->worker, &e);
    free(cwd);
    if (rc != LC_OK) {
        /* Passes then run between turns on the host thread, as a level-1 design would. */
        plugin_log(p, AP_LEVEL_WARNING, "lcm: no background summarizer (%s); summaries are made "
                   "between turns", e ? e : "?");
        free(e);
        lcm_summ_ud_free(u);
        return;
    }
    u->w = p->lcm->worker;
    p->lcm->wud = u;
    /* The worker's commits checkpoint the log; the agent's thread only appends to it. */
    store_checkpoints_defer(p->lcm->st, 1);
    /* A resumed session's rows without vectors are embedded from the start. */
    worker_embed_nudge(p->lcm->worker);
}

void lcm_summ_embed_nudge(lc_plugin *p)
{
    if (p->lcm && p->lcm->worker) worker_embed_nudge(p->lcm->worker);
}

void lcm_summ_submit(lc_plugin *p, const worker_job *job)
{
    if (p->lcm && p->lcm->worker) worker_submit(p->lcm->worker, job);
}

void lcm_summ_invalidate(lc_plugin *p)
{
    if (p->lcm && p->lcm->worker) worker_invalidate(p->lcm->worker);
}

int lcm_summ_can_wait(lc_plugin *p)
{
    if (!p->lcm || !p->lcm->worker || !worker_busy(p->lcm->worker)) return 0;
#if AP_TARGET_API_LEVEL >= 3
    /* Its answer would arrive on this very thread: waiting here only delays it. */
    if (AP_HOST_HAS(p->host, complete_async)) return 0;
#endif
    return 1;
}

/* The worker's events and results become metrics rows on the host thread, the one that
 * owns the metrics file. */
int lcm_summ_pickup(lc_plugin *p, long wait_ms, lcm_summ_pick *out)
{
    worker *w = p->lcm ? p->lcm->worker : NULL;
    worker_result r;
    worker_event *ev = NULL;
    memset(out, 0, sizeof *out);
    if (!w) return 0;
    int got = wait_ms > 0 ? worker_wait(w, wait_ms, &r) : worker_poll(w, &r);
    size_t n = worker_take_events(w, &ev);
    for (size_t i = 0; i < n; i++) {
        cJSON *d = ev[i].data_json ? cJSON_Parse(ev[i].data_json) : NULL;
        lcm_summ_note_event(p, ev[i].kind, d);
        lcm_conf_metric(p, ev[i].kind, d);
        cJSON_Delete(d);
    }
    worker_events_free(ev, n);
    if (!got) return 0;
    const dag_stats *ds = &r.stats;
    cJSON *row = summ_host_pass_row(&r);
    if (row) lcm_conf_metric(p, "compaction-pass", row);
    cJSON_Delete(row);
    if (r.rc != LC_OK)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: background compaction pass failed: %s", r.error ? r.error : "?");
    out->cut_id = r.cut_id;
    out->passes = r.passes;
    out->nodes = ds->leaves + ds->condensed;
    out->healed = r.healed;
    worker_result_free(&r);
    return 1;
}

void lcm_summ_status(lc_plugin *p, sbuf *b)
{
    worker *w = p->lcm ? p->lcm->worker : NULL;
    const lcm_config *cfg = lcm_conf_get(p);
    int unstarted = 0;
#if AP_TARGET_API_LEVEL >= 3
    if (w && p->lcm->wud) unstarted = summ_host_calls_unstarted(p->lcm->wud->calls);
#endif
    if (p->lcm && p->lcm->summ_unreachable)
        summ_host_when_line(b, "summarizer error: the session's model is not reachable through the host, "
                            "summaries are extractive", p->lcm->summ_unreachable_at, p->lcm->summ_unreachable);
    summ_host_status_lines(b, w, cfg ? cfg->summary_pass_deadline_ms : 0, unstarted,
                           p->lcm ? p->lcm->summ_fallback : NULL, p->lcm ? p->lcm->summ_fallback_at : 0,
                           cfg && cfg->embeddings.enabled ? &cfg->embeddings : NULL, p->lcm ? p->lcm->st : NULL);
}
