/* test_project.c -- the projection (engine/lcm/project.c): rendering within budget (tiers,
 * stubs, no node dropped), requests between cuts extending the previous one byte for
 * byte, the swap and re-cut decisions (monotonic, smaller), a lost anchor, the live-context
 * prefix left alone, and cuts and the pin in the store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dag.h"
#include "project.h"
#include "store.h"
#include "summarize.h"
#include "util.h"

#include "expect_text.h"

/* ---- rendering ---- */

static dag_node node(int64_t id, int depth, const char *text, const char *rich, const char *a,
                     const char *b)
{
    dag_node n = {.id = id, .depth = depth, .leaf = depth == 0};
    n.text = lc_strdup(text);
    n.rich = rich ? lc_strdup(rich) : NULL;
    n.first_entry = lc_strdup(a);
    n.last_entry = lc_strdup(b);
    return n;
}

static char *repeat(const char *unit, int times)
{
    sbuf b = {0};
    for (int i = 0; i < times; i++) sb_puts(&b, unit);
    return sb_detach(&b);
}

static char *message_text(const char *json)
{
    cJSON *m = cJSON_Parse(json);
    assert_non_null(m);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "role")), "user");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "content"), 0);
    char *t = lc_strdup(cJSON_GetStringValue(cJSON_GetObjectItem(c, "text")));
    cJSON_Delete(m);
    return t;
}

static void test_render_serves_rich_tiers_when_they_fit(void **state)
{
    (void)state;
    dag_node v[2] = {node(1, 0, "short one", "thorough one", "e1", "e5"),
                     node(2, 1, "short two", NULL, "e6", "e9")};
    char *msg = NULL;
    int stubbed = -1;
    assert_int_equal(project_render(v, 2, 100000, &msg, &stubbed, NULL), LC_OK);
    char *t = message_text(msg);
    expect_has(t, "[lcm:summary #1 depth 0 span e1..e5]\nthorough one",
               "[lcm:summary #2 depth 1 span e6..e9]\nshort two");
    assert_int_equal(stubbed, 0);
    free(t);
    free(msg);
    dag_nodes_free((dag_node *)memcpy(malloc(sizeof v), v, sizeof v), 2);
}

static void test_render_under_pressure_drops_oldest_to_primary_then_stub_never_drops(void **state)
{
    (void)state;
    char *big = repeat("alpha beta gamma delta. ", 100);   /* ~600 tokens */
    char *rich = repeat("rich detail of the node. ", 200); /* ~1250 tokens */
    dag_node v[3] = {node(7, 0, big, rich, "a1", "a9"), node(8, 0, big, rich, "b1", "b9"),
                     node(9, 0, big, NULL, "c1", "c9")};
    char *msg = NULL, *t = NULL;
    int stubbed = 0;
    /* room for all primaries, not for the rich tiers: both rich nodes drop to primary */
    assert_int_equal(project_render(v, 3, 2000, &msg, &stubbed, NULL), LC_OK);
    t = message_text(msg);
    assert_null(strstr(t, "rich detail"));
    assert_int_equal(stubbed, 0);
    free(t);
    free(msg);
    /* room for one primary: the two oldest are stubbed, the newest keeps its text */
    assert_int_equal(project_render(v, 3, 900, &msg, &stubbed, NULL), LC_OK);
    t = message_text(msg);
    assert_int_equal(stubbed, 2);
    expect_has(t, "[lcm:summary #7 depth 0 span a1..a9]", "[lcm:summary #8 depth 0 span b1..b9]",
               "[lcm:summary #9 depth 0 span c1..c9]", "lcm_describe #7", "lcm_describe #8");
    assert_null(strstr(t, "lcm_describe #9"));
    /* the stub keeps a 200-character slice */
    const char *s7 = strstr(t, "span a1..a9]\n") + strlen("span a1..a9]\n");
    assert_memory_equal(s7, big, 200);
    assert_memory_equal(s7 + 200, " [...]", 6);
    free(t);
    free(msg);
    /* a budget nothing fits: every node still present as a stub */
    assert_int_equal(project_render(v, 3, 1, &msg, &stubbed, NULL), LC_OK);
    assert_int_equal(stubbed, 3);
    free(msg);
    free(big);
    free(rich);
    dag_nodes_free((dag_node *)memcpy(malloc(sizeof v), v, sizeof v), 3);
}

