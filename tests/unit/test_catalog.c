/*
 * test_catalog.c -- the stores under an agent home: the listing and its filters (all but
 * one session, one project's cwd, older schema), both orders, counts, a damaged file
 * listed but not opened, opening by session id read-only (nothing created) and
 * read-write (migrated), and retiring a store with its log files.
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

#include <sqlite3.h>

#include "catalog.h"
#include "store.h"
#include "store_q.h"
#include "util.h"
#include "test_main.h"

#include "temp_home.h"

/* A store for `sid` in `cwd` holding `n` messages, created at `created` (ms). */
static void make_store(const char *sid, const char *cwd, int n, const char *created)
{
    store *s = NULL;
    char *err = NULL, id[32], json[96];
    assert_int_equal(store_open(home, sid, cwd, &s, &err), LC_OK);
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "%s-%d", sid, i);
        snprintf(json, sizeof json, "{\"role\":\"user\",\"content\":\"m%d\",\"timestamp\":%d}", i, i + 1);
        store_msg m = {id, json, strlen(json), NULL};
        assert_int_equal(store_ingest(s, &m, 1, NULL, &err), LC_OK);
    }
    assert_int_equal(store_meta_put(s, "created", created, &err), LC_OK);
    store_close(s);
}

static void write_file(const char *name, const char *bytes)
{
    char p[400];
    snprintf(p, sizeof p, "%s/lcm", home);
    mkdir(p, 0700); /* there already, unless the stores are a database's (LCM_STORE_URL) */
    snprintf(p, sizeof p, "%s/lcm/%s", home, name);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(bytes, fp);
    fclose(fp);
}

/* The home's stores that filter f (NULL: all) lets through; there must be n of them. */
static catalog_list listed(const catalog_filter *f, size_t n)
{
    catalog_list l;
    char *err = NULL;
    assert_int_equal(catalog_list_stores(home, f, &l, &err), LC_OK);
    assert_int_equal(l.n, n);
    return l;
}

static void test_lists_every_store_by_name_with_its_meta(void **state)
{
    (void)state;
    catalog_list l = listed(NULL, 0); /* no folder yet */
    make_store("b", "/p/one", 2, "2000");
    make_store("a", "/p/two", 1, "1000");
    make_store("c", "/p/one", 0, "3000");
    write_file("notes.txt", "not a store");
    l = listed(NULL, 3);
    assert_string_equal(l.v[0].name, "a");
    assert_string_equal(l.v[1].name, "b");
    assert_string_equal(l.v[2].name, "c");
    assert_string_equal(l.v[1].session_id, "b");
    assert_string_equal(l.v[1].cwd, "/p/one");
    assert_int_equal(l.v[1].created, 2000);
    assert_int_equal(l.v[1].schema_version, STORE_SCHEMA_VERSION);
    assert_null(l.v[1].damaged);
    assert_true(l.v[1].bytes > 0 || store_q_pg());
    assert_int_equal(l.v[1].messages, -1); /* not asked for */
    /* A file's size and path: a SQLite store's (a session of the shared store has a row
     * set in a database, named by the database's URI and the session's key). */
    if (store_q_pg()) {
        assert_non_null(strstr(l.v[1].path, "#"));
        catalog_list_free(&l);
        return;
    }
    char want[400];
    snprintf(want, sizeof want, "%s/lcm/b.sqlite", home);
    assert_string_equal(l.v[1].path, want);
    catalog_list_free(&l);
}

/* A listing remembers what it read of each file (catalog.c): a meta value written since, by
 * a connection still open (the value is in the WAL) or closed, and a store made again are
 * seen by the next listing. */
static void test_a_listing_sees_what_changed_since_the_last(void **state)
{
    (void)state;
    char *err = NULL;
    make_store("a", "/p/one", 1, "1000");
    catalog_list l = listed(NULL, 1);
    assert_null(l.v[0].session_file);
    catalog_list_free(&l);
    store *s = NULL;
    assert_int_equal(store_open(home, "a", "/p/one", &s, &err), LC_OK);
    assert_int_equal(store_meta_put(s, "session_file", "/x/one.jsonl", &err), LC_OK);
    l = listed(NULL, 1);
    assert_string_equal(l.v[0].session_file, "/x/one.jsonl");
    catalog_list_free(&l);
    assert_int_equal(store_meta_put(s, "session_file", "/x/two.jsonl", &err), LC_OK);
    store_close(s);
    l = listed(NULL, 1);
    assert_string_equal(l.v[0].session_file, "/x/two.jsonl");
    catalog_list_free(&l);
    if (!store_q_pg()) {
        char p[400];
        snprintf(p, sizeof p, "%s/lcm/a.sqlite", home);
        assert_int_equal(unlink(p), 0);
        make_store("a", "/p/three", 1, "2000");
        l = listed(NULL, 1);
        assert_string_equal(l.v[0].cwd, "/p/three");
        assert_int_equal(l.v[0].created, 2000);
        assert_null(l.v[0].session_file);
        catalog_list_free(&l);
    }
}

