/* test_projstate.c -- the projection's state (engine/lcm/projstate.c): the block budget and
 * zones, a request without a store only measured, a request below the lines sent as it
 * came (and stored), a pass between turns preparing the cut the next request swaps to,
 * the pin stored between turns and dropped when its anchor leaves, a request over the fit
 * line covered by truncation at once, the worker's results taken through the hooks, the
 * request log and whether a request extends the previous one (with it and without), and a resumed session's first request costing what a request costs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "projstate.h"
#include "store_sqlite.h"
#include "store.h"
#include "summarize.h"
#include "util.h"

#include "conv_fx.h"
#include "temp_home.h"

/* ---- a fixture: a store, a conversation, hooks that record ------------------------------- */

#define NMSG 64

typedef struct rec {
    sbuf log;               /* every line, "W: ..." / "I: ..." */
    int pickups, invalidations, submits;
    projstate_pick next;    /* what the next pickup returns (cut_id > 0: a result) */
} rec;

static void rec_log(void *ud, int warn, const char *text)
{
    rec *r = ud;
    sb_printf(&r->log, "%s: %s\n", warn ? "W" : "I", text);
}

static int rec_pickup(void *ud, long wait_ms, projstate_pick *out)
{
    rec *r = ud;
    (void)wait_ms;
    r->pickups++;
    *out = r->next;
    memset(&r->next, 0, sizeof r->next);
    return out->cut_id > 0 || out->passes > 0;
}

static void rec_invalidate(void *ud)
{
    ((rec *)ud)->invalidations++;
}

static void rec_submit(void *ud, const worker_job *job)
{
    (void)job;
    ((rec *)ud)->submits++;
}

typedef struct fx {
    store *st;
    summ_ctx *summ, *cover;
    rec r;
    projstate *ps;
    char *json[NMSG];
    char ids[NMSG][16];
    store_msg m[NMSG];
    project_item *items; /* the last request()'s */
    size_t n_items;
} fx;

/* Messages of about 100 tokens each, every one saying something of its own. */
static int fx_setup(void **state)
{
    setup(state);
    fx *f = calloc(1, sizeof *f);
    assert_int_equal(store_open(home, "sess", "/w", &f->st, NULL), LC_OK);
    f->summ = conv_fx_chain(0);
    f->cover = conv_fx_chain(1);
    projstate_hooks h = {.ud = &f->r, .log = rec_log, .pickup = rec_pickup,
                         .invalidate = rec_invalidate, .submit = rec_submit};
    assert_int_equal(projstate_new(&h, &f->ps), LC_OK);
    conv_fx_fill(f->json, f->ids, f->m, NMSG);
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx *f = *state;
    projstate_free(f->ps);
    summ_free(f->summ);
    summ_free(f->cover);
    store_close(f->st);
    for (int i = 0; i < NMSG; i++) free(f->json[i]);
    free(f->items);
    free(f->r.log.p);
    free(f);
    return teardown(state);
}

static long fx_tokens(const fx *f, size_t n)
{
    return conv_fx_tokens(f->m, n);
}

static projstate_env fx_env(fx *f, long window)
{
    projstate_env env = {.st = f->st, .window = window, .summ = f->summ, .cover = f->cover};
    return env;
}

/* One context request of messages from..from+n-1 (it must succeed and count their tokens);
 * its items are in f->items, the request before's freed. */
static void request(fx *f, const projstate_env *env, size_t from, size_t n)
{
    size_t tokens = 0;
    free(f->items);
    f->items = NULL;
    assert_int_equal(projstate_context(f->ps, env, f->m + from, n, 0, &f->items, &f->n_items,
                                       &tokens, NULL),
                     LC_OK);
    assert_int_equal(tokens, (size_t)(fx_tokens(f, from + n) - fx_tokens(f, from)));
}

/* ---- budgets and zones ---------------------------------------------------------------------- */

