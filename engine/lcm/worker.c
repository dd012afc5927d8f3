/*
 * worker.c -- the background summarizer thread (worker.h): a job slot and a result slot
 * under one mutex, a pass loop on the worker's own store connection, and the generation
 * that retires work which no longer applies.
 */
#include "worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "hybrid.h"
#include "project.h"
#include "store.h"
#include "ledger.h"
#include "util.h"

/* One worker_catchup call's messages, copied into one block. */
typedef struct worker_chunk {
    struct worker_chunk *next;
    store_msg *m;
    size_t n, done;            /* done: stored; read and written by the worker thread only */
    char *bytes;               /* the ids and texts m points into */
} worker_chunk;

struct worker {
    pthread_mutex_t mu;
    pthread_cond_t wake;       /* to the worker: a job, a stop */
    pthread_cond_t changed;    /* to the host thread: a result, idle, exited */
    pthread_t thread;
    store *st;
    summ_ctx *summ;
    char **chain;              /* the chain strings summ_config points at */
    size_t n_chain;
    summ_auto_fn auto_fn;      /* the caller's, wrapped so calls are timed */
    summ_model_fn model_fn;
    void *fn_ud;
    long pass_deadline_ms;
    /* under mu */
    uint64_t gen;              /* bumped by worker_invalidate */
    int has_job;
    worker_job job;
    int running;
    uint64_t run_gen;
    double run_started, call_started;
    int stopping, exited, deadline_hit;
    int has_result;
    worker_result res;
    worker_event *events;
    size_t n_events, cap_events;
    unsigned long passes, nodes, conflicts, stops, deadline_hits, failures;
    char *last_error;
    long long last_error_at;
    /* hybrid recall's embedding (owned copies of the config's strings) */
    lcm_embeddings embed;
    const struct ledger *ledger;
    int embed_due;
    unsigned long embedded, embed_passes, embed_failures;
    char *embed_error;
    /* the catch-up ingest (the list and counts under mu; the head chunk's messages are
     * read by the worker thread outside it: they never change once queued) */
    worker_chunk *cu_head, *cu_tail;
    size_t cu_left;
    int cu_failed;
    char *cu_error;
};

static void worker_chunks_free(worker_chunk *c)
{
    while (c) {
        worker_chunk *next = c->next;
        free(c->m);
        free(c->bytes);
        free(c);
        c = next;
    }
}

void worker_result_free(worker_result *r)
{
    if (!r) return;
    free(r->error);
    memset(r, 0, sizeof *r);
}

void worker_events_free(worker_event *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].kind);
        free(v[i].data_json);
    }
    free(v);
}

void worker_status_free(worker_status *s)
{
    if (!s) return;
    free(s->last_error);
    free(s->embed_error);
    memset(s, 0, sizeof *s);
}

