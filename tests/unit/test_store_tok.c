/*
 * test_store_tok.c -- the full-text index's words (store_sqlite_tok.c): what the tokenizer
 * "lcm" makes of a text, read back through fts5vocab, and what a MATCH finds through
 * 'porter lcm', the tokenizer the store's tables are declared with: CJK bigrams, a Latin
 * word inside CJK text, diacritics folded, stems matched, and lcm_cols() naming the
 * columns that matched; 'lcm_forms porter lcm' (the store's declaration) adds the word as
 * written beside its stem, found by a phrase that starts with STORE_EXACT_MARK.
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

#include "store_sqlite_tok.h"
#include "util.h"

#include "test_main.h"

/* An in-memory database with the tokenizer, a table `t(a, b)` declared with `tokenize`, and
 * its per-word view `v`. */
static sqlite3 *tok_db(const char *tokenize)
{
    sqlite3 *db = NULL;
    char *err = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(store_sqlite_tok_register(db, &err), LC_OK);
    char *sql = lc_asprintf("CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize='%s');"
                            "CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');",
                            tokenize);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    free(sql);
    return db;
}

static void tok_put(sqlite3 *db, long long rowid, const char *a, const char *b)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO t(rowid, a, b) VALUES(?, ?, ?)", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, rowid);
    sqlite3_bind_text(st, 2, a, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, b, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
}