static void test_block_budget_is_a_quarter_of_the_swap_line_and_two_summaries_at_least(void **state)
{
    (void)state;
    zones_resolved z = {.swap_tokens = 100000};
    lcm_config cfg;
    lcm_config_defaults(&cfg);
    cfg.summary_tokens = 1000;
    assert_int_equal(projstate_block_budget(&z, &cfg), 25000);
    z.swap_tokens = 4000;
    assert_int_equal(projstate_block_budget(&z, &cfg), 2000);
    assert_int_equal(projstate_block_budget(&z, NULL), 2400);
}

static void test_zones_resolve_against_the_default_window_when_the_host_gives_none(void **state)
{
    (void)state;
    projstate_env env = {.window = 0};
    zones_resolved z;
    assert_int_equal(projstate_zones(&env, &z), LC_OK);
    assert_int_equal(z.window, 128000);
    env.window = 200000;
    assert_int_equal(projstate_zones(&env, &z), LC_OK);
    assert_int_equal(z.window, 200000);
    assert_int_equal(z.swap_tokens, 140000);
}

/* ---- requests ----------------------------------------------------------------------------- */

static void test_request_without_a_store_is_only_measured(void **state)
{
    fx *f = *state;
    projstate_env env = fx_env(f, 128000);
    f->n_items = 9;
    env.st = NULL;
    request(f, &env, 0, 10);
    assert_null(f->items);
    assert_int_equal(f->n_items, 0);
    assert_int_equal(f->r.pickups, 0);
    assert_false(projstate_logging(f->ps));
}

static void test_request_below_the_lines_goes_as_it_came_and_is_stored(void **state)
{
    fx *f = *state;
    projstate_env env = fx_env(f, 128000);
    projstate_view v;
    request(f, &env, 0, 10);
    assert_null(f->items);
    /* The next request grew by two: both are stored too. */
    request(f, &env, 0, 12);
    assert_null(f->items);
    store_row row = {0};
    assert_int_equal(store_get_message(f->st, "e011", &row, NULL), LC_OK);
    store_row_free(&row);
    projstate_view_get(f->ps, &v);
    assert_string_equal(v.last_action, "keep");
    assert_int_equal(v.cut_id, 0);
    assert_int_equal(v.window, 128000);
    assert_int_equal(v.last_tokens, fx_tokens(f, 12));
    assert_int_equal(f->r.pickups, 2); /* the worker's results are asked for every request */
}

/* The window that puts n messages between the swap line and the re-cut line. */
static long window_for(const fx *f, size_t n)
{
    return (long)(fx_tokens(f, n) / 0.78);
}

static void test_pass_between_turns_prepares_the_cut_the_next_request_swaps_to(void **state)
{
    fx *f = *state;
    const size_t n = 48;
    projstate_env env = fx_env(f, window_for(f, n));
    projstate_view v;
    request(f, &env, 0, n);
    assert_null(f->items); /* over the swap line, but no cut exists yet */
    /* No worker: the pass runs here, and the cut is prepared after it. */
    projstate_between_turns(f->ps, &env, 0);
    assert_int_equal(f->r.submits, 0);
    projstate_view_get(f->ps, &v);
    assert_int_equal(v.passes, 1);
    request(f, &env, 0, n + 1);
    assert_non_null(f->items);
    assert_true(f->items[0].index < 0);            /* the pointer block first */
    assert_non_null(strstr(f->items[0].json, "lcm:summary"));
    assert_int_equal(f->items[f->n_items - 1].index, (int64_t)n); /* the raw tail after it */
    projstate_view_get(f->ps, &v);
    assert_string_equal(v.last_action, "swap");
    assert_true(v.cut_id > 0);
    assert_true(v.last_tokens < v.last_raw_tokens);
    assert_non_null(strstr(f->r.log.p, "I: lcm: swap to cut"));
    /* The pin is stored between turns, not in the request. */
    project_pin pin;
    assert_int_equal(project_pin_get(f->st, &pin, NULL), LC_NOTFOUND);
    projstate_pin_flush(f->ps, f->st);
    assert_int_equal(project_pin_get(f->st, &pin, NULL), LC_OK);
    assert_int_equal(pin.cut_id, v.cut_id);
    /* A request that no longer holds the anchor drops the pin. */
    request(f, &env, n - 2, 3);
    assert_null(f->items);
    projstate_view_get(f->ps, &v);
    assert_string_equal(v.last_action, "drop");
    assert_int_equal(v.cut_id, 0);
    assert_non_null(strstr(f->r.log.p, "no longer applies"));
    projstate_pin_flush(f->ps, f->st);
    assert_int_equal(project_pin_get(f->st, &pin, NULL), LC_NOTFOUND);
    /* A resumed process finds no pin either, and takes the newest cut as its candidate. */
    projstate_load(f->ps, f->st);
    projstate_view_get(f->ps, &v);
    assert_int_equal(v.cut_id, 0);
}

