/*
 * test_pg_ingest.c -- the PostgreSQL store's ingest path, on a real server (run by
 * tests/contract/test_pg_store.sh with LCM_STORE_URL set; skipped without one): a turn's
 * messages cost the same few round trips to the server whatever their number (the
 * protocol trace's ReadyForQuery messages are the trips), and a history written in one
 * call stores exactly the rows -- ids, ordinals, text, tsvector, file handles, DAG
 * progress -- that the same history written a message per call stores; and a turn's
 * statements are planned once per connection, not again at every turn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_pg.h"
#include "util.h"
#include "test_main.h"

#include "temp_home.h"

static int pg_configured(void)
{
    const char *u = getenv("LCM_STORE_URL");
    return u && *u;
}

/* Message k of a generated history: user questions, assistant tool calls, their results
 * (every 10th a large read of a named file: a file handle), with words to index. */
static char *history_msg(size_t k, char **id)
{
    *id = lc_asprintf("h-%zu", k);
    switch (k % 5) {
    case 0:
        return lc_asprintf("{\"role\":\"user\",\"content\":\"question %zu: why does the parser's cache miss"
                           " keys like K%zu?\",\"timestamp\":%zu}",
                           k, k * 7, 1700000000000 + k);
    case 1:
        return lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"reading it\"},"
                           "{\"type\":\"toolCall\",\"id\":\"call-%zu\",\"name\":\"read\",\"arguments\":"
                           "{\"path\":\"src/file%zu.c\"}}],\"stopReason\":\"toolUse\",\"timestamp\":%zu}",
                           k, k, 1700000000000 + k);
    case 2: {
        size_t body = k % 10 == 2 ? 40000 : 200;
        char *text = malloc(body + 1);
        for (size_t i = 0; i < body; i++) text[i] = i % 61 == 60 ? ' ' : (char)('a' + (i + k) % 26);
        text[body] = '\0';
        char *m = lc_asprintf("{\"role\":\"toolResult\",\"toolCallId\":\"call-%zu\",\"toolName\":\"read\","
                              "\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"isError\":false,"
                              "\"timestamp\":%zu}",
                              k - 1, text, 1700000000000 + k);
        free(text);
        return m;
    }
    case 3:
        return lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\"},"
                           "{\"type\":\"text\",\"text\":\"the cache evicts entries %zu running ran runs\"}],"
                           "\"stopReason\":\"stop\",\"timestamp\":%zu}",
                           k, 1700000000000 + k);
    default:
        return lc_asprintf("{\"role\":\"bashExecution\",\"command\":\"make test-%zu\",\"output\":\"ok \\u00e9\\u4e2d"
                           "\\n\",\"exitCode\":0,\"cancelled\":false,\"truncated\":false,\"timestamp\":%zu}",
                           k, 1700000000000 + k);
    }
}

static void history_add(msg_batch *b, size_t from, size_t to)
{
    for (size_t k = from; k < to; k++) {
        char *id = NULL, *json = history_msg(k, &id);
        msg_batch_add(b, id, json);
    }
}

static void store_history(store *s, size_t from, size_t to)
{
    msg_batch b = {0};
    history_add(&b, from, to);
    msg_batch_ingest(s, &b, NULL);
}

/* Round trips of one ingest of messages [from, to): the trace's ReadyForQuery lines. */
static int trips_of_ingest(store *s, size_t from, size_t to)
{
    char path[300];
    snprintf(path, sizeof path, "%s/trace-%zu.txt", home, from);
    FILE *f = fopen(path, "w+");
    assert_non_null(f);
    store_pg_trace(s, f);
    store_history(s, from, to);
    store_pg_trace(s, NULL);
    fflush(f);
    rewind(f);
    char line[512];
    int trips = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "ReadyForQuery")) trips++;
    fclose(f);
    return trips;
}

static void test_pg_a_turn_costs_the_same_round_trips_whatever_its_size(void **state)
{
    (void)state;
    if (!pg_configured()) skip();
    store *s = home_store("pg-trips", "/work/proj");
    store_history(s, 0, 10); /* the connection's statements are prepared once */
    int two = trips_of_ingest(s, 10, 12);
    int hundred = trips_of_ingest(s, 12, 112);
    print_message("round trips: a turn of 2 messages %d, of 100 messages %d\n", two, hundred);
    assert_true(two >= 1);
    assert_int_equal(hundred, two);
    assert_true(two <= 3);
    assert_int_equal(store_message_count(s), 112);
    store_close(s);
}

/* The plugin's every turn passes the previous turn's last message first (ingest_request):
 * the store wrote it, so what follows is new and the turn asks the server nothing before
 * its write -- one round trip, the ordinals continuing the session's. */
