/*
 * test_recall.c -- grep (query and pattern modes, paging, removed entries, summary scope,
 * past sessions), describe, and the bounded reader with and without a completion function,
 * on real SQLite stores in a temp dir.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "recall.h"
#include "store.h"
#include "store_sqlite.h"
#include "store_q.h"
#include "util.h"

#include "expect_text.h"
#include "temp_home.h"
#include "store_fx.h"

/* n user messages "message i about topic", with `needle` planted in message `at`. */
static void fill(store *s, size_t n, size_t at, const char *needle, const char *prefix)
{
    msg_batch b = {0};
    for (size_t i = 0; i < n; i++)
        msg_batch_add(&b, lc_asprintf("%s%zu", prefix, i),
                      lc_asprintf("{\"role\":\"user\",\"content\":\"message %zu about   the\\n\\t"
                                  "general topic%s%s\",\"timestamp\":%zu}",
                                  i, i == at ? " " : "", i == at ? needle : "", 1000 + i));
    msg_batch_ingest(s, &b, NULL);
}

/* recall_grep over `s`; a refusal fails the test and prints why. */
static void grep_ok(store *s, const recall_grep_opts *o, recall_result *r)
{
    char *err = NULL;
    int rc = recall_grep(s, o, r, &err);
    if (rc) print_error("recall_grep: %s\n", err ? err : "?");
    assert_int_equal(rc, LC_OK);
}

/* recall_grep over `s` refuses the search as invalid, with an error that says `why`. */
static void grep_refused(store *s, const recall_grep_opts *o, const char *why)
{
    recall_result r;
    char *err = NULL;
    assert_int_equal(recall_grep(s, o, &r, &err), LC_INVALID);
    expect_has(err, why);
    free(err);
}

/* The page as one session's search formats it holds (lacks) every piece listed; a failure
 * names the piece and the caller's line. */
#define expect_page_(expect, o, r, ...)                                                       \
    do {                                                                                      \
        char *page_ = recall_grep_format((o), RECALL_SCOPE_SESSION, (r));                     \
        expect(page_, __VA_ARGS__);                                                           \
        free(page_);                                                                          \
    } while (0)
#define expect_page_has(o, r, ...) expect_page_(expect_has, o, r, __VA_ARGS__)
#define expect_page_lacks(o, r, ...) expect_page_(expect_lacks, o, r, __VA_ARGS__)

static void add_raw(store *s, const char *id, const char *text)
{
    sbuf b = {0};
    sb_puts(&b, "{\"role\":\"user\",\"content\":\"");
    sb_puts(&b, text);
    sb_puts(&b, "\",\"timestamp\":5}");
    store_msg m = {id, b.p, b.len, NULL};
    char *err = NULL;
    assert_int_equal(store_ingest(s, &m, 1, NULL, &err), LC_OK);
    sb_free(&b);
}

static void test_query_mode_reports_total_and_pages_by_twenty(void **state)
{
    store *s = *state;
    fill(s, 45, 7, "ZEBRA-needle", "e");
    recall_grep_opts o = {.query = "general topic"};
    recall_result r;
    grep_ok(s, &o, &r);
    assert_int_equal(r.total, 45);
    assert_int_equal(r.n, 20);
    assert_true(r.more);
    expect_page_has(&o, &r, "45 hit(s); showing 1-20", "offset 20");
    recall_result_free(&r);
    o.offset = 40;
    grep_ok(s, &o, &r);
    assert_int_equal(r.n, 5);
    assert_false(r.more);
    recall_result_free(&r);
    recall_grep_opts n = {.query = "zebra"};
    grep_ok(s, &n, &r);
    assert_int_equal(r.total, 1);
    assert_string_equal(r.hits[0].entry_id, "e7");
    /* whitespace collapsed in the line */
    assert_non_null(strstr(r.hits[0].snippet, "about the general topic ZEBRA-needle"));
    recall_result_free(&r);
}

/* Over RECALL_RANK_MAX matches, bm25 is not computed: the page is newest stored first,
 * consecutive offsets continue the same order, and the output says why. At the bound
 * (one match removed) the same query is ranked again. */
