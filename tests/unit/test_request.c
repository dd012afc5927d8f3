/* test_request.c -- one `context` request end to end (engine/request/request.c): the input
 * goes as it came when nothing applies, LCM's projection is the request when live context
 * leaves it alone, live context composes on that projection with its one-call notice last,
 * every request as sent is noted (a `request` metrics row that says whether it extends the
 * previous one), and a request without a store is measured but writes no row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clm_live.h"
#include "metrics.h"
#include "projstate.h"
#include "request.h"
#include "store.h"
#include "summarize.h"
#include "util.h"

#include "conv_fx.h"
#include "temp_home.h"

#define NMSG 64

/* What the owner's hooks saw. */
typedef struct rec {
    sbuf rows;          /* one "kind {fields}" line a metric row */
    int n_rows;
    int offline;
    long window;        /* what the live context's facts report */
} rec;

static void rec_metric(void *ud, const char *kind, const cJSON *fields)
{
    rec *r = ud;
    char *s = cJSON_PrintUnformatted(fields);
    sb_printf(&r->rows, "%s %s\n", kind, s ? s : "?");
    free(s);
    r->n_rows++;
}

static void rec_offline(void *ud, const char *why)
{
    (void)why;
    ((rec *)ud)->offline++;
}

static void rec_say(void *ud, int how, const char *text)
{
    (void)ud, (void)how, (void)text;
}

static void rec_facts(void *ud, clm_live_facts *f)
{
    f->window = ((rec *)ud)->window;
    f->session_id = "sess";
}

typedef struct fx {
    store *st;
    summ_ctx *summ, *cover;
    projstate *ps;
    clm_live *clm;
    rec r;
    char *json[NMSG];
    char ids[NMSG][16];
    store_msg m[NMSG];
    request_result res;   /* the last request's */
} fx;

static int fx_setup(void **state)
{
    setup(state);
    fx *f = calloc(1, sizeof *f);
    assert_int_equal(store_open(home, "sess", "/w", &f->st, NULL), LC_OK);
    f->summ = conv_fx_chain(0);
    f->cover = conv_fx_chain(1);
    projstate_hooks ph = {.ud = &f->r};
    assert_int_equal(projstate_new(&ph, &f->ps), LC_OK);
    clm_live_hooks ch = {.ud = &f->r, .say = rec_say, .facts = rec_facts};
    assert_int_equal(clm_live_new(&ch, home, "sess", &f->clm, NULL), LC_OK);
    /* No model edits in these tests: nothing is rendered to a mirror. */
    f->clm->render_off = 1;
    f->clm->enabled = 0;
    conv_fx_fill(f->json, f->ids, f->m, NMSG);
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx *f = *state;
    request_result_free(&f->res);
    clm_live_free(f->clm);
    projstate_free(f->ps);
    summ_free(f->summ);
    summ_free(f->cover);
    store_close(f->st);
    for (int i = 0; i < NMSG; i++) free(f->json[i]);
    free(f->r.rows.p);
    free(f);
    return teardown(state);
}

static long fx_tokens(const fx *f, size_t n)
{
    return conv_fx_tokens(f->m, n);
}

/* The session as the plugin lends it for one request. */
static request_session fx_session(fx *f, store *st, long window)
{
    f->r.window = window;
    request_session s = {.proj = f->ps, .clm = f->clm,
                         .env = {.st = st, .window = window, .summ = f->summ, .cover = f->cover},
                         .hooks = {.ud = &f->r, .offline = rec_offline, .metric = rec_metric}};
    return s;
}

/* One request of the first n messages; it must succeed. */
static void request(fx *f, request_session *s, size_t n)
{
    request_result_free(&f->res);
    assert_int_equal(request_context(s, f->m, n, "You are a careful agent.", &f->res, NULL), LC_OK);
    assert_int_equal(f->res.raw_tokens, (size_t)fx_tokens(f, n));
}