/* ---- a simulated session of requests ---- */

#define SIM_MAX 400

typedef struct sim {
    char *json[SIM_MAX];
    char id[SIM_MAX][16];
    project_msg msgs[SIM_MAX];
    size_t n;
} sim;

static void sim_add(sim *s, size_t bytes)
{
    size_t i = s->n++;
    snprintf(s->id[i], sizeof s->id[i], "m%03zu", i);
    char *body = malloc(bytes + 1);
    for (size_t k = 0; k < bytes; k++) body[k] = (char)('a' + (i + k) % 26);
    body[bytes] = '\0';
    s->json[i] = lc_asprintf("{\"role\":\"%s\",\"content\":\"%s\"}", i % 2 ? "assistant" : "user", body);
    free(body);
    s->msgs[i] = (project_msg){s->id[i], strlen(s->json[i])};
}

static void sim_free(sim *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->json[i]);
}

static project_cut cut_at(sim *s, int64_t id, size_t anchor, size_t pointer_bytes)
{
    project_cut c = {.id = id, .anchor_ordinal = (int64_t)anchor};
    c.anchor_entry = lc_strdup(s->id[anchor]);
    char *body = repeat("p", (int)pointer_bytes);
    c.message = lc_asprintf("{\"role\":\"user\",\"content\":\"cut %lld %s\"}", (long long)id, body);
    free(body);
    c.message_len = strlen(c.message);
    c.tokens = project_tokens(c.message_len);
    return c;
}

/* The request's bytes: its messages joined. */
static char *request_bytes(sim *s, size_t a, const project_plan *p)
{
    sbuf b = {0};
    project_item *items = NULL;
    size_t n = 0;
    assert_int_equal(project_items(s->n, a, p, &items, &n, NULL), LC_OK);
    if (!items) {
        for (size_t i = 0; i < s->n; i++) sb_printf(&b, "%s\n", s->json[i]);
    } else {
        for (size_t i = 0; i < n; i++)
            sb_printf(&b, "%s\n", items[i].index >= 0 ? s->json[items[i].index] : items[i].json);
    }
    free(items);
    return sb_detach(&b);
}

static zones_resolved zones_for(long window, long keep)
{
    zones_cfg c = zones_cfg_unset();
    zones_resolved z;
    assert_int_equal(zones_resolve(&c, keep, window, &z, NULL), LC_OK);
    return z;
}

/* The fixture of a case on one session's projection decisions against a 20,000-token
 * window keeping 4,000 (swap 14,000, re-cut 17,000): the simulated messages, the zones,
 * the hint carried from one decision to the next, the last plan and the cuts made. */
typedef struct series {
    sim s;
    zones_resolved z;
    size_t hint;
    project_plan p;
    project_cut cut[4];
    size_t n_cuts;
} series;

static int series_setup(void **state)
{
    series *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->z = zones_for(20000, 4000);
    *state = t;
    return 0;
}

static int series_teardown(void **state)
{
    series *t = *state;
    for (size_t i = 0; i < t->n_cuts; i++) project_cut_free(&t->cut[i]);
    sim_free(&t->s);
    free(t);
    return 0;
}

#define SERIES_TEST(fn) cmocka_unit_test_setup_teardown(fn, series_setup, series_teardown)