static void test_query_over_rank_max_pages_newest_first_and_says_why(void **state)
{
    store *s = *state;
    size_t n = RECALL_RANK_MAX + 1;
    fill(s, n, 3, "rarezebra", "e");
    recall_grep_opts o = {.query = "general topic"};
    recall_result r;
    char *err = NULL, id[32];
    grep_ok(s, &o, &r);
    assert_int_equal(r.total, (int64_t)n);
    assert_true(r.newest_first);
    assert_int_equal(r.n, 20);
    for (size_t i = 0; i < 20; i++) {
        snprintf(id, sizeof id, "e%zu", n - 1 - i);
        assert_string_equal(r.hits[i].entry_id, id);
    }
    char *text = recall_grep_format(&o, RECALL_SCOPE_SESSION, &r);
    char want[160];
    snprintf(want, sizeof want, "order: newest stored first, not by relevance: %zu matches are more than the %d that are ranked",
             n, RECALL_RANK_MAX);
    expect_has(text, want, "showing 1-20");
    free(text);
    recall_result_free(&r);
    o.offset = 20;
    grep_ok(s, &o, &r);
    assert_true(r.newest_first);
    for (size_t i = 0; i < 20; i++) {
        snprintf(id, sizeof id, "e%zu", n - 21 - i);
        assert_string_equal(r.hits[i].entry_id, id);
    }
    recall_result_free(&r);
    /* The last page ends at the oldest message. */
    o.offset = n - 1;
    grep_ok(s, &o, &r);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.hits[0].entry_id, "e0");
    assert_false(r.more);
    recall_result_free(&r);
    /* A rare word in the same store is still ranked, with no order note. */
    recall_grep_opts rare = {.query = "rarezebra"};
    grep_ok(s, &rare, &r);
    assert_false(r.newest_first);
    assert_string_equal(r.hits[0].entry_id, "e3");
    expect_page_lacks(&rare, &r, "order:");
    recall_result_free(&r);
    /* One match removed: exactly RECALL_RANK_MAX remain, ranked; included, it leads. */
    snprintf(id, sizeof id, "e%zu", n - 1);
    const char *gone[] = {id};
    assert_int_equal(store_set_removed(s, gone, 1, 1, NULL, &err), LC_OK);
    recall_grep_opts at = {.query = "general topic"};
    grep_ok(s, &at, &r);
    assert_int_equal(r.total, RECALL_RANK_MAX);
    assert_false(r.newest_first);
    for (size_t i = 0; i < r.n; i++) assert_string_not_equal(r.hits[i].entry_id, id);
    recall_result_free(&r);
    at.include_removed = 1;
    grep_ok(s, &at, &r);
    assert_true(r.newest_first);
    assert_string_equal(r.hits[0].entry_id, id);
    assert_true(r.hits[0].removed);
    recall_result_free(&r);
}

/* At or under RECALL_RANK_MAX matches the order is bm25's (not storage order), and
 * paging by offset walks that order without repeating or skipping a hit. */
static void test_query_under_rank_max_is_ranked_and_pages_in_rank_order(void **state)
{
    store *s = *state;
    add_raw(s, "a0", "kiwi appears once in this much longer message about many other things entirely");
    add_raw(s, "a1", "kiwi kiwi kiwi");
    add_raw(s, "a2", "kiwi and a few other words here");
    for (int i = 3; i < 9; i++) {
        char id[16];
        snprintf(id, sizeof id, "a%d", i);
        add_raw(s, id, "kiwi once, with some padding words around it to lower its score");
    }
    recall_grep_opts o = {.query = "kiwi", .limit = 100};
    recall_result all;
    grep_ok(s, &o, &all);
    assert_int_equal(all.total, 9);
    assert_int_equal(all.n, 9);
    assert_false(all.newest_first);
    /* The densest message ranks first although it is neither the oldest nor the newest. */
    assert_string_equal(all.hits[0].entry_id, "a1");
    expect_page_lacks(&o, &all, "order:");
    size_t seen = 0;
    for (size_t off = 0; off < 9; off += 2) {
        recall_grep_opts pg = {.query = "kiwi", .limit = 2, .offset = off};
        recall_result r;
        grep_ok(s, &pg, &r);
        for (size_t i = 0; i < r.n; i++) assert_string_equal(r.hits[i].entry_id, all.hits[seen++].entry_id);
        assert_int_equal(r.more, off + r.n < 9);
        recall_result_free(&r);
    }
    assert_int_equal(seen, 9);
    recall_result_free(&all);
}