/* A window the first n messages fill to 78%: over the swap line, under the fit line. */
static long window_for(const fx *f, size_t n)
{
    return (long)(fx_tokens(f, n) / 0.78);
}

/* The request after a pass between turns: LCM swaps the aged part for its summaries. */
static void swap_ready(fx *f, request_session *s, size_t n)
{
    request(f, s, n);
    projstate_between_turns(f->ps, &s->env, 0);
}

static void test_request_below_every_line_goes_as_it_came_and_is_noted(void **state)
{
    fx *f = *state;
    request_session s = fx_session(f, f->st, 1000000);
    request(f, &s, 8);
    assert_int_equal(f->res.changed, 0);
    assert_null(f->res.items);
    request(f, &s, 9);
    assert_int_equal(f->res.changed, 0);
    /* One row a request; the second extends the first byte for byte. */
    assert_int_equal(f->r.n_rows, 2);
    const char *second = strstr(f->r.rows.p, "\n") + 1;
    assert_non_null(strstr(second, METRIC_REQUEST " {"));
    assert_non_null(strstr(second, "\"extends\":true"));
    assert_non_null(strstr(second, "\"projected\":false"));
    assert_int_equal(f->r.offline, 0);
}

static void test_lcm_projection_is_the_request_when_live_context_leaves_it_alone(void **state)
{
    fx *f = *state;
    const size_t n = 48;
    request_session s = fx_session(f, f->st, window_for(f, n));
    swap_ready(f, &s, n);
    request(f, &s, n + 1);
    assert_int_equal(f->res.changed, 1);
    assert_true(f->res.n > 1 && f->res.n < n);
    assert_true(f->res.items[0].raw < 0); /* the pointer block first, its own copy */
    assert_non_null(strstr(f->res.items[0].json, "lcm:summary"));
    assert_int_equal(f->res.items[f->res.n - 1].raw, (long)n); /* the raw tail after it */
    assert_null(f->res.items[f->res.n - 1].json);
    assert_non_null(strstr(f->r.rows.p, "\"projected\":true"));
}

static void test_live_context_composes_on_the_projection_with_its_notice_last(void **state)
{
    fx *f = *state;
    const size_t n = 48;
    request_session s = fx_session(f, f->st, window_for(f, n));
    swap_ready(f, &s, n);
    f->clm->enabled = 1;
    clm_live_notice(f->clm, "[CLM] a note for the next request only");
    request(f, &s, n + 1);
    assert_int_equal(f->res.changed, 1);
    size_t last = f->res.n - 1;
    /* LCM's projection, composed: the pointer block, the raw tail ... */
    assert_true(f->res.items[0].raw < 0);
    assert_non_null(strstr(f->res.items[0].json, "lcm:summary"));
    assert_int_equal(f->res.items[last - 1].raw, (long)n);
    /* ... and the one-call notice after the last message. */
    assert_true(f->res.items[last].raw < 0);
    assert_non_null(strstr(f->res.items[last].json, CLM_NOTICE_TYPE));
    assert_non_null(strstr(f->res.items[last].json, "a note for the next request only"));
    /* One call: the next request goes without it. */
    request(f, &s, n + 2);
    for (size_t i = 0; i < f->res.n; i++)
        assert_true(!f->res.items[i].json || !strstr(f->res.items[i].json, "a note for the next request"));
}

static void test_request_without_a_store_is_measured_and_writes_no_row(void **state)
{
    fx *f = *state;
    request_session s = fx_session(f, NULL, 1000000);
    request(f, &s, 12);
    assert_int_equal(f->res.changed, 0);
    request(f, &s, 13);
    assert_int_equal(f->r.n_rows, 0);
    assert_int_equal(f->r.offline, 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_request_below_every_line_goes_as_it_came_and_is_noted),
        T(test_lcm_projection_is_the_request_when_live_context_leaves_it_alone),
        T(test_live_context_composes_on_the_projection_with_its_notice_last),
        T(test_request_without_a_store_is_measured_and_writes_no_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
