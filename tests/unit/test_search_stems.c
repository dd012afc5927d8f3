/*
 * test_search_stems.c -- a word is found by its stem on either backend: the SQLite index
 * through FTS5's porter, a PostgreSQL store through the 'english' configuration (this suite
 * runs there too: tests/contract/test_pg_store.sh). "identical" finds "identically", "gray"
 * finds "grays", and the word as written still finds itself.
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
#include "util.h"

#include "temp_home.h"
#include "store_fx.h"
#include "test_main.h"

static void test_inflected_words_are_found_by_their_stem(void **state)
{
    store *s = *state;
    msg_batch b = {0};
    msg_batch_add(&b, lc_strdup("e1"),
                  lc_strdup("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"why did all the grays "
                            "look identically dim in the terminal\"}],\"timestamp\":1}"));
    msg_batch_add(&b, lc_strdup("e2"),
                  lc_strdup("{\"role\":\"user\",\"content\":\"the parser was running slowly\",\"timestamp\":2}"));
    msg_batch_ingest(s, &b, NULL);
    assert_int_equal(home_search_count(s, "identical"), 1);
    assert_int_equal(home_search_count(s, "identically"), 1);
    assert_int_equal(home_search_count(s, "gray"), 1);
    assert_int_equal(home_search_count(s, "runs"), 1);
    assert_int_equal(home_search_count(s, "parsers"), 1);
    assert_int_equal(home_search_count(s, "terminal"), 1);
    assert_int_equal(home_search_count(s, "terminals"), 1);
    assert_int_equal(home_search_count(s, "termite"), 0);
}

TEST_MAIN(STORE_TEST(test_inflected_words_are_found_by_their_stem))