/* Only the explicit fts5: switch passes FTS5's syntax, so only it can be refused; the same
 * text without it is a query like any other. */
static void test_query_with_bad_fts_syntax_is_refused_only_after_the_fts5_switch(void **state)
{
    store *s = *state;
    fill(s, 3, 0, "x", "e");
    recall_grep_opts o = {.query = "fts5:\"unbalanced"};
    grep_refused(s, &o, "without the \"fts5:\" prefix any text is a query");
    recall_grep_opts plain = {.query = "\"unbalanced"};
    recall_result r;
    grep_ok(s, &plain, &r);
    recall_result_free(&r);
}

static void test_pattern_mode_says_more_exist_instead_of_counting(void **state)
{
    store *s = *state;
    fill(s, 30, 12, "ptr=0x7ffe(12)", "e");
    recall_grep_opts o = {.pattern = "MESSAGE \\d+ about"};
    recall_result r;
    grep_ok(s, &o, &r); /* case-insensitive by default */
    assert_int_equal(r.n, 20);
    assert_true(r.more);
    assert_int_equal(r.total, -1);
    expect_page_has(&o, &r, "more matches exist");
    recall_result_free(&r);
    o.case_sensitive = 1;
    grep_ok(s, &o, &r);
    assert_int_equal(r.n, 0);
    recall_result_free(&r);
    recall_grep_opts p = {.pattern = "0x7ffe\\(12\\)"};
    grep_ok(s, &p, &r);
    assert_int_equal(r.n, 1);
    assert_false(r.more);
    assert_string_equal(r.hits[0].entry_id, "e12");
    recall_result_free(&r);
    recall_grep_opts bad = {.pattern = "(unclosed"};
    grep_refused(s, &bad, "does not compile");
}

static void test_pattern_time_bound_is_named(void **state)
{
    store *s = *state;
    fill(s, 200, 0, "x", "e");
    /* A zero-length budget stops at the first check: the bound must be named. */
    recall_grep_opts o = {.pattern = "nothing-matches-this", .time_budget_ms = 1e-9};
    recall_result r;
    grep_ok(s, &o, &r);
    assert_true(r.timed_out);
    expect_page_has(&o, &r, "one-second pattern limit");
    recall_result_free(&r);
}

static void test_removed_entries_are_skipped_unless_included_and_labelled(void **state)
{
    store *s = *state;
    fill(s, 10, 8, "abandonedbranchword", "e");
    const char *active[] = {"e0", "e1", "e2", "e3", "e4"};
    char *err = NULL;
    assert_int_equal(store_mark_branch(s, active, 5, NULL, NULL, &err), LC_OK);
    recall_grep_opts o = {.query = "abandonedbranchword"};
    recall_result r;
    grep_ok(s, &o, &r);
    assert_int_equal(r.total, 0);
    recall_result_free(&r);
    o.include_removed = 1;
    grep_ok(s, &o, &r);
    assert_int_equal(r.total, 1);
    assert_true(r.hits[0].removed);
    expect_page_has(&o, &r, "[removed] e8");
    recall_result_free(&r);
    recall_grep_opts p = {.pattern = "abandoned\\w+", .include_removed = 1};
    grep_ok(s, &p, &r);
    assert_int_equal(r.n, 1);
    assert_true(r.hits[0].removed);
    recall_result_free(&r);
}