static void worker_free(worker *w)
{
    if (!w) return;
    summ_free(w->summ);
    store_close(w->st);
    for (size_t i = 0; i < w->n_chain; i++) free(w->chain[i]);
    free(w->chain);
    worker_result_free(&w->res);
    worker_events_free(w->events, w->n_events);
    worker_chunks_free(w->cu_head);
    LC_FREE(w->last_error, w->embed_error, w->embed.url, w->embed.model, w->embed.api_key_env, w->cu_error);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* ---- what the chain calls, on the worker thread ------------------------------------- */

static void worker_on_event(void *ud, const char *kind, const cJSON *data)
{
    worker *w = ud;
    char *json = data ? cJSON_PrintUnformatted(data) : NULL;
    char *k = lc_strdup(kind);
    pthread_mutex_lock(&w->mu);
    if (k && w->n_events == w->cap_events) {
        size_t cap = w->cap_events ? w->cap_events * 2 : 16;
        worker_event *v = realloc(w->events, cap * sizeof *v);
        if (v) {
            w->events = v;
            w->cap_events = cap;
        }
    }
    if (k && w->n_events < w->cap_events) {
        w->events[w->n_events++] = (worker_event){k, json};
        k = json = NULL;
    }
    pthread_mutex_unlock(&w->mu);
    free(k);
    free(json);
}

static void worker_call_mark(worker *w, double at)
{
    pthread_mutex_lock(&w->mu);
    w->call_started = at;
    pthread_mutex_unlock(&w->mu);
}

static int worker_auto(void *ud, const char *system_prompt, const char *prompt, long max_tokens,
                       summ_completion *out, char **err)
{
    worker *w = ud;
    worker_call_mark(w, lc_now_ms());
    int rc = w->auto_fn(w->fn_ud, system_prompt, prompt, max_tokens, out, err);
    worker_call_mark(w, 0);
    return rc;
}

static int worker_model(void *ud, const char *provider, const char *model,
                        const char *system_prompt, const char *prompt, long max_tokens,
                        summ_completion *out, char **err)
{
    worker *w = ud;
    worker_call_mark(w, lc_now_ms());
    int rc = w->model_fn(w->fn_ud, provider, model, system_prompt, prompt, max_tokens, out, err);
    worker_call_mark(w, 0);
    return rc;
}

int worker_should_stop(worker *w)
{
    pthread_mutex_lock(&w->mu);
    int stop = w->stopping || w->run_gen != w->gen;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

/* dag_opts.keep_going: no new node after a stop, an invalidation or the pass deadline. */
static int worker_keep_going(void *ud)
{
    worker *w = ud;
    pthread_mutex_lock(&w->mu);
    int go = !w->stopping && w->run_gen == w->gen;
    if (go && w->pass_deadline_ms > 0 && lc_now_ms() - w->run_started >= (double)w->pass_deadline_ms) {
        w->deadline_hit = 1;
        go = 0;
    }
    pthread_mutex_unlock(&w->mu);
    return go;
}

/* ---- the pass loop ------------------------------------------------------------------ */

static void worker_stats_add(dag_stats *into, const dag_stats *d)
{
    into->leaves += d->leaves;
    into->condensed += d->condensed;
    into->source_tokens += d->source_tokens;
    into->summary_tokens += d->summary_tokens;
    into->stalled |= d->stalled;
    into->capped |= d->capped;
    into->stopped |= d->stopped;
    into->conflicts += d->conflicts;
    into->block_tokens = d->block_tokens;
    into->boundary_ordinal = d->boundary_ordinal;
}

/* One job on the worker's connection: the pass, the cut it calls for, then heal. */
static void worker_run(worker *w, const worker_job *job, worker_result *r)
{
    char *e = NULL;
    dag_opts o = job->dag;
    o.keep_going = worker_keep_going;
    o.keep_going_ud = w;
    double t0 = lc_now_ms();
    r->passes = 1;
    r->rc = dag_pass(w->st, w->summ, &o, &r->stats, &e);
    if (r->rc == LC_CANCELLED) {
        r->rc = LC_OK;
        free(e);
        e = NULL;
    }
    if (r->rc == LC_OK && (r->stats.leaves || r->stats.condensed || job->want_cut)) {
        int64_t id = 0;
        int prc = project_prepare_cut(w->st, job->cut_budget, &id, &e);
        if (prc == LC_OK) r->cut_id = id;
        else if (prc != LC_NOTFOUND) r->rc = prc;
    }
    if (r->rc == LC_OK && job->heal_nodes > 0 && worker_keep_going(w)) {
        dag_heal_opts h = job->heal;
        dag_heal_report hr = {0};
        h.apply = 1;
        h.max_nodes = job->heal_nodes;
        r->rc = dag_heal(w->st, w->summ, &h, &hr, &e);
        if (r->rc == LC_CANCELLED) {
            r->rc = LC_OK;
            free(e);
            e = NULL;
        }
        if (r->rc == LC_OK && hr.healed > 0) {
            int64_t id = 0;
            r->healed = hr.healed;
            if (project_prepare_cut(w->st, job->cut_budget, &id, NULL) == LC_OK) r->cut_id = id;
        }
        dag_heal_report_free(&hr);
    }
    if (r->rc != LC_OK) r->error = e ? e : lc_strdup("the pass failed");
    else free(e);
    r->elapsed_ms = (long)(lc_now_ms() - t0);
}

/* Fold a new result into the slot the host thread has not polled yet. */
static void worker_result_merge(worker_result *into, worker_result *r)
{
    worker_stats_add(&into->stats, &r->stats);
    into->passes += r->passes;
    into->healed += r->healed;
    into->elapsed_ms += r->elapsed_ms;
    into->deadline_hit |= r->deadline_hit;
    if (r->cut_id > 0) into->cut_id = r->cut_id;
    if (r->rc != LC_OK) {
        free(into->error);
        into->rc = r->rc;
        into->error = r->error;
        r->error = NULL;
    }
    worker_result_free(r);
}

/* One bounded embedding pass, entered and left with mu held. */
static void worker_embed(worker *w)
{
    /* Not `running`: a request waiting for summaries does not wait for embeddings. */
    w->embed_due = 0;
    pthread_mutex_unlock(&w->mu);
    hybrid_embed_stats es;
    char *e = NULL, *why = NULL;
    int first = 0, rc;
    if (ledger_allow(w->ledger, LEDGER_EMBED, &why, &first) != LC_OK) {
        /* Refused by a limit: nothing is sent; the next nudge asks again. */
        if (first) {
            cJSON *d = cJSON_CreateObject();
            cJSON_AddStringToObject(d, "spendKind", LEDGER_EMBED);
            cJSON_AddStringToObject(d, "reason", why ? why : "a limit is reached");
            cJSON_AddBoolToObject(d, "first", 1);
            worker_on_event(w, "embeddings-limited", d);
            cJSON_Delete(d);
        }
        pthread_mutex_lock(&w->mu);
        free(w->embed_error);
        w->embed_error = why ? why : lc_strdup("a spend limit is reached");
        pthread_cond_broadcast(&w->changed);
        return;
    }
    memset(&es, 0, sizeof es);
    rc = hybrid_embed_pass(w->st, &w->embed, 0, 0, &es, &e);
    if (w->ledger && es.requests) {
        ledger_usage u = {.input = es.tokens};
        ledger_record(w->ledger, LEDGER_EMBED, "embeddings", w->embed.model, &u, rc == LC_OK, rc == LC_OK ? NULL : e,
                      NULL);
    }
    pthread_mutex_lock(&w->mu);
    w->embed_passes++;
    if (rc == LC_OK) {
        w->embedded += es.embedded;
        /* Go on while there is more, unless a stop came; a DAG job is taken first. */
        if (es.more && es.embedded) w->embed_due = 1;
        free(e);
    } else {
        w->embed_failures++;
        free(w->embed_error);
        w->embed_error = e ? e : lc_strdup("the embedding pass failed");
    }
    pthread_cond_broadcast(&w->changed);
}

/* One catch-up batch, entered and left with mu held: the oldest queued messages go first,
 * so the store's ordinals are their order. */
static void worker_catchup_step(worker *w)
{
    worker_chunk *c = w->cu_head;
    size_t from = c->done, k = c->n - c->done < WORKER_CATCHUP_BATCH ? c->n - c->done : WORKER_CATCHUP_BATCH;
    pthread_mutex_unlock(&w->mu);
    store_ingest_stats st;
    char *e = NULL;
    int rc = k ? store_ingest(w->st, c->m + from, k, &st, &e) : LC_OK;
    pthread_mutex_lock(&w->mu);
    if (rc != LC_OK) {
        /* What is left is dropped: the host thread offers its messages again. */
        worker_chunks_free(w->cu_head);
        w->cu_head = w->cu_tail = NULL;
        w->cu_left = 0;
        w->cu_failed = 1;
        free(w->cu_error);
        w->cu_error = e ? e : lc_strdup("the catch-up ingest failed");
        pthread_cond_broadcast(&w->changed);
        return;
    }
    free(e);
    c->done += k;
    w->cu_left -= k;
    if (c->done == c->n) {
        w->cu_head = c->next;
        if (!w->cu_head) w->cu_tail = NULL;
        c->next = NULL;
        worker_chunks_free(c);
    }
    pthread_cond_broadcast(&w->changed);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stopping && !w->has_job && !w->embed_due && !w->cu_head) pthread_cond_wait(&w->wake, &w->mu);
        if (w->stopping) break;
        if (w->cu_head) {
            worker_catchup_step(w);
            continue;
        }
        if (!w->has_job) {
            worker_embed(w);
            continue;
        }
        worker_job job = w->job;
        w->has_job = 0;
        w->running = 1;
        w->run_gen = w->gen;
        w->run_started = lc_now_ms();
        w->deadline_hit = 0;
        pthread_mutex_unlock(&w->mu);

        worker_result r = {0};
        summ_pass_begin(w->summ);
        worker_run(w, &job, &r);

        pthread_mutex_lock(&w->mu);
        r.deadline_hit = w->deadline_hit;
        w->running = 0;
        w->passes++;
        w->nodes += (unsigned long)(r.stats.leaves + r.stats.condensed);
        w->conflicts += (unsigned long)r.stats.conflicts;
        w->stops += r.stats.stopped && !r.deadline_hit ? 1u : 0u;
        w->deadline_hits += r.deadline_hit ? 1u : 0u;
        if (r.rc != LC_OK) {
            w->failures++;
            free(w->last_error);
            w->last_error = lc_strdup(r.error);
            w->last_error_at = (long long)time(NULL) * 1000LL;
        }
        if (w->run_gen == w->gen) {
            if (!w->has_result) {
                w->res = r;
                w->has_result = 1;
            } else {
                worker_result_merge(&w->res, &r);
            }
        } else {
            worker_result_free(&r);
        }
        pthread_cond_broadcast(&w->changed);
    }
    w->exited = 1;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---- the host thread's side ---------------------------------------------------------- */

int worker_start(const worker_config *cfg, worker **out, char **err)
{
    int rc = LC_OK;
    *out = NULL;
    worker *w = calloc(1, sizeof *w);
    if (!w) return lc_errf(err, LC_NOMEM, "worker: out of memory");
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->changed, NULL);
    w->pass_deadline_ms = cfg->pass_deadline_ms;
    w->ledger = cfg->ledger;
    if (cfg->embed && cfg->embed->enabled) {
        w->embed = *cfg->embed;
        w->embed.url = lc_strdup(cfg->embed->url);
        w->embed.model = lc_strdup(cfg->embed->model);
        w->embed.api_key_env = cfg->embed->api_key_env ? lc_strdup(cfg->embed->api_key_env) : NULL;
        if (!w->embed.url || !w->embed.model || (cfg->embed->api_key_env && !w->embed.api_key_env)) {
            rc = lc_errf(err, LC_NOMEM, "worker: out of memory");
            goto fail;
        }
    }
    w->auto_fn = cfg->summ.auto_fn;
    w->model_fn = cfg->summ.model_fn;
    w->fn_ud = cfg->summ.ud;
    if (cfg->summ.n_chain && !(w->chain = calloc(cfg->summ.n_chain, sizeof *w->chain))) {
        rc = lc_errf(err, LC_NOMEM, "worker: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < cfg->summ.n_chain; i++, w->n_chain++)
        if (!(w->chain[i] = lc_strdup(cfg->summ.chain[i] ? cfg->summ.chain[i] : ""))) {
            rc = lc_errf(err, LC_NOMEM, "worker: out of memory");
            goto fail;
        }
    summ_config sc = cfg->summ;
    sc.chain = (const char *const *)w->chain;
    sc.n_chain = w->n_chain;
    sc.auto_fn = w->auto_fn ? worker_auto : NULL;
    sc.model_fn = w->model_fn ? worker_model : NULL;
    sc.event_fn = worker_on_event;
    sc.ud = w;
    if ((rc = summ_create(&sc, &w->summ, err)) != LC_OK) goto fail;
    /* Its own connection: SQLite serializes the two writers, and nothing the host thread
     * holds is touched from here. */
    if ((rc = store_open(cfg->agent_home, cfg->session_id, cfg->session_cwd, &w->st, err)) != LC_OK)
        goto fail;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        rc = lc_errf(err, LC_ERR, "worker: cannot start the summarizer thread");
        goto fail;
    }
    *out = w;
    return LC_OK;
fail:
    worker_free(w);
    return rc;
}

int worker_stop(worker *w, long timeout_ms)
{
    if (!w) return 1;
    struct timespec until = lc_deadline_in((double)timeout_ms);
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    w->has_job = 0;
    pthread_cond_signal(&w->wake);
    while (!w->exited && pthread_cond_timedwait(&w->changed, &w->mu, &until) == 0) {
    }
    int exited = w->exited;
    pthread_mutex_unlock(&w->mu);
    if (!exited) return 0;
    pthread_join(w->thread, NULL);
    worker_free(w);
    return 1;
}

void worker_embed_nudge(worker *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    if (w->embed.enabled) {
        w->embed_due = 1;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->mu);
}

void worker_submit(worker *w, const worker_job *job)
{
    pthread_mutex_lock(&w->mu);
    w->job = *job;
    w->has_job = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
}

static int worker_take(worker *w, worker_result *out)
{
    if (!w->has_result) return 0;
    *out = w->res;
    memset(&w->res, 0, sizeof w->res);
    w->has_result = 0;
    return 1;
}

int worker_poll(worker *w, worker_result *out)
{
    pthread_mutex_lock(&w->mu);
    int got = worker_take(w, out);
    pthread_mutex_unlock(&w->mu);
    return got;
}

int worker_wait(worker *w, long timeout_ms, worker_result *out)
{
    double until = lc_now_ms() + (double)timeout_ms;
    pthread_mutex_lock(&w->mu);
    while (!w->has_result && (w->has_job || w->running)) {
        double left = until - lc_now_ms();
        if (left <= 0) break;
        struct timespec ts = lc_deadline_in(left);
        pthread_cond_timedwait(&w->changed, &w->mu, &ts);
    }
    int got = worker_take(w, out);
    pthread_mutex_unlock(&w->mu);
    return got;
}

int worker_catchup(worker *w, const store_msg *msgs, size_t n, char **err)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) bytes += msgs[i].json_len + 1 + (msgs[i].entry_id ? strlen(msgs[i].entry_id) + 1 : 0);
    worker_chunk *c = calloc(1, sizeof *c);
    if (c && n) {
        c->m = calloc(n, sizeof *c->m);
        c->bytes = malloc(bytes ? bytes : 1);
    }
    if (!c || (n && (!c->m || !c->bytes))) {
        worker_chunks_free(c);
        return lc_errf(err, LC_NOMEM, "worker: out of memory");
    }
    /* One block for every id and text: 100k messages are two allocations, not 200k. */
    char *at = c->bytes;
    for (size_t i = 0; i < n; i++) {
        const char *id = NULL;
        if (msgs[i].entry_id) {
            size_t l = strlen(msgs[i].entry_id) + 1;
            memcpy(at, msgs[i].entry_id, l);
            id = at;
            at += l;
        }
        memcpy(at, msgs[i].json, msgs[i].json_len);
        at[msgs[i].json_len] = '\0';
        c->m[i] = (store_msg){id, at, msgs[i].json_len, NULL};
        at += msgs[i].json_len + 1;
    }
    c->n = n;
    pthread_mutex_lock(&w->mu);
    if (w->cu_tail) w->cu_tail->next = c;
    else w->cu_head = c;
    w->cu_tail = c;
    w->cu_left += n;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    return LC_OK;
}