static void test_between_turns_with_a_worker_submits_and_waits_until_a_pass_is_due(void **state)
{
    fx *f = *state;
    projstate_env env = fx_env(f, 1000000);
    env.worker = 1;
    request(f, &env, 0, 10);
    projstate_between_turns(f->ps, &env, 0); /* far below every line: no pass is due */
    assert_int_equal(f->r.submits, 0);
    projstate_between_turns(f->ps, &env, 1); /* flush_all: always */
    assert_int_equal(f->r.submits, 1);
    env.summ = NULL; /* no chain: no passes at all */
    projstate_between_turns(f->ps, &env, 1);
    assert_int_equal(f->r.submits, 1);
}

static void test_worker_cut_becomes_the_candidate_through_pickup(void **state)
{
    fx *f = *state;
    const size_t n = 48;
    projstate_env env = fx_env(f, window_for(f, n));
    request(f, &env, 0, n);
    /* What a worker would do on its own connection: a pass, then a cut. */
    dag_opts o = {.keep_recent_tokens = 1000, .flush = 1};
    dag_stats ds;
    int64_t cut = 0;
    assert_int_equal(dag_pass(f->st, f->summ, &o, &ds, NULL), LC_OK);
    assert_int_equal(project_prepare_cut(f->st, 4000, &cut, NULL), LC_OK);
    f->r.next = (projstate_pick){.cut_id = cut, .passes = 1, .nodes = ds.leaves};
    request(f, &env, 0, n + 1);
    assert_non_null(f->items);
    projstate_view v;
    projstate_view_get(f->ps, &v);
    assert_int_equal(v.cut_id, cut);
    assert_int_equal(v.passes, 1);
}

static void test_request_over_the_fit_line_is_covered_by_truncation_at_once(void **state)
{
    fx *f = *state;
    const size_t n = NMSG;
    /* The whole conversation is past 95% of this window. */
    projstate_env env = fx_env(f, (long)(fx_tokens(f, n) / 0.97));
    request(f, &env, 0, n);
    assert_non_null(f->items);
    assert_true(f->items[0].index < 0);
    assert_non_null(strstr(f->items[0].json, "lcm:truncated"));
    assert_true(f->r.invalidations >= 1); /* the worker's pass would only repeat it */
    assert_non_null(strstr(f->r.log.p, "W: lcm: summaries were late"));
    projstate_view v;
    projstate_view_get(f->ps, &v);
    assert_true(v.last_tokens < (long)(env.window * 0.95));
}

