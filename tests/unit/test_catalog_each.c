/*
 * test_catalog_each.c -- the one walk over an agent home's stores (catalog_each /
 * catalog_walk): which stores the callback is given (sound ones; older schemas only when
 * asked), what is counted instead (damaged, older), a stop after or before a store and
 * where the walk stopped, a resumed walk, an error passed up, and who closes a store (the
 * walk, unless the callback took it: no leak under ASan).
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

#include <sqlite3.h>

#include "catalog.h"
#include "store.h"
#include "store_q.h"
#include "util.h"
#include "test_main.h"

#include "temp_home.h"

static void make_store(const char *sid, const char *created)
{
    store *s = home_store(sid, "/p");
    char *err = NULL;
    assert_int_equal(store_meta_put(s, "created", created, &err), LC_OK);
    store_close(s);
}

/* Three sound stores (newest first: c, b, a), one of an older schema, one damaged file. */
static void make_home(void)
{
    char p[400];
    make_store("a", "1000");
    make_store("b", "2000");
    make_store("c", "3000");
    snprintf(p, sizeof p, "%s/lcm/old.sqlite", home);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE legacy(x); PRAGMA user_version = 0", NULL, NULL, NULL);
    sqlite3_close(db);
    snprintf(p, sizeof p, "%s/lcm/bad.sqlite", home);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs("these bytes are no SQLite database at all, not even close to one, and longer than 100 bytes .......", fp);
    fclose(fp);
}

typedef struct seen {
    char names[8][16];
    size_t n;
    const char *stop_at;       /* return `stop` at this store */
    int stop;
    store *kept;               /* a store the callback took */
    const char *keep;          /* take this one */
} seen;

static int remember(void *cb, const catalog_entry *e, size_t i, store **s, char **err)
{
    seen *x = cb;
    (void)i;
    assert_non_null(*s);
    if (strcmp(e->name, "old") != 0) assert_true(store_message_count(*s) >= 0); /* open and readable */
    snprintf(x->names[x->n++], sizeof x->names[0], "%s", e->name);
    if (x->keep && strcmp(e->name, x->keep) == 0) {
        x->kept = *s;
        *s = NULL;
    }
    if (x->stop_at && strcmp(e->name, x->stop_at) == 0) {
        if (x->stop == LC_INVALID) return lc_errf(err, LC_INVALID, "refused at %s", e->name);
        return x->stop;
    }
    return LC_OK;
}

static const catalog_filter newest = {.order = CATALOG_NEWEST_FIRST};

static void test_walk_hands_over_sound_stores_and_counts_the_rest(void **state)
{
    (void)state;
    if (store_q_pg()) return; /* files: a damaged one and an old schema */
    make_home();
    seen x = {0};
    catalog_counts c;
    char *err = NULL;
    assert_int_equal(catalog_each(home, &newest, CATALOG_ANSWERS, remember, &x, &c, &err), LC_OK);
    assert_int_equal(x.n, 3);
    assert_string_equal(x.names[0], "c");
    assert_string_equal(x.names[2], "a");
    assert_int_equal(c.listed, 5);
    assert_int_equal(c.opened, 3);
    assert_int_equal(c.damaged, 1);
    assert_int_equal(c.older, 1);
    assert_int_equal(c.newer, 0);
    assert_int_equal(c.unreached, 0);
    /* Asked for every schema: the older store is handed over too, the damaged one never. */
    memset(&x, 0, sizeof x);
    assert_int_equal(catalog_each(home, &newest, CATALOG_ANY_SCHEMA, remember, &x, &c, &err), LC_OK);
    assert_int_equal(x.n, 4);
    assert_int_equal(c.opened, 4);
    assert_int_equal(c.older, 0);
    assert_int_equal(c.damaged, 1);
    free(err);
}

static void test_a_stop_says_where_the_walk_ended(void **state)
{
    (void)state;
    make_store("a", "1000");
    make_store("b", "2000");
    make_store("c", "3000");
    catalog_list l = {0};
    catalog_counts c;
    char *err = NULL;
    assert_int_equal(catalog_list_stores(home, &newest, &l, &err), LC_OK);
    assert_int_equal(l.n, 3);
    /* Stopped after b: a is not reached. */
    seen x = {.stop_at = "b", .stop = CATALOG_STOP};
    assert_int_equal(catalog_walk(&l, 0, CATALOG_ANSWERS, remember, &x, &c, &err), LC_OK);
    assert_int_equal(x.n, 2);
    assert_int_equal(c.opened, 2);
    assert_int_equal(c.unreached, 1);
    assert_int_equal(c.next, 2);
    /* Stopped before b (a bound ran out): b and a are not reached. */
    x = (seen){.stop_at = "b", .stop = CATALOG_STOP_BEFORE};
    assert_int_equal(catalog_walk(&l, 0, CATALOG_ANSWERS, remember, &x, &c, &err), LC_OK);
    assert_int_equal(c.opened, 1);
    assert_int_equal(c.unreached, 2);
    assert_int_equal(c.next, 1);
    assert_string_equal(l.v[c.next].name, "b");
    /* Resumed there: b and a. */
    x = (seen){0};
    assert_int_equal(catalog_walk(&l, c.next, CATALOG_ANSWERS, remember, &x, &c, &err), LC_OK);
    assert_int_equal(x.n, 2);
    assert_string_equal(x.names[0], "b");
    assert_int_equal(c.listed, 2);
    assert_int_equal(c.unreached, 0);
    catalog_list_free(&l);
    free(err);
}

static void test_a_callback_error_is_the_walk_result(void **state)
{
    (void)state;
    make_store("a", "1000");
    make_store("b", "2000");
    seen x = {.stop_at = "b", .stop = LC_INVALID};
    catalog_counts c;
    char *err = NULL;
    assert_int_equal(catalog_each(home, &newest, CATALOG_ANSWERS, remember, &x, &c, &err), LC_INVALID);
    assert_string_equal(err, "refused at b");
    assert_int_equal(x.n, 1);
    assert_int_equal(c.unreached, 1);
    free(err);
}

static void test_a_store_the_callback_takes_is_its_own(void **state)
{
    (void)state;
    make_store("a", "1000");
    make_store("b", "2000");
    seen x = {.keep = "a"};
    char *err = NULL;
    assert_int_equal(catalog_each(home, &newest, CATALOG_ANSWERS, remember, &x, NULL, &err), LC_OK);
    /* Still open after the walk: the walk did not close it (ASan sees a double close or a leak). */
    assert_non_null(x.kept);
    assert_int_equal(store_message_count(x.kept), 0);
    store_close(x.kept);
    free(err);
}

static void test_a_home_without_stores_walks_nothing(void **state)
{
    (void)state;
    seen x = {0};
    catalog_counts c;
    char *err = NULL;
    assert_int_equal(catalog_each(home, NULL, CATALOG_ANSWERS, remember, &x, &c, &err), LC_OK);
    assert_int_equal(x.n, 0);
    assert_int_equal(c.listed, 0);
    free(err);
}

TEST_MAIN(
    HOME_TEST(test_walk_hands_over_sound_stores_and_counts_the_rest),
    HOME_TEST(test_a_stop_says_where_the_walk_ended),
    HOME_TEST(test_a_callback_error_is_the_walk_result),
    HOME_TEST(test_a_store_the_callback_takes_is_its_own),
    HOME_TEST(test_a_home_without_stores_walks_nothing),
)