long worker_catchup_left(worker *w, char **why)
{
    if (why) *why = NULL;
    pthread_mutex_lock(&w->mu);
    long left = (long)w->cu_left;
    if (w->cu_failed) {
        left = -1;
        w->cu_failed = 0;
        if (why) *why = w->cu_error;
        else free(w->cu_error);
        w->cu_error = NULL;
    }
    pthread_mutex_unlock(&w->mu);
    return left;
}

int worker_busy(worker *w)
{
    pthread_mutex_lock(&w->mu);
    int busy = w->has_job || w->running;
    pthread_mutex_unlock(&w->mu);
    return busy;
}

void worker_invalidate(worker *w)
{
    pthread_mutex_lock(&w->mu);
    w->gen++;
    w->has_job = 0;
    worker_result_free(&w->res);
    w->has_result = 0;
    pthread_mutex_unlock(&w->mu);
}

size_t worker_take_events(worker *w, worker_event **out)
{
    pthread_mutex_lock(&w->mu);
    size_t n = w->n_events;
    *out = w->events;
    w->events = NULL;
    w->n_events = w->cap_events = 0;
    pthread_mutex_unlock(&w->mu);
    return n;
}

void worker_status_get(worker *w, worker_status *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&w->mu);
    double now = lc_now_ms();
    out->pending = w->has_job;
    out->running = w->running;
    out->running_ms = w->running ? (long)(now - w->run_started) : 0;
    out->call_ms = w->call_started > 0 ? (long)(now - w->call_started) : 0;
    out->passes = w->passes;
    out->nodes = w->nodes;
    out->conflicts = w->conflicts;
    out->stops = w->stops;
    out->deadline_hits = w->deadline_hits;
    out->failures = w->failures;
    out->last_error = w->last_error ? lc_strdup(w->last_error) : NULL;
    out->last_error_at = w->last_error_at;
    out->embedded = w->embedded;
    out->embed_passes = w->embed_passes;
    out->embed_failures = w->embed_failures;
    out->embed_error = w->embed_error ? lc_strdup(w->embed_error) : NULL;
    pthread_mutex_unlock(&w->mu);
}
