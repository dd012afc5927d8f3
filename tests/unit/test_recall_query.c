/*
 * test_recall_query.c -- lcm_grep's query language (recall_query.h): what each form of a
 * query becomes, that no text makes an expression FTS5 refuses, and the bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "recall_query.h"
#include "util.h"

static void parse(const char *q, recall_query *out)
{
    char *err = NULL;
    assert_int_equal(recall_query_parse(q, out, &err), LC_OK);
    assert_null(err);
}

static void expect_match(const char *q, const char *want)
{
    recall_query r;
    parse(q, &r);
    if (!want) {
        assert_null(r.match);
    } else {
        if (!r.match || strcmp(r.match, want) != 0) fail_msg("query %s: got %s, want %s", q, r.match, want);
    }
    recall_query_free(&r);
}

static void test_plain_words_are_any_word_with_stopwords_left_out(void **state)
{
    (void)state;
    expect_match("why did all the grays look identical?", "(\"grays\" OR \"\001grays\" OR \"gray\"* OR \"look\" OR \"\001look\" OR \"identical\" OR \"\001identical\" OR \"grays look\" OR \"look identical\")");
    /* A question of stopwords alone still searches them. */
    expect_match("what is it", "(\"what\" OR \"is\" OR \"it\")");
    /* Repeated words count once; a quoted stopword is searched although its bare twin is
     * not (the fuzzer's find: both were once dropped, leaving "()"). */
    expect_match("kiwi Kiwi kiwi", "(\"kiwi\" OR \"\001kiwi\")");
    expect_match("x \"x\"", "(\"x\")");
}

/* Other forms of a plain word match through its stem as a prefix, weighing less than the
 * form written, and the form written also as itself (STORE_EXACT_MARK: the index's word as
 * written, not its stem); names, quoted words and short words are taken as written. */
static void test_other_forms_of_a_word_match_weighing_less(void **state)
{
    (void)state;
    expect_match("configured failing", "(\"configured\" OR \"\001configured\" OR \"configur\"* OR \"failing\" OR \"\001failing\" OR \"fail\"* OR \"configured failing\")");
    expect_match("\"configured\" opk-gui cat", "(\"configured\" OR \"opk-gui\" OR \"cat\" OR \"\001cat\" OR \"opk-gui cat\")");
    recall_query r;
    parse("failing", &r);
    assert_int_equal(r.nphrases, 3);
    assert_true(r.weights[0] == 1 && r.weights[1] == RECALL_QUERY_EXACT_WEIGHT &&
                r.weights[2] == RECALL_QUERY_STEM_WEIGHT);
    recall_query_free(&r);
}

/* Two neighbouring words also count side by side; not across a written AND / OR. */
static void test_neighbouring_words_count_as_a_pair(void **state)
{
    (void)state;
    expect_match("lock screen", "(\"lock\" OR \"\001lock\" OR \"screen\" OR \"\001screen\" OR \"lock screen\")");
    expect_match("lock the screen", "(\"lock\" OR \"\001lock\" OR \"screen\" OR \"\001screen\")");
    expect_match("lock OR screen", "(\"lock\" OR \"\001lock\" OR \"screen\" OR \"\001screen\")");
}

static void test_punctuation_separates_and_names_are_phrases(void **state)
{
    (void)state;
    expect_match("what's the opk-gui entry point?", "(\"opk-gui\" OR \"entry\" OR \"\001entry\" OR \"point\" OR \"\001point\" OR \"opk-gui entry\" OR \"entry point\")");
    expect_match("config.toml, src/a.c; foo", "(\"config.toml\" OR \"src/a.c\" OR \"foo\" OR \"\001foo\" OR \"config.toml src/a.c\" OR \"src/a.c foo\")");
    /* A trailing dot or hyphen is punctuation, not part of the name. */
    expect_match("vault. end-", "(\"vault\" OR \"\001vault\" OR \"end\" OR \"\001end\" OR \"vault end\")");
    expect_match("couldn't bridge", "(\"bridge\" OR \"\001bridge\" OR \"bridg\"*)");
}

