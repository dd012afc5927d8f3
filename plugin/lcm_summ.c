/*
 * lcm_summ.c -- the summarizer glue: the chain's model calls through the host, the
 * host thread's two chains (the configured one, for the blocking regime and /lcm heal,
 * and the truncation-only cover for a request that cannot wait), and the session's
 * background worker (engine/worker.h): its start and bounded stop, the model calls it
 * makes from its own thread, what the host thread picks up from it, and the lines
 * /lcm status shows of it.
 *
 * A call from the worker goes through `complete_async` when the host has it (API level 3:
 * the answer arrives on a host thread while the worker waits on its own condition) and
 * through the blocking `complete` otherwise (any thread); either way it carries
 * summaryTimeoutMs and is abandoned at that bound or when the worker is stopped. A host
 * whose `done` may need its own thread is never waited for on that thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "llm_http.h"
#include "message.h"
#include "metrics.h"
#include "plugin.h"
#include "summarize.h"
#include "util.h"
#include "worker.h"
#include "hybrid.h"
#include "lcm.h"

/* An asynchronous call: the worker waits on it; the host's `done` fills it. Freed by the
 * last of the two to let go, or at unload for a call the host dropped. */
typedef struct lcm_call {
    struct lcm_summ_ud *owner; /* whose mutex guards this call */
    pthread_cond_t cv;
    char *req;                 /* the request, until the host thread starts it */
    int started, done, abandoned;
    double started_at;         /* when the host thread started it (lc_now_ms) */
    int status;
    char *json, *err;
    struct lcm_call *next;
} lcm_call;

/* What the worker's chain calls with: copies of everything it reads, so nothing the host
 * thread may replace (the config, the plugin's state) is shared with the worker. */
struct lcm_summ_ud {
    const ap_host_api *host;   /* valid until unload (the ABI's rule) */
    worker *w;
    long timeout_ms;
    llm_http_routes routes;
    lcm_base_url *urls;
    pthread_mutex_t mu;        /* the calls list */
    lcm_call *calls;
    struct lcm_summ_ud *next_retired;
};

/* ---- one `auto` call: the request and the answer --------------------------------------- */

static char *lcm_summ_request(const char *system_prompt, const char *prompt, long max_tokens,
                              long timeout_ms)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "systemPrompt", system_prompt);
    cJSON *msgs = cJSON_AddArrayToObject(r, "messages"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddStringToObject(m, "content", prompt);
    cJSON_AddItemToArray(msgs, m);
    cJSON_AddNumberToObject(r, "maxTokens", (double)max_tokens);
    if (timeout_ms > 0) cJSON_AddNumberToObject(r, "timeoutMs", (double)timeout_ms);
    char *text = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return text;
}

static int lcm_summ_answer(const char *resp, summ_completion *out, char **err)
{
    cJSON *a = cJSON_Parse(resp);
    if (!a) {
        out->text = lc_strdup(resp);
        return out->text ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
    }
    out->text = msg_derive_text(a, NULL);
    const char *stop = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "stopReason"));
    out->stop_reason = lc_strdup(stop ? stop : "stop");
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(a, "usage");
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(u, "input");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(u, "output");
    out->input_tokens = cJSON_IsNumber(in) ? (long)in->valuedouble : 0;
    out->output_tokens = cJSON_IsNumber(o) ? (long)o->valuedouble : 0;
    cJSON_Delete(a);
    return LC_OK;
}

