/*
 * test_fuzz_regressions.c -- one test per fuzzer finding in a stable engine module
 * (recall, store), named for the behaviour the reproducer broke. The reproducers
 * themselves are under tests/fuzz/regressions/ and replayed by tests/fuzz/run.sh; these
 * tests keep the behaviour in the ordinary suite. Some findings are undefined behaviour
 * that only a sanitizer sees (`make asan`), which is where these tests can fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recall.h"
#include "store.h"
#include "util.h"

#include "temp_home.h"

/* fuzz_callbacks-grep-sessions-qsort-null: lcm_grep with scope all_sessions when the only
 * store under <home>/lcm is the current session's. The past-store list is then empty and
 * was handed to qsort as a NULL array (undefined behaviour; UBSan's nonnull-attribute). */
static void test_grep_sessions_with_only_the_current_store_finds_nothing(void **state)
{
    (void)state;
    store *s = NULL;
    char *err = NULL;
    assert_int_equal(store_open(home, "current", "/w", &s, &err), LC_OK);
    store_msg m = {"e1", "{\"role\":\"user\",\"content\":\"needle\"}", 0, NULL};
    m.json_len = strlen(m.json);
    assert_int_equal(store_ingest(s, &m, 1, NULL, &err), LC_OK);
    store_close(s);

    recall_grep_opts o = {0};
    o.query = "needle";
    recall_result r;
    for (int scope = RECALL_SCOPE_SESSIONS; scope <= RECALL_SCOPE_ALL_SESSIONS; scope++) {
        assert_int_equal(recall_grep_sessions(home, "current", "/w", (recall_scope)scope, &o,
                                              &r, &err),
                         LC_OK);
        assert_int_equal(r.n, 0);
        assert_int_equal(r.stores_searched, 0);
        recall_result_free(&r);
    }
    free(err);
}

/* The same path with an lcm/ folder that holds no store at all. */
static void test_grep_sessions_with_an_empty_store_folder_finds_nothing(void **state)
{
    (void)state;
    char dir[300];
    char *err = NULL;
    snprintf(dir, sizeof dir, "%s/lcm", home);
    assert_int_equal(mkdir(dir, 0700), 0);
    recall_grep_opts o = {0};
    o.pattern = "needle";
    recall_result r;
    assert_int_equal(recall_grep_sessions(home, "current", "/w", RECALL_SCOPE_ALL_SESSIONS, &o,
                                          &r, &err),
                     LC_OK);
    assert_int_equal(r.n, 0);
    recall_result_free(&r);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HOME_TEST(test_grep_sessions_with_only_the_current_store_finds_nothing),
        HOME_TEST(test_grep_sessions_with_an_empty_store_folder_finds_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