/* A cut of the series' messages (see cut_at), freed with the series. */
static project_cut *series_cut(series *t, int64_t id, size_t anchor, size_t pointer_bytes)
{
    assert_true(t->n_cuts < sizeof t->cut / sizeof t->cut[0]);
    t->cut[t->n_cuts] = cut_at(&t->s, id, anchor, pointer_bytes);
    return &t->cut[t->n_cuts++];
}

/* Decide the next request: the plan in t->p. */
static void decide(series *t, size_t clm_anchor, const project_cut *pinned, const project_cut *candidate)
{
    project_decide(t->s.msgs, t->s.n, clm_anchor, pinned, candidate, &t->z, &t->hint, &t->p);
}

static void test_requests_between_cuts_extend_the_previous_one_byte_for_byte(void **state)
{
    (void)state;
    sim s = {0};
    zones_resolved z = zones_for(20000, 4000); /* swap 14,000, re-cut 17,000 */
    project_cut cuts[SIM_MAX];
    size_t n_cuts = 0, hint = 0;
    const project_cut *pinned = NULL;
    char *prev = NULL;
    int swaps = 0, recuts = 0, extended = 0;
    int64_t last_anchor = -1;
    for (int req = 0; req < 300; req++) {
        sim_add(&s, 1200 + (size_t)(req % 7) * 100); /* ~300-450 tokens a message */
        const project_cut *cand = n_cuts ? &cuts[n_cuts - 1] : NULL;
        project_plan p;
        project_decide(s.msgs, s.n, 0, pinned, cand, &z, &hint, &p);
        assert_true(p.occupancy < z.window);
        char *bytes = request_bytes(&s, 0, &p);
        if (p.action == PROJECT_KEEP) {
            /* no shape change: the previous request is a byte-for-byte prefix */
            if (prev) {
                assert_memory_equal(bytes, prev, strlen(prev));
                extended++;
            }
        } else {
            assert_true(p.action == PROJECT_SWAP || p.action == PROJECT_RECUT);
            assert_true(p.use->anchor_ordinal > last_anchor);
            last_anchor = p.use->anchor_ordinal;
            if (p.action == PROJECT_SWAP) {
                assert_null(pinned);
                assert_true(p.raw_tokens >= z.swap_tokens);
                swaps++;
            } else {
                assert_true(p.zone == ZONES_RECUT);
                recuts++;
            }
            pinned = p.use;
        }
        free(prev);
        prev = bytes;
        /* between turns: a cut over everything but a ~4,000-token fresh tail */
        if (s.n > 12 && n_cuts < SIM_MAX && (!n_cuts || cuts[n_cuts - 1].anchor_ordinal < (int64_t)s.n - 12)) {
            cuts[n_cuts] = cut_at(&s, (int64_t)n_cuts + 1, s.n - 12, 2000);
            n_cuts++;
        }
    }
    assert_int_equal(swaps, 1);
    assert_true(recuts >= 3);
    assert_true(extended > 250);
    free(prev);
    for (size_t i = 0; i < n_cuts; i++) project_cut_free(&cuts[i]);
    sim_free(&s);
}

static void test_swap_waits_for_the_swap_line(void **state)
{
    series *t = *state;
    for (int i = 0; i < 20; i++) sim_add(&t->s, 2000); /* ~10,000 tokens: below swap */
    project_cut *c = series_cut(t, 1, 10, 400);
    decide(t, 0, NULL, c);
    assert_int_equal(t->p.action, PROJECT_KEEP);
    assert_null(t->p.use);
    assert_int_equal(t->p.occupancy, t->p.raw_tokens);
    for (int i = 0; i < 10; i++) sim_add(&t->s, 2000); /* ~15,000: past swap */
    decide(t, 0, NULL, c);
    assert_int_equal(t->p.action, PROJECT_SWAP);
    assert_ptr_equal(t->p.use, c);
    assert_int_equal(t->p.anchor_pos, 10);
    assert_true(t->p.occupancy < t->p.raw_tokens);
    project_item *items = NULL;
    size_t n = 0;
    assert_int_equal(project_items(t->s.n, 0, &t->p, &items, &n, NULL), LC_OK);
    assert_int_equal(n, 1 + 19);
    assert_int_equal(items[0].index, -1);
    assert_ptr_equal(items[0].json, c->message);
    assert_int_equal(items[1].index, 11);
    free(items);
}

