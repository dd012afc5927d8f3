/* test_worker.c -- the background summarizer (engine/lcm/worker.c) on a real store: a pass runs
 * off the calling thread and its nodes and cut are picked up later; a slow model never
 * holds the caller; an invalidation stops a pass and drops its result; the pass deadline
 * is named; two passes over the same messages never cover them twice; stop returns while
 * a model call is slow; the chain's events reach the caller's thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "dag.h"
#include "project.h"
#include "store.h"
#include "store_sqlite.h"
#include "store_q.h"
#include "summarize.h"
#include "util.h"
#include "worker.h"
#include "test_main.h"

#include "temp_home.h"

/* A model that takes `delay_ms` per call and answers a short summary; counts its calls. */
typedef struct slow_model {
    long delay_ms;
    int calls;        /* only the worker thread writes it; read after the worker is idle */
    int fail;
    worker *w;        /* set: the call gives up (LC_CANCELLED) once the worker says stop */
} slow_model;

static int slow_auto(void *ud, const char *system_prompt, const char *prompt, long max_tokens,
                     summ_completion *out, char **err)
{
    slow_model *m = ud;
    (void)system_prompt;
    (void)max_tokens;
    m->calls++;
    for (long waited = 0; waited < m->delay_ms; waited += 10) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        if (m->w && worker_should_stop(m->w)) return lc_errf(err, LC_CANCELLED, "given up");
    }
    if (m->fail) return lc_errf(err, LC_ERR, "provider said no");
    char head[64];
    snprintf(head, sizeof head, "%.40s", prompt);
    out->text = lc_asprintf("model summary: %s", head);
    out->stop_reason = lc_strdup("stop");
    return LC_OK;
}

static void ingest(store *st, int n, int tokens)
{
    for (int i = 0; i < n; i++) {
        sbuf b = {0};
        sb_printf(&b, "Message %d set K%03d=%d. ", i, i, 5000 + i);
        while ((long)b.len < tokens * 4) sb_printf(&b, "The step %d went fine at offset %zu. ", i, b.len);
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", i % 2 ? "assistant" : "user");
        cJSON_AddStringToObject(m, "content", b.p);
        char *json = cJSON_PrintUnformatted(m), id[32];
        snprintf(id, sizeof id, "e%04d", i);
        store_msg sm = {id, json, strlen(json), NULL};
        assert_int_equal(store_ingest(st, &sm, 1, NULL, NULL), LC_OK);
        free(json);
        cJSON_Delete(m);
        sb_free(&b);
    }
}

static worker *start(slow_model *m, long deadline_ms)
{
    static const char *const chain[] = {"auto"};
    worker_config wc = {
        .agent_home = home,
        .session_id = "sess",
        .session_cwd = "/w",
        .summ = {.chain = chain, .n_chain = 1, .auto_fn = slow_auto, .ud = m},
        .pass_deadline_ms = deadline_ms,
    };
    worker *w = NULL;
    char *err = NULL;
    assert_int_equal(worker_start(&wc, &w, &err), LC_OK);
    return w;
}

static worker_job job(void)
{
    worker_job j = {
        .dag = {.keep_recent_tokens = 1000, .leaf_chunk_tokens = 2000, .summary_tokens = 200,
                .flush = 1},
        .cut_budget = 4000,
    };
    return j;
}

static long count(store *st, const char *sql)
{
    long v = (long)store_q1(st, sql);
    assert_true(v >= 0);
    return v;
}

static store *open_ingested(int n, int tokens)
{
    store *st = NULL;
    assert_int_equal(store_open(home, "sess", "/w", &st, NULL), LC_OK);
    ingest(st, n, tokens);
    return st;
}

/* Waits for the submitted job's result, which must come and be LC_OK. */
static void wait_ok(worker *w, worker_result *r)
{
    assert_int_equal(worker_wait(w, 30000, r), 1);
    assert_int_equal(r->rc, LC_OK);
}

/* The worker joins within 5 s; then the test's store is closed. */
static void stop_and_close(worker *w, store *st)
{
    assert_int_equal(worker_stop(w, 5000), 1);
    store_close(st);
}

/* One test's worker: a store of n messages of ~400 tokens and a worker over model m, with
 * the standard job in j (not yet submitted) and the result the test waited for in r. */
typedef struct run {
    slow_model m;
    store *st;
    worker *w;
    worker_job j;
    worker_result r;
} run;

