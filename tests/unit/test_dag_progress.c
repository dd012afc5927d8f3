/* test_dag_progress.c -- the DAG's progress numbers (store_dag_progress: the watermark and
 * the pending uncovered tokens) that keep a compaction pass O(new): a new branch whose
 * entries take ordinals below the watermark is still covered, the numbers match a full
 * recount after every kind of write, a pass with less than a chunk pending writes nothing,
 * removed marks are set incrementally (only rows whose mark changes are written), and a
 * branch another connection stores during a pass's model call keeps the watermark below
 * it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "dag.h"
#include "store.h"
#include "store_sqlite.h"
#include "store_q.h"
#include "summarize.h"
#include "util.h"
#include "test_main.h"

#include "dag_fx.h"


/* A branch: ids[i] = <prefix[i]>NN, user/assistant alternating, ~`tokens` tokens each. */
typedef struct branch {
    char ids[128][16];
    char *json[128];
    size_t n;
} branch;

static void branch_add1(branch *b, const char *prefix, int i, int tokens)
{
    sbuf t = {0};
    snprintf(b->ids[b->n], sizeof b->ids[b->n], "%s%02d", prefix, i);
    sb_printf(&t, "Message %s%02d decided build_%d. ", prefix, i, i);
    while ((long)t.len < tokens * 4) sb_printf(&t, "The worker read the file and reported ok %zu. ", t.len);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", i % 2 ? "assistant" : "user");
    cJSON_AddStringToObject(m, "content", t.p);
    b->json[b->n++] = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    sb_free(&t);
}

/* Messages <prefix>from..<prefix>to-1 of ~`tokens` tokens each. */
static void branch_add(branch *b, const char *prefix, int from, int to, int tokens)
{
    for (int i = from; i < to; i++) branch_add1(b, prefix, i, tokens);
}

static void branch_free(branch *b)
{
    for (size_t i = 0; i < b->n; i++) free(b->json[i]);
    b->n = 0;
}

/* The store's progress watermark (the ordinal below which everything is covered). */
static int64_t watermark(store *s)
{
    int64_t w = -1;
    assert_int_equal(store_dag_progress(s, &w, NULL, NULL), LC_OK);
    return w;
}

static void branch_ingest(store *s, const branch *b)
{
    store_msg m[128];
    for (size_t i = 0; i < b->n; i++) m[i] = (store_msg){b->ids[i], b->json[i], strlen(b->json[i]), NULL};
    assert_int_equal(store_ingest(s, m, b->n, NULL, NULL), LC_OK);
}

/* Messages a00..a<n-1> of ~`tokens` tokens each, stored in s; the branch keeps their ids. */
static branch branch_stored(store *s, int n, int tokens)
{
    branch a = {0};
    branch_add(&a, "a", 0, n, tokens);
    branch_ingest(s, &a);
    return a;
}

/* Move the tree of a 60-message branch back to a<at-1> (a<at>..a59 removed) and grow a
 * branch there: a00..a<at-1> again, then b<at>..b<to-1>. */
static void branch_fork(store *s, int at, int to)
{
    const char *left[60];
    char ids[60][16];
    size_t n = 0;
    for (int i = at; i < 60; i++) {
        snprintf(ids[n], sizeof ids[n], "a%02d", i);
        left[n] = ids[n];
        n++;
    }
    assert_int_equal(store_set_removed(s, left, n, 1, NULL, NULL), LC_OK);
    branch b = {0};
    branch_add(&b, "a", 0, at, 500);
    branch_add(&b, "b", at, to, 500);
    branch_ingest(s, &b);
    branch_free(&b);
}

#define UNCOVERED                                                                              \
    " FROM messages m WHERE m.removed = 0 AND m.role NOT IN (" STORE_DAG_EXCLUDED_ROLES ")"    \
    " AND NOT EXISTS (SELECT 1 FROM summary_messages sm WHERE sm.entry_id = m.entry_id)"

/* The numbers must equal a full recount: the pending tokens exactly, and no uncovered
 * eligible message below the watermark. */
static void assert_progress_exact(store *s)
{
    int64_t w = -1, p = -1;
    char sql[512];
    assert_int_equal(store_dag_progress(s, &w, &p, NULL), LC_OK);
    assert_int_equal(p, store_q1(s, "SELECT coalesce(sum(m.tokens), 0)" UNCOVERED));
    snprintf(sql, sizeof sql, "SELECT count(*)" UNCOVERED " AND m.ordinal < %lld", (long long)w);
    assert_int_equal(store_q1(s, sql), 0);
}

