/*
 * test_maint.c -- store maintenance on real SQLite files: doctor finds each class of planted
 * corruption and --repair fixes it, the dead-writer rule, online backup consistent under a
 * concurrent writer, verbatim export/import, import refused during a pass, gc that never
 * deletes without a written export, migrate of an older store, and a diagnose block with no
 * body, summary, query, secret or outside path, within 8 KB.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "maint.h"
#include "maint_diag.h"
#include "metrics.h"
#include "store.h"
#include "util.h"

#include "expect_text.h"
#include "store_q.h"
#include "temp_home.h"

#define NMSG 6
static const char *const msgs[NMSG][2] = {
    {"e1", "{\"role\":\"user\",\"content\":\"BODYNEEDLE alpha \\\"quoted\\\" tab\\t and \\u0001 ctl\",\"timestamp\":1}"},
    {"e2", "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"unicode \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 beta\"}],\"timestamp\":2}"},
    {"e3", "{\"role\":\"user\",\"content\":\"gamma\\nline two\",\"timestamp\":3}"},
    {"e4", "{\"role\":\"user\",\"content\":\"delta\",\"timestamp\":4}"},
    {"e5", "{\"role\":\"user\",\"content\":\"epsilon\",\"timestamp\":5}"},
    {"e6", "{\"role\":\"user\",\"content\":\"zeta tail\",\"timestamp\":6}"},
};

typedef struct dag3 {
    int64_t a, b, c; /* leaf e1-e3, leaf e4-e5, condensed over both */
} dag3;

/* A store with six messages, two leaves and a condensed node over them. */
static store *make_store(const char *sid, dag3 *d)
{
    store *s = NULL;
    char *err = NULL;
    assert_int_equal(store_open(home, sid, "/work/proj", &s, &err), LC_OK);
    store_msg m[NMSG];
    for (int i = 0; i < NMSG; i++) {
        m[i] = (store_msg){msgs[i][0], msgs[i][1], strlen(msgs[i][1]), NULL};
    }
    assert_int_equal(store_ingest(s, m, NMSG, NULL, &err), LC_OK);
    const char *l1[] = {"e1", "e2", "e3"}, *l2[] = {"e4", "e5"};
    store_summary a = {"leaf", 0, "SUMMARYNEEDLE first leaf", NULL, 10, l1, 3, NULL, 0};
    store_summary b = {"leaf", 0, "second leaf", NULL, 10, l2, 2, NULL, 0};
    dag3 x;
    assert_int_equal(store_summary_add(s, &a, &x.a, &err), LC_OK);
    assert_int_equal(store_summary_add(s, &b, &x.b, &err), LC_OK);
    int64_t kids[] = {x.a, x.b};
    store_summary c = {"condensed", 1, "both leaves", NULL, 5, NULL, 0, kids, 2};
    assert_int_equal(store_summary_add(s, &c, &x.c, &err), LC_OK);
    if (d) *d = x;
    return s;
}