static run *run_open(int n, slow_model m, long deadline_ms)
{
    run *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->m = m;
    t->st = open_ingested(n, 400);
    t->w = start(&t->m, deadline_ms);
    t->j = job();
    return t;
}

/* Submits the job and waits for its result in t->r, which must come and be LC_OK. */
static void run_pass(run *t)
{
    worker_submit(t->w, &t->j);
    wait_ok(t->w, &t->r);
}

/* Submits the job and gives the pass `ms` to get into its model calls. */
static void run_submit_for(run *t, long ms)
{
    worker_submit(t->w, &t->j);
    usleep(ms * 1000);
}

/* The worker's counts of passes stopped at their deadline and of failures. */
static void expect_status(worker *w, unsigned long deadline_hits, unsigned long failures)
{
    worker_status s;
    worker_status_get(w, &s);
    assert_int_equal(s.deadline_hits, deadline_hits);
    assert_int_equal(s.failures, failures);
    worker_status_free(&s);
}

/* The worker joins within 5 s; then the store is closed and the run freed. */
static void run_close(run *t)
{
    stop_and_close(t->w, t->st);
    worker_result_free(&t->r);
    free(t);
}

/* Covers all that o allows at once with truncation, as the host thread does in a hurry. */
static void truncation_pass(store *st, const dag_opts *o, dag_stats *ds)
{
    summ_config tc = {.truncate_only = 1};
    summ_ctx *trunc = NULL;
    assert_int_equal(summ_create(&tc, &trunc, NULL), LC_OK);
    assert_int_equal(dag_pass(st, trunc, o, ds, NULL), LC_OK);
    summ_free(trunc);
}

/* How many "summarizer-fallback" events the worker has queued (taken and freed). */
static int fallback_events(worker *w)
{
    worker_event *ev = NULL;
    size_t n = worker_take_events(w, &ev);
    int fallback = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ev[i].kind, "summarizer-fallback")) fallback++;
    worker_events_free(ev, n);
    return fallback;
}

static void test_pass_runs_off_the_caller_and_its_cut_is_picked_up(void **state)
{
    (void)state;
    run *t = run_open(20, (slow_model){.delay_ms = 300}, 0);
    double t0 = lc_now_ms();
    worker_submit(t->w, &t->j);
    /* Submitting returns at once; nothing is committed yet while the model works. */
    assert_true(lc_now_ms() - t0 < 250);
    assert_int_equal(worker_poll(t->w, &t->r), 0);
    assert_true(worker_busy(t->w));
    wait_ok(t->w, &t->r);
    assert_true(t->r.stats.leaves >= 2);
    assert_true(t->r.cut_id > 0);
    assert_true(t->m.calls >= t->r.stats.leaves);
    /* The host thread's own connection sees the committed nodes and the cut. */
    assert_int_equal(count(t->st, "SELECT count(*) FROM summaries WHERE kind = 'leaf'"), t->r.stats.leaves);
    project_cut c;
    assert_int_equal(project_get_cut(t->st, t->r.cut_id, &c, NULL), LC_OK);
    assert_non_null(strstr(c.message, "model summary"));
    project_cut_free(&c);
    run_close(t);
}

static void test_invalidation_stops_the_pass_and_drops_its_result(void **state)
{
    (void)state;
    run *t = run_open(40, (slow_model){.delay_ms = 200}, 0);
    run_submit_for(t, 300);
    worker_invalidate(t->w);
    /* The pass ends before its next node; its result is gone. */
    assert_int_equal(worker_wait(t->w, 10000, &t->r), 0);
    assert_false(worker_busy(t->w));
    long leaves = count(t->st, "SELECT count(*) FROM summaries WHERE kind = 'leaf'");
    assert_true(leaves >= 1 && leaves < 7);
    /* A new job after the invalidation runs and is reported. */
    worker_submit(t->w, &t->j);
    assert_int_equal(worker_wait(t->w, 60000, &t->r), 1);
    assert_true(t->r.stats.leaves > 0);
    run_close(t);
}

static void test_pass_deadline_stops_the_pass_and_is_named(void **state)
{
    (void)state;
    run *t = run_open(40, (slow_model){.delay_ms = 150}, 200);
    run_pass(t);
    assert_true(t->r.deadline_hit);
    assert_true(t->r.stats.stopped);
    assert_true(t->r.stats.leaves >= 1 && t->r.stats.leaves <= 3);
    expect_status(t->w, 1, 0);
    run_close(t);
}

