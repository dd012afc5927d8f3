/*
 * test_recall_scope.c -- the cross-session scope policy (recall_scope_parse / _check) and
 * the fleet scope on the embedded store: refused without "fleetRecall": true in lcm.json,
 * allowed with it, reading every store of the home and saying the store is not shared.
 * Real SQLite stores in a temp home.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "recall.h"
#include "store.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

#include "temp_home.h"

static void put_store(const char *sid, const char *cwd, const char *entry, const char *text)
{
    store *s = NULL;
    char *err = NULL;
    assert_int_equal(store_open(home, sid, cwd, &s, &err), LC_OK);
    char *json = lc_asprintf("{\"role\":\"user\",\"content\":\"%s\",\"timestamp\":5}", text);
    store_msg m = {entry, json, strlen(json), NULL};
    assert_int_equal(store_ingest(s, &m, 1, NULL, &err), LC_OK);
    free(json);
    store_close(s);
}

static void write_config(const char *text)
{
    char *path = lc_asprintf("%s/lcm.json", home);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(path);
}

static void test_scope_words_parse_and_an_unknown_word_is_refused(void **state)
{
    (void)state;
    static const char *const words[] = {"session", "sessions", "all_sessions", "fleet"};
    recall_scope sc;
    char *err = NULL;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(recall_scope_parse(words[i], &sc, &err), LC_OK);
        assert_string_equal(recall_scope_name(sc), words[i]);
    }
    assert_int_equal(recall_scope_parse("everything", &sc, &err), LC_INVALID);
    expect_has(err, "fleet", "everything");
    free(err);
}

static void test_fleet_scope_refused_without_setting(void **state)
{
    (void)state;
    char *err = NULL;
    /* No lcm.json at all: refused, naming the setting. */
    assert_int_equal(recall_scope_check(home, RECALL_SCOPE_FLEET, &err), LC_INVALID);
    assert_non_null(strstr(err, "\"fleetRecall\": true"));
    free(err);
    err = NULL;
    /* The home's own scopes need no setting. */
    assert_int_equal(recall_scope_check(home, RECALL_SCOPE_SESSIONS, &err), LC_OK);
    assert_int_equal(recall_scope_check(home, RECALL_SCOPE_ALL_SESSIONS, &err), LC_OK);
    /* Set to false, or to a string: still refused. */
    write_config("{\"fleetRecall\": false}\n");
    assert_int_equal(recall_scope_check(home, RECALL_SCOPE_FLEET, &err), LC_INVALID);
    free(err);
    err = NULL;
    write_config("{\"fleetRecall\": \"yes\"}\n");
    assert_int_equal(recall_scope_check(home, RECALL_SCOPE_FLEET, &err), LC_INVALID);
    free(err);
}

static void test_fleet_scope_allowed_with_setting_reads_every_store_and_says_not_shared(void **state)
{
    (void)state;
    put_store("fa", "/proj/one", "e1", "fleetneedle one");
    put_store("fb", "/proj/two", "e2", "fleetneedle two");
    put_store("cur", "/proj/one", "e3", "fleetneedle current");
    write_config("{\"fleetRecall\": true}\n");
    char *err = NULL;
    assert_int_equal(recall_scope_check(home, RECALL_SCOPE_FLEET, &err), LC_OK);
    recall_grep_opts o = {.query = "fleetneedle"};
    recall_result r;
    assert_int_equal(recall_grep_sessions(home, "cur", "/proj/one", RECALL_SCOPE_FLEET, &o, &r, &err), LC_OK);
    assert_int_equal(r.n, 2); /* both other stores, whatever their project; the current left out */
    assert_int_equal(r.shared, 0);
    char *text = recall_grep_format(&o, RECALL_SCOPE_FLEET, &r);
    expect_has(text, "(fleet)", "not shared", "past session fa", "past session fb");
    free(text);
    recall_result_free(&r);
    /* scope sessions keeps to the project: only fa. */
    assert_int_equal(recall_grep_sessions(home, "cur", "/proj/one", RECALL_SCOPE_SESSIONS, &o, &r, &err), LC_OK);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.hits[0].session_id, "fa");
    recall_result_free(&r);
}

static void test_catalog_all_homes_on_the_embedded_store_lists_this_home_unshared(void **state)
{
    (void)state;
    put_store("ca", "/p", "e1", "x");
    put_store("cb", "/q", "e2", "y");
    catalog_filter f = {.all_homes = 1};
    catalog_list l;
    char *err = NULL;
    assert_int_equal(catalog_list_stores(home, &f, &l, &err), LC_OK);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.shared, 0);
    catalog_list_free(&l);
}

TEST_MAIN(
    HOME_TEST(test_scope_words_parse_and_an_unknown_word_is_refused),
    HOME_TEST(test_fleet_scope_refused_without_setting),
    HOME_TEST(test_fleet_scope_allowed_with_setting_reads_every_store_and_says_not_shared),
    HOME_TEST(test_catalog_all_homes_on_the_embedded_store_lists_this_home_unshared),
)
