/*
 * test_admin.c -- engine/lcm/admin.c over a real store: status, compact (extractive: every
 * message covered, progress reported up to the total), doctor, export and heal return
 * their texts and --json fields; a settings value is required; a missing store is a
 * status-1 result, not an error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "store.h"
#include "summarize.h"
#include "util.h"

#include "temp_home.h"

#define NMSG 40

typedef struct seen {
    long long last_done, last_total;
    int calls;
} seen;

static void on_progress(void *ud, long long done, long long total)
{
    seen *s = ud;
    assert_true(done <= total);
    assert_true(done >= s->last_done);
    s->last_done = done;
    s->last_total = total;
    s->calls++;
}

static store *make_store(const char *sid)
{
    store *s = NULL;
    char *err = NULL;
    store_msg m[NMSG];
    char ids[NMSG][16], *json[NMSG];
    assert_int_equal(store_open(home, sid, "/work/proj", &s, &err), LC_OK);
    for (int i = 0; i < NMSG; i++) {
        snprintf(ids[i], sizeof ids[i], "e%d", i);
        json[i] = lc_asprintf("{\"role\":\"user\",\"content\":\"message %d about the parser and the cache, "
                              "with enough words to be worth a summary line\",\"timestamp\":%d}", i, i + 1);
        m[i] = (store_msg){ids[i], json[i], strlen(json[i]), NULL};
    }
    assert_int_equal(store_ingest(s, m, NMSG, NULL, &err), LC_OK);
    for (int i = 0; i < NMSG; i++) free(json[i]);
    return s;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void test_admin_verbs(void **state)
{
    (void)state;
    lcm_config cfg;
    char *err = NULL;
    assert_int_equal(lcm_config_defaults(&cfg), LC_OK);
    cfg.leaf_chunk_tokens = 100; /* several leaves from a small store */
    store *st = make_store("s1");
    seen sn = {0};
    admin_env env = {.cmd = "lcm", .home = home, .session_id = "s1", .st = st, .cfg = &cfg,
                     .window_effective = LC_WINDOW_DEFAULT, .progress = on_progress, .progress_ud = &sn};
    admin_result r = {0};

    assert_int_equal(admin_status(&env, &r, &err), LC_OK);
    assert_int_equal((int)num(r.json, "messages"), NMSG);
    assert_int_equal((int)num(r.json, "summaries"), 0);
    assert_non_null(strstr(r.text, "LCM: 40 messages, 0 summaries"));
    admin_result_free(&r);

    static const char *const chain[] = {SUMM_EXTRACTIVE};
    summ_config scfg = {.chain = chain, .n_chain = 1};
    summ_ctx *sc = NULL;
    assert_int_equal(summ_create(&scfg, &sc, &err), LC_OK);
    assert_int_equal(admin_compact(&env, sc, 0, &r, &err), LC_OK);
    assert_int_equal(r.status, 0);
    assert_true(num(r.json, "leaves") >= 2);
    assert_int_equal((int)num(r.json, "uncovered"), 0);
    assert_true(num(r.json, "summaries") >= num(r.json, "leaves"));
    assert_true(sn.calls >= 2);
    assert_int_equal(sn.last_done, sn.last_total);
    assert_int_equal(sn.last_total, NMSG);
    admin_result_free(&r);

    assert_int_equal(admin_doctor(&env, 0, &r, &err), LC_OK);
    assert_int_equal(r.status, 0);
    assert_int_equal((int)num(r.json, "faults"), 0);
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r.json, "checks")));
    assert_non_null(strstr(r.text, "faults: 0\n"));
    admin_result_free(&r);

    char *path = lc_asprintf("%s/out.jsonl", home);
    sn = (seen){0};
    assert_int_equal(admin_export(&env, path, &r, &err), LC_OK);
    assert_int_equal(sn.last_done, NMSG);
    assert_int_equal((int)num(r.json, "messages"), NMSG);
    assert_true(num(r.json, "rows") > NMSG);
    admin_result_free(&r);
    free(path);

    assert_int_equal(admin_heal(&env, sc, 0, 0, &r, &err), LC_OK);
    assert_int_equal(r.status, 0);
    assert_int_equal((int)num(r.json, "candidates"), 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(r.json, "error"));
    admin_result_free(&r);

    lcm_config ncfg = {0};
    assert_int_equal(admin_settings_set(&env, "swapAtRatio", "  ", &ncfg, &r, &err), LC_OK);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.text, "give a value"));
    admin_result_free(&r);

    /* No store: a result to show, with the reason */
    env.st = NULL;
    env.no_store_why = "busy";
    assert_int_equal(admin_backup(&env, &r, &err), LC_OK);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.text, "lcm: the store is not open (busy)");
    admin_result_free(&r);

    summ_free(sc);
    store_close(st);
    lcm_config_free(&cfg);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HOME_TEST(test_admin_verbs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