static dag_opts opts(int flush)
{
    dag_opts o = {.keep_recent_tokens = 3000, .leaf_chunk_tokens = 4000, .summary_tokens = 200,
                  .flush = flush};
    return o;
}

static void test_new_branch_below_the_watermark_is_still_covered(void **state)
{
    fx *f = *state;
    branch a = branch_stored(f->st, 60, 500);
    dag_opts o = opts(0);
    dag_stats ds;
    assert_int_equal(dag_pass(f->st, f->sc, &o, &ds, NULL), LC_OK);
    int64_t w = watermark(f->st);
    assert_true(w >= 40); /* the pass moved the watermark over what it covered */
    assert_progress_exact(f->st);

    /* Move back to a09 and grow a branch there: its entries take ordinals 10.. */
    branch_fork(f->st, 10, 70);
    assert_int_equal(watermark(f->st), 10);
    assert_progress_exact(f->st);

    o = opts(1);
    assert_int_equal(dag_pass(f->st, f->sc, &o, &ds, NULL), LC_OK);
    assert_true(ds.leaves >= 5);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*)" UNCOVERED " AND m.ordinal < %lld",
             (long long)ds.boundary_ordinal);
    assert_int_equal(store_q1(f->st, sql), 0);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM summary_messages WHERE entry_id = 'b10'"), 1);
    assert_progress_exact(f->st);
    branch_free(&a);
}

static void test_progress_matches_a_recount_after_ingest_cover_remove_restore_and_repair(void **state)
{
    fx *f = *state;
    branch a = branch_stored(f->st, 40, 400);
    assert_progress_exact(f->st);
    dag_opts o = opts(0);
    dag_stats ds;
    assert_int_equal(dag_pass(f->st, f->sc, &o, &ds, NULL), LC_OK);
    assert_true(ds.leaves >= 2);
    assert_progress_exact(f->st);
    /* Removing covered and uncovered entries, then restoring them. */
    const char *some[] = {a.ids[1], a.ids[2], a.ids[30], a.ids[31], a.ids[39]};
    assert_int_equal(store_set_removed(f->st, some, 5, 1, NULL, NULL), LC_OK);
    assert_progress_exact(f->st);
    assert_int_equal(store_set_removed(f->st, some, 5, 0, NULL, NULL), LC_OK);
    assert_progress_exact(f->st);
    /* A repair that deletes coverage: the numbers are dropped and recounted. */
    assert_int_equal(store_qexec(f->st, "DELETE FROM summary_messages WHERE summary_id = (SELECT min(id) FROM summaries)"),
                     0);
    assert_int_equal(watermark(f->st), 0);
    assert_progress_exact(f->st);
    branch_free(&a);
}

static void test_pass_with_less_than_a_chunk_pending_writes_nothing(void **state)
{
    fx *f = *state;
    branch a = branch_stored(f->st, 12, 500); /* 6,000 tokens: tail + 3,000 */
    dag_opts o = opts(0);
    dag_stats ds;
    int64_t w0 = watermark(f->st);
    assert_int_equal(dag_pass(f->st, f->sc, &o, &ds, NULL), LC_OK);
    assert_int_equal(ds.leaves, 0);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM runs"), 0);
    assert_int_equal(watermark(f->st), w0);
    branch_free(&a);
}

/* The count a caller reports ("n marked removed") is the rows whose mark changed: an id
 * already marked, or no message at all, is not counted. */
static void test_set_removed_counts_only_rows_whose_mark_changed(void **state)
{
    fx *f = *state;
    branch a = branch_stored(f->st, 6, 50);
    size_t changed = 99;
    const char *first[] = {a.ids[3], a.ids[4]};
    assert_int_equal(store_set_removed(f->st, first, 2, 1, &changed, NULL), LC_OK);
    assert_int_equal(changed, 2);
    const char *again[] = {a.ids[3], a.ids[4], a.ids[5], "no-such-entry"};
    assert_int_equal(store_set_removed(f->st, again, 4, 1, &changed, NULL), LC_OK);
    assert_int_equal(changed, 1);
    const char *back[] = {a.ids[0], a.ids[4]};
    assert_int_equal(store_set_removed(f->st, back, 2, 0, &changed, NULL), LC_OK);
    assert_int_equal(changed, 1);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM messages WHERE removed = 1"), 2);
    branch_free(&a);
}