static void test_request_log_has_one_line_per_request_sent(void **state)
{
    fx *f = *state;
    char path[300];
    snprintf(path, sizeof path, "%s/requests.jsonl", home);
    projstate_log_open(f->ps, path, NULL);
    projstate_env env = fx_env(f, 128000);
    request(f, &env, 0, 5);
    assert_true(projstate_logging(f->ps));
    projstate_log_sent(f->ps, f->m, 5, NULL, 0, NULL);
    assert_false(projstate_logging(f->ps)); /* once per plan */
    request(f, &env, 0, 7);
    projstate_log_sent(f->ps, f->m, 7, NULL, 0, NULL);
    FILE *fp = fopen(path, "r");
    char line[2048];
    int lines = 0;
    while (fgets(line, sizeof line, fp)) {
        lines++;
        assert_non_null(strstr(line, "\"action\":\"keep\""));
        if (lines == 2) {
            assert_non_null(strstr(line, "\"rawAppended\":true"));
            assert_non_null(strstr(line, "\"prevItems\":5"));
        }
    }
    fclose(fp);
    assert_int_equal(lines, 2);
}

/* The three requests of the comparison: 5 messages, the same 5 and 2 more (an extension),
 * then a projection whose first item is a summary in place of the first 3 (no extension).
 * Each request's answer into ext[0..2]. */
static void sent_three(fx *f, int ext[3])
{
    projstate_env env = fx_env(f, 128000);
    project_item swapped[5] = {{-1, "{\"role\":\"user\",\"content\":\"[summary of steps 0-2]\"}"},
                               {3, NULL}, {4, NULL}, {5, NULL}, {6, NULL}};
    request(f, &env, 0, 5);
    ext[0] = projstate_log_sent(f->ps, f->m, 5, NULL, 0, NULL);
    request(f, &env, 0, 7);
    ext[1] = projstate_log_sent(f->ps, f->m, 7, NULL, 0, NULL);
    request(f, &env, 0, 7);
    ext[2] = projstate_log_sent(f->ps, f->m, 7, swapped, 5, NULL);
}

/* The `request` metrics row says whether a request extends the previous one: the same
 * answer with the request log (digests of the bytes sent) as without it. */
static void test_request_extends_the_same_with_the_request_log_as_without(void **state)
{
    fx *f = *state;
    int with[3], without[3];
    sent_three(f, without);
    char path[300];
    snprintf(path, sizeof path, "%s/requests.jsonl", home);
    projstate_free(f->ps);
    projstate_hooks h = {.ud = &f->r, .log = rec_log, .pickup = rec_pickup,
                         .invalidate = rec_invalidate, .submit = rec_submit};
    assert_int_equal(projstate_new(&h, &f->ps), LC_OK);
    projstate_log_open(f->ps, path, NULL);
    sent_three(f, with);
    assert_int_equal(without[0], -1);
    assert_int_equal(without[1], 1);
    assert_int_equal(without[2], 0);
    assert_memory_equal(with, without, sizeof with);
}

/* Without the request log a raw message is compared by its entry id and length, as the
 * ingest knows it, not by its bytes: the window's bytes are never read again on each
 * request (the host's own copy of an unchanged message may sit anywhere in memory). */
static void test_request_extends_without_the_log_never_reads_the_bytes_again(void **state)
{
    fx *f = *state;
    projstate_env env = fx_env(f, 128000);
    request(f, &env, 0, 5);
    assert_int_equal(projstate_log_sent(f->ps, f->m, 5, NULL, 0, NULL), -1);
    /* The same messages, their bytes scrambled where they lie (same ids, same lengths). */
    for (int i = 0; i < 5; i++) f->json[i][1] ^= 0x20;
    request(f, &env, 0, 6);
    assert_int_equal(projstate_log_sent(f->ps, f->m, 6, NULL, 0, NULL), 1);
}

/* ---- a resumed session ------------------------------------------------------------------- */

#define RESUME_N 600

/* SQLite's progress handler called after every VM instruction: the work a call does in the
 * store, counted (steadier than time, and the same on any machine). */
static int count_ops(void *ud)
{
    (*(long *)ud)++;
    return 0;
}

