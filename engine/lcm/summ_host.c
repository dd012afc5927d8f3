/*
 * summ_host.c -- the summarizer's model calls through a host (summ_host.h): the request
 * and answer texts, the call queue between the worker thread and the host thread, and
 * the worker's metrics row and status lines.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hybrid.h"
#include "message.h"
#include "summ_host.h"
#include "util.h"

/* ---- one call: the request and the answer ------------------------------------------------ */

char *summ_host_request(const char *system_prompt, const char *prompt, long max_tokens,
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

int summ_host_answer(const char *resp, summ_completion *out, char **err)
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
    const cJSON *cr = cJSON_GetObjectItemCaseSensitive(u, "cacheRead");
    const cJSON *cw = cJSON_GetObjectItemCaseSensitive(u, "cacheWrite");
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(u, "cost"), "total");
    /* The ABI's input leaves out the cached tokens; the ledger's input holds them. */
    out->cached_tokens = cJSON_IsNumber(cr) ? (long)cr->valuedouble : 0;
    out->input_tokens = (cJSON_IsNumber(in) ? (long)in->valuedouble : 0) + out->cached_tokens +
                        (cJSON_IsNumber(cw) ? (long)cw->valuedouble : 0);
    out->output_tokens = cJSON_IsNumber(o) ? (long)o->valuedouble : 0;
    if (cJSON_IsNumber(cost) && cost->valuedouble > 0) {
        out->has_cost = 1;
        out->cost = cost->valuedouble;
    }
    const char *prov = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "provider"));
    const char *model = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "model"));
    if (model && *model) out->model = prov && *prov ? lc_asprintf("%s/%s", prov, model) : lc_strdup(model);
    cJSON_Delete(a);
    return LC_OK;
}

/* ---- the call queue ---------------------------------------------------------------------- */

/* A call the worker waits on; the host's answer fills it. Freed by the last of the two to
 * let go, or at unload for a call the host dropped. */
struct summ_host_call {
    summ_host_calls *owner;    /* whose mutex guards this call */
    pthread_cond_t cv;
    char *req;                 /* the request, until the host thread starts it */
    int started, done, abandoned;
    double started_at;         /* when the host thread started it (lc_now_ms) */
    summ_host_status status;
    char *json, *err;
    summ_host_call *next;
};

struct summ_host_calls {
    pthread_mutex_t mu;
    summ_host_call *calls;
};

int summ_host_calls_new(summ_host_calls **out)
{
    summ_host_calls *q = calloc(1, sizeof *q);
    *out = q;
    if (!q) return LC_NOMEM;
    pthread_mutex_init(&q->mu, NULL);
    return LC_OK;
}

static void summ_host_call_free(summ_host_call *c)
{
    pthread_cond_destroy(&c->cv);
    LC_FREE(c->req, c->json, c->err, c);
}