static void test_pg_a_turn_from_the_previous_write_costs_one_round_trip(void **state)
{
    (void)state;
    if (!pg_configured()) skip();
    store *s = home_store("pg-one-trip", "/work/proj");
    store_history(s, 0, 10); /* the connection's statements are prepared once */
    int trips = trips_of_ingest(s, 9, 12);
    print_message("round trips: a turn of 2 new messages after the previous write %d\n", trips);
    assert_int_equal(trips, 1);
    assert_int_equal(store_message_count(s), 12);
    assert_int_equal(store_pg_query_int(s, "SELECT count(*) FROM messages WHERE ordinal = id - 1", -1), 12);
    store_close(s);
}

/* Another writer wrote the session since this one's last write: the turn that starts at
 * this one's write stores only what the session lacks, each message once, and its ordinals
 * follow the session's newest, never one a message holds already. */
static void test_pg_a_turn_after_another_writer_stores_each_message_once_in_order(void **state)
{
    (void)state;
    if (!pg_configured()) skip();
    store *a = home_store("pg-two-writers", "/work/proj");
    store_history(a, 0, 10);
    store *b = home_store("pg-two-writers", "/work/proj");
    store_history(b, 10, 14);
    msg_batch t = {0}; /* a's turn: its own last write, then two messages b's are not among */
    history_add(&t, 9, 10);
    history_add(&t, 14, 16);
    msg_batch_ingest(a, &t, NULL);
    assert_int_equal(store_message_count(a), 16);
    assert_int_equal(store_pg_query_int(a, "SELECT count(DISTINCT ordinal) FROM messages", -1), 16);
    assert_int_equal(store_pg_query_int(a, "SELECT count(*) FROM messages m WHERE m.ordinal > (SELECT max(o.ordinal)"
                                           " FROM messages o WHERE o.entry_id = 'h-13')"
                                           " AND m.entry_id IN ('h-14', 'h-15')", -1),
                     2);
    store_history(b, 13, 18); /* from b's last write: h-14, h-15 held (a wrote them), h-16, h-17 new */
    assert_int_equal(store_message_count(b), 18);
    assert_int_equal(store_pg_query_int(b, "SELECT count(DISTINCT ordinal) FROM messages", -1), 18);
    store_close(b);
    store_close(a);
}

/* A statement the server plans at every call costs a turn as much CPU as the turn's own
 * rows: every statement of the ingest settles on its generic plan after the server's
 * five custom ones. */
static void test_pg_a_turns_statements_are_planned_once_per_connection(void **state)
{
    (void)state;
    if (!pg_configured()) skip();
    store *s = home_store("pg-plans", "/work/proj");
    for (size_t k = 0; k < 80; k += 2) store_history(s, k, k + 2);
    assert_int_equal(store_message_count(s), 80);
    int64_t stmts = store_pg_query_int(s, "SELECT count(*) FROM pg_prepared_statements", -1);
    int64_t custom = store_pg_query_int(s, "SELECT coalesce(max(custom_plans), 0) FROM pg_prepared_statements", -1);
    print_message("prepared statements %lld, the most custom plans of one %lld (40 turns)\n", (long long)stmts,
                  (long long)custom);
    assert_true(stmts >= 2);
    assert_true(custom >= 0 && custom <= 5);
    store_close(s);
}

/* A fingerprint of a session's stored rows: every column of every message (the tsvector as
 * text), of every file handle, and the DAG progress numbers, in id order. */
static int64_t rows_fingerprint(store *s, const char *table_sql)
{
    char *sql = lc_asprintf("SELECT ('x' || substr(md5(coalesce(string_agg(r, E'\\n' ORDER BY k), '')), 1, 15))"
                            "::bit(60)::bigint FROM (%s) q(k, r)",
                            table_sql);
    int64_t v = store_pg_query_int(s, sql, -1);
    free(sql);
    assert_true(v >= 0);
    return v;
}

#define MSG_ROWS                                                                                        \
    "SELECT id, concat_ws('|', id, entry_id, ordinal, role, text, chars, tokens, md5(raw_json), payload," \
    " removed, tool_name, tool_path, created, tsv::text) FROM messages"
#define HANDLE_ROWS                                                                                  \
    "SELECT id, concat_ws('|', id, entry_id, path, content_id, kind, chars, preview, summary)"        \
    " FROM file_handles"
#define PROGRESS_ROWS "SELECT 0, string_agg(key || '=' || value, ',' ORDER BY key) FROM meta WHERE key LIKE 'dag_%'"

