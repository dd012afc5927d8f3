/* test_store_bulk.c -- a bulk ingest (store_bulk_begin .. store_bulk_commit, what `lcm
 * import` runs its batches in) leaves the store exactly as batch-by-batch ingest does: the
 * same rows, the same DAG progress numbers (the insert trigger's work applied once at the
 * commit, also for a branch whose ordinals fall below the watermark), every message
 * searchable, the trigger working again afterwards; and a batch that fails inside it fails
 * the commit with nothing of the bulk kept. A bulk into an empty store writes through a
 * rollback journal instead of the WAL (each page once) and leaves the store in WAL: after
 * its close, with another connection opened between its commits, and after a crash inside
 * it, which keeps what the earlier commits wrote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "store.h"
#include "store_sqlite.h"
#include "util.h"

#include "store_q.h"
#include "temp_dir.h"

typedef struct fx {
    char home[2][64];
    store *st[2]; /* 0: batch by batch, 1: bulk */
} fx;

static int fx_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    for (int k = 0; k < 2; k++) {
        temp_dir_make(f->home[k], sizeof f->home[k], "/tmp/lc-bulk-XXXXXX");
        assert_int_equal(store_open(f->home[k], "sess", "/w", &f->st[k], NULL), LC_OK);
    }
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx *f = *state;
    int rc = 0;
    for (int k = 0; k < 2; k++) {
        store_close(f->st[k]);
        rc |= temp_dir_remove(f->home[k]);
    }
    free(f);
    return rc;
}

typedef struct batch {
    char ids[64][16];
    char *json[64];
    size_t n;
} batch;

/* Messages <prefix>NN from..to-1, user/assistant alternating, the first one optionally
 * an entry already stored (its id only: where the branch forks). */
static void batch_make(batch *b, const char *fork, const char *prefix, int from, int to)
{
    memset(b, 0, sizeof *b);
    if (fork) {
        snprintf(b->ids[b->n], sizeof b->ids[b->n], "%s", fork);
        b->json[b->n++] = lc_strdup("{\"role\":\"user\",\"content\":\"fork\"}");
    }
    for (int i = from; i < to; i++) {
        char text[160];
        snprintf(text, sizeof text, "Message %s%02d names quokka_%s%02d and reports build ok.", prefix, i, prefix, i);
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", i % 2 ? "assistant" : "user");
        cJSON_AddStringToObject(m, "content", text);
        snprintf(b->ids[b->n], sizeof b->ids[b->n], "%s%02d", prefix, i);
        b->json[b->n++] = cJSON_PrintUnformatted(m);
        cJSON_Delete(m);
    }
}

static void batch_free(batch *b)
{
    for (size_t i = 0; i < b->n; i++) free(b->json[i]);
    b->n = 0;
}

static int batch_ingest(store *s, const batch *b)
{
    store_msg m[64];
    for (size_t i = 0; i < b->n; i++) m[i] = (store_msg){b->ids[i], b->json[i], strlen(b->json[i]), NULL};
    return store_ingest(s, m, b->n, NULL, NULL);
}

static char *meta(store *s, const char *key)
{
    char *v = store_meta_get(s, key);
    return v ? v : lc_strdup("(absent)");
}

