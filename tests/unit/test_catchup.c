/* test_catchup.c -- a long session's first request (engine/lcm/projstate.c with the real
 * worker of engine/lcm/worker.c): the request returns while the store is still locked
 * against the ingest (so it waited for none of it) and within the window; the worker then
 * stores every message, in order, byte for byte (and a request while its first pass runs
 * fits without a pass of its own); a process that exits mid-way leaves
 * whole batches, and a new instance completes the rest with nothing twice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ingest.h"
#include "projstate.h"
#include "store.h"
#include "summarize.h"
#include "util.h"
#include "worker.h"
#include "zones.h"

#include "temp_home.h"
#include "store_q.h"

/* Enough to show the path (PROJSTATE_CATCHUP_MIN is 2,000) at ten worker batches. */
#define NLONG 20000
#define WINDOW 128000

typedef struct fx {
    store *st;               /* the host thread's connection */
    worker *w;
    projstate *ps;
    summ_ctx *summ, *cover;
    char **json;
    char (*ids)[16];
    store_msg *m;
    int busy;                /* what can_wait answers: the worker's first pass runs */
} fx;

static int hook_can_wait(void *ud)
{
    return ((fx *)ud)->busy;
}

static int hook_catchup(void *ud, const store_msg *msgs, size_t n)
{
    return worker_catchup(((fx *)ud)->w, msgs, n, NULL);
}

static long hook_catchup_left(void *ud, char **why)
{
    return worker_catchup_left(((fx *)ud)->w, why);
}

static summ_ctx *chain(int truncate_only)
{
    static const char *const names[] = {"extractive"};
    summ_config cfg = {.chain = names, .n_chain = 1, .truncate_only = truncate_only};
    summ_ctx *sc = NULL;
    assert_int_equal(summ_create(&cfg, &sc, NULL), LC_OK);
    return sc;
}

/* A process of the session: its connection, its worker, its projection state. */
static void fx_start(fx *f)
{
    static const char *const names[] = {"extractive"};
    worker_config wc = {.agent_home = home, .session_id = "long", .session_cwd = "/w",
                        .summ = {.chain = names, .n_chain = 1}};
    assert_int_equal(store_open(home, "long", "/w", &f->st, NULL), LC_OK);
    assert_int_equal(worker_start(&wc, &f->w, NULL), LC_OK);
    projstate_hooks h = {.ud = f, .catchup = hook_catchup, .catchup_left = hook_catchup_left,
                         .can_wait = hook_can_wait};
    assert_int_equal(projstate_new(&h, &f->ps), LC_OK);
    f->summ = chain(0);
    f->cover = chain(1);
}

/* Its exit: the worker stops between batches, whatever it has left. */
static void fx_exit(fx *f)
{
    if (f->w) assert_int_equal(worker_stop(f->w, 30000), 1);
    projstate_free(f->ps);
    summ_free(f->summ);
    summ_free(f->cover);
    store_close(f->st);
    f->w = NULL;
    f->ps = NULL;
    f->st = NULL;
}

static int fx_setup(void **state)
{
    setup(state);
    fx *f = calloc(1, sizeof *f);
    f->json = calloc(NLONG + 1, sizeof *f->json);
    f->ids = calloc(NLONG + 1, sizeof *f->ids);
    f->m = calloc(NLONG + 1, sizeof *f->m);
    static const char *const roles[] = {"user", "assistant", "toolResult"};
    for (int i = 0; i <= NLONG; i++) {
        snprintf(f->ids[i], sizeof f->ids[i], "e%06d", i);
        /* Bytes a re-print would change (spacing, an escaped slash, a float), so byte for
         * byte is a real check. */
        f->json[i] = lc_asprintf("{\"role\": \"%s\", \"content\":[{\"type\":\"text\",\"text\":\"Step %d: the "
                                 "table orders_%d gets region_%d at path a\\/b, rate 1.50, and week %d "
                                 "is checked against the ledger before the next batch moves.\"}]}",
                                 roles[i % 3], i, i, i * 7, i);
        f->m[i] = (store_msg){f->ids[i], f->json[i], strlen(f->json[i]), NULL};
    }
    fx_start(f);
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx *f = *state;
    if (f->ps) fx_exit(f);
    for (int i = 0; i <= NLONG; i++) free(f->json[i]);
    free(f->json);
    free(f->ids);
    free(f->m);
    free(f);
    return teardown(state);
}

static projstate_env fx_env(fx *f)
{
    projstate_env env = {.st = f->st, .window = WINDOW, .summ = f->summ, .cover = f->cover, .worker = 1};
    return env;
}

/* One request of the first n messages; the tokens it sends. */
static long request(fx *f, size_t n)
{
    projstate_env env = fx_env(f);
    project_item *items = NULL;
    size_t n_items = 0, tokens = 0;
    assert_int_equal(projstate_context(f->ps, &env, f->m, n, 0, &items, &n_items, &tokens, NULL), LC_OK);
    long sent = 0;
    if (!items)
        for (size_t i = 0; i < n; i++) sent += project_tokens(f->m[i].json_len);
    for (size_t i = 0; items && i < n_items; i++)
        sent += project_tokens(items[i].index >= 0 ? f->m[items[i].index].json_len : strlen(items[i].json));
    /* The newest message is always the request's last. */
    assert_true(!items || items[n_items - 1].index == (int64_t)n - 1);
    free(items);
    return sent;
}