void summ_host_calls_free(summ_host_calls *q)
{
    if (!q) return;
    while (q->calls) {
        summ_host_call *c = q->calls;
        q->calls = c->next;
        summ_host_call_free(c);
    }
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* Unlink `c` from the calls list (under q->mu). */
static void summ_host_call_unlink(summ_host_calls *q, summ_host_call *c)
{
    for (summ_host_call **pp = &q->calls; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            return;
        }
}

/* The call's answer (or failure) is in: the waiting worker is woken, or, when it gave the
 * call up, the call is freed here. */
void summ_host_calls_finish(summ_host_call *c, summ_host_status status, const char *out_json,
                            const char *err)
{
    summ_host_calls *q = c->owner;
    pthread_mutex_lock(&q->mu);
    c->status = status;
    c->json = out_json ? lc_strdup(out_json) : NULL;
    c->err = err ? lc_strdup(err) : NULL;
    c->done = 1;
    if (c->abandoned) {
        summ_host_call_unlink(q, c);
        summ_host_call_free(c);
    } else {
        pthread_cond_signal(&c->cv);
    }
    pthread_mutex_unlock(&q->mu);
}

summ_host_call *summ_host_calls_next(summ_host_calls *q, const char **req)
{
    pthread_mutex_lock(&q->mu);
    summ_host_call *c = q->calls;
    while (c && c->started) c = c->next;
    if (c) {
        c->started = 1;
        c->started_at = lc_now_ms();
        *req = c->req;
    }
    pthread_mutex_unlock(&q->mu);
    return c;
}

int summ_host_calls_unstarted(summ_host_calls *q)
{
    int n = 0;
    pthread_mutex_lock(&q->mu);
    for (summ_host_call *c = q->calls; c; c = c->next) n += !c->started;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int summ_host_calls_wait(summ_host_calls *q, const char *req, long timeout_ms, worker *w,
                         char **resp, char **err)
{
    summ_host_call *c = calloc(1, sizeof *c);
    int rc = LC_OK;
    if (!c || !(c->req = lc_strdup(req))) {
        free(c);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    c->owner = q;
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_lock(&q->mu);
    c->next = q->calls;
    q->calls = c;
    double t0 = lc_now_ms(), limit = (double)(timeout_ms > 0 ? timeout_ms : 60000);
    const char *gave_up = NULL;
    int cancelled = 0;
    while (!c->done) {
        /* Woken every 100 ms to see whether the worker is being stopped. */
        struct timespec ts = lc_deadline_in(100);
        pthread_cond_timedwait(&c->cv, &q->mu, &ts);
        if (c->done) break;
        /* The bound runs from the start: a call waits unstarted only while the host
         * makes no requests (an idle agent), when no summary is needed either. */
        if (c->started && lc_now_ms() - c->started_at >= limit) gave_up = "timed out";
        else if (w && worker_should_stop(w)) gave_up = "was given up", cancelled = 1;
        if (gave_up) break;
    }
    if (gave_up) {
        /* Never started: nobody else knows it. Started: the answer (or unload) frees it. */
        if (!c->started) {
            summ_host_call_unlink(q, c);
            summ_host_call_free(c);
        } else {
            c->abandoned = 1;
        }
        pthread_mutex_unlock(&q->mu);
        return lc_errf(err, cancelled ? LC_CANCELLED : LC_ERR,
                       "the summarizer call %s after %ld ms (summaryTimeoutMs %ld)", gave_up,
                       (long)(lc_now_ms() - t0), timeout_ms);
    }
    summ_host_call_unlink(q, c);
    pthread_mutex_unlock(&q->mu);
    if (c->status == SUMM_HOST_OK) {
        *resp = lc_strdup(c->json ? c->json : "");
        rc = *resp ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
    } else if (c->status == SUMM_HOST_NO_MODEL) {
        /* The host's reason (which model, why not reachable) is what /lcm status shows. */
        rc = c->err ? lc_errf(err, LC_NOTFOUND, "the host has no session model: %s", c->err)
                    : lc_errf(err, LC_NOTFOUND, "the host has no session model");
    } else {
        rc = lc_errf(err, LC_ERR, "%s", c->err ? c->err : "completion failed");
    }
    summ_host_call_free(c);
    if (rc == LC_ERR && w && worker_should_stop(w)) rc = LC_CANCELLED;
    return rc;
}

/* ---- what the host thread reports of the worker -------------------------------------------- */

cJSON *summ_host_pass_row(const worker_result *r)
{
    const dag_stats *ds = &r->stats;
    if (!(ds->leaves || ds->condensed || r->healed || r->rc != LC_OK || ds->stopped || ds->conflicts))
        return NULL;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddBoolToObject(d, "background", 1);
    cJSON_AddNumberToObject(d, "leaves", ds->leaves);
    cJSON_AddNumberToObject(d, "condensed", ds->condensed);
    cJSON_AddNumberToObject(d, "sourceTokens", (double)ds->source_tokens);
    cJSON_AddNumberToObject(d, "blockTokens", (double)ds->block_tokens);
    cJSON_AddBoolToObject(d, "stalled", ds->stalled);
    cJSON_AddNumberToObject(d, "passes", r->passes);
    cJSON_AddNumberToObject(d, "elapsedMs", (double)r->elapsed_ms);
    if (ds->conflicts) cJSON_AddNumberToObject(d, "conflicts", ds->conflicts);
    if (r->healed) cJSON_AddNumberToObject(d, "healed", r->healed);
    if (r->deadline_hit) cJSON_AddStringToObject(d, "bound", "summaryPassDeadlineMs");
    else if (ds->stopped) cJSON_AddStringToObject(d, "bound", "stopped");
    if (r->rc != LC_OK) cJSON_AddStringToObject(d, "error", r->error ? r->error : "?");
    return d;
}

void summ_host_when_line(sbuf *b, const char *what, long long at_ms, const char *text)
{
    char when[32] = "?";
    time_t t = (time_t)(at_ms / 1000);
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%H:%M:%S UTC", &tm);
    sb_printf(b, "%s (%s): %s\n", what, when, text);
}

void summ_host_status_lines(sbuf *b, worker *w, long pass_deadline_ms, int unstarted,
                            const char *fallback, long long fallback_at_ms, const lcm_embeddings *emb, store *st)
{
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
    if (unstarted) sb_puts(b, " (its model call starts at the host's next event)");
    if (s.deadline_hits)
        sb_printf(b, ", %lu stopped at the pass deadline (summaryPassDeadlineMs %ld)", s.deadline_hits,
                  pass_deadline_ms);
    if (s.conflicts) sb_printf(b, ", %lu nodes made first elsewhere", s.conflicts);
    if (s.failures) sb_printf(b, ", %lu failed", s.failures);
    sb_puts(b, "\n");
    if (s.last_error) summ_host_when_line(b, "summarizer last error", s.last_error_at, s.last_error);
    if (fallback) summ_host_when_line(b, "summarizer last fallback", fallback_at_ms, fallback);
    if (emb) {
        sb_printf(b, "embeddings: background; %lu rows embedded in %lu passes", s.embedded, s.embed_passes);
        if (s.embed_failures) sb_printf(b, ", %lu failed (last: %s)", s.embed_failures, s.embed_error ? s.embed_error : "?");
        char *cov = st ? hybrid_coverage_line(st, emb) : NULL;
        if (cov) sb_printf(b, "; %s", cov);
        free(cov);
        sb_putc(b, '\n');
    }
    worker_status_free(&s);
}
