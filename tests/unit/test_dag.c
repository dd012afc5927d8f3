/* test_dag.c -- the summary DAG (engine/lcm/dag.c): coverage of the aged messages, nothing
 * summarized twice, condensation shape and depth, headers, the stalled record, tool
 * groups kept in one leaf, a pass killed mid-way resuming, caps, and heal. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dag.h"
#include "store.h"
#include "store_sqlite.h"
#include "store_q.h"
#include "summarize.h"
#include "util.h"

#include "dag_fx.h"


/* A sentence-rich text of about `tokens` tokens with an identifier the extractive
 * summarizer keeps. */
static char *filler(int i, int tokens)
{
    sbuf b = {0};
    sb_printf(&b, "Message %d decided that build_%d uses path src/mod%d.c with N%02d=%d. ", i, i, i,
              i % 100, 1000 + i);
    while ((long)b.len < tokens * 4)
        sb_printf(&b, "The worker %d read the file and reported status ok for item %zu. ", i, b.len);
    return sb_detach(&b);
}

/* Give message `m` a content array holding one text block; the array, for more blocks. */
static cJSON *text_content(cJSON *m, const char *text)
{
    cJSON *c = cJSON_AddArrayToObject(m, "content");
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "type", "text");
    cJSON_AddStringToObject(t, "text", text);
    cJSON_AddItemToArray(c, t);
    return c;
}

/* Ingest `n` messages: user / assistant-with-call / toolResult triples when tools != 0,
 * else alternating user / assistant, each about `tokens` tokens. */
static void ingest(store *st, int first, int n, int tokens, int tools)
{
    for (int i = first; i < first + n; i++) {
        char id[32], *text = filler(i, tokens), *json = NULL;
        snprintf(id, sizeof id, "e%04d", i);
        cJSON *m = cJSON_CreateObject();
        int kind = tools ? i % 3 : i % 2;
        if (kind == 0) {
            cJSON_AddStringToObject(m, "role", "user");
            cJSON_AddStringToObject(m, "content", text);
        } else if (kind == 1) {
            cJSON_AddStringToObject(m, "role", "assistant");
            cJSON *c = text_content(m, text);
            if (tools) {
                cJSON *call = cJSON_CreateObject();
                char cid[32];
                snprintf(cid, sizeof cid, "call%d", i);
                cJSON_AddStringToObject(call, "type", "toolCall");
                cJSON_AddStringToObject(call, "id", cid);
                cJSON_AddStringToObject(call, "name", "bash");
                cJSON_AddItemToObject(call, "arguments", cJSON_CreateObject());
                cJSON_AddItemToArray(c, call);
            }
        } else {
            char cid[32];
            snprintf(cid, sizeof cid, "call%d", i - 1);
            cJSON_AddStringToObject(m, "role", "toolResult");
            cJSON_AddStringToObject(m, "toolCallId", cid);
            cJSON_AddStringToObject(m, "toolName", "bash");
            text_content(m, text);
        }
        json = cJSON_PrintUnformatted(m);
        store_msg sm = {id, json, strlen(json), NULL};
        assert_int_equal(store_ingest(st, &sm, 1, NULL, NULL), LC_OK);
        free(json);
        free(text);
        cJSON_Delete(m);
    }
}

static dag_opts opts(void)
{
    dag_opts o = {.keep_recent_tokens = 3000, .leaf_chunk_tokens = 4000, .summary_tokens = 200,
                  .flush = 1};
    return o;
}

/* `n` messages of about 500 tokens, then one pass with the suite's options. */
static void ingest_and_pass(fx *f, int n, dag_stats *s)
{
    ingest(f->st, 0, n, 500, 0);
    dag_opts o = opts();
    assert_int_equal(dag_pass(f->st, f->sc, &o, s, NULL), LC_OK);
}

static void test_pass_covers_every_message_before_the_fresh_tail_exactly_once(void **state)
{
    fx *f = *state;
    dag_stats s;
    ingest_and_pass(f, 60, &s);
    assert_true(s.leaves >= 5);
    int64_t left = -1;
    assert_int_equal(dag_uncovered(f->st, s.boundary_ordinal, &left, NULL), LC_OK);
    assert_int_equal(left, 0);
    /* the fresh tail (~3,000 tokens = 6 messages) is untouched */
    int64_t all = 0;
    assert_int_equal(dag_uncovered(f->st, 0, &all, NULL), LC_OK);
    assert_true(all >= 6 && all <= 8);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM (SELECT entry_id FROM summary_messages"
                               " GROUP BY entry_id HAVING count(*) > 1) t"),
                     0);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summary_messages"), 60 - all);
}