static void test_pg_one_call_stores_the_rows_a_message_per_call_stores(void **state)
{
    (void)state;
    if (!pg_configured()) skip();
    const size_t n = 300; /* more than one write's batch */
    store *one = home_store("pg-rows-batch", "/work/proj");
    store *each = home_store("pg-rows-each", "/work/proj");
    store_history(one, 0, n);
    for (size_t k = 0; k < n; k++) store_history(each, k, k + 1);
    assert_int_equal(store_message_count(one), (int64_t)n);
    assert_int_equal(store_message_count(each), (int64_t)n);
    assert_true(store_pg_query_int(one, "SELECT count(*) FROM file_handles", 0) > 0);
    assert_int_equal(store_pg_query_int(one, "SELECT count(DISTINCT ordinal) FROM messages", 0), (int64_t)n);
    int64_t m1 = rows_fingerprint(one, MSG_ROWS), m2 = rows_fingerprint(each, MSG_ROWS);
    int64_t h1 = rows_fingerprint(one, HANDLE_ROWS), h2 = rows_fingerprint(each, HANDLE_ROWS);
    int64_t p1 = rows_fingerprint(one, PROGRESS_ROWS), p2 = rows_fingerprint(each, PROGRESS_ROWS);
    /* Printed so a run of another build can be compared with this one's. */
    print_message("fingerprints: messages %lld, file handles %lld, progress %lld\n", (long long)m1, (long long)h1,
                  (long long)p1);
    assert_int_equal(m1, m2);
    assert_int_equal(h1, h2);
    assert_int_equal(p1, p2);
    /* Storing it all again adds nothing and changes nothing. */
    store_history(one, 0, n);
    assert_int_equal(rows_fingerprint(one, MSG_ROWS), m1);
    assert_int_equal(rows_fingerprint(one, PROGRESS_ROWS), p1);
    store_close(one);
    store_close(each);
}

/* The session's row is the one row every writer of the database reads and locks: a turn
 * that rewrote it (a new row version a turn, on a page the other sessions' rows share) made
 * eight writers prune each other's versions. A turn leaves it as it was; the listing's
 * last activity reaches the newest message's time all the same. */
static int newest_activity(void *ud, const store_session_info *si, char **err)
{
    (void)err;
    if (si->session_id && strcmp(si->session_id, "pg-activity") == 0) *(long long *)ud = si->last_activity;
    return LC_OK;
}

static void test_pg_a_turn_leaves_the_session_row_unwritten(void **state)
{
    (void)state;
    if (!pg_configured()) skip();
    store *s = home_store("pg-activity", "/work/proj");
    store_history(s, 0, 2);
    const char *xmin = "SELECT xmin::text::bigint FROM lcm.sessions WHERE sid = current_setting('lcm.sid')::bigint";
    int64_t before = store_pg_query_int(s, xmin, -1);
    assert_true(before > 0);
    for (size_t k = 2; k < 12; k += 2) store_history(s, k, k + 2);
    assert_int_equal(store_message_count(s), 12);
    assert_int_equal(store_pg_query_int(s, xmin, -1), before);
    long long last = 0;
    int listed = 0;
    char *err = NULL;
    assert_int_equal(store_list_sessions(home, 1, 0, newest_activity, &last, &listed, &err), LC_OK);
    free(err);
    assert_int_equal(listed, 1);
    assert_true(last >= 1700000000000LL + 11); /* message 11's timestamp, or the session's start if later */
    store_close(s);
}

/* A message's id is the session's next, given by the insert itself (the session's lock is
 * held by the turn's transaction): no trigger function runs per message. A message the
 * session holds already, or one the turn repeats, takes no id: ids stay 1..n. */
static void test_pg_a_turns_messages_run_no_trigger_function_per_row(void **state)
{
    (void)state;
    if (!pg_configured()) skip();
    store *s = home_store("pg-ids", "/work/proj");
    char *err = NULL;
    store_history(s, 0, 5);
    assert_int_equal(store_tx_begin(s, &err), LC_OK);
    assert_true(store_pg_query_int(s, "SELECT 0 FROM set_config('track_functions', 'all', true)", -1) == 0);
    msg_batch b = {0};
    history_add(&b, 3, 7); /* h-3, h-4 stored; h-5, h-6 new */
    history_add(&b, 5, 6); /* h-5 again */
    history_add(&b, 7, 9);
    msg_batch_ingest(s, &b, NULL);
    int64_t calls = store_pg_query_int(s, "SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions"
                                          " WHERE funcname = 'next_id'", -1);
    assert_int_equal(store_tx_commit(s, &err), LC_OK);
    free(err);
    print_message("id trigger calls for a turn of 4 new messages: %lld\n", (long long)calls);
    assert_int_equal(calls, 0);
    assert_int_equal(store_message_count(s), 9);
    assert_int_equal(store_pg_query_int(s, "SELECT max(id) FROM messages", -1), 9);
    assert_int_equal(store_pg_query_int(s, "SELECT count(*) FROM messages m WHERE m.id = (SELECT o.id FROM messages o"
                                           " WHERE o.entry_id = 'h-' || (m.id - 1))", -1),
                     9);
    store_close(s);
}

TEST_MAIN(HOME_TEST(test_pg_a_turn_costs_the_same_round_trips_whatever_its_size),
          HOME_TEST(test_pg_a_turns_statements_are_planned_once_per_connection),
          HOME_TEST(test_pg_one_call_stores_the_rows_a_message_per_call_stores),
          HOME_TEST(test_pg_a_turn_leaves_the_session_row_unwritten),
          HOME_TEST(test_pg_a_turns_messages_run_no_trigger_function_per_row),
          HOME_TEST(test_pg_a_turn_from_the_previous_write_costs_one_round_trip),
          HOME_TEST(test_pg_a_turn_after_another_writer_stores_each_message_once_in_order))