static void test_filters_order_and_counts(void **state)
{
    (void)state;
    make_store("b", "/p/one", 2, "2000");
    make_store("a", "/p/two", 1, "1000");
    make_store("c", "/p/one", 0, "3000");
    catalog_filter f = {.except_session = "c", .order = CATALOG_NEWEST_FIRST};
    catalog_list l = listed(&f, 2);
    assert_string_equal(l.v[0].name, "b");
    assert_string_equal(l.v[1].name, "a");
    catalog_list_free(&l);
    catalog_filter g = {.cwd = "/p/one", .counts = 1, .order = CATALOG_NEWEST_FIRST};
    l = listed(&g, 2);
    assert_string_equal(l.v[0].name, "c");
    assert_string_equal(l.v[1].name, "b");
    assert_int_equal(l.v[0].messages, 0);
    assert_int_equal(l.v[1].messages, 2);
    assert_int_equal(l.v[1].summaries, 0);
    assert_true(l.v[1].db_bytes > 0);
    catalog_list_free(&l);
}

static void test_older_and_damaged_stores(void **state)
{
    (void)state;
    char p[400];
    /* Files: an old SQLite schema, bytes that are no SQLite database. */
    if (store_q_pg()) return;
    make_store("new", "/p", 1, "1000");
    snprintf(p, sizeof p, "%s/lcm/old.sqlite", home);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE legacy(x); PRAGMA user_version = 0", NULL, NULL, NULL);
    sqlite3_close(db);
    write_file("bad.sqlite", "these bytes are no SQLite database at all, not even close to one, and longer than 100 bytes .......");
    catalog_list l = listed(NULL, 3);
    assert_string_equal(l.v[0].name, "bad");
    assert_non_null(l.v[0].damaged);
    assert_int_equal(l.v[0].schema_version, -1);
    assert_string_equal(l.v[0].session_id, "bad"); /* the file name when no meta was read */
    assert_string_equal(l.v[2].name, "old");
    assert_int_equal(l.v[2].schema_version, 0);
    assert_null(l.v[2].cwd);
    catalog_list_free(&l);
    catalog_filter f = {.older_schema = 1};
    l = listed(&f, 1);
    assert_string_equal(l.v[0].name, "old");
    catalog_list_free(&l);
}

static void test_open_by_session_id(void **state)
{
    (void)state;
    char *err = NULL, p[400];
    store *s = NULL;
    int v = -1;
    struct stat sb;
    assert_int_equal(catalog_open(home, "../x", CATALOG_READ, &s, &v, &err), LC_INVALID);
    assert_int_equal(catalog_open(home, "absent", CATALOG_READ, &s, &v, &err), LC_NOTFOUND);
    assert_null(s);
    snprintf(p, sizeof p, "%s/lcm/absent.sqlite", home);
    assert_int_not_equal(stat(p, &sb), 0); /* a read creates nothing */
    assert_int_equal(catalog_open(home, "made", CATALOG_WRITE, &s, &v, &err), LC_OK);
    assert_int_equal(v, STORE_SCHEMA_VERSION);
    store_close(s);
    s = NULL;
    assert_int_equal(catalog_open(home, "made", CATALOG_READ, &s, &v, &err), LC_OK);
    assert_int_equal(v, STORE_SCHEMA_VERSION);
    assert_int_not_equal(store_meta_put(s, "x", "y", &err), LC_OK); /* read-only */
    store_close(s);
    free(err);
}

static void test_retire_deletes_the_store_and_its_logs(void **state)
{
    (void)state;
    char *err = NULL, p[400];
    /* A store's files and their logs. */
    if (store_q_pg()) return;
    make_store("gone", "/p", 1, "1000");
    write_file("gone.sqlite-wal", "");
    write_file("gone.sqlite-shm", "");
    make_store("kept", "/p", 1, "1000");
    catalog_list l = listed(NULL, 2);
    assert_int_equal(catalog_retire(&l.v[0], &err), LC_OK);
    assert_int_not_equal(access(l.v[0].path, F_OK), 0);
    snprintf(p, sizeof p, "%s-wal", l.v[0].path);
    assert_int_not_equal(access(p, F_OK), 0);
    snprintf(p, sizeof p, "%s-shm", l.v[0].path);
    assert_int_not_equal(access(p, F_OK), 0);
    assert_int_equal(access(l.v[1].path, F_OK), 0);
    assert_int_not_equal(catalog_retire(&l.v[0], &err), LC_OK); /* already gone: said so */
    catalog_list_free(&l);
    free(err);
}

TEST_MAIN(
    HOME_TEST(test_lists_every_store_by_name_with_its_meta),
    HOME_TEST(test_a_listing_sees_what_changed_since_the_last),
    HOME_TEST(test_filters_order_and_counts),
    HOME_TEST(test_older_and_damaged_stores),
    HOME_TEST(test_open_by_session_id),
    HOME_TEST(test_retire_deletes_the_store_and_its_logs),
)