/* Run the SQL that the format and its arguments make, behind the engine's back. */
static void sql(store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sql(store *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *q = NULL;
    int n = vasprintf(&q, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    char *msg = NULL;
    int rc = sqlite3_exec(store_db(s), q, NULL, NULL, &msg);
    if (rc != SQLITE_OK) fail_msg("%s: %s", q, msg);
    free(q);
}

/* How many summaries have the id (0 or 1). */
static int64_t summaries_with_id(store *s, int64_t id)
{
    char q[80];
    snprintf(q, sizeof q, "SELECT count(*) FROM summaries WHERE id = %lld", (long long)id);
    return store_q1(s, q);
}

/* Whether the store file of session `sid` is in the home. */
static int store_file_exists(const char *sid)
{
    char p[400];
    snprintf(p, sizeof p, "%s/lcm/%s.sqlite", home, sid);
    return access(p, F_OK) == 0;
}

static int64_t check_count(store *s, const char *name)
{
    maint_report r;
    char *err = NULL;
    assert_int_equal(maint_doctor(s, getpid(), &r, &err), LC_OK);
    int64_t n = -1;
    for (size_t i = 0; i < r.n_checks; i++)
        if (!strcmp(r.checks[i].name, name)) n = r.checks[i].count;
    maint_report_free(&r);
    return n;
}

static int64_t faults(store *s)
{
    maint_report r;
    char *err = NULL;
    assert_int_equal(maint_doctor(s, getpid(), &r, &err), LC_OK);
    int64_t n = maint_report_faults(&r);
    maint_report_free(&r);
    return n;
}

static void repair(store *s, maint_repair_stats *st)
{
    char *err = NULL;
    if (maint_repair(s, getpid(), st, &err) != LC_OK) fail_msg("repair: %s", err);
}

/* The fixture of a case on one store: make_store's store in a fresh home, and its nodes. */
typedef struct maint_fx {
    store *s;
    dag3 d;
} maint_fx;

static int dag3_setup(void **state)
{
    setup(state);
    maint_fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->s = make_store("fx", &f->d);
    *state = f;
    return 0;
}

static int dag3_teardown(void **state)
{
    maint_fx *f = *state;
    store_close(f->s);
    free(f);
    return teardown(state);
}

#define DAG3_TEST(fn) cmocka_unit_test_setup_teardown(fn, dag3_setup, dag3_teardown)

static void test_doctor_passes_a_clean_store_and_counts_unleafed_messages(void **state)
{
    maint_fx *f = *state;
    maint_report r;
    char *err = NULL;
    assert_int_equal(maint_doctor(f->s, getpid(), &r, &err), LC_OK);
    assert_int_equal(maint_report_faults(&r), 0);
    assert_int_equal(r.messages, NMSG);
    assert_int_equal(r.summaries, 3);
    assert_int_equal(r.depth_hist[0], 2);
    assert_int_equal(r.depth_hist[1], 1);
    char *text = maint_report_format(&r);
    assert_non_null(strstr(text, "fts: ok"));
    assert_non_null(strstr(text, "unleafed: 1")); /* e6, the fresh tail */
    free(text);
    maint_report_free(&r);
}

static void test_doctor_finds_an_emptied_fts_index_and_repair_rebuilds_it(void **state)
{
    maint_fx *f = *state;
    sql(f->s, "INSERT INTO messages_fts(messages_fts) VALUES('delete-all')");
    assert_int_equal(check_count(f->s, "fts"), NMSG);
    maint_repair_stats st;
    repair(f->s, &st);
    assert_true(st.fts_rebuilt);
    assert_int_equal(check_count(f->s, "fts"), 0);
    assert_int_equal(store_q1(f->s, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'epsilon'"), 1);
}

static void test_doctor_finds_a_corrupt_fts_structure_and_repair_rebuilds_it(void **state)
{
    maint_fx *f = *state;
    sql(f->s, "UPDATE summaries_fts_data SET block = x'00ff00ff' WHERE id > 10");
    assert_true(check_count(f->s, "fts") > 0);
    maint_repair_stats st;
    repair(f->s, &st);
    assert_int_equal(check_count(f->s, "fts"), 0);
    assert_int_equal(store_q1(f->s, "SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH 'leaves'"), 1);
}

static void test_repair_drops_a_summary_whose_span_entry_is_gone_and_its_parent(void **state)
{
    maint_fx *f = *state;
    sql(f->s, "DELETE FROM messages WHERE entry_id = 'e4'");
    assert_int_equal(check_count(f->s, "spans"), 1);
    maint_repair_stats st;
    repair(f->s, &st);
    assert_int_equal(st.dropped, 2); /* leaf b, and c which loses its child */
    assert_int_equal(store_q1(f->s, "SELECT count(*) FROM summaries"), 1);
    assert_int_equal(summaries_with_id(f->s, f->d.a), 1);
    assert_int_equal(faults(f->s), 0);
}

static void test_repair_drops_a_parent_whose_named_child_is_gone(void **state)
{
    maint_fx *f = *state;
    sql(f->s, "PRAGMA foreign_keys=OFF; DELETE FROM summaries WHERE id = %lld; PRAGMA foreign_keys=ON",
        (long long)f->d.b);
    assert_int_equal(check_count(f->s, "children"), 1);
    maint_repair_stats st;
    repair(f->s, &st);
    assert_true(st.dropped >= 1);
    assert_int_equal(summaries_with_id(f->s, f->d.c), 0);
    assert_int_equal(faults(f->s), 0);
}

static void test_doctor_finds_a_bad_node_shape(void **state)
{
    maint_fx *f = *state;
    sql(f->s, "UPDATE summaries SET depth = 3 WHERE id = %lld", (long long)f->d.a);
    assert_int_equal(check_count(f->s, "shape"), 2); /* a leaf at depth 3; c no deeper than its child */
}

static void test_repair_keeps_the_expandable_row_of_a_duplicate_span(void **state)
{
    maint_fx *f = *state;
    /* An older-looking twin of leaf a with no provenance: same span, cannot be expanded. */
    sql(f->s, "INSERT INTO summaries(id, kind, depth, text, tokens, created) VALUES(100, 'leaf', 0, 'twin', 3, 0);"
              "INSERT INTO summary_spans(summary_id, first_ordinal, last_ordinal, first_entry, last_entry, entry_count)"
              " SELECT 100, first_ordinal, last_ordinal, first_entry, last_entry, entry_count FROM summary_spans"
              " WHERE summary_id = 1");
    assert_int_equal(check_count(f->s, "duplicates"), 1);
    maint_repair_stats st;
    repair(f->s, &st);
    assert_int_equal(st.duplicates, 1);
    assert_int_equal(summaries_with_id(f->s, 100), 0);
    assert_int_equal(summaries_with_id(f->s, f->d.a), 1);
    assert_int_equal(faults(f->s), 0);
}

static void test_repair_removes_provenance_rows_that_break_foreign_keys(void **state)
{
    maint_fx *f = *state;
    sql(f->s, "PRAGMA foreign_keys=OFF; INSERT INTO summary_messages(summary_id, entry_id, position) VALUES(999, 'e6', 0);"
              "PRAGMA foreign_keys=ON");
    assert_int_equal(check_count(f->s, "foreign-keys"), 1);
    maint_repair_stats st;
    repair(f->s, &st);
    assert_int_equal(st.orphans, 1);
    assert_int_equal(faults(f->s), 0);
}

static void test_doctor_flags_a_schema_version_other_than_the_builds(void **state)
{
    maint_fx *f = *state;
    assert_int_equal(check_count(f->s, "schema"), 0);
    sql(f->s, "PRAGMA user_version = 1");
    assert_int_equal(check_count(f->s, "schema"), STORE_SCHEMA_VERSION == 1 ? 0 : 1);
}

static pid_t dead_pid(void)
{
    pid_t c = fork();
    if (c == 0) _exit(0);
    waitpid(c, NULL, 0);
    return c;
}

static void test_dead_writer_runs_are_reaped_but_never_ours_or_a_live_pid(void **state)
{
    maint_fx *f = *state;
    sql(f->s, "INSERT INTO runs(id, kind, pid, started) VALUES(1, 'pass', %d, 1), (2, 'pass', %d, 1),"
              " (3, 'pass', %d, 1)",
        (int)getpid(), (int)getppid(), (int)dead_pid());
    assert_int_equal(check_count(f->s, "dead-runs"), 1);
    maint_repair_stats st;
    repair(f->s, &st);
    assert_int_equal(st.reaped, 1);
    assert_int_equal(store_q1(f->s, "SELECT count(*) FROM runs WHERE finished IS NULL"), 2);
    assert_int_equal(store_q1(f->s, "SELECT count(*) FROM runs WHERE id = 3 AND status = 'reaped'"), 1);
}

/* ---- backup -------------------------------------------------------------------------------- */

typedef struct writer_arg {
    const char *path;
    _Atomic int stop;
    _Atomic int pairs;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *w = p;
    sqlite3 *db;
    sqlite3_open(w->path, &db);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS pairs(x)", NULL, NULL, NULL);
    while (!w->stop) {
        /* Rows always arrive two at a time: a snapshot holds an even count. */
        if (sqlite3_exec(db, "BEGIN IMMEDIATE; INSERT INTO pairs VALUES(randomblob(3000));"
                             "INSERT INTO pairs VALUES(randomblob(3000)); COMMIT",
                         NULL, NULL, NULL) == SQLITE_OK)
            w->pairs++;
        else
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_close(db);
    return NULL;
}

static void test_backup_is_one_consistent_snapshot_while_a_writer_runs(void **state)
{
    maint_fx *f = *state;
    sql(f->s, "CREATE TABLE pairs(x)");
    writer_arg w = {store_path(f->s), 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, writer, &w);
    while (w.pairs < 20) usleep(1000);
    char *err = NULL;
    for (int i = 0; i < 3; i++) {
        char dest[300];
        snprintf(dest, sizeof dest, "%s/backup-%d.db", home, i);
        if (maint_backup(f->s, dest, &err) != LC_OK) fail_msg("backup: %s", err);
        struct stat sb;
        assert_int_equal(stat(dest, &sb), 0);
        assert_int_equal(sb.st_mode & 0777, 0600);
        sqlite3 *b;
        assert_int_equal(sqlite3_open(dest, &b), SQLITE_OK);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(b, "SELECT (SELECT count(*) FROM pairs), (SELECT count(*) FROM messages)",
                                            -1, &st, NULL),
                         SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int64(st, 0) % 2, 0);
        assert_int_equal(sqlite3_column_int64(st, 1), NMSG);
        sqlite3_finalize(st);
        sqlite3_close(b);
        /* A backup never replaces an existing copy. */
        assert_int_not_equal(maint_backup(f->s, dest, &err), LC_OK);
        free(err);
        err = NULL;
    }
    w.stop = 1;
    pthread_join(th, NULL);
}

/* ---- export / import -------------------------------------------------------------------- */

static void test_export_then_import_restores_every_message_byte_for_byte(void **state)
{
    (void)state;
    store *s = make_store("src", NULL);
    char path[300], *err = NULL;
    int64_t rows = 0;
    snprintf(path, sizeof path, "%s/export.jsonl", home);
    assert_int_equal(maint_export(s, "src", path, &rows, &err), LC_OK);
    assert_true(rows > NMSG);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    store *t = NULL;
    assert_int_equal(store_open(home, "dst", NULL, &t, &err), LC_OK);
    int64_t in = 0;
    if (maint_import(t, path, &in, &err) != LC_OK) fail_msg("import: %s", err);
    assert_true(in >= NMSG);
    for (int i = 0; i < NMSG; i++) {
        store_row a, b;
        assert_int_equal(store_get_message(s, msgs[i][0], &a, &err), LC_OK);
        assert_int_equal(store_get_message(t, msgs[i][0], &b, &err), LC_OK);
        assert_int_equal(a.raw_len, b.raw_len);
        assert_memory_equal(a.raw_json, b.raw_json, a.raw_len);
        assert_string_equal(a.text, b.text);
        store_row_free(&a);
        store_row_free(&b);
    }
    assert_int_equal(store_q1(t, "SELECT count(*) FROM summaries"), 3);
    assert_int_equal(faults(t), 0); /* the index was rebuilt for the imported rows */
    assert_int_equal(store_q1(t, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'gamma'"), 1);
    /* Importing again adds nothing. */
    assert_int_equal(maint_import(t, path, &in, &err), LC_OK);
    assert_int_equal(in, 0);
    store_close(s);
    store_close(t);
}

static void test_import_is_refused_while_a_pass_is_running(void **state)
{
    (void)state;
    store *s = make_store("busy", NULL);
    char path[300], *err = NULL;
    snprintf(path, sizeof path, "%s/busy.jsonl", home);
    assert_int_equal(maint_export(s, "busy", path, NULL, &err), LC_OK);
    sql(s, "INSERT INTO runs(kind, pid, started) VALUES('pass', %d, 1)", (int)getpid());
    assert_true(maint_pass_running(s, NULL));
    assert_int_equal(maint_import(s, path, NULL, &err), LC_BUSY);
    assert_non_null(strstr(err, "pass is running"));
    free(err);
    store_close(s);
}

/* ---- gc / migrate ------------------------------------------------------------------------ */

static void write_session(const char *dir, const char *id)
{
    char p[400];
    snprintf(p, sizeof p, "%s/%s.jsonl", dir, id);
    FILE *fp = fopen(p, "w");
    fprintf(fp, "{\"type\":\"session\",\"version\":3,\"id\":\"%s\",\"cwd\":\"/x\"}\n", id);
    fclose(fp);
}

static void test_gc_exports_retired_stores_then_deletes_only_them(void **state)
{
    (void)state;
    char sdir[300], *err = NULL, xp[300];
    snprintf(sdir, sizeof sdir, "%s/sessions", home);
    mkdir(sdir, 0700);
    store_close(make_store("live", NULL));
    store_close(make_store("retired", NULL));
    store_close(make_store("current", NULL));
    write_session(sdir, "live");
    const char *dirs[] = {sdir};
    catalog_list plan;
    assert_int_equal(maint_gc_plan(home, dirs, 1, "current", &plan, &err), LC_OK);
    assert_int_equal(plan.n, 1);
    assert_string_equal(plan.v[0].session_id, "retired");
    snprintf(xp, sizeof xp, "%s/lcm/lcm-export-gc-test.jsonl", home);
    size_t deleted = 0;
    assert_int_equal(maint_gc_apply(&plan, xp, &deleted, &err), LC_OK);
    assert_int_equal(deleted, 1);
    assert_false(store_file_exists("retired"));
    assert_true(store_file_exists("live"));
    char *text = NULL;
    size_t len;
    assert_int_equal(lc_read_file(xp, &text, &len, &err), LC_OK);
    expect_has(text, "\"store\":\"retired\"", "BODYNEEDLE");
    free(text);
    catalog_list_free(&plan);
}

static void test_gc_deletes_nothing_when_the_export_cannot_be_written(void **state)
{
    (void)state;
    char *err = NULL, xp[300];
    store_close(make_store("retired", NULL));
    catalog_list plan;
    assert_int_equal(maint_gc_plan(home, NULL, 0, NULL, &plan, &err), LC_OK);
    assert_int_equal(plan.n, 1);
    /* Under a regular file: unwritable for every user, root included. */
    snprintf(xp, sizeof xp, "%s/lcm/retired.sqlite/export.jsonl", home);
    size_t deleted = 7;
    assert_int_not_equal(maint_gc_apply(&plan, xp, &deleted, &err), LC_OK);
    assert_int_equal(deleted, 0);
    assert_true(store_file_exists("retired"));
    free(err);
    catalog_list_free(&plan);
}

static void test_migrate_lists_an_older_store_and_upgrades_it_in_place(void **state)
{
    (void)state;
    char p[400], *err = NULL;
    store_close(make_store("new", NULL));
    snprintf(p, sizeof p, "%s/lcm/old.sqlite", home);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE legacy(x); PRAGMA user_version = 0", NULL, NULL, NULL);
    sqlite3_close(db);
    catalog_list plan;
    assert_int_equal(maint_migrate_plan(home, &plan, &err), LC_OK);
    assert_int_equal(plan.n, 1);
    assert_int_equal(plan.v[0].schema_version, 0);
    size_t n = 0;
    if (maint_migrate_apply(home, &plan, &n, &err) != LC_OK) fail_msg("migrate: %s", err);
    assert_int_equal(n, 1);
    catalog_list_free(&plan);
    assert_int_equal(maint_migrate_plan(home, &plan, &err), LC_OK);
    assert_int_equal(plan.n, 0);
    store *s = NULL;
    int v = -1;
    assert_int_equal(store_open_readonly(p, &s, &v, &err), LC_OK);
    assert_int_equal(v, STORE_SCHEMA_VERSION);
    store_close(s);
}

/* ---- diagnose ---------------------------------------------------------------------------- */

static void test_diagnose_carries_no_body_summary_query_secret_or_outside_path_within_8k(void **state)
{
    (void)state;
    store *s = make_store("diag", NULL);
    metrics *m = NULL;
    char *err = NULL;
    assert_int_equal(metrics_open(home, "diag", &m, &err), LC_OK);
    for (int i = 0; i < 200; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "model", "openrouter/z-ai/glm-5.3-flash");
        cJSON_AddStringToObject(f, "error", "401 Unauthorized: key sk-ant-api03-PLANTEDSECRETPLANTEDSECRET rejected");
        cJSON_AddStringToObject(f, "query", "QUERYNEEDLE words");
        cJSON_AddStringToObject(f, "path", "/opt/OUTSIDEPATH/file.c");
        cJSON_AddStringToObject(f, "text", "BODYNEEDLE from a message");
        cJSON_AddNumberToObject(f, "inputTokens", i);
        assert_int_equal(metrics_record(m, i % 2 ? METRIC_SUMM_CALL : METRIC_CONTEXT, f, &err), LC_OK);
        cJSON_Delete(f);
    }
    cJSON *rows = NULL;
    assert_int_equal(metrics_load(metrics_path(m), "diag", &rows, NULL, &err), LC_OK);
    cJSON *cfg = cJSON_Parse("{\"swapAtRatio\":0.7,\"summarizer\":[\"auto\"]}");
    char cpath[300], sfile[300];
    snprintf(cpath, sizeof cpath, "%s/lcm.json", home);
    snprintf(sfile, sizeof sfile, "/opt/OUTSIDEPATH/sessions/diag.jsonl");
    maint_diag_input in = {0};
    in.home = home;
    in.plugin_version = "0.1.0";
    in.abi_version = 1;
    in.api_level = 1;
    in.session_id = "diag";
    in.session_file = sfile;
    in.st = s;
    in.store_path = store_path(s);
    in.pin = "none";
    in.thresholds = "swap 70% / recut 85%";
    in.model = "openrouter/z-ai/glm-5.3-flash";
    in.window = 128000;
    in.chain = "auto -> extractive";
    in.config = cfg;
    in.config_path = cpath;
    in.metrics_rows = rows;
    char *block = maint_diagnose(&in);
    assert_non_null(block);
    assert_true(strlen(block) <= MAINT_DIAG_BYTES);
    expect_lacks(block, "BODYNEEDLE", "SUMMARYNEEDLE", "QUERYNEEDLE", "PLANTEDSECRET", "OUTSIDEPATH", home);
    expect_has(block, "~/lcm/diag.sqlite", "~/lcm.json", "file diag.jsonl", "metrics: 200 rows", "left out",
               "\"swapAtRatio\":0.7", "spans=0");
    assert_null(strstr(block, "REDACTED")); /* rows stay JSON: sanitizing already masked them */
    /* 25 recent rows at most. */
    size_t shown = 0;
    for (const char *q = block; (q = strstr(q, "\n{\"ts\":")); q++) shown++;
    if (!(shown > 0 && shown <= MAINT_DIAG_ROWS)) fail_msg("%zu rows shown in:\n%s", shown, block);
    char sp[300];
    snprintf(sp, sizeof sp, "%s/diag.txt", home);
    assert_int_equal(maint_diag_save(sp, block, &err), LC_OK);
    struct stat sb;
    assert_int_equal(stat(sp, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal((size_t)sb.st_size, strlen(block) + 1);
    assert_int_equal(maint_diag_save("", block, &err), LC_INVALID);
    free(err);
    free(block);
    cJSON_Delete(cfg);
    cJSON_Delete(rows);
    metrics_close(m);
    store_close(s);
}

static void test_tilde_rewrites_home_and_hides_other_absolute_paths(void **state)
{
    (void)state;
    char *a = maint_diag_tilde("/home/u", "/home/u/.agent/lcm.json");
    char *b = maint_diag_tilde("/home/u", "/home/user2/x");
    char *c = maint_diag_tilde("/home/u/", "/home/u");
    assert_string_equal(a, "~/.agent/lcm.json");
    assert_string_equal(b, "[path]");
    assert_string_equal(c, "~");
    free(a);
    free(b);
    free(c);
}

int main(void)
{
#define T(f) HOME_TEST(f)
    const struct CMUnitTest tests[] = {
        DAG3_TEST(test_doctor_passes_a_clean_store_and_counts_unleafed_messages),
        DAG3_TEST(test_doctor_finds_an_emptied_fts_index_and_repair_rebuilds_it),
        DAG3_TEST(test_doctor_finds_a_corrupt_fts_structure_and_repair_rebuilds_it),
        DAG3_TEST(test_repair_drops_a_summary_whose_span_entry_is_gone_and_its_parent),
        DAG3_TEST(test_repair_drops_a_parent_whose_named_child_is_gone),
        DAG3_TEST(test_doctor_finds_a_bad_node_shape),
        DAG3_TEST(test_repair_keeps_the_expandable_row_of_a_duplicate_span),
        DAG3_TEST(test_repair_removes_provenance_rows_that_break_foreign_keys),
        DAG3_TEST(test_doctor_flags_a_schema_version_other_than_the_builds),
        DAG3_TEST(test_dead_writer_runs_are_reaped_but_never_ours_or_a_live_pid),
        DAG3_TEST(test_backup_is_one_consistent_snapshot_while_a_writer_runs),
        T(test_export_then_import_restores_every_message_byte_for_byte),
        T(test_import_is_refused_while_a_pass_is_running),
        T(test_gc_exports_retired_stores_then_deletes_only_them),
        T(test_gc_deletes_nothing_when_the_export_cannot_be_written),
        T(test_migrate_lists_an_older_store_and_upgrades_it_in_place),
        T(test_diagnose_carries_no_body_summary_query_secret_or_outside_path_within_8k),
        cmocka_unit_test(test_tilde_rewrites_home_and_hides_other_absolute_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