/* Both stores hold the same rows and the same progress numbers, byte for byte. */
static void assert_same(fx *f)
{
    static const char *const keys[] = {"dag_watermark", "dag_pending"};
    for (size_t i = 0; i < 2; i++) {
        char *a = meta(f->st[0], keys[i]), *b = meta(f->st[1], keys[i]);
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
    static const char *const sums[] = {
        "SELECT count(*) FROM messages",
        "SELECT sum(ordinal * 7 + tokens + length(text) + length(raw_json)) FROM messages",
        "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokka*'",
    };
    for (size_t i = 0; i < 3; i++) assert_int_equal(store_q1(f->st[0], sums[i]), store_q1(f->st[1], sums[i]));
}

static void test_bulk_ingest_leaves_the_store_as_batch_by_batch_does(void **state)
{
    fx *f = *state;
    batch b;
    batch_make(&b, NULL, "a", 0, 40);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(batch_ingest(f->st[k], &b), LC_OK);
        int64_t w, p;
        /* The numbers exist from here on (the trigger keeps them); the watermark is put
         * past where a branch will fork below it, as after a pass that covered 0..29. */
        assert_int_equal(store_dag_progress(f->st[k], &w, &p, NULL), LC_OK);
        assert_int_equal(store_meta_put(f->st[k], "dag_watermark", "30", NULL), LC_OK);
    }
    batch_free(&b);
    /* Three batches: the branch goes on, forks at a09 (ordinals 10.., below the watermark),
     * and goes on there. */
    batch parts[3];
    batch_make(&parts[0], "a39", "a", 40, 52);
    batch_make(&parts[1], "a09", "b", 0, 20);
    batch_make(&parts[2], "b19", "b", 20, 30);
    for (int i = 0; i < 3; i++) assert_int_equal(batch_ingest(f->st[0], &parts[i]), LC_OK);
    assert_int_equal(store_bulk_begin(f->st[1], NULL), LC_OK);
    for (int i = 0; i < 3; i++) assert_int_equal(batch_ingest(f->st[1], &parts[i]), LC_OK);
    assert_int_equal(store_bulk_commit(f->st[1], NULL), LC_OK);
    assert_same(f);
    char *w = meta(f->st[1], "dag_watermark");
    assert_string_equal(w, "10");
    free(w);
    assert_int_equal(store_q1(f->st[1], "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokka_b25'"), 1);
    for (int i = 0; i < 3; i++) batch_free(&parts[i]);
    /* After the commit the trigger counts arrivals again. */
    batch_make(&b, "b29", "b", 30, 34);
    for (int k = 0; k < 2; k++) assert_int_equal(batch_ingest(f->st[k], &b), LC_OK);
    assert_same(f);
    batch_free(&b);
}