static void test_hits_name_covering_summary_and_summary_scope_limits_search(void **state)
{
    store *s = *state;
    fill(s, 10, 2, "needleinleaf", "e");
    const char *l1[] = {"e0", "e1", "e2"}, *l2[] = {"e3", "e4"};
    store_summary a = {"leaf", 0, "leaf one", NULL, 3, l1, 3, NULL, 0};
    store_summary b = {"leaf", 0, "leaf two", NULL, 3, l2, 2, NULL, 0};
    int64_t ia, ib, ic;
    char *err = NULL;
    assert_int_equal(store_summary_add(s, &a, &ia, &err), LC_OK);
    assert_int_equal(store_summary_add(s, &b, &ib, &err), LC_OK);
    int64_t kids[] = {ia, ib};
    store_summary c = {"condensed", 1, "both leaves", NULL, 2, NULL, 0, kids, 2};
    assert_int_equal(store_summary_add(s, &c, &ic, &err), LC_OK);
    recall_grep_opts o = {.query = "needleinleaf"};
    recall_result r;
    grep_ok(s, &o, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.hits[0].summary_id, ic);
    assert_int_equal(r.hits[0].leaf_id, ia);
    char *text = recall_grep_format(&o, RECALL_SCOPE_SESSION, &r);
    char want[64];
    snprintf(want, sizeof want, "covered by summary #%lld", (long long)ic);
    assert_non_null(strstr(text, want));
    free(text);
    recall_result_free(&r);
    recall_grep_opts sc = {.query = "general", .summary_id = ib};
    grep_ok(s, &sc, &r);
    assert_int_equal(r.total, 2);
    recall_result_free(&r);
    sc.summary_id = ic;
    grep_ok(s, &sc, &r);
    assert_int_equal(r.total, 5);
    recall_result_free(&r);
    recall_grep_opts sp = {.pattern = "general", .summary_id = ia};
    grep_ok(s, &sp, &r);
    assert_int_equal(r.n, 3);
    recall_result_free(&r);
    sc.summary_id = 999;
    assert_int_equal(recall_grep(s, &sc, &r, &err), LC_NOTFOUND);
    free(err);
}

static char *repeat(const char *unit, size_t times)
{
    sbuf b = {0};
    for (size_t i = 0; i < times; i++) sb_puts(&b, unit);
    return sb_detach(&b);
}

static void test_long_messages_name_index_pattern_and_line_bounds(void **state)
{
    store *s = *state;
    /* 110,000 chars then a word past the index reach, 250,000 total. */
    char *head = repeat("abcdefghij", 11000);
    char *tail = repeat("klmnopqrst", 14000);
    char *text = lc_asprintf("%s deepword %s", head, tail);
    add_raw(s, "big", text);
    recall_grep_opts q = {.query = "deepword"};
    recall_result r;
    grep_ok(s, &q, &r);
    assert_int_equal(r.total, 0); /* beyond the index reach */
    assert_int_equal(r.long_unindexed, 1);
    expect_page_has(&q, &r, "first 100000 characters");
    recall_result_free(&r);
    recall_grep_opts p = {.pattern = "deepword"};
    grep_ok(s, &p, &r);
    assert_int_equal(r.n, 1); /* the pattern reads past the index */
    assert_true(r.hits[0].clipped);
    assert_int_equal(r.pattern_clipped, 1);
    expect_page_has(&p, &r, "clipped at 400 characters", "first 200000 characters");
    assert_non_null(strstr(r.hits[0].snippet, "deepword"));
    recall_result_free(&r);
    free(head);
    free(tail);
    free(text);
}

static void test_snippets_are_redacted_when_asked(void **state)
{
    store *s = *state;
    add_raw(s, "k", "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123 keep it");
    recall_grep_opts o = {.query = "key", .redact = 1};
    recall_result r;
    grep_ok(s, &o, &r);
    assert_null(strstr(r.hits[0].snippet, "sk-proj"));
    assert_non_null(strstr(r.hits[0].snippet, "[REDACTED]"));
    recall_result_free(&r);
    o.redact = 0;
    grep_ok(s, &o, &r);
    assert_non_null(strstr(r.hits[0].snippet, "sk-proj"));
    recall_result_free(&r);
}

static void make_old_generation_store(const char *sid)
{
    char path[512];
    snprintf(path, sizeof path, "%s/lcm/%s.sqlite", home, sid);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE messages(id INTEGER PRIMARY KEY, text TEXT);"
                                      "INSERT INTO messages(text) VALUES('pastneedle in old');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
}