/* The blocking slot, from any thread. */
static int lcm_summ_call_sync(const ap_host_api *host, const char *req, char **resp, char **err)
{
    char *json = NULL, *herr = NULL;
    if (!AP_HOST_HAS(host, complete)) return lc_errf(err, LC_NOTFOUND, "the host has no session model");
    int hr = host->complete(host->host_ctx, req, &json, &herr);
    if (hr == AP_OK) *resp = lc_strdup(json ? json : "");
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
static void lcm_call_free(lcm_call *c)
{
    pthread_cond_destroy(&c->cv);
    free(c->req);
    free(c->json);
    free(c->err);
    free(c);
}

/* Unlink `c` from the calls list (under u->mu). */
static void lcm_call_unlink(struct lcm_summ_ud *u, lcm_call *c)
{
    for (lcm_call **pp = &u->calls; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            return;
        }
}

/* The call's answer (or failure) is in: the waiting worker is woken, or, when it gave the
 * call up, the call is freed here. */
static void lcm_call_finish(lcm_call *c, int status, const char *out_json, const char *err)
{
    struct lcm_summ_ud *u = c->owner;
    pthread_mutex_lock(&u->mu);
    c->status = status;
    c->json = out_json ? lc_strdup(out_json) : NULL;
    c->err = err ? lc_strdup(err) : NULL;
    c->done = 1;
    if (c->abandoned) {
        lcm_call_unlink(u, c);
        lcm_call_free(c);
    } else {
        pthread_cond_signal(&c->cv);
    }
    pthread_mutex_unlock(&u->mu);
}

/* complete_async's `done`: on a host thread, possibly long after the worker gave up. */
static void lcm_call_done(void *ud, int status, const char *out_json, const char *err)
{
    lcm_call_finish(ud, status, out_json, err);
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
    if (AP_HOST_HAS(u->host, complete_async)) {
        lcm_call *c = calloc(1, sizeof *c);
        int rc = LC_OK;
        if (!c || !(c->req = lc_strdup(req))) {
            free(c);
            return lc_errf(err, LC_NOMEM, "out of memory");
        }
        c->owner = u;
        pthread_cond_init(&c->cv, NULL);
        pthread_mutex_lock(&u->mu);
        c->next = u->calls;
        u->calls = c;
        double t0 = lc_now_ms(), limit = (double)(u->timeout_ms > 0 ? u->timeout_ms : 60000);
        const char *gave_up = NULL;
        int cancelled = 0;
        while (!c->done) {
            /* Woken every 100 ms to see whether the worker is being stopped. */
            struct timespec ts = lc_deadline_in(100);
            pthread_cond_timedwait(&c->cv, &u->mu, &ts);
            if (c->done) break;
            /* The bound runs from the start: a call waits unstarted only while the host
             * makes no requests (an idle agent), when no summary is needed either. */
            if (c->started && lc_now_ms() - c->started_at >= limit) gave_up = "timed out";
            else if (u->w && worker_should_stop(u->w)) gave_up = "was given up", cancelled = 1;
            if (gave_up) break;
        }
        if (gave_up) {
            /* Never started: nobody else knows it. Started: `done` (or unload) frees it. */
            if (!c->started) {
                lcm_call_unlink(u, c);
                lcm_call_free(c);
            } else {
                c->abandoned = 1;
            }
            pthread_mutex_unlock(&u->mu);
            return lc_errf(err, cancelled ? LC_CANCELLED : LC_ERR,
                           "the summarizer call %s after %ld ms (summaryTimeoutMs %ld)", gave_up,
                           (long)(lc_now_ms() - t0), u->timeout_ms);
        }
        lcm_call_unlink(u, c);
        pthread_mutex_unlock(&u->mu);
        if (c->status == AP_OK) {
            *resp = lc_strdup(c->json ? c->json : "");
            rc = *resp ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
        } else if (c->status == AP_UNSUPPORTED) {
            rc = lc_errf(err, LC_NOTFOUND, "the host has no session model");
        } else {
            rc = lc_errf(err, LC_ERR, "%s", c->err ? c->err : "completion failed");
        }
        lcm_call_free(c);
        if (rc == LC_ERR && u->w && worker_should_stop(u->w)) rc = LC_CANCELLED;
        return rc;
    }
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
    const lcm_config *cfg = lcm_cmd_config(p);
    char *req = lcm_summ_request(system_prompt, prompt, max_tokens, cfg ? cfg->summary_timeout_ms : 0);
    char *resp = NULL;
    int rc = req ? lcm_summ_call_sync(p->host, req, &resp, err) : lc_errf(err, LC_NOMEM, "out of memory");
    if (rc == LC_OK) rc = lcm_summ_answer(resp, out, err);
    free(req);
    free(resp);
    return rc;
}

/* `auto` on the worker thread. */
static int lcm_summ_auto_worker(void *ud, const char *system_prompt, const char *prompt,
                                long max_tokens, summ_completion *out, char **err)
{
    struct lcm_summ_ud *u = ud;
    char *req = lcm_summ_request(system_prompt, prompt, max_tokens, u->timeout_ms);
    char *resp = NULL;
    int rc = req ? lcm_summ_call_worker(u, req, &resp, err) : lc_errf(err, LC_NOMEM, "out of memory");
    if (rc == LC_OK) rc = lcm_summ_answer(resp, out, err);
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
    const lcm_config *cfg = lcm_cmd_config(p);
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

static void lcm_summ_event_host(void *ud, const char *kind, const cJSON *data)
{
    if (!strcmp(kind, "summarizer-fallback")) lcm_summ_note_fallback(ud, data);
    lcm_cmd_metric(ud, kind, data);
}

/* ---- the worker's state --------------------------------------------------------------- */

/* On the host thread: start the completions the worker queued. */
void lcm_summ_pump(lc_plugin *p)
{
#if AP_TARGET_API_LEVEL >= 3
    struct lcm_summ_ud *u = p->lcm ? p->lcm->wud : NULL;
    if (!u || !AP_HOST_HAS(u->host, complete_async)) return;
    for (;;) {
        pthread_mutex_lock(&u->mu);
        lcm_call *c = u->calls;
        while (c && c->started) c = c->next;
        if (c) {
            c->started = 1;
            c->started_at = lc_now_ms();
        }
        pthread_mutex_unlock(&u->mu);
        if (!c) return;
        char *herr = NULL;
        int hr = u->host->complete_async(u->host->host_ctx, c->req, lcm_call_done, c, &herr);
        if (hr != AP_OK) {
            lcm_call_finish(c, hr, NULL, herr ? herr : "completion failed");
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
#if AP_TARGET_API_LEVEL >= 3
    /* Only at unload: the host calls no `done` after it, so what it dropped is ours. */
    while (u->calls) {
        lcm_call *c = u->calls;
        u->calls = c->next;
        lcm_call_free(c);
    }
#endif
    for (size_t i = 0; i < u->routes.n_base_urls; i++) {
        free(u->urls[i].provider);
        free(u->urls[i].url);
    }
    free(u->urls);
    pthread_mutex_destroy(&u->mu);
    free(u);
}

static struct lcm_summ_ud *lcm_summ_ud_new(lc_plugin *p, const lcm_config *cfg)
{
    struct lcm_summ_ud *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    pthread_mutex_init(&u->mu, NULL);
    u->host = p->host;
    u->timeout_ms = cfg->summary_timeout_ms;
    u->routes.timeout_seconds = (cfg->summary_timeout_ms + 999) / 1000;
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
}

void lcm_summ_open(lc_plugin *p)
{
    const lcm_config *cfg = lcm_cmd_config(p);
    char *e = NULL;
    lcm_summ_close(p);
    if (!cfg) return;
    summ_config sc = lcm_summ_config(cfg);
    sc.auto_fn = lcm_summ_auto_host;
    sc.model_fn = lcm_summ_model_host;
    sc.event_fn = lcm_summ_event_host;
    sc.ud = p;
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
        if (!strcmp(ev[i].kind, "summarizer-fallback")) lcm_summ_note_fallback(p, d);
        lcm_cmd_metric(p, ev[i].kind, d);
        cJSON_Delete(d);
    }
    worker_events_free(ev, n);
    if (!got) return 0;
    const dag_stats *ds = &r.stats;
    if (ds->leaves || ds->condensed || r.healed || r.rc != LC_OK || ds->stopped || ds->conflicts) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddBoolToObject(d, "background", 1);
        cJSON_AddNumberToObject(d, "leaves", ds->leaves);
        cJSON_AddNumberToObject(d, "condensed", ds->condensed);
        cJSON_AddNumberToObject(d, "sourceTokens", (double)ds->source_tokens);
        cJSON_AddNumberToObject(d, "blockTokens", (double)ds->block_tokens);
        cJSON_AddBoolToObject(d, "stalled", ds->stalled);
        cJSON_AddNumberToObject(d, "passes", r.passes);
        cJSON_AddNumberToObject(d, "elapsedMs", (double)r.elapsed_ms);
        if (ds->conflicts) cJSON_AddNumberToObject(d, "conflicts", ds->conflicts);
        if (r.healed) cJSON_AddNumberToObject(d, "healed", r.healed);
        if (r.deadline_hit) cJSON_AddStringToObject(d, "bound", "summaryPassDeadlineMs");
        else if (ds->stopped) cJSON_AddStringToObject(d, "bound", "stopped");
        if (r.rc != LC_OK) cJSON_AddStringToObject(d, "error", r.error ? r.error : "?");
        lcm_cmd_metric(p, "compaction-pass", d);
        cJSON_Delete(d);
    }
    if (r.rc != LC_OK)
        plugin_log(p, AP_LEVEL_WARNING, "lcm: background compaction pass failed: %s", r.error ? r.error : "?");
    out->cut_id = r.cut_id;
    out->passes = r.passes;
    out->nodes = ds->leaves + ds->condensed;
    out->healed = r.healed;
    worker_result_free(&r);
    return 1;
}

static void lcm_summ_when_line(sbuf *b, const char *what, long long at_ms, const char *text)
{
    char when[32] = "?";
    time_t t = (time_t)(at_ms / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%H:%M:%S UTC", &tm);
    sb_printf(b, "%s (%s): %s\n", what, when, text);
}

void lcm_summ_status(lc_plugin *p, sbuf *b)
{
    worker *w = p->lcm ? p->lcm->worker : NULL;
    const lcm_config *cfg = lcm_cmd_config(p);
    if (!w) {
        sb_puts(b, "summarizer: between turns on the host thread (summaryWorker is false or the worker could not start)\n");
        return;
    }
    worker_status s;
    worker_status_get(w, &s);
    sb_puts(b, "summarizer: background; ");
    if (s.running && s.call_ms > 0)
        sb_printf(b, "a pass has run %.1f s, its model call %.1f s", s.running_ms / 1000.0, s.call_ms / 1000.0);
    else if (s.running)
        sb_printf(b, "a pass has run %.1f s", s.running_ms / 1000.0);
    else
        sb_puts(b, "idle");
    sb_printf(b, "%s; %lu passes, %lu nodes", s.pending ? ", a pass is waiting" : "", s.passes, s.nodes);
#if AP_TARGET_API_LEVEL >= 3
    int unstarted = 0;
    pthread_mutex_lock(&p->lcm->wud->mu);
    for (lcm_call *c = p->lcm->wud->calls; c; c = c->next) unstarted += !c->started;
    pthread_mutex_unlock(&p->lcm->wud->mu);
    if (unstarted) sb_puts(b, " (its model call starts at the host's next event)");
#endif
    if (s.deadline_hits)
        sb_printf(b, ", %lu stopped at the pass deadline (summaryPassDeadlineMs %ld)", s.deadline_hits,
                  cfg ? cfg->summary_pass_deadline_ms : 0);
    if (s.conflicts) sb_printf(b, ", %lu nodes made first elsewhere", s.conflicts);
    if (s.failures) sb_printf(b, ", %lu failed", s.failures);
    sb_puts(b, "\n");
    if (s.last_error) lcm_summ_when_line(b, "summarizer last error", s.last_error_at, s.last_error);
    if (p->lcm->summ_fallback)
        lcm_summ_when_line(b, "summarizer last fallback", p->lcm->summ_fallback_at, p->lcm->summ_fallback);
    if (cfg && cfg->embeddings.enabled) {
        sb_printf(b, "embeddings: background; %lu rows embedded in %lu passes", s.embedded, s.embed_passes);
        if (s.embed_failures) sb_printf(b, ", %lu failed (last: %s)", s.embed_failures, s.embed_error ? s.embed_error : "?");
        char *cov = p->lcm->st ? hybrid_coverage_line(p->lcm->st, &cfg->embeddings) : NULL;
        if (cov) sb_printf(b, "; %s", cov);
        free(cov);
        sb_putc(b, '\n');
    }
    worker_status_free(&s);
}