static void test_failed_batch_in_a_bulk_keeps_nothing_of_it(void **state)
{
    fx *f = *state;
    store *s = f->st[1];
    batch b;
    batch_make(&b, NULL, "a", 0, 10);
    assert_int_equal(batch_ingest(s, &b), LC_OK);
    batch_free(&b);
    assert_int_equal(store_bulk_begin(s, NULL), LC_OK);
    batch_make(&b, "a09", "a", 10, 20);
    assert_int_equal(batch_ingest(s, &b), LC_OK);
    batch_free(&b);
    batch_make(&b, "a19", "a", 20, 24);
    free(b.json[3]);
    b.json[3] = lc_strdup("{\"role\":\"user\",\"content\":"); /* not JSON */
    assert_int_not_equal(batch_ingest(s, &b), LC_OK);
    batch_free(&b);
    char *err = NULL;
    assert_int_not_equal(store_bulk_commit(s, &err), LC_OK);
    assert_non_null(err);
    free(err);
    store_tx_rollback(s);
    assert_int_equal(store_message_count(s), 10);
    assert_int_equal(store_q1(s, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokka*'"), 10);
    /* The store goes on as before: the same batch plainly, then found. */
    batch_make(&b, "a09", "a", 10, 20);
    assert_int_equal(batch_ingest(s, &b), LC_OK);
    batch_free(&b);
    assert_int_equal(store_message_count(s), 20);
}

/* The connection's journal mode ("wal", "delete"). */
static const char *journal(store *s)
{
    static char mode[16];
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(store_db(s), "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(mode, sizeof mode, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return mode;
}

static long long file_bytes(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

static void bulk_one(store *s, const char *fork, const char *prefix, int from, int to)
{
    batch b;
    batch_make(&b, fork, prefix, from, to);
    assert_int_equal(store_bulk_begin(s, NULL), LC_OK);
    assert_int_equal(batch_ingest(s, &b), LC_OK);
    assert_int_equal(store_bulk_commit(s, NULL), LC_OK);
    batch_free(&b);
}

static void test_bulk_into_empty_store_writes_no_log_and_leaves_wal(void **state)
{
    fx *f = *state;
    store *s = f->st[1];
    char wal[512];
    snprintf(wal, sizeof wal, "%s-wal", store_path(s));
    bulk_one(s, NULL, "a", 0, 30);
    assert_string_equal(journal(s), "delete");
    assert_true(file_bytes(wal) <= 0);
    bulk_one(s, "a29", "a", 30, 60); /* the next bulk of the same import: still no log */
    assert_string_equal(journal(s), "delete");
    assert_true(file_bytes(wal) <= 0);
    store_close(s);
    f->st[1] = NULL;
    assert_int_equal(store_open(f->home[1], "sess", "/w", &f->st[1], NULL), LC_OK);
    s = f->st[1];
    assert_string_equal(journal(s), "wal");
    assert_int_equal(store_message_count(s), 60);
    assert_int_equal(store_q1(s, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokka*'"), 60);
    /* A store that holds messages keeps its WAL through a bulk (its readers are served). */
    bulk_one(s, "a59", "a", 60, 70);
    assert_string_equal(journal(s), "wal");
    assert_int_equal(store_message_count(s), 70);
}

/* A plugin or hook opening the store between an import's commits: it opens (in WAL, as
 * every open asks), both see every row, and the import goes on in WAL. */
static void test_store_opened_between_empty_bulk_commits_sees_every_row(void **state)
{
    fx *f = *state;
    store *s = f->st[1], *other = NULL;
    bulk_one(s, NULL, "a", 0, 30);
    assert_string_equal(journal(s), "delete");
    assert_int_equal(store_open(f->home[1], "sess", "/w", &other, NULL), LC_OK);
    assert_string_equal(journal(other), "wal");
    assert_int_equal(store_message_count(other), 30);
    bulk_one(s, "a29", "a", 30, 60);
    assert_string_equal(journal(s), "wal");
    assert_int_equal(store_message_count(other), 60);
    assert_int_equal(store_q1(other, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokka*'"), 60);
    store_close(other);
    assert_int_equal(store_q1(s, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
}

/* An import killed inside its second bulk (no commit, no close): the next open rolls the
 * journal back, keeps the first bulk's rows whole and is in WAL. */
static void test_crash_inside_empty_store_bulk_keeps_committed_rows(void **state)
{
    fx *f = *state;
    store_close(f->st[1]);
    f->st[1] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        store *s = NULL;
        if (store_open(f->home[1], "sess", "/w", &s, NULL) != LC_OK) _exit(1);
        batch b;
        batch_make(&b, NULL, "a", 0, 30);
        if (store_bulk_begin(s, NULL) != LC_OK || batch_ingest(s, &b) != LC_OK || store_bulk_commit(s, NULL) != LC_OK)
            _exit(2);
        batch_free(&b);
        batch_make(&b, "a29", "a", 30, 60);
        if (store_bulk_begin(s, NULL) != LC_OK || batch_ingest(s, &b) != LC_OK) _exit(3);
        /* Its held-back index rows and pages reach the file before the end. */
        if (sqlite3_exec(store_db(s), "PRAGMA cache_spill=1; PRAGMA cache_size=1", NULL, NULL, NULL) != SQLITE_OK)
            _exit(4);
        batch_make(&b, "a59", "a", 60, 64);
        if (batch_ingest(s, &b) != LC_OK) _exit(5);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/lcm/sess.sqlite-journal", f->home[1]);
    assert_true(file_bytes(path) > 0); /* a hot journal: the open below rolls it back */
    assert_int_equal(store_open(f->home[1], "sess", "/w", &f->st[1], NULL), LC_OK);
    store *s = f->st[1];
    assert_string_equal(journal(s), "wal");
    assert_int_equal(store_message_count(s), 30);
    assert_int_equal(store_q1(s, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokka*'"), 30);
    assert_int_equal(store_q1(s, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
    /* The import run again completes the store. */
    bulk_one(s, "a29", "a", 30, 60);
    assert_int_equal(store_message_count(s), 60);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bulk_ingest_leaves_the_store_as_batch_by_batch_does, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_failed_batch_in_a_bulk_keeps_nothing_of_it, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_bulk_into_empty_store_writes_no_log_and_leaves_wal, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_store_opened_between_empty_bulk_commits_sees_every_row, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_crash_inside_empty_store_bulk_keeps_committed_rows, fx_setup,
                                        fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