static void test_two_passes_never_cover_a_message_twice(void **state)
{
    (void)state;
    run *t = run_open(20, (slow_model){.delay_ms = 500}, 0);
    run_submit_for(t, 100);
    /* The host thread covers everything at once with truncation while the model works. */
    dag_stats ds;
    truncation_pass(t->st, &t->j.dag, &ds);
    assert_true(ds.leaves >= 2);
    wait_ok(t->w, &t->r);
    assert_true(t->r.stats.conflicts >= 1);
    assert_int_equal(count(t->st, "SELECT count(*) FROM (SELECT entry_id FROM summary_messages"
                               " GROUP BY entry_id HAVING count(*) > 1) t"),
                     0);
    assert_int_equal(count(t->st, "SELECT count(*) FROM summaries WHERE text LIKE '[lcm:truncated]%'"),
                     ds.leaves);
    run_close(t);
}

static void test_failing_model_falls_back_and_the_events_reach_the_caller(void **state)
{
    (void)state;
    run *t = run_open(12, (slow_model){.delay_ms = 10, .fail = 1}, 0);
    run_pass(t);
    assert_true(t->r.stats.leaves >= 1);
    assert_true(fallback_events(t->w) >= 1);
    run_close(t);
}

static void test_stop_returns_while_a_model_call_is_slow(void **state)
{
    (void)state;
    run *t = run_open(12, (slow_model){.delay_ms = 1500}, 0);
    run_submit_for(t, 200);
    /* Inside the call: a short stop says "not yet"; a longer one joins after the call. */
    assert_int_equal(worker_stop(t->w, 100), 0);
    assert_int_equal(worker_stop(t->w, 10000), 1);
    /* Whole nodes only: at most the one the call was making. */
    assert_true(count(t->st, "SELECT count(*) FROM summaries") <= 1);
    store_close(t->st);
    free(t);
}

static void test_a_call_given_up_writes_nothing_and_is_no_failure(void **state)
{
    (void)state;
    run *t = run_open(12, (slow_model){.delay_ms = 5000}, 0);
    t->m.w = t->w;  /* before the job: the submit's lock publishes it to the worker */
    run_submit_for(t, 200);
    worker_invalidate(t->w);
    assert_int_equal(worker_wait(t->w, 3000, &t->r), 0);
    assert_false(worker_busy(t->w));
    /* No node from the abandoned call, no fallback to another summarizer, no failure. */
    assert_int_equal(count(t->st, "SELECT count(*) FROM summaries"), 0);
    assert_int_equal(fallback_events(t->w), 0);
    expect_status(t->w, 0, 0);
    run_close(t);
}

static void test_truncation_laid_in_a_hurry_is_healed_by_the_worker(void **state)
{
    (void)state;
    store *st = open_ingested(12, 400);
    worker_job j = job();
    dag_stats ds;
    truncation_pass(st, &j.dag, &ds);
    long laid = count(st, "SELECT count(*) FROM summaries WHERE text LIKE '[lcm:truncated]%'");
    assert_true(laid >= 1);
    slow_model m = {.delay_ms = 10};
    worker *w = start(&m, 0);
    j.heal_nodes = 8;
    j.heal = (dag_heal_opts){.heal_source_tokens = 4000, .summary_tokens = 200};
    worker_submit(w, &j);
    worker_result r;
    wait_ok(w, &r);
    assert_int_equal(r.healed, laid);
    assert_int_equal(count(st, "SELECT count(*) FROM summaries WHERE text LIKE '[lcm:truncated]%'"), 0);
    assert_true(count(st, "SELECT count(*) FROM summaries WHERE text LIKE 'model summary%'") >= laid);
    worker_result_free(&r);
    stop_and_close(w, st);
}

TEST_MAIN(
    HOME_TEST(test_pass_runs_off_the_caller_and_its_cut_is_picked_up),
    HOME_TEST(test_invalidation_stops_the_pass_and_drops_its_result),
    HOME_TEST(test_pass_deadline_stops_the_pass_and_is_named),
    HOME_TEST(test_two_passes_never_cover_a_message_twice),
    HOME_TEST(test_failing_model_falls_back_and_the_events_reach_the_caller),
    HOME_TEST(test_stop_returns_while_a_model_call_is_slow),
    HOME_TEST(test_a_call_given_up_writes_nothing_and_is_no_failure),
    HOME_TEST(test_truncation_laid_in_a_hurry_is_healed_by_the_worker),
)