static void test_past_sessions_are_searched_read_only_with_labels(void **state)
{
    (void)state;
    /* An older-generation SQLite file beside current ones: a folder of files. (The shared
     * store's sessions are searched by test_pg_store.sh's replay and lcm grep.) */
    if (store_q_pg()) return;
    store *a = home_store("past-a", "/proj/one");
    fill(a, 5, 3, "pastneedle", "a");
    store_close(a);
    store *b = home_store("past-b", "/proj/two");
    fill(b, 5, 1, "pastneedle", "b");
    store_close(b);
    make_old_generation_store("past-old");
    store *cur = home_store("current", "/proj/one");
    fill(cur, 3, 0, "pastneedle", "c");
    recall_grep_opts o = {.query = "pastneedle"};
    recall_result r;
    char *err = NULL;
    assert_int_equal(recall_grep_sessions(home, "current", "/proj/one", RECALL_SCOPE_SESSIONS, &o, &r, &err), LC_OK);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.hits[0].session_id, "past-a");
    assert_string_equal(r.hits[0].entry_id, "a3");
    assert_string_equal(r.hits[0].session_cwd, "/proj/one");
    assert_int_equal(r.stores_older, 1);
    char *text = recall_grep_format(&o, RECALL_SCOPE_SESSIONS, &r);
    expect_has(text, "past session past-a", "older-generation");
    free(text);
    recall_result_free(&r);
    recall_grep_opts p = {.pattern = "pastneedle"};
    assert_int_equal(recall_grep_sessions(home, "current", "/proj/one", RECALL_SCOPE_ALL_SESSIONS, &p, &r, &err), LC_OK);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.stores_searched, 2);
    recall_result_free(&r);
    /* The old store was not migrated by the search. */
    char path[512];
    snprintf(path, sizeof path, "%s/lcm/past-old.sqlite", home);
    store *ro;
    int v;
    assert_int_equal(store_open_readonly(path, &ro, &v, &err), LC_OK);
    assert_int_equal(v, 0);
    store_close(ro);
    /* A past entry reads through the session's store, tagged as past history. */
    recall_expand_opts eo = {.entry_id = "a3"};
    char *out = NULL;
    assert_int_equal(recall_expand_session(home, "past-a", &eo, NULL, NULL, &out, &err), LC_OK);
    expect_has(out, "[past session history: session past-a", "pastneedle");
    free(out);
    assert_int_equal(recall_expand_session(home, "past-old", &eo, NULL, NULL, &out, &err), LC_INVALID);
    assert_non_null(strstr(err, "older-generation"));
    free(err);
    store_close(cur);
}

static void test_read_only_store_forbids_writes(void **state)
{
    (void)state;
    store *a = home_store("ro", "/p");
    fill(a, 2, 0, "x", "e");
    store_close(a);
    char path[512];
    snprintf(path, sizeof path, "%s/lcm/ro.sqlite", home);
    store *ro;
    int v;
    char *err = NULL;
    if (store_q_pg()) { /* the session's read-only open, by id */
        assert_int_equal(store_open_session_readonly(home, "ro", &ro, &v, &err), LC_OK);
    } else {
        assert_int_equal(store_open_readonly(path, &ro, &v, &err), LC_OK);
    }
    assert_int_not_equal(store_qexec(ro, "DELETE FROM messages"), 0);
    assert_int_equal(store_q1(ro, "SELECT count(*) FROM messages"), 2);
    store_msg m = {"new", "{\"role\":\"user\",\"content\":\"x\"}", 30, NULL};
    assert_int_equal(store_ingest(ro, &m, 1, NULL, &err), LC_INVALID);
    free(err);
    store_close(ro);
}

typedef struct scripted {
    int calls;
    int fail;
    char last_request[200000];
} scripted;

static int scripted_complete(void *ud, const char *request_json, char **out_json, char **err)
{
    scripted *sc = ud;
    sc->calls++;
    snprintf(sc->last_request, sizeof sc->last_request, "%s", request_json);
    if (sc->fail) {
        *err = lc_strdup("no model configured");
        return 1;
    }
    *out_json = lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"finding %d: the needle is "
                            "N07=4821\"}],\"stopReason\":\"stop\"}",
                            sc->calls);
    return 0;
}

static void test_expand_refuses_unknown_address_before_any_model_call(void **state)
{
    store *s = *state;
    fill(s, 3, 0, "x", "e");
    scripted sc = {0};
    recall_expand_opts o = {.entry_id = "missing", .question = "what?"};
    char *out = NULL, *err = NULL;
    assert_int_equal(recall_expand(s, &o, scripted_complete, &sc, &out, &err), LC_NOTFOUND);
    assert_int_equal(sc.calls, 0);
    free(err);
    err = NULL;
    recall_expand_opts o2 = {.summary_id = 42};
    assert_int_equal(recall_expand(s, &o2, scripted_complete, &sc, &out, &err), LC_NOTFOUND);
    assert_int_equal(sc.calls, 0);
    assert_non_null(strstr(err, "#42"));
    free(err);
}

