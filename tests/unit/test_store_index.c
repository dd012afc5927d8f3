/*
 * test_store_index.c -- what the SQLite store's full-text index holds of a message: the
 * words a person reads (its text, its tool calls' argument values decoded), its thinking
 * in a column of its own (found, labelled, and left out by a `{text}` column filter), in
 * any script; a store of the schema before (one column, unicode61) gets that index at its
 * next read-write open, in one transaction, and doctor's rebuild gives the same index.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_sqlite.h"
#include "util.h"

#include "temp_home.h"
#include "test_main.h"

static const char *const fx_json[] = {
    "{\"role\":\"user\",\"content\":\"现在删除NotificationBell的导入\",\"timestamp\":1}",
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"the pangolin import is dead\","
    "\"thinkingSignature\":\"c2ln\"},{\"type\":\"text\",\"text\":\"Removing it.\"},{\"type\":\"toolCall\","
    "\"id\":\"call_1\",\"name\":\"write\",\"arguments\":{\"path\":\"notes.md\",\"content\":\"# Notes\\nMarmalade "
    "was renamed\\n\\tTabby too\"}}],\"stopReason\":\"toolUse\",\"timestamp\":2}",
    "{\"role\":\"toolResult\",\"toolCallId\":\"call_1\",\"toolName\":\"write\",\"content\":[{\"type\":\"text\","
    "\"text\":\"wrote notes.md\"}],\"isError\":false,\"timestamp\":3}",
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"The grays looked identically dim.\"}],"
    "\"stopReason\":\"stop\",\"timestamp\":4}",
    /* Arguments kept as a JSON string (some producers do). */
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"call_2\",\"name\":\"bash\","
    "\"arguments\":\"{\\\"command\\\":\\\"ls\\\\nWombatcheck --all\\\"}\"}],\"stopReason\":\"toolUse\",\"timestamp\":5}",
};
#define FX_N (sizeof fx_json / sizeof fx_json[0])

static store *fx_store(void)
{
    store *s = home_store("idx", "/w");
    msg_batch b = {0};
    for (size_t i = 0; i < FX_N; i++) msg_batch_add(&b, lc_asprintf("e%zu", i + 1), lc_strdup(fx_json[i]));
    msg_batch_ingest(s, &b, NULL);
    return s;
}

/* The first hit of a page: its entry, whether it is labelled thinking, its text. */
typedef struct fx_hit {
    char entry[16];
    int thinking;
    char *text;
} fx_hit;

static int fx_first(void *ud, const store_search_row *r, char **err)
{
    fx_hit *h = ud;
    (void)err;
    snprintf(h->entry, sizeof h->entry, "%s", r->entry_id);
    h->thinking = r->thinking;
    h->text = lc_strndup(r->text, r->text_len);
    return STORE_VISIT_STOP;
}

static fx_hit fx_page(store *s, const char *query)
{
    store_search_scope scope = {0};
    fx_hit h = {{0}, -1, NULL};
    assert_int_equal(store_search_page(s, query, &scope, 0, 10, 0, fx_first, &h, NULL), LC_OK);
    return h;
}

/* Every word the fixture's messages are searched by. */
static void assert_fx_words(store *s)
{
    assert_int_equal(home_search_count(s, "pangolin"), 1);
    assert_int_equal(home_search_count(s, "Marmalade"), 1);
    assert_int_equal(home_search_count(s, "Tabby"), 1);
    assert_int_equal(home_search_count(s, "Wombatcheck"), 1);
    assert_int_equal(home_search_count(s, "NotificationBell"), 1);
    assert_int_equal(home_search_count(s, "删除"), 1);
    assert_int_equal(home_search_count(s, "identical"), 1);
}

static void test_index_holds_thinking_tool_values_cjk_and_stems(void **state)
{
    (void)state;
    store *s = fx_store();
    assert_fx_words(s);
    /* A key is read with its value ("path: notes.md"), and the JSON's escapes are gone. */
    assert_int_equal(home_search_count(s, "\"path notes md\""), 1);
    assert_int_equal(home_search_count(s, "nmarmalade"), 0);
    store_close(s);
}