static void test_pin_is_kept_between_swap_and_recut_despite_a_newer_cut(void **state)
{
    series *t = *state;
    for (int i = 0; i < 30; i++) sim_add(&t->s, 2000);
    project_cut *old = series_cut(t, 1, 5, 400), *newer = series_cut(t, 2, 20, 400);
    /* pinned at 5: ~24 raw messages * 500 = 12,000 + pointer: below re-cut */
    decide(t, 0, old, newer);
    assert_true(t->p.occupancy >= 0);
    assert_int_equal(t->p.action, PROJECT_KEEP);
    assert_ptr_equal(t->p.use, old);
    for (int i = 0; i < 12; i++) sim_add(&t->s, 2000); /* past re-cut */
    decide(t, 0, old, newer);
    assert_int_equal(t->p.zone, ZONES_RECUT);
    assert_int_equal(t->p.action, PROJECT_RECUT);
    assert_ptr_equal(t->p.use, newer);
}

static void test_recut_never_moves_back_or_grows(void **state)
{
    series *t = *state;
    for (int i = 0; i < 45; i++) sim_add(&t->s, 2000);
    project_cut *pinned = series_cut(t, 3, 8, 400);
    project_cut *earlier = series_cut(t, 4, 6, 400);     /* newer id, older anchor */
    project_cut *bigger = series_cut(t, 5, 9, 60000);    /* covers more, pointer larger than saved */
    decide(t, 0, pinned, earlier);
    assert_int_equal(t->p.zone, ZONES_RECUT);
    assert_int_equal(t->p.action, PROJECT_KEEP);
    assert_ptr_equal(t->p.use, pinned);
    decide(t, 0, pinned, bigger);
    assert_int_equal(t->p.action, PROJECT_KEEP);
}

static void test_lost_anchor_drops_the_pin(void **state)
{
    series *t = *state;
    for (int i = 0; i < 10; i++) sim_add(&t->s, 400);
    project_cut *c = series_cut(t, 1, 3, 100);
    free(c->anchor_entry);
    c->anchor_entry = lc_strdup("gone-by-compaction");
    decide(t, 0, c, NULL);
    assert_int_equal(t->p.action, PROJECT_DROP);
    assert_null(t->p.use);
    assert_int_equal(t->p.occupancy, t->p.raw_tokens);
}

static void test_live_context_prefix_is_never_touched(void **state)
{
    series *t = *state;
    for (int i = 0; i < 40; i++) sim_add(&t->s, 2000);
    project_cut *inside = series_cut(t, 1, 4, 400), *past = series_cut(t, 2, 20, 400);
    /* the anchor sits inside the revision's prefix: not applicable */
    decide(t, 10, NULL, inside);
    assert_null(t->p.use);
    decide(t, 10, NULL, past);
    assert_int_equal(t->p.action, PROJECT_SWAP);
    project_item *items = NULL;
    size_t n = 0;
    assert_int_equal(project_items(t->s.n, 10, &t->p, &items, &n, NULL), LC_OK);
    for (int i = 0; i < 10; i++) assert_int_equal(items[i].index, i);
    assert_int_equal(items[10].index, -1);
    assert_int_equal(items[11].index, 21);
    assert_int_equal(n, 10 + 1 + 19);
    free(items);
}

/* ---- cuts and the pin in the store ---- */