static void test_expand_with_model_reads_windows_and_returns_findings(void **state)
{
    store *s = *state;
    char *body = repeat("0123456789", 5000); /* 50,000 chars: three windows */
    char *text = lc_asprintf("N07=4821 %s", body);
    add_raw(s, "big", text);
    scripted sc = {0};
    recall_expand_opts o = {.entry_id = "big", .question = "what is N07?", .max_tokens = 100000};
    char *out = NULL, *err = NULL;
    assert_int_equal(recall_expand(s, &o, scripted_complete, &sc, &out, &err), LC_OK);
    assert_int_equal(sc.calls, 3);
    expect_has(out, "findings", "finding 3");
    assert_non_null(strstr(sc.last_request, "finding 2")); /* notes carried between turns */
    assert_null(strstr(out, "0123456789")); /* originals stay out of the answer */
    free(out);
    free(body);
    free(text);
}

static void test_expand_is_bounded_by_max_tokens_and_turns(void **state)
{
    store *s = *state;
    char *body = repeat("abcdefghij", 20000); /* 200,000 chars */
    add_raw(s, "huge", body);
    scripted sc = {0};
    recall_expand_opts o = {.entry_id = "huge"}; /* default 10,000 tokens ~ 40,000 chars */
    char *out = NULL, *err = NULL;
    assert_int_equal(recall_expand(s, &o, scripted_complete, &sc, &out, &err), LC_OK);
    assert_int_equal(sc.calls, 2);
    expect_has(out, "stopped at max_tokens 10000", "char_offset: 40000");
    free(out);
    /* A wide budget still stops at six reader turns. */
    sc.calls = 0;
    o.max_tokens = 1000000;
    assert_int_equal(recall_expand(s, &o, scripted_complete, &sc, &out, &err), LC_OK);
    assert_int_equal(sc.calls, RECALL_MAX_TURNS);
    assert_non_null(strstr(out, "6 reader turns"));
    free(out);
    /* Paging inside the message from an offset. */
    sc.calls = 0;
    o.max_tokens = 0;
    o.char_offset = 190000;
    assert_int_equal(recall_expand(s, &o, NULL, NULL, &out, &err), LC_OK);
    assert_non_null(strstr(out, "chars 190000..200000 of 200000"));
    assert_null(strstr(out, "bound:"));
    free(out);
    free(body);
}

static void test_expand_without_model_returns_verbatim_windows_and_says_so(void **state)
{
    store *s = *state;
    fill(s, 6, 4, "N07=4821", "e");
    const char *l[] = {"e3", "e4", "e5"};
    store_summary a = {"leaf", 0, "leaf", NULL, 3, l, 3, NULL, 0};
    int64_t id;
    char *err = NULL, *out = NULL;
    assert_int_equal(store_summary_add(s, &a, &id, &err), LC_OK);
    recall_expand_opts o = {.summary_id = id};
    assert_int_equal(recall_expand(s, &o, NULL, NULL, &out, &err), LC_OK);
    expect_has(out, "no model available", "N07=4821", "entry e3");
    assert_null(strstr(out, "entry e2"));
    free(out);
    /* A failing model falls back the same way and names why. */
    scripted sc = {.fail = 1};
    assert_int_equal(recall_expand(s, &o, scripted_complete, &sc, &out, &err), LC_OK);
    assert_int_equal(sc.calls, 1);
    assert_non_null(strstr(out, "no model available (no model configured)"));
    free(out);
    /* A question alone finds its messages through the index. */
    recall_expand_opts q = {.question = "where is N07"};
    assert_int_equal(recall_expand(s, &q, NULL, NULL, &out, &err), LC_OK);
    assert_non_null(strstr(out, "N07=4821"));
    free(out);
}