static void test_thinking_hit_is_labelled_and_shows_the_thinking(void **state)
{
    (void)state;
    store *s = fx_store();
    fx_hit h = fx_page(s, "pangolin");
    assert_string_equal(h.entry, "e2");
    assert_int_equal(h.thinking, 1);
    assert_non_null(strstr(h.text, "the pangolin import is dead"));
    free(h.text);
    /* A hit in the text is the text, unlabelled, also when the thinking matches too. */
    h = fx_page(s, "Removing");
    assert_string_equal(h.entry, "e2");
    assert_int_equal(h.thinking, 0);
    assert_non_null(strstr(h.text, "Removing it."));
    free(h.text);
    h = fx_page(s, "import");
    assert_int_equal(h.thinking, 1); /* e2's thinking only: e1 says 导入 */
    free(h.text);
    store_close(s);
}

static void test_text_column_filter_leaves_thinking_out(void **state)
{
    (void)state;
    store *s = fx_store();
    assert_int_equal(home_search_count(s, "{text} : (pangolin)"), 0);
    assert_int_equal(home_search_count(s, "{text} : (pangolin OR Marmalade)"), 1);
    assert_int_equal(home_search_count(s, "{thinking} : (pangolin)"), 1);
    store_close(s);
}

static void exec_ok(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) print_error("%s: %s\n", sql, msg ? msg : "?");
    sqlite3_free(msg);
    assert_int_equal(rc, SQLITE_OK);
}

/* Turn the store into what a schema-4 build wrote: one indexed column, unicode61's words
 * of the stored text. */
static void fx_make_schema4(store *s)
{
    sqlite3 *db = store_db(s);
    exec_ok(db, "DROP TABLE messages_fts; DROP TABLE summaries_fts;"
                "CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='');"
                "CREATE VIRTUAL TABLE summaries_fts USING fts5(text, content='');"
                "INSERT INTO messages_fts(rowid, text) SELECT id, text FROM messages;"
                "PRAGMA user_version = 4;");
}

static void test_schema4_store_gets_the_new_index_at_open(void **state)
{
    (void)state;
    store *s = fx_store();
    fx_make_schema4(s);
    /* What the old index could not find. */
    assert_int_equal(home_search_count(s, "pangolin"), 0);
    assert_int_equal(home_search_count(s, "Marmalade"), 0);
    assert_int_equal(home_search_count(s, "删除"), 0);
    store_close(s);

    s = home_store("idx", "/w");
    assert_int_equal(store_schema_version(s), STORE_SCHEMA_VERSION);
    assert_fx_words(s);
    fx_hit h = fx_page(s, "pangolin");
    assert_int_equal(h.thinking, 1);
    free(h.text);
    store_close(s);
}

static void test_older_store_is_read_as_it_is_without_migrating(void **state)
{
    (void)state;
    store *s = fx_store();
    fx_make_schema4(s);
    store_close(s);
    char path[512];
    snprintf(path, sizeof path, "%s/lcm/idx.sqlite", home);
    store *ro = NULL;
    int v = -1;
    assert_int_equal(store_open_readonly(path, &ro, &v, NULL), LC_OK);
    assert_int_equal(v, 4);
    assert_true(STORE_SCHEMA_ANSWERS(v));
    /* Its old words answer, and the column filter a caller may add is valid there too. */
    assert_int_equal(home_search_count(ro, "Removing"), 1);
    assert_int_equal(home_search_count(ro, "{text} : (Removing)"), 1);
    fx_hit h = fx_page(ro, "Removing");
    assert_int_equal(h.thinking, 0);
    free(h.text);
    store_close(ro);
}

static void test_rebuild_gives_the_same_index(void **state)
{
    (void)state;
    store *s = fx_store();
    char *err = NULL;
    assert_int_equal(store_rebuild_index(s, &err), LC_OK);
    assert_fx_words(s);
    assert_int_equal(home_search_count(s, "{text} : (pangolin)"), 0);
    store_close(s);
}

TEST_MAIN(HOME_TEST(test_index_holds_thinking_tool_values_cjk_and_stems),
          HOME_TEST(test_thinking_hit_is_labelled_and_shows_the_thinking),
          HOME_TEST(test_text_column_filter_leaves_thinking_out),
          HOME_TEST(test_schema4_store_gets_the_new_index_at_open),
          HOME_TEST(test_older_store_is_read_as_it_is_without_migrating),
          HOME_TEST(test_rebuild_gives_the_same_index))