static void test_second_pass_summarizes_nothing_twice(void **state)
{
    fx *f = *state;
    dag_stats s;
    ingest_and_pass(f, 40, &s);
    dag_opts o = opts();
    int64_t rows = store_q1(f->st, "SELECT count(*) FROM summary_messages");
    int64_t nodes = store_q1(f->st, "SELECT count(*) FROM summaries");
    assert_int_equal(dag_pass(f->st, f->sc, &o, &s, NULL), LC_OK);
    assert_int_equal(s.leaves, 0);
    assert_int_equal(s.condensed, 0);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summary_messages"), rows);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summaries"), nodes);
    /* new messages: only they are summarized */
    ingest(f->st, 40, 20, 500, 0);
    assert_int_equal(dag_pass(f->st, f->sc, &o, &s, NULL), LC_OK);
    assert_true(s.leaves > 0);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM (SELECT entry_id FROM summary_messages"
                               " GROUP BY entry_id HAVING count(*) > 1) t"),
                     0);
}

static void test_without_flush_a_partial_chunk_waits(void **state)
{
    fx *f = *state;
    ingest(f->st, 0, 14, 500, 0); /* 7,000 tokens: one 4,000 chunk + a partial before the tail */
    dag_opts o = opts();
    o.flush = 0;
    o.keep_recent_tokens = 1000;
    dag_stats s;
    assert_int_equal(dag_pass(f->st, f->sc, &o, &s, NULL), LC_OK);
    assert_int_equal(s.leaves, 1);
    int64_t left = 0;
    assert_int_equal(dag_uncovered(f->st, s.boundary_ordinal, &left, NULL), LC_OK);
    assert_true(left > 0);
}

static void test_condensation_takes_oldest_shallowest_run_of_at_most_eight(void **state)
{
    fx *f = *state;
    ingest(f->st, 0, 120, 500, 0);
    dag_opts o = opts();
    o.leaf_chunk_tokens = 1000; /* ~28 leaves */
    o.summary_tokens = 120;
    o.block_budget = 1500;
    dag_stats s;
    assert_int_equal(dag_pass(f->st, f->sc, &o, &s, NULL), LC_OK);
    assert_true(s.leaves >= 20);
    assert_true(s.condensed >= 2);
    assert_false(s.stalled);
    assert_true(s.block_tokens <= 1500);
    /* shape: <= 8 children, all of one depth, parent one deeper */
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM (SELECT parent_id FROM summary_children"
                               " GROUP BY parent_id HAVING count(*) > 8) t"),
                     0);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summary_children c JOIN summaries p ON p.id = c.parent_id"
                               " JOIN summaries k ON k.id = c.child_id WHERE p.depth != k.depth + 1"),
                     0);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summaries WHERE depth > 8"), 0);
    /* the oldest leaves were condensed first: the first leaf has a parent */
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summary_children WHERE child_id ="
                               " (SELECT min(id) FROM summaries WHERE kind = 'leaf')"),
                     1);
    /* every frontier node still expands to its messages: spans cover what leaves cover */
    assert_int_equal(store_q1(f->st, "SELECT sum(sp.entry_count) FROM summary_spans sp WHERE NOT EXISTS"
                               " (SELECT 1 FROM summary_children c WHERE c.child_id = sp.summary_id)"),
                     store_q1(f->st, "SELECT count(*) FROM summary_messages"));
}

static void test_headers_name_node_depth_and_span(void **state)
{
    fx *f = *state;
    dag_stats s;
    ingest_and_pass(f, 30, &s);
    dag_node *v = NULL;
    size_t n = 0;
    assert_int_equal(dag_frontier(f->st, &v, &n, NULL), LC_OK);
    assert_true(n >= 2);
    char *h = dag_header(&v[0]);
    char want[128];
    snprintf(want, sizeof want, "[lcm:summary #%lld depth 0 span e0000..%s]", (long long)v[0].id,
             v[0].last_entry);
    assert_string_equal(h, want);
    assert_int_equal(v[0].first_ordinal, 0);
    for (size_t i = 1; i < n; i++) assert_int_equal(v[i].first_ordinal, v[i - 1].last_ordinal + 1);
    free(h);
    dag_nodes_free(v, n);
}