static void test_describe_summary_reports_tiers_cost_and_files(void **state)
{
    store *s = *state;
    char *body = repeat("{\"id\":1,\"name\":\"x\"},", 2000);
    char *json = lc_asprintf("[%s{\"id\":2,\"name\":\"y\"}]", body);
    sbuf b = {0};
    sb_puts(&b, "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"read\",\"content\":[{\"type\":\"text\",\"text\":");
    cJSON *str = cJSON_CreateString(json);
    char *enc = cJSON_PrintUnformatted(str);
    sb_puts(&b, enc);
    sb_puts(&b, "}],\"timestamp\":3}");
    const char *call = "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"read\","
                       "\"arguments\":{\"path\":\"data/items.json\"}}],\"timestamp\":2}";
    store_msg m[2] = {{"a1", call, strlen(call), NULL}, {"r1", b.p, b.len, NULL}};
    char *err = NULL, *out = NULL;
    assert_int_equal(store_ingest(s, m, 2, NULL, &err), LC_OK);
    const char *l[] = {"a1", "r1"};
    store_summary sm = {"leaf", 0, "read the items file", "{\"rich\":\"read data/items.json: 2001 items\"}", 5, l, 2, NULL, 0};
    int64_t id;
    assert_int_equal(store_summary_add(s, &sm, &id, &err), LC_OK);
    char key[16];
    snprintf(key, sizeof key, "#%lld", (long long)id);
    assert_int_equal(recall_describe(s, key, 1, &out, &err), LC_OK);
    expect_has(out, "[lcm:summary #", "span a1..r1", "rich 32 chars", "2001 items", "originals: 2 message(s)",
               "data/items.json (json", "array of 2001 objects, keys: id, name");
    free(out);
    assert_int_equal(recall_describe(s, "data/items.json", 1, &out, &err), LC_OK);
    expect_has(out, "kind: json", "content id: sha256:");
    free(out);
    assert_int_equal(recall_describe(s, "#999", 1, &out, &err), LC_NOTFOUND);
    free(err);
    free(enc);
    cJSON_Delete(str);
    sb_free(&b);
    free(json);
    free(body);
}

/* A grep line starts 80 characters before the match; a secret straddling that edge must
 * not show its tail unmasked, nor one straddling the 400-character clip its head. */
static void test_grep_line_never_cuts_a_secret_in_half(void **state)
{
    store *s = *state;
    const char *key = "sk-ant-api03-QQQw1E2QQQw1E2QQQw1E2QQQw1E2QQQw1E2QQQw1E2QQQw1E2QQQw1E2AA";
    sbuf t = {0};
    sb_puts(&t, "the key ");
    sb_puts(&t, key);
    sb_puts(&t, " and that one was then rotated");
    for (int i = 0; i < 57; i++) sb_puts(&t, " tail"); /* the next token straddles the clip */
    sb_puts(&t, " ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij12 end");
    add_raw(s, "k1", t.p);
    recall_grep_opts o = {.query = "rotated", .redact = 1};
    recall_result r;
    grep_ok(s, &o, &r);
    assert_int_equal(r.n, 1);
    assert_non_null(strstr(r.hits[0].snippet, "[REDACTED] and that one was then rotated"));
    expect_lacks(r.hits[0].snippet, "QQQw1E2", "ghp_", "ABCDEFGH");
    recall_result_free(&r);
    sb_free(&t);
}

/* A question whose words are in more messages than are ranked reads the newest of them
 * (bm25 over all would take seconds); under the limit it reads the best-ranked. */
static void test_expand_question_on_common_words_reads_the_newest_matches(void **state)
{
    store *s = *state;
    size_t n = RECALL_RANK_MAX + 10;
    fill(s, n, 3, "ZEBRA-needle", "e");
    recall_expand_opts q = {.question = "general topic", .max_tokens = 200000};
    char *err = NULL, *out = NULL;
    char last[32];
    snprintf(last, sizeof last, "entry e%zu,", n - 1);
    assert_int_equal(recall_expand(s, &q, NULL, NULL, &out, &err), LC_OK);
    assert_non_null(strstr(out, last));
    assert_null(strstr(out, "entry e0,"));
    free(out);
    recall_expand_opts r = {.question = "zebra"};
    assert_int_equal(recall_expand(s, &r, NULL, NULL, &out, &err), LC_OK);
    assert_non_null(strstr(out, "ZEBRA-needle"));
    assert_null(strstr(out, last));
    free(out);
}

