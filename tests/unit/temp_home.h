/*
 * temp_home.h -- a fresh temporary agent home for each test of a cmocka suite: `home` is
 * the folder, `setup`/`teardown` make and remove it, HOME_TEST(fn) names a test that runs
 * between them. Included by suites that open stores: home_store() opens one in the home,
 * and a msg_batch builds the messages one store_ingest stores.
 */
#ifndef TEST_TEMP_HOME_H
#define TEST_TEMP_HOME_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "temp_dir.h"

static char home[256];

static inline int setup(void **state)
{
    (void)state;
    temp_dir_make(home, sizeof home, "/tmp/lc-test-XXXXXX");
    return 0;
}

static inline int teardown(void **state)
{
    (void)state;
    return temp_dir_remove(home);
}

/* A test run in its own fresh home. */
#define HOME_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* The store of session `sid` for folder `cwd` in the home; a refusal fails the test and
 * prints the reason. */
static inline store *home_store(const char *sid, const char *cwd)
{
    store *s = NULL;
    char *err = NULL;
    int rc = store_open(home, sid, cwd, &s, &err);
    if (rc) print_error("store_open: %s\n", err ? err : "?");
    assert_int_equal(rc, LC_OK);
    free(err);
    return s;
}

/* How many messages of `s` the full-text `query` matches (no scope); a refusal fails the
 * test and prints the reason. */
static inline int64_t home_search_count(store *s, const char *query)
{
    store_search_scope scope = {0};
    int64_t n = -1;
    char *err = NULL;
    int rc = store_search_count(s, query, &scope, &n, &err);
    if (rc) print_error("search %s: %s\n", query, err ? err : "?");
    assert_int_equal(rc, LC_OK);
    free(err);
    return n;
}

/* Messages for one store_ingest; the batch owns each id and JSON text. */
typedef struct msg_batch {
    store_msg *m;
    size_t n;
} msg_batch;

/* Add a message; `id` and `json` are heap strings the batch takes over. */
static inline void msg_batch_add(msg_batch *b, char *id, char *json)
{
    b->m = realloc(b->m, (b->n + 1) * sizeof *b->m);
    assert_non_null(b->m);
    b->m[b->n++] = (store_msg){id, json, strlen(json), NULL};
}

/* Store the batch in `s` (its counts in *st when st is given), then free it. */
static inline void msg_batch_ingest(store *s, msg_batch *b, store_ingest_stats *st)
{
    char *err = NULL;
    int rc = store_ingest(s, b->m, b->n, st, &err);
    if (rc) print_error("store_ingest: %s\n", err ? err : "?");
    assert_int_equal(rc, LC_OK);
    free(err);
    for (size_t i = 0; i < b->n; i++) {
        free((char *)b->m[i].entry_id);
        free((char *)b->m[i].json);
    }
    free(b->m);
    *b = (msg_batch){0};
}

#endif