/* The words of `text` in order, joined by '|' (malloc'd). */
static char *tok_words(const char *tokenize, const char *text)
{
    sqlite3 *db = tok_db(tokenize);
    sqlite3_stmt *st = NULL;
    sbuf b = {0};
    tok_put(db, 1, text, "");
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT term FROM v WHERE col = 'a' ORDER BY offset", -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (b.len) sb_putc(&b, '|');
        sb_puts(&b, (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return sb_detach(&b);
}

/* The rowids a query matches, ascending, joined by ',' (malloc'd; "" for none). */
static char *tok_match(sqlite3 *db, const char *query)
{
    sqlite3_stmt *st = NULL;
    sbuf b = {0};
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, query, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) sb_printf(&b, "%s%lld", b.len ? "," : "", sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    char *s = sb_detach(&b);
    return s ? s : lc_strdup("");
}

#define assert_words(tokenize, text, want)                                                                             \
    do {                                                                                                               \
        char *got_ = tok_words(tokenize, text);                                                                        \
        assert_string_equal(got_, want);                                                                               \
        free(got_);                                                                                                    \
    } while (0)

#define assert_match(db, query, want)                                                                                  \
    do {                                                                                                               \
        char *got_ = tok_match(db, query);                                                                             \
        assert_string_equal(got_, want);                                                                               \
        free(got_);                                                                                                    \
    } while (0)

static void test_tok_latin_words_split_like_unicode61(void **state)
{
    (void)state;
    assert_words("lcm", "Update the README.md, then run `make test`!", "update|the|readme|md|then|run|make|test");
    assert_words("lcm", "quokka_b25 x=1", "quokka|b25|x|1");
}

static void test_tok_diacritics_and_case_are_folded(void **state)
{
    (void)state;
    assert_words("lcm", "Café CRÈME brûlée Ångström naïve", "cafe|creme|brulee|angstrom|naive");
}

static void test_tok_cjk_runs_become_bigrams(void **state)
{
    (void)state;
    assert_words("lcm", "现在删除", "现在|在删|删除");
    /* CJK punctuation separates runs; a lone character is a word by itself. */
    assert_words("lcm", "你好，世界。好", "你好|世界|好");
}

static void test_tok_cjk_punctuation_is_not_part_of_a_bigram(void **state)
{
    (void)state;
    assert_words("lcm", "导入。删除", "导入|删除");
}

static void test_tok_latin_inside_cjk_is_its_own_word(void **state)
{
    (void)state;
    assert_words("lcm", "现在删除NotificationBell的导入", "现在|在删|删除|notificationbell|的导|导入");
    assert_words("lcm", "用v2版本", "用|v2|版本");
    /* Kana and Hangul are CJK runs too. */
    assert_words("lcm", "テスト한국어", "テス|スト|ト한|한국|국어");
}

static void test_tok_porter_stems_ascii_words(void **state)
{
    (void)state;
    char *a = tok_words("porter lcm", "identically running grays");
    char *b = tok_words("porter lcm", "identical runs gray");
    assert_string_equal(a, b);
    free(a);
    free(b);
}

static void test_tok_match_finds_stems_cjk_words_and_identifiers(void **state)
{
    (void)state;
    sqlite3 *db = tok_db("porter lcm");
    tok_put(db, 1, "why did all the grays look identically in the terminal", "");
    tok_put(db, 2, "现在删除NotificationBell的导入", "");
    tok_put(db, 3, "le café est prêt", "");
    tok_put(db, 4, "nothing here", "thinking about identical grays");
    assert_match(db, "identical", "1,4");
    assert_match(db, "gray", "1,4");
    assert_match(db, "NotificationBell", "2");
    assert_match(db, "notificationbell", "2");
    assert_match(db, "删除", "2");
    assert_match(db, "删除NotificationBell", "2");
    assert_match(db, "导入", "2");
    assert_match(db, "删*", "2");
    assert_match(db, "导出", "");
    assert_match(db, "cafe pret", "3");
    assert_match(db, "CAFÉ", "3");
    /* The first column alone leaves the second (thinking) out. */
    assert_match(db, "{a} : (identical)", "1");
    sqlite3_close(db);
}

static void test_tok_forms_index_the_word_as_written_beside_its_stem(void **state)
{
    (void)state;
    /* A word its stem changes gets a second, marked token (listed first: it sorts first at
     * the same offset); one it leaves alone does not,
     * nor does a word outside ASCII (the stemmer changes none). */
    assert_words("lcm_forms porter lcm", "Importing import café", "\001importing|import|import|cafe");
}

static void test_tok_forms_exact_phrase_finds_only_the_form_written(void **state)
{
    (void)state;
    sqlite3 *db = tok_db("lcm_forms porter lcm");
    tok_put(db, 1, "what they are importing locally", "");
    tok_put(db, 2, "fix the imports", "");
    tok_put(db, 3, "import x from y", "");
    tok_put(db, 4, "nothing", "IMPORTING again");
    /* The stem still finds every form; the marked phrase only the form written, any case. */
    assert_match(db, "importing", "1,2,3,4");
    assert_match(db, "\"\001importing\"", "1,4");
    assert_match(db, "\"\001Importing\"", "1,4");
    assert_match(db, "\"\001imports\"", "2");
    /* A form that is its own stem has no marked token: the phrase matches nothing. */
    assert_match(db, "\"\001import\"", "");
    assert_match(db, "{a} : \"\001importing\"", "1");
    sqlite3_close(db);
}

static void test_tok_cols_names_the_matching_columns(void **state)
{
    (void)state;
    sqlite3 *db = tok_db("porter lcm");
    sqlite3_stmt *st = NULL;
    tok_put(db, 1, "alpha beta", "gamma");
    tok_put(db, 2, "delta", "alpha");
    tok_put(db, 3, "alpha", "alpha");
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT rowid, lcm_cols(t) FROM t WHERE t MATCH 'alpha' ORDER BY rowid",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int want[][2] = {{1, 1}, {2, 2}, {3, 3}};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), want[i][0]);
        assert_int_equal(sqlite3_column_int(st, 1), want[i][1]);
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_tok_works_on_a_contentless_table(void **state)
{
    (void)state;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char *err = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(store_sqlite_tok_register(db, &err), LC_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE VIRTUAL TABLE f USING fts5(text, thinking, content='', tokenize='porter lcm');"
                                  "INSERT INTO f(rowid, text, thinking) VALUES(7, 'plain words', '思考した結果');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT rowid, lcm_cols(f) FROM f WHERE f MATCH '結果'", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 7);
    assert_int_equal(sqlite3_column_int(st, 1), 2);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

TEST_MAIN(cmocka_unit_test(test_tok_latin_words_split_like_unicode61),
          cmocka_unit_test(test_tok_diacritics_and_case_are_folded),
          cmocka_unit_test(test_tok_cjk_runs_become_bigrams),
          cmocka_unit_test(test_tok_cjk_punctuation_is_not_part_of_a_bigram),
          cmocka_unit_test(test_tok_latin_inside_cjk_is_its_own_word),
          cmocka_unit_test(test_tok_porter_stems_ascii_words),
          cmocka_unit_test(test_tok_match_finds_stems_cjk_words_and_identifiers),
          cmocka_unit_test(test_tok_forms_index_the_word_as_written_beside_its_stem),
          cmocka_unit_test(test_tok_forms_exact_phrase_finds_only_the_form_written),
          cmocka_unit_test(test_tok_cols_names_the_matching_columns),
          cmocka_unit_test(test_tok_works_on_a_contentless_table))