static void test_quotes_prefix_exclude_and_capital_operators(void **state)
{
    (void)state;
    expect_match("\"exact phrase here\" beside", "(\"exact phrase here\" OR \"beside\" OR \"\001beside\" OR \"besid\"*)");
    expect_match("\"unterminated phrase", "(\"unterminated phrase\")");
    expect_match("a \"b\"\"c\"", "(\"b\" OR \"c\")");
    expect_match("compact* wait", "(\"compact\"* OR \"wait\" OR \"\001wait\")");
    expect_match("terminal -grays -\"the palette\"", "(\"terminal\" OR \"\001terminal\") NOT (\"grays\" OR \"the palette\")");
    expect_match("grays AND palette OR terminal", "((\"grays\" AND \"palette\") OR \"terminal\" OR \"\001terminal\")");
    /* Lower-case and/or are words (stopwords here); AND with nothing after is dropped. */
    expect_match("grays and palette", "(\"grays\" OR \"\001grays\" OR \"gray\"* OR \"palette\" OR \"\001palette\" OR \"palett\"*)");
    expect_match("grays AND", "(\"grays\" OR \"\001grays\" OR \"gray\"*)");
    /* Only excluded words, or none at all: nothing to search. */
    expect_match("-grays", NULL);
    expect_match("?!., ()", NULL);
    expect_match("", NULL);
    expect_match(NULL, NULL);
}

static void test_fts5_switch_passes_the_raw_syntax(void **state)
{
    (void)state;
    recall_query r;
    parse("fts5:NEAR(a b, 2) OR c*", &r);
    assert_true(r.raw);
    assert_string_equal(r.match, "NEAR(a b, 2) OR c*");
    recall_query_free(&r);
}

static void test_weights_follow_the_phrases(void **state)
{
    (void)state;
    recall_query r;
    parse("the AND grays -palette x1", &r);
    /* ("the" AND "grays") OR "x1" NOT ("palette"): the stopword in an AND group weighs 0,
     * the excluded phrase 0. */
    assert_int_equal(r.nphrases, 4);
    assert_true(r.weights[0] == 0 && r.weights[1] == 1 && r.weights[2] == 1 && r.weights[3] == 0);
    assert_string_equal(r.words[1], "grays");
    recall_query_free(&r);
}

static void test_a_long_query_is_bounded_and_counts_what_it_left_out(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 4000; i++) sb_printf(&b, "w%d ", i);
    char *q = sb_detach(&b);
    recall_query r;
    parse(q, &r);
    /* 32 words, and their neighbouring pairs (no stems: the words hold digits). */
    assert_int_equal(r.nphrases, 2 * RECALL_QUERY_TERMS - 1);
    assert_int_equal(r.dropped, 4000 - RECALL_QUERY_TERMS);
    recall_query_free(&r);
    free(q);
    /* One enormous word is cut to whole characters. */
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    parse(big, &r);
    assert_true(strlen(r.match) <= RECALL_QUERY_TERM_BYTES + 4);
    recall_query_free(&r);
}

/* Every translation is an expression FTS5 accepts: run against a real index, byte strings
 * that break its own syntax included. */
static void test_no_text_makes_fts5_refuse_the_translation(void **state)
{
    (void)state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE VIRTUAL TABLE t USING fts5(x); INSERT INTO t VALUES('opk gui grays');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    const char *nasty[] = {"?", "\"", "'", "-", "--x", "a-", "-\"", "*", "**a", "a**", "NEAR(", "NOT x", "x:y",
                           "^x", "+x", "(", ")", "a AND", "AND", "OR OR", "\"\"", "\"a\"\"", "x -", "\xff\xfe",
                           "\xe3\x80\x82\xef\xbc\x9f", "现在删除NotificationBell的导入", "a\"b\"c\"", "{x}", "[x]",
                           "x.", ".x", "a/b/", "#tag", "@user", "c++", "1.2.3", "-1", "a'b'c'", "\\", "x\\\"y"};
    for (size_t i = 0; i < sizeof nasty / sizeof *nasty; i++) {
        recall_query r;
        parse(nasty[i], &r);
        if (r.match) {
            sqlite3_stmt *st = NULL;
            assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM t WHERE t MATCH ?", -1, &st, NULL), SQLITE_OK);
            sqlite3_bind_text(st, 1, r.match, -1, SQLITE_STATIC);
            int step = sqlite3_step(st);
            if (step != SQLITE_ROW) fail_msg("query %s -> %s: %s", nasty[i], r.match, sqlite3_errmsg(db));
            sqlite3_finalize(st);
        }
        recall_query_free(&r);
    }
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_words_are_any_word_with_stopwords_left_out),
        cmocka_unit_test(test_punctuation_separates_and_names_are_phrases),
        cmocka_unit_test(test_other_forms_of_a_word_match_weighing_less),
        cmocka_unit_test(test_neighbouring_words_count_as_a_pair),
        cmocka_unit_test(test_quotes_prefix_exclude_and_capital_operators),
        cmocka_unit_test(test_fts5_switch_passes_the_raw_syntax),
        cmocka_unit_test(test_weights_follow_the_phrases),
        cmocka_unit_test(test_a_long_query_is_bounded_and_counts_what_it_left_out),
        cmocka_unit_test(test_no_text_makes_fts5_refuse_the_translation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