static void test_unmeetable_budget_records_condensation_stalled(void **state)
{
    fx *f = *state;
    ingest(f->st, 0, 40, 500, 0);
    dag_opts o = opts();
    o.block_budget = 5; /* below even one header */
    dag_stats s;
    assert_int_equal(dag_pass(f->st, f->sc, &o, &s, NULL), LC_OK);
    assert_true(s.stalled);
    assert_int_equal(dag_event_count(f->st, "condensation-stalled"), 1);
    /* condensation went as far as it could: a single frontier node remains */
    dag_node *v = NULL;
    size_t n = 0;
    assert_int_equal(dag_frontier(f->st, &v, &n, NULL), LC_OK);
    assert_int_equal(n, 1);
    dag_nodes_free(v, n);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM runs WHERE status = 'condensation-stalled'"), 1);
}

static void test_leaf_never_ends_before_a_tool_result(void **state)
{
    fx *f = *state;
    ingest(f->st, 0, 90, 400, 1);
    dag_opts o = opts();
    o.leaf_chunk_tokens = 900; /* full chunks land mid tool group */
    dag_stats s;
    assert_int_equal(dag_pass(f->st, f->sc, &o, &s, NULL), LC_OK);
    assert_true(s.leaves >= 10);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summary_spans sp JOIN summaries s ON s.id = sp.summary_id"
                               " JOIN messages nx ON nx.ordinal = sp.last_ordinal + 1"
                               " WHERE s.kind = 'leaf' AND nx.role = 'toolResult'"),
                     0);
    /* nor does the fresh tail start at one */
    int64_t b = 0;
    assert_int_equal(dag_fresh_boundary(f->st, 3000, &b, NULL), LC_OK);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM messages WHERE ordinal = %lld AND role = 'toolResult'",
             (long long)b);
    assert_int_equal(store_q1(f->st, sql), 0);
}

static int killer_calls;
static int killer_auto(void *ud, const char *system_prompt, const char *prompt, long max_tokens,
                       summ_completion *out, char **err)
{
    (void)ud, (void)system_prompt, (void)max_tokens, (void)err;
    if (++killer_calls == 3) raise(SIGKILL);
    out->text = summ_extractive(prompt, 100, SUMM_DETAILS);
    out->stop_reason = lc_strdup("stop");
    return LC_OK;
}

static void test_pass_killed_midway_leaves_consistent_store_that_resumes(void **state)
{
    fx *f = *state;
    ingest(f->st, 0, 60, 500, 0);
    store_close(f->st);
    f->st = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        static const char *const chain[] = {"auto"};
        summ_config cfg = {.chain = chain, .n_chain = 1, .auto_fn = killer_auto};
        summ_ctx *sc = NULL;
        store *st = NULL;
        if (store_open(f->home, "sess", "/w", &st, NULL) != LC_OK || summ_create(&cfg, &sc, NULL) != LC_OK)
            _exit(3);
        dag_opts o = opts();
        dag_pass(st, sc, &o, NULL, NULL);
        _exit(0); /* not reached: the third model call kills the process */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(store_open(f->home, "sess", "/w", &f->st, NULL), LC_OK);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summaries"), 2);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summaries s WHERE NOT EXISTS"
                               " (SELECT 1 FROM summary_spans sp WHERE sp.summary_id = s.id)"),
                     0);
    /* The killed writer's run is reaped when the store is next opened for writing. */
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM runs WHERE finished IS NULL"), 0);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM runs WHERE status = 'reaped'"), 1);
    int64_t covered = store_q1(f->st, "SELECT count(*) FROM summary_messages");
    assert_true(covered > 0);
    dag_opts o = opts();
    dag_stats s;
    assert_int_equal(dag_pass(f->st, f->sc, &o, &s, NULL), LC_OK);
    int64_t left = -1;
    assert_int_equal(dag_uncovered(f->st, s.boundary_ordinal, &left, NULL), LC_OK);
    assert_int_equal(left, 0);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM (SELECT entry_id FROM summary_messages"
                               " GROUP BY entry_id HAVING count(*) > 1) t"),
                     0);
    /* The file's own integrity: a SQLite store's (a server's pages are not ours to check). */
    if (store_q_pg()) return;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(store_db(f->st), "PRAGMA integrity_check", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "ok");
    sqlite3_finalize(q);
}