static void test_set_removed_writes_only_rows_whose_mark_changes(void **state)
{
    fx *f = *state;
    branch a = branch_stored(f->st, 6, 50);
    /* Counted by a SQLite TEMP trigger on the store's connection; PostgreSQL has no
     * per-connection trigger to count with. */
    if (store_q_pg()) {
        branch_free(&a);
        return;
    }
    assert_int_equal(sqlite3_exec(store_db(f->st),
                                  "CREATE TEMP TABLE writes(id TEXT);"
                                  "CREATE TEMP TRIGGER count_writes AFTER UPDATE OF removed ON main.messages"
                                  " BEGIN INSERT INTO writes VALUES(new.entry_id); END;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    const char *first[] = {a.ids[3], a.ids[4]};
    assert_int_equal(store_set_removed(f->st, first, 2, 1, NULL, NULL), LC_OK);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM writes"), 2);
    /* Two already removed, one newly: one write. */
    const char *again[] = {a.ids[3], a.ids[4], a.ids[5]};
    assert_int_equal(store_set_removed(f->st, again, 3, 1, NULL, NULL), LC_OK);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM writes"), 3);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM messages WHERE removed = 1"), 3);
    /* Clearing an unmarked entry writes nothing; clearing a marked one writes it. */
    const char *back[] = {a.ids[0], a.ids[4]};
    assert_int_equal(store_set_removed(f->st, back, 2, 0, NULL, NULL), LC_OK);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM writes"), 4);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM messages WHERE removed = 1"), 2);
    assert_int_equal(store_q1(f->st, "SELECT count(*) FROM messages WHERE removed = 1 AND entry_id IN ('a03','a05')"), 2);
    assert_progress_exact(f->st);
    branch_free(&a);
}

/* While a pass's model call is out, another connection (the host thread, while the
 * worker summarizes) moves the tree back into the chunk just written and grows a branch
 * there: its first entry takes the ordinal of that chunk's last message. The pending
 * node now stands on removed entries and is refused; the pass may not move the watermark
 * past the new entry -- it would never be covered. */
typedef struct interferer {
    fx *f;
    int calls;
    int64_t fork;
} interferer;

static int interfere_auto(void *ud, const char *system_prompt, const char *prompt, long max_tokens,
                          summ_completion *out, char **err)
{
    (void)system_prompt;
    (void)prompt;
    (void)max_tokens;
    (void)err;
    interferer *it = ud;
    if (++it->calls == 2) {
        store *other = NULL;
        assert_int_equal(store_open(it->f->home, "sess", "/w", &other, NULL), LC_OK);
        it->fork = store_q1(other, "SELECT max(last_ordinal) FROM summary_spans");
        assert_true(it->fork > 0 && it->fork < 40);
        branch_fork(other, (int)it->fork, 60);
        store_close(other);
    }
    out->text = lc_strdup("The user asked for builds; the worker read files and reported ok.");
    return LC_OK;
}

static void test_pass_keeps_the_watermark_below_a_branch_stored_during_its_call(void **state)
{
    fx *f = *state;
    static const char *const chain[] = {"auto"};
    interferer it = {.f = f};
    summ_config cfg = {.chain = chain, .n_chain = 1, .auto_fn = interfere_auto, .ud = &it};
    summ_ctx *sc = NULL;
    char sql[512];
    assert_int_equal(summ_create(&cfg, &sc, NULL), LC_OK);
    branch a = branch_stored(f->st, 60, 500);
    dag_opts o = opts(1);
    dag_stats ds;
    assert_int_equal(dag_pass(f->st, sc, &o, &ds, NULL), LC_OK);
    assert_int_equal(it.calls, 2);
    assert_int_equal(ds.leaves, 1);
    assert_int_equal(ds.conflicts, 1); /* the second node stood on the branch just left */
    assert_progress_exact(f->st);
    /* The next pass starts low enough to cover the new branch from its first entry. */
    assert_int_equal(dag_pass(f->st, sc, &o, &ds, NULL), LC_OK);
    assert_true(ds.leaves >= 1);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM summary_messages WHERE entry_id = 'b%02d'", (int)it.fork);
    assert_int_equal(store_q1(f->st, sql), 1);
    snprintf(sql, sizeof sql, "SELECT count(*)" UNCOVERED " AND m.ordinal < %lld",
             (long long)ds.boundary_ordinal);
    assert_int_equal(store_q1(f->st, sql), 0);
    assert_progress_exact(f->st);
    summ_free(sc);
    branch_free(&a);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
TEST_MAIN(
    T(test_new_branch_below_the_watermark_is_still_covered),
    T(test_progress_matches_a_recount_after_ingest_cover_remove_restore_and_repair),
    T(test_pass_with_less_than_a_chunk_pending_writes_nothing),
    T(test_set_removed_counts_only_rows_whose_mark_changed),
    T(test_set_removed_writes_only_rows_whose_mark_changes),
    T(test_pass_keeps_the_watermark_below_a_branch_stored_during_its_call),
)