static long fit_line(fx *f)
{
    projstate_env env = fx_env(f);
    zones_resolved z;
    assert_int_equal(projstate_zones(&env, &z), LC_OK);
    return zones_fit_tokens(&z);
}

static void wait_caught_up(fx *f)
{
    /* A bound on the loop, not a time limit: the worker stores ten batches. */
    for (int i = 0; i < 60000 && projstate_catchup_left(f->ps) > 0; i++) usleep(1000);
    assert_int_equal(projstate_catchup_left(f->ps), 0);
}

/* Every one of the first n messages is stored once, in their order, byte for byte. */
static void assert_stored_in_order(fx *f, size_t n)
{
    assert_int_equal(store_message_count(f->st), (int64_t)n);
    int64_t last = -1;
    for (size_t i = 0; i < n; i++) {
        store_row r;
        assert_int_equal(store_get_message(f->st, f->ids[i], &r, NULL), LC_OK);
        assert_true(r.ordinal > last);
        last = r.ordinal;
        assert_int_equal(r.raw_len, f->m[i].json_len);
        assert_memory_equal(r.raw_json, f->m[i].json, r.raw_len);
        store_row_free(&r);
    }
}

static void test_long_sessions_first_request_returns_before_its_ingest_within_the_window(void **state)
{
    fx *f = *state;
    store *lock = NULL;
    /* Another writer holds the store: a request that stored its messages itself would
     * wait on it (and store them all before returning). */
    assert_int_equal(store_open(home, "long", "/w", &lock, NULL), LC_OK);
    assert_int_equal(store_qexec(lock, "BEGIN IMMEDIATE"), LC_OK);
    long sent = request(f, NLONG);
    assert_int_equal(store_message_count(f->st), 0);
    assert_true(projstate_catchup_left(f->ps) > 0);
    assert_int_equal(store_qexec(lock, "COMMIT"), LC_OK);
    store_close(lock);
    assert_true(sent <= fit_line(f));
    assert_true(sent > fit_line(f) / 2);
    wait_caught_up(f);
    assert_stored_in_order(f, NLONG);
    /* Caught up, the worker's first pass still running: the next request stores its new
     * message itself, after the others, and is still the newest messages that fit. */
    f->busy = 1;
    assert_true(request(f, NLONG + 1) <= fit_line(f));
    assert_stored_in_order(f, NLONG + 1);
    /* It laid no truncation on this thread over the whole history to get there. */
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summaries"), 0);
}

static void test_exit_during_the_catchup_then_a_new_instance_completes_it_once(void **state)
{
    fx *f = *state;
    store *lock = NULL;
    assert_int_equal(store_open(home, "long", "/w", &lock, NULL), LC_OK);
    assert_int_equal(store_qexec(lock, "BEGIN IMMEDIATE"), LC_OK);
    request(f, NLONG);
    /* The exit comes while the first batch waits for the lock (or before the worker took
     * it): the worker ends after that batch at most. */
    usleep(200 * 1000);
    int ended = worker_stop(f->w, 50);
    assert_int_equal(store_qexec(lock, "COMMIT"), LC_OK);
    store_close(lock);
    if (!ended) assert_int_equal(worker_stop(f->w, 30000), 1);
    f->w = NULL;
    fx_exit(f);
    fx_start(f);
    int64_t left_behind = store_message_count(f->st);
    assert_true(left_behind < NLONG);
    assert_int_equal(left_behind % WORKER_CATCHUP_BATCH, 0);
    /* The new instance's first request brings the whole session again. */
    request(f, NLONG);
    wait_caught_up(f);
    assert_stored_in_order(f, NLONG);
}

/* A session start judges the branch's unstored tail the same way, without a lookup a
 * message: the store holding a prefix of the branch, the tail is lacking until fewer than
 * PROJSTATE_CATCHUP_MIN messages are left. */
static void test_session_start_sees_a_long_unstored_tail_of_the_branch(void **state)
{
    fx *f = *state;
    cJSON *branch = cJSON_CreateArray();
    for (int i = 0; i < 3000; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "type", "message");
        cJSON_AddStringToObject(e, "id", f->ids[i]);
        cJSON_AddItemToArray(branch, e);
    }
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", "custom");
    cJSON_AddStringToObject(c, "id", "c1");
    cJSON_AddItemToArray(branch, c);
    store_ingest_stats st;
    assert_int_equal(ingest_branch_lacks_tail(f->st, branch, PROJSTATE_CATCHUP_MIN), 1);
    assert_int_equal(store_ingest(f->st, f->m, 999, &st, NULL), LC_OK);
    assert_int_equal(ingest_branch_lacks_tail(f->st, branch, PROJSTATE_CATCHUP_MIN), 1);
    assert_int_equal(store_ingest(f->st, f->m, 1001, &st, NULL), LC_OK);
    assert_int_equal(ingest_branch_lacks_tail(f->st, branch, PROJSTATE_CATCHUP_MIN), 0);
    cJSON_Delete(branch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_long_sessions_first_request_returns_before_its_ingest_within_the_window,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_exit_during_the_catchup_then_a_new_instance_completes_it_once,
                                        fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_session_start_sees_a_long_unstored_tail_of_the_branch, fx_setup,
                                        fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