static void test_source_cap_stops_a_pass_and_the_next_continues(void **state)
{
    fx *f = *state;
    ingest(f->st, 0, 80, 500, 0);
    dag_opts o = opts();
    o.max_source_tokens = 8000;
    dag_stats s;
    assert_int_equal(dag_pass(f->st, f->sc, &o, &s, NULL), LC_OK);
    assert_int_equal(s.leaves, 2);
    assert_true(s.capped);
    int64_t before = 0, after = 0;
    assert_int_equal(dag_uncovered(f->st, s.boundary_ordinal, &before, NULL), LC_OK);
    assert_int_equal(dag_pass(f->st, f->sc, &o, &s, NULL), LC_OK);
    assert_int_equal(dag_uncovered(f->st, s.boundary_ordinal, &after, NULL), LC_OK);
    assert_true(after < before);
    /* The pass says how many messages its leaves covered (lcm compact's progress). */
    assert_int_equal(s.messages, before - after);
}

static int echo_auto(void *ud, const char *system_prompt, const char *prompt, long max_tokens,
                     summ_completion *out, char **err)
{
    (void)ud, (void)system_prompt, (void)prompt, (void)max_tokens, (void)err;
    out->text = lc_strdup("never used");
    out->stop_reason = lc_strdup("stop");
    return LC_OK;
}

/* One pass whose every node is mechanical: a per-call cap below any request. */
static void mechanical_pass(store *st, const dag_opts *o, dag_stats *s)
{
    static const char *const chain[] = {"auto"};
    summ_config cfg = {.chain = chain, .n_chain = 1, .auto_fn = echo_auto, .tokens_per_call = 1};
    summ_ctx *capped = NULL;
    assert_int_equal(summ_create(&cfg, &capped, NULL), LC_OK);
    assert_int_equal(dag_pass(st, capped, o, s, NULL), LC_OK);
    summ_free(capped);
}

static void test_heal_dry_run_lists_mechanical_nodes_and_apply_replaces_them(void **state)
{
    fx *f = *state;
    ingest(f->st, 0, 40, 500, 0);
    dag_opts o = opts();
    dag_stats s;
    mechanical_pass(f->st, &o, &s);
    int64_t mech = store_q1(f->st, "SELECT count(*) FROM summaries WHERE text LIKE '[lcm:truncated]%'");
    assert_true(mech >= 3);
    dag_heal_opts h = {.apply = 0, .summary_tokens = 200, .heal_source_tokens = 3000};
    dag_heal_report r;
    assert_int_equal(dag_heal(f->st, f->sc, &h, &r, NULL), LC_OK);
    assert_int_equal(r.candidates, mech);
    assert_int_equal(r.healed, 0);
    assert_non_null(strstr(r.text, "dry run"));
    dag_heal_report_free(&r);
    h.apply = 1;
    h.max_nodes = 2;
    assert_int_equal(dag_heal(f->st, f->sc, &h, &r, NULL), LC_OK);
    assert_int_equal(r.healed, 2);
    dag_heal_report_free(&r);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summaries WHERE text LIKE '[lcm:truncated]%'"),
                     mech - 2);
    assert_int_equal(dag_event_count(f->st, "heal"), 1);
    /* the index follows the healed text */
    assert_true(store_q1(f->st, store_q_pg() ? "SELECT count(*) FROM summaries WHERE tsv @@ to_tsquery('english', 'decided')"
                                       : "SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH 'decided'") >= 1);
}

static void test_heal_blocks_a_source_beyond_eight_windows_without_a_call(void **state)
{
    fx *f = *state;
    ingest(f->st, 0, 40, 500, 0);
    dag_opts o = opts();
    o.leaf_chunk_tokens = 20000;
    mechanical_pass(f->st, &o, NULL);
    dag_heal_opts h = {.apply = 1, .summary_tokens = 200, .heal_source_tokens = 1000};
    dag_heal_report r;
    assert_int_equal(dag_heal(f->st, f->sc, &h, &r, NULL), LC_OK);
    assert_true(r.blocked >= 1);
    assert_int_equal(r.healed, 0);
    dag_heal_report_free(&r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_pass_covers_every_message_before_the_fresh_tail_exactly_once),
        T(test_second_pass_summarizes_nothing_twice),
        T(test_without_flush_a_partial_chunk_waits),
        T(test_condensation_takes_oldest_shallowest_run_of_at_most_eight),
        T(test_headers_name_node_depth_and_span),
        T(test_unmeetable_budget_records_condensation_stalled),
        T(test_leaf_never_ends_before_a_tool_result),
        T(test_pass_killed_midway_leaves_consistent_store_that_resumes),
        T(test_source_cap_stops_a_pass_and_the_next_continues),
        T(test_heal_dry_run_lists_mechanical_nodes_and_apply_replaces_them),
        T(test_heal_blocks_a_source_beyond_eight_windows_without_a_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