static void test_prepared_cut_and_pin_round_trip_through_the_store(void **state)
{
    (void)state;
    char home[64];
    snprintf(home, sizeof home, "/tmp/lc-proj-XXXXXX");
    assert_non_null(mkdtemp(home));
    store *st = NULL;
    assert_int_equal(store_open(home, "s1", "/w", &st, NULL), LC_OK);
    int64_t id = 0;
    assert_int_equal(project_prepare_cut(st, 1000, &id, NULL), LC_NOTFOUND);
    for (int i = 0; i < 30; i++) {
        char eid[16], *text = repeat("Decided to keep file src/x.c as is. ", 40);
        snprintf(eid, sizeof eid, "e%02d", i);
        char *json = lc_asprintf("{\"role\":\"%s\",\"content\":\"%s\"}", i % 2 ? "assistant" : "user", text);
        if (i % 2) {
            free(json);
            json = lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}", text);
        }
        store_msg m = {eid, json, strlen(json), NULL};
        assert_int_equal(store_ingest(st, &m, 1, NULL, NULL), LC_OK);
        free(json);
        free(text);
    }
    static const char *const chain[] = {"extractive"};
    summ_config cfg = {.chain = chain, .n_chain = 1};
    summ_ctx *sc = NULL;
    assert_int_equal(summ_create(&cfg, &sc, NULL), LC_OK);
    dag_opts o = {.keep_recent_tokens = 1000, .leaf_chunk_tokens = 2000, .summary_tokens = 150, .flush = 1};
    dag_stats ds;
    assert_int_equal(dag_pass(st, sc, &o, &ds, NULL), LC_OK);
    assert_int_equal(project_prepare_cut(st, 4000, &id, NULL), LC_OK);
    assert_true(id > 0);
    int64_t again = 0;
    assert_int_equal(project_prepare_cut(st, 4000, &again, NULL), LC_OK);
    assert_int_equal(again, id); /* unchanged frontier: no new cut */
    project_cut c;
    assert_int_equal(project_latest_cut(st, &c, NULL), LC_OK);
    assert_int_equal(c.id, id);
    assert_int_equal(c.anchor_ordinal, ds.boundary_ordinal - 1);
    assert_int_equal(c.n_nodes, (size_t)ds.leaves);
    char *t = message_text(c.message);
    assert_non_null(strstr(t, "[lcm:summary #1 depth 0 span e00.."));
    free(t);
    project_cut_free(&c);
    project_pin pin;
    assert_int_equal(project_pin_get(st, &pin, NULL), LC_NOTFOUND);
    char *d = project_pin_describe(&pin);
    assert_string_equal(d, "none");
    free(d);
    project_pin set = {.cut_id = id, .applied_tokens = 71000, .window = 100000};
    assert_int_equal(project_pin_set(st, &set, NULL), LC_OK);
    assert_int_equal(project_pin_get(st, &pin, NULL), LC_OK);
    d = project_pin_describe(&pin);
    char want[64];
    snprintf(want, sizeof want, "pinned at cut %lld (applied at 71%%)", (long long)id);
    assert_string_equal(d, want);
    free(d);
    assert_int_equal(project_pin_clear(st, NULL), LC_OK);
    assert_int_equal(project_pin_get(st, &pin, NULL), LC_NOTFOUND);
    summ_free(sc);
    store_close(st);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_serves_rich_tiers_when_they_fit),
        cmocka_unit_test(test_render_under_pressure_drops_oldest_to_primary_then_stub_never_drops),
        cmocka_unit_test(test_requests_between_cuts_extend_the_previous_one_byte_for_byte),
        SERIES_TEST(test_swap_waits_for_the_swap_line),
        SERIES_TEST(test_pin_is_kept_between_swap_and_recut_despite_a_newer_cut),
        SERIES_TEST(test_recut_never_moves_back_or_grows),
        SERIES_TEST(test_lost_anchor_drops_the_pin),
        SERIES_TEST(test_live_context_prefix_is_never_touched),
        cmocka_unit_test(test_prepared_cut_and_pin_round_trip_through_the_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