/* A pattern scan stopped by its time bound names where to continue; calls resumed from each
 * named point until none is named find exactly the matches an unbounded scan finds, each
 * once, and a malformed resume point is refused. */
static void test_pattern_scan_stopped_by_its_bound_resumes_to_every_match_once(void **state)
{
    (void)state;
    store *s = home_store("resume", "/w");
    fill(s, 20000, 0, "", "r");
    recall_grep_opts o = {.pattern = "message \\d*7 about", .limit = 100000, .time_budget_ms = 60000};
    recall_result all, part;
    char *err = NULL;
    grep_ok(s, &o, &all);
    assert_false(all.timed_out);
    assert_int_equal(all.n, 2000);
    char *seen = calloc(20000, 1), resume[64] = "";
    size_t found = 0;
    int calls = 0;
    /* A bound a few times one read of the store: on a PostgreSQL server a batch is a round
     * trip (a millisecond, and tens when the machine is busy) where a SQLite file's row
     * costs microseconds. */
    o.time_budget_ms = store_q_pg() ? 100 : 5;
    for (;;) {
        o.resume = resume[0] ? resume : NULL;
        grep_ok(s, &o, &part);
        calls++;
        for (size_t i = 0; i < part.n; i++) {
            size_t k = (size_t)atol(part.hits[i].entry_id + 1);
            assert_int_equal(seen[k], 0); /* never twice */
            seen[k] = 1;
            found++;
        }
        int again = part.timed_out && part.scanned > 0;
        if (again) {
            char *text = recall_grep_format(&o, RECALL_SCOPE_SESSION, &part);
            snprintf(resume, sizeof resume, "%lld:%lld", (long long)part.last_ordinal, (long long)part.last_id);
            char want[96];
            snprintf(want, sizeof want, "resume \"%s\"", resume);
            assert_non_null(strstr(text, want)); /* the output names the point */
            free(text);
        }
        assert_false(part.timed_out && part.scanned == 0); /* every call gets on */
        recall_result_free(&part);
        if (!again) break;
    }
    assert_true(calls >= 2); /* the bound did stop the scan */
    assert_int_equal(found, all.n);
    for (size_t i = 0; i < all.n; i++) assert_int_equal(seen[atol(all.hits[i].entry_id + 1)], 1);
    o.resume = "12x";
    assert_int_equal(recall_grep(s, &o, &part, &err), LC_INVALID);
    assert_non_null(strstr(err, "resume"));
    free(err);
    recall_result_free(&part);
    recall_result_free(&all);
    free(seen);
    store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        STORE_TEST(test_query_mode_reports_total_and_pages_by_twenty),
        STORE_TEST(test_query_over_rank_max_pages_newest_first_and_says_why),
        STORE_TEST(test_query_under_rank_max_is_ranked_and_pages_in_rank_order),
        STORE_TEST(test_query_with_bad_fts_syntax_is_refused_only_after_the_fts5_switch),
        STORE_TEST(test_pattern_mode_says_more_exist_instead_of_counting),
        STORE_TEST(test_pattern_time_bound_is_named),
        STORE_TEST(test_removed_entries_are_skipped_unless_included_and_labelled),
        STORE_TEST(test_hits_name_covering_summary_and_summary_scope_limits_search),
        STORE_TEST(test_long_messages_name_index_pattern_and_line_bounds),
        STORE_TEST(test_snippets_are_redacted_when_asked),
        HOME_TEST(test_past_sessions_are_searched_read_only_with_labels),
        HOME_TEST(test_read_only_store_forbids_writes),
        STORE_TEST(test_expand_refuses_unknown_address_before_any_model_call),
        STORE_TEST(test_expand_with_model_reads_windows_and_returns_findings),
        STORE_TEST(test_expand_is_bounded_by_max_tokens_and_turns),
        STORE_TEST(test_expand_without_model_returns_verbatim_windows_and_says_so),
        STORE_TEST(test_describe_summary_reports_tiers_cost_and_files),
        STORE_TEST(test_grep_line_never_cuts_a_secret_in_half),
        STORE_TEST(test_expand_question_on_common_words_reads_the_newest_matches),
        HOME_TEST(test_pattern_scan_stopped_by_its_bound_resumes_to_every_match_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