/* One request of msgs[0..n) on ps, the store's VM instructions it ran in *ops. */
static void request_counted(projstate *ps, store *st, const store_msg *msgs, size_t n, long *ops)
{
    projstate_env env = {.st = st, .window = 1000000000};
    project_item *items = NULL;
    size_t n_items = 0, tokens = 0;
    *ops = 0;
    sqlite3_progress_handler(store_db(st), 1, count_ops, ops);
    assert_int_equal(projstate_context(ps, &env, msgs, n, 0, &items, &n_items, &tokens, NULL), LC_OK);
    sqlite3_progress_handler(store_db(st), 0, NULL, NULL);
    free(items);
}

/* A host restarted on a long session sends its whole history at the first request; the
 * store holds all of it but the newest message. That request checks where the store ends
 * and stores the one new message: the store work of a request of the running session, not
 * a walk over (or a re-ingest of) the history it brings. */
static void test_resumed_sessions_first_request_costs_what_a_running_request_costs(void **state)
{
    fx *f = *state;
    if (getenv("LCM_STORE_URL") && *getenv("LCM_STORE_URL")) {
        print_message("(SQLite's VM instructions are counted: nothing to check on PostgreSQL)\n");
        return;
    }
    char *json[RESUME_N + 2];
    char ids[RESUME_N + 2][16];
    store_msg m[RESUME_N + 2];
    for (int i = 0; i < RESUME_N + 2; i++) {
        snprintf(ids[i], sizeof ids[i], "r%04d", i);
        json[i] = lc_asprintf("{\"role\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":\"turn %d: the "
                              "build of module_%d passed after the fix to parser_%d\"}]}",
                              i % 2 ? "assistant" : "user", i, i * 3, i * 7);
        m[i] = (store_msg){ids[i], json[i], strlen(json[i]), NULL};
    }
    long first = 0, running = 0, resumed = 0;
    /* The running session: its history, then one request that brings one new message. */
    request_counted(f->ps, f->st, m, RESUME_N, &first);
    request_counted(f->ps, f->st, m, RESUME_N + 1, &running);
    /* The process ends; a new one opens the same store and resumes the session. */
    store_close(f->st);
    f->st = NULL;
    projstate_free(f->ps);
    f->ps = NULL;
    assert_int_equal(store_open(home, "sess", "/w", &f->st, NULL), LC_OK);
    projstate_hooks h = {.ud = &f->r, .log = rec_log, .pickup = rec_pickup,
                         .invalidate = rec_invalidate, .submit = rec_submit};
    assert_int_equal(projstate_new(&h, &f->ps), LC_OK);
    projstate_load(f->ps, f->st);
    request_counted(f->ps, f->st, m, RESUME_N + 2, &resumed);
    print_message("store VM instructions: first request %ld (%d messages, all new), running %ld, "
                  "resumed first %ld\n", first, RESUME_N, running, resumed);
    assert_int_equal(store_message_count(f->st), RESUME_N + 2);
    /* A check: within a few times a running request's work (a fresh connection compiles
     * its statements once), far from the history's (first stored them all). */
    assert_true(resumed <= 4 * running + 2000);
    assert_true(resumed * 20 < first);
    for (int i = 0; i < RESUME_N + 2; i++) free(json[i]);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_budget_is_a_quarter_of_the_swap_line_and_two_summaries_at_least),
        cmocka_unit_test(test_zones_resolve_against_the_default_window_when_the_host_gives_none),
        T(test_request_without_a_store_is_only_measured),
        T(test_request_below_the_lines_goes_as_it_came_and_is_stored),
        T(test_pass_between_turns_prepares_the_cut_the_next_request_swaps_to),
        T(test_between_turns_with_a_worker_submits_and_waits_until_a_pass_is_due),
        T(test_worker_cut_becomes_the_candidate_through_pickup),
        T(test_request_over_the_fit_line_is_covered_by_truncation_at_once),
        T(test_request_log_has_one_line_per_request_sent),
        T(test_request_extends_the_same_with_the_request_log_as_without),
        T(test_request_extends_without_the_log_never_reads_the_bytes_again),
        T(test_resumed_sessions_first_request_costs_what_a_running_request_costs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
