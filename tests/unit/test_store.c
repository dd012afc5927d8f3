/*
 * test_store.c -- the lossless store on real SQLite files in a temp dir: schema, modes,
 * migrations, idempotent O(new) ingest, verbatim round trip of every message shape,
 * rebuild identity, removed-branch marks, file handles and summary provenance.
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

#include "sha256.h"
#include "store.h"
#include "store_backend.h"
#include "store_sqlite.h"
#include "util.h"

#include "temp_home.h"

/* The suite's stores all belong to one project folder. */
static store *open_store(const char *sid)
{
    return home_store(sid, "/work/proj");
}

/* The message shapes a session holds, keyed by entry id. */
static const char *const shapes[][2] = {
    {"e1", "{\"role\":\"user\",\"content\":\"plain string content\",\"timestamp\":1700000000001}"},
    {"e2", "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"block text\"}],\"timestamp\":1700000000002}"},
    {"e3", "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\",\"thinkingSignature\":\"c2ln\"},"
           "{\"type\":\"text\",\"text\":\"I will read it\"},{\"type\":\"toolCall\",\"id\":\"call_1\",\"name\":\"read\","
           "\"arguments\":{\"path\":\"src/engine.ts\"}}],\"api\":\"openai-completions\",\"provider\":\"x\",\"model\":\"m\","
           "\"usage\":{\"input\":10,\"output\":5,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":15},"
           "\"stopReason\":\"toolUse\",\"timestamp\":1700000000003}"},
    {"e4", "{\"role\":\"toolResult\",\"toolCallId\":\"call_1\",\"toolName\":\"read\",\"content\":[{\"type\":\"text\","
           "\"text\":\"export function a() {}\"}],\"isError\":false,\"timestamp\":1700000000004}"},
    {"e5", "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image\",\"data\":\"iVBORw0KGgo=\","
           "\"mimeType\":\"image/png\"}],\"timestamp\":1700000000005}"},
    {"e6", "{\"role\":\"bashExecution\",\"command\":\"ls -la\",\"output\":\"total 0\\n\",\"exitCode\":0,"
           "\"cancelled\":false,\"truncated\":false,\"timestamp\":1700000000006}"},
    {"e7", "{\"role\":\"custom\",\"customType\":\"note\",\"content\":\"a custom note \\u00e9\\u4e2d\",\"display\":true,"
           "\"timestamp\":1700000000007}"},
    {"e8", "{\"role\":\"compactionSummary\",\"summary\":\"earlier work summarized\",\"tokensBefore\":1234,"
           "\"timestamp\":1700000000008}"},
    {"e9", "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done\"},{\"type\":\"futureBlock\",\"x\":1}],"
           "\"stopReason\":\"stop\",\"timestamp\":1700000000009}"},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* The shapes as the messages of one ingest, in order. */
static const store_msg *shape_msgs(void)
{
    static store_msg m[NSHAPES];
    for (size_t i = 0; i < NSHAPES; i++) m[i] = (store_msg){shapes[i][0], shapes[i][1], strlen(shapes[i][1]), NULL};
    return m;
}

static void ingest_ok(store *s, const store_msg *m, size_t n, store_ingest_stats *st)
{
    char *err = NULL;
    int rc = store_ingest(s, m, n, st, &err);
    if (rc) fprintf(stderr, "ingest: %s\n", err ? err : "?");
    assert_int_equal(rc, LC_OK);
    free(err);
}

/* The store of session `sid` holding the first n shapes. */
static store *shapes_store(const char *sid, size_t n)
{
    store *s = open_store(sid);
    ingest_ok(s, shape_msgs(), n, NULL);
    return s;
}

/* `sql` prepared on the store's SQLite connection; a refusal fails the test. */
static sqlite3_stmt *prepared(store *s, const char *sql)
{
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(store_db(s), sql, -1, &q, NULL), SQLITE_OK);
    return q;
}

/* An empty store file of schema version v, as a build of that generation leaves it. */
static void make_versioned_file(const char *sid, int v)
{
    char path[512];
    snprintf(path, sizeof path, "%s/lcm", home);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/lcm/%s.sqlite", home, sid);
    char *pragma = lc_asprintf("PRAGMA user_version=%d", v);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, pragma, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    free(pragma);
}

static void test_open_creates_private_wal_store_with_schema_and_meta(void **state)
{
    (void)state;
    store *s = open_store("sess-a");
    char path[512];
    struct stat sb;
    snprintf(path, sizeof path, "%s/lcm", home);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    snprintf(path, sizeof path, "%s/lcm/sess-a.sqlite", home);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(store_schema_version(s), STORE_SCHEMA_VERSION);
    sqlite3_stmt *st = prepared(s, "PRAGMA journal_mode");
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    char *sid = store_meta_get(s, "session_id"), *cwd = store_meta_get(s, "cwd");
    assert_string_equal(sid, "sess-a");
    assert_string_equal(cwd, "/work/proj");
    free(sid);
    free(cwd);
    store_close(s);
}

static void test_open_refuses_session_id_with_path_separator(void **state)
{
    (void)state;
    store *s = NULL;
    char *err = NULL;
    assert_int_equal(store_open(home, "../escape", "/", &s, &err), LC_INVALID);
    assert_null(s);
    assert_non_null(err);
    free(err);
}

static void test_open_migrates_an_empty_older_file_forward(void **state)
{
    (void)state;
    make_versioned_file("old", 0);
    char path[512];
    snprintf(path, sizeof path, "%s/lcm/old.sqlite", home);
    store *ro = NULL;
    int v = -1;
    char *err = NULL;
    assert_int_equal(store_open_readonly(path, &ro, &v, &err), LC_OK);
    assert_int_equal(v, 0); /* a read-only opener sees the old generation, untouched */
    store_close(ro);
    store *s = open_store("old");
    assert_int_equal(store_schema_version(s), STORE_SCHEMA_VERSION);
    store_close(s);
}

static void test_open_refuses_store_from_newer_build(void **state)
{
    (void)state;
    make_versioned_file("new", 99);
    store *s = NULL;
    char *err = NULL;
    assert_int_equal(store_open(home, "new", "/", &s, &err), LC_INVALID);
    assert_non_null(strstr(err, "newer"));
    free(err);
}

static void test_ingest_writes_only_new_messages_idempotently(void **state)
{
    (void)state;
    store *s = open_store("sess-b");
    const store_msg *m = shape_msgs();
    store_ingest_stats st;
    ingest_ok(s, m, 4, &st);
    assert_int_equal(st.inserted, 4);
    ingest_ok(s, m, 4, &st);
    assert_int_equal(st.inserted, 0);
    assert_int_equal(st.examined, 1); /* nothing new costs one lookup, not a scan */
    ingest_ok(s, m, NSHAPES, &st);
    assert_int_equal(st.inserted, NSHAPES - 4);
    assert_int_equal(st.examined, NSHAPES - 4 + 1);
    assert_int_equal(store_message_count(s), NSHAPES);
    store_close(s);
    /* A new process: the "newest stored" check comes from the file, not memory. */
    s = open_store("sess-b");
    ingest_ok(s, m, NSHAPES, &st);
    assert_int_equal(st.inserted, 0);
    assert_int_equal(st.examined, 1);
    store_close(s);
}

static void test_ingest_skips_messages_without_entry_id(void **state)
{
    (void)state;
    store *s = open_store("sess-c");
    store_msg m[2] = {{"x1", shapes[0][1], strlen(shapes[0][1]), NULL}, {NULL, shapes[1][1], strlen(shapes[1][1]), NULL}};
    store_ingest_stats st;
    ingest_ok(s, m, 2, &st);
    assert_int_equal(st.inserted, 1);
    assert_int_equal(store_message_count(s), 1);
    store_close(s);
}

static void test_ingest_rejects_malformed_json_and_rolls_back(void **state)
{
    (void)state;
    store *s = open_store("sess-d");
    store_msg m[2] = {{"ok", shapes[0][1], strlen(shapes[0][1]), NULL}, {"bad", "{\"role\":", 8, NULL}};
    char *err = NULL;
    assert_int_equal(store_ingest(s, m, 2, NULL, &err), LC_INVALID);
    assert_non_null(strstr(err, "bad"));
    free(err);
    assert_int_equal(store_message_count(s), 0);
    store_close(s);
}

/* How many FTS5 segments the message index holds. */
static int fts_segments(store *s)
{
    sqlite3_stmt *q = prepared(s, "SELECT count(DISTINCT segid) FROM messages_fts_idx");
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return n;
}

/* How many messages the index finds for `word`. */
static int fts_matches(store *s, const char *word)
{
    sqlite3_stmt *q = prepared(s, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?");
    sqlite3_bind_text(q, 1, word, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return n;
}

/* A request's new messages go into the full-text index as one segment (a segment per
 * message made FTS5 write, then merge, the index over and over), every one findable; a
 * batch rolled back leaves nothing in the index for the next batch to carry in. */
static void test_ingest_indexes_a_batch_as_one_segment_every_message_findable(void **state)
{
    (void)state;
    store *s = open_store("sess-fts");
    store_msg m[3] = {{"a1", "{\"role\":\"user\",\"content\":\"the harbour crane moved\"}", 0, NULL},
                      {"a2", "{\"role\":\"assistant\",\"content\":\"the crane lifted the harbour gate\"}", 0, NULL},
                      {"a3", "{\"role\":\"user\",\"content\":\"now the gate is shut\"}", 0, NULL}};
    for (int i = 0; i < 3; i++) m[i].json_len = strlen(m[i].json);
    ingest_ok(s, m, 3, NULL);
    assert_int_equal(fts_segments(s), 1);
    assert_int_equal(fts_matches(s, "crane"), 2);
    assert_int_equal(fts_matches(s, "gate"), 2);
    /* A batch that fails halfway: its good message is neither stored nor indexed, now or
     * with the batch after. */
    store_msg bad[2] = {{"b1", "{\"role\":\"user\",\"content\":\"a lighthouse keeper\"}", 0, NULL},
                        {"b2", "{\"role\":", 8, NULL}};
    bad[0].json_len = strlen(bad[0].json);
    char *err = NULL;
    assert_int_equal(store_ingest(s, bad, 2, NULL, &err), LC_INVALID);
    free(err);
    store_msg next[1] = {{"c1", "{\"role\":\"user\",\"content\":\"the ferry left\"}", 0, NULL}};
    next[0].json_len = strlen(next[0].json);
    ingest_ok(s, next, 1, NULL);
    assert_int_equal(fts_matches(s, "lighthouse"), 0);
    assert_int_equal(fts_matches(s, "ferry"), 1);
    assert_int_equal(store_message_count(s), 4);
    store_close(s);
}

static long long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* A connection that defers its checkpoints (the agent's, with a summarizer worker beside
 * it) only appends to the write-ahead log, well past the 1,000 pages where a commit would
 * copy it into the database; the other connection's next commit (the worker's) does the
 * copy. Deferring undone, the connection checkpoints again. */
static void test_deferred_checkpoints_are_left_to_the_other_connections_commit(void **state)
{
    (void)state;
    store *host = open_store("sess-ckpt"), *worker = open_store("sess-ckpt");
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", store_path(host));
    long long db0 = file_size(store_path(host));
    store_checkpoints_defer(host, 1);
    char ids[10][16], *json[10];
    int next = 0;
    /* About 2,000 pages of log, in commits of 10 messages. */
    for (int round = 0; round < 2; round++) {
        for (int batch = 0; batch < 300; batch++) {
            store_msg m[10];
            for (int i = 0; i < 10; i++, next++) {
                snprintf(ids[i], sizeof ids[i], "k%05d", next);
                json[i] = lc_asprintf("{\"role\":\"user\",\"content\":\"message %d: %0600d\"}", next, next);
                m[i] = (store_msg){ids[i], json[i], strlen(json[i]), NULL};
            }
            ingest_ok(host, m, 10, NULL);
            for (int i = 0; i < 10; i++) free(json[i]);
        }
        if (round == 1) break;
        long long frames = file_size(wal) / (4096 + 24);
        assert_true(frames > 1500);
        assert_int_equal(file_size(store_path(host)), db0); /* nothing copied yet */
        store_pin pin = {0, 1, 2};
        assert_int_equal(store_pin_set(worker, &pin, NULL), LC_OK);
        assert_true(file_size(store_path(host)) > db0 + 2 * 1024 * 1024);
        /* No worker any more: the agent's connection copies its own log again. */
        store_checkpoints_defer(host, 0);
        db0 = file_size(store_path(host));
    }
    assert_true(file_size(store_path(host)) > db0 + 2 * 1024 * 1024);
    store_close(worker);
    store_close(host);
}

static void test_read_returns_verbatim_bytes_for_every_shape(void **state)
{
    (void)state;
    store *s = shapes_store("sess-e", NSHAPES);
    for (size_t i = 0; i < NSHAPES; i++) {
        store_row r;
        char *err = NULL;
        assert_int_equal(store_get_message(s, shapes[i][0], &r, &err), LC_OK);
        char a[65], b[65];
        sha256_hex(shapes[i][1], strlen(shapes[i][1]), a);
        sha256_hex(r.raw_json, r.raw_len, b);
        assert_string_equal(a, b);
        assert_int_equal((int)r.ordinal, (int)i);
        store_row_free(&r);
    }
    store_row r;
    assert_int_equal(store_get_message(s, "e3", &r, NULL), LC_OK);
    assert_non_null(r.payload); /* thinking + signature are not in the text */
    assert_non_null(strstr(r.payload, "thinkingSignature"));
    assert_null(strstr(r.payload, "toolCall"));
    assert_non_null(strstr(r.text, "I will read it"));
    store_row_free(&r);
    assert_int_equal(store_get_message(s, "e2", &r, NULL), LC_OK);
    assert_null(r.payload); /* complete text: one copy */
    assert_string_equal(r.text, "block text");
    store_row_free(&r);
    assert_int_equal(store_get_message(s, "e5", &r, NULL), LC_OK);
    assert_non_null(strstr(r.payload, "image/png"));
    store_row_free(&r);
    assert_int_equal(store_get_message(s, "e9", &r, NULL), LC_OK);
    assert_non_null(strstr(r.payload, "futureBlock"));
    store_row_free(&r);
    assert_int_equal(store_get_message(s, "e4", &r, NULL), LC_OK);
    assert_string_equal(r.tool_name, "read");
    assert_string_equal(r.tool_path, "src/engine.ts");
    assert_int_equal(r.created, 1700000000004LL);
    store_row_free(&r);
    char *err = NULL;
    assert_int_equal(store_get_message(s, "nope", &r, &err), LC_NOTFOUND);
    free(err);
    store_close(s);
}

static char *dump_rows(store *s)
{
    sbuf b = {0};
    const char *const q[] = {
        "SELECT id, entry_id, ordinal, role, text, chars, tokens, raw_json, payload, removed,"
        " tool_name, tool_path, created FROM messages ORDER BY id",
        "SELECT entry_id, path, content_id, kind, chars, preview, summary FROM file_handles ORDER BY id",
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'text OR note OR done' ORDER BY rowid",
    };
    for (size_t k = 0; k < 3; k++) {
        sqlite3_stmt *st = prepared(s, q[k]);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const unsigned char *t = sqlite3_column_text(st, c);
                sb_printf(&b, "%s|", t ? (const char *)t : "<null>");
            }
            sb_putc(&b, '\n');
        }
        sqlite3_finalize(st);
    }
    return sb_detach(&b);
}

static void test_delete_and_reingest_gives_identical_rows(void **state)
{
    (void)state;
    store *s = shapes_store("sess-f", 3);
    ingest_ok(s, shape_msgs(), NSHAPES, NULL); /* two turns */
    char *before = dump_rows(s);
    store_close(s);
    char path[512];
    const char *const suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/lcm/sess-f.sqlite%s", home, suffix[i]);
        unlink(path);
    }
    s = shapes_store("sess-f", NSHAPES); /* one replay of the whole branch */
    char *after = dump_rows(s);
    assert_string_equal(before, after);
    assert_true(strlen(before) > 500);
    free(before);
    free(after);
    store_close(s);
}

static int removed_of(store *s, const char *id)
{
    store_row r;
    assert_int_equal(store_get_message(s, id, &r, NULL), LC_OK);
    int v = r.removed;
    store_row_free(&r);
    return v;
}

static void test_tree_move_marks_left_entries_and_moving_back_clears(void **state)
{
    (void)state;
    store *s = shapes_store("sess-g", 6);
    const char *branch_b[] = {"e1", "e2", "e3"};
    size_t marked, cleared;
    char *err = NULL;
    assert_int_equal(store_mark_branch(s, branch_b, 3, &marked, &cleared, &err), LC_OK);
    assert_int_equal(marked, 3);
    assert_int_equal(cleared, 0);
    assert_int_equal(removed_of(s, "e4"), 1);
    assert_int_equal(removed_of(s, "e2"), 0);
    store_row r;
    assert_int_equal(store_get_message(s, "e5", &r, NULL), LC_OK); /* bytes kept */
    assert_non_null(strstr(r.raw_json, "image/png"));
    store_row_free(&r);
    const char *branch_a[] = {"e1", "e2", "e3", "e4", "e5", "e6"};
    assert_int_equal(store_mark_branch(s, branch_a, 6, &marked, &cleared, &err), LC_OK);
    assert_int_equal(marked, 0);
    assert_int_equal(cleared, 3);
    assert_int_equal(removed_of(s, "e4"), 0);
    const char *one[] = {"e6"};
    assert_int_equal(store_set_removed(s, one, 1, 1, NULL, &err), LC_OK);
    assert_int_equal(removed_of(s, "e6"), 1);
    assert_int_equal(store_set_removed(s, one, 1, 0, NULL, &err), LC_OK);
    assert_int_equal(removed_of(s, "e6"), 0);
    store_close(s);
}

static char *tool_pair(const char *call_id, const char *path_json, char **result, size_t body_chars,
                       char fill)
{
    char *call = lc_asprintf("{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"%s\","
                             "\"name\":\"read\",\"arguments\":{%s}}],\"stopReason\":\"toolUse\",\"timestamp\":1}",
                             call_id, path_json);
    char *body = malloc(body_chars + 1);
    memset(body, fill, body_chars);
    for (size_t i = 80; i < body_chars; i += 81) body[i] = 'n'; /* placeholder for \n below */
    body[body_chars] = '\0';
    sbuf b = {0};
    sb_printf(&b, "{\"role\":\"toolResult\",\"toolCallId\":\"%s\",\"toolName\":\"read\",\"content\":[{\"type\":"
                  "\"text\",\"text\":\"",
              call_id);
    for (size_t i = 0; i < body_chars; i++) {
        if (body[i] == 'n' && i % 81 == 80)
            sb_puts(&b, "\\n");
        else
            sb_putc(&b, body[i]);
    }
    sb_puts(&b, "\"}],\"isError\":false,\"timestamp\":2}");
    free(body);
    *result = sb_detach(&b);
    return call;
}

static void test_large_tool_result_with_path_becomes_file_handle(void **state)
{
    (void)state;
    store *s = open_store("sess-h");
    char *res1, *res2, *res3;
    char *call1 = tool_pair("c1", "\"path\":\"notes/big.txt\"", &res1, 40000, 'a');
    char *call2 = tool_pair("c2", "\"command\":\"cat big\"", &res2, 40000, 'b');
    char *call3 = tool_pair("c3", "\"path\":\"small.txt\"", &res3, 1000, 'c');
    store_msg m[6] = {{"a1", call1, strlen(call1), NULL}, {"r1", res1, strlen(res1), NULL},
                      {"a2", call2, strlen(call2), NULL}, {"r2", res2, strlen(res2), NULL},
                      {"a3", call3, strlen(call3), NULL}, {"r3", res3, strlen(res3), NULL}};
    store_ingest_stats st;
    ingest_ok(s, m, 6, &st);
    assert_int_equal(st.file_handles, 2);
    sqlite3_stmt *q = prepared(s, "SELECT entry_id, path, kind, length(preview), summary, content_id"
                                  " FROM file_handles ORDER BY id");
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "r1");
    assert_string_equal((const char *)sqlite3_column_text(q, 1), "notes/big.txt");
    assert_string_equal((const char *)sqlite3_column_text(q, 2), "text");
    assert_true(sqlite3_column_int(q, 3) <= 1200);
    assert_non_null(strstr((const char *)sqlite3_column_text(q, 4), "first line: aaaa"));
    assert_int_equal(strlen((const char *)sqlite3_column_text(q, 5)), 64);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "r2");
    assert_int_equal(sqlite3_column_type(q, 1), SQLITE_NULL);
    assert_string_equal((const char *)sqlite3_column_text(q, 2), "large-inline");
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    store_row r;
    assert_int_equal(store_get_message(s, "r1", &r, NULL), LC_OK); /* the bytes stay in the row */
    assert_int_equal(r.chars, 40000);
    store_row_free(&r);
    store_close(s);
    free(call1), free(call2), free(call3), free(res1), free(res2), free(res3);
}

static void test_tool_path_found_for_call_ingested_by_earlier_process(void **state)
{
    (void)state;
    store *s = open_store("sess-i");
    char *res;
    char *call = tool_pair("cx", "\"file_path\":\"data/rows.csv\"", &res, 33000, 'z');
    store_msg m[2] = {{"a1", call, strlen(call), NULL}, {"r1", res, strlen(res), NULL}};
    ingest_ok(s, m, 1, NULL);
    store_close(s);
    s = open_store("sess-i");
    ingest_ok(s, m, 2, NULL);
    store_row r;
    assert_int_equal(store_get_message(s, "r1", &r, NULL), LC_OK);
    assert_string_equal(r.tool_path, "data/rows.csv");
    store_row_free(&r);
    store_close(s);
    free(call);
    free(res);
}

/* The ids of two leaves and of the condensed node over them. */
typedef struct leaf_pair {
    int64_t first, second, top;
} leaf_pair;

/* Leaf "first leaf" over e1..e3 and "second leaf" (tiers `second_tiers`, may be NULL) over
 * e4..e5, under a condensed node "both" that lists them in order or, with second_first,
 * the second leaf first. */
static leaf_pair leaves_under_one(store *s, const char *second_tiers, int second_first)
{
    const char *l1[] = {"e1", "e2", "e3"}, *l2[] = {"e4", "e5"};
    store_summary a = {"leaf", 0, "first leaf", NULL, 10, l1, 3, NULL, 0};
    store_summary b = {"leaf", 0, "second leaf", second_tiers, 10, l2, 2, NULL, 0};
    leaf_pair t;
    char *err = NULL;
    assert_int_equal(store_summary_add(s, &a, &t.first, &err), LC_OK);
    assert_int_equal(store_summary_add(s, &b, &t.second, &err), LC_OK);
    int64_t kids[] = {second_first ? t.second : t.first, second_first ? t.first : t.second};
    store_summary c = {"condensed", 1, "both", NULL, 5, NULL, 0, kids, 2};
    assert_int_equal(store_summary_add(s, &c, &t.top, &err), LC_OK);
    return t;
}

static void test_summary_add_records_span_children_and_refuses_unknown_entries(void **state)
{
    (void)state;
    store *s = shapes_store("sess-j", NSHAPES);
    leaf_pair t = leaves_under_one(s, "{\"rich\":\"a thorough second leaf\"}", 0);
    char *err = NULL;
    sqlite3_stmt *q = prepared(s, "SELECT first_ordinal, last_ordinal, first_entry, last_entry, entry_count"
                                  " FROM summary_spans WHERE summary_id = ?");
    sqlite3_bind_int64(q, 1, t.top);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 0);
    assert_int_equal(sqlite3_column_int(q, 1), 4);
    assert_string_equal((const char *)sqlite3_column_text(q, 2), "e1");
    assert_string_equal((const char *)sqlite3_column_text(q, 3), "e5");
    assert_int_equal(sqlite3_column_int(q, 4), 5);
    sqlite3_finalize(q);
    const char *ghost[] = {"zz"};
    store_summary g = {"leaf", 0, "ghost", NULL, 1, ghost, 1, NULL, 0};
    assert_int_equal(store_summary_add(s, &g, NULL, &err), LC_ERR);
    free(err);
    store_close(s);
}

/* The first nodes a walk visits (their strings are not read past the visit) and how many
 * it visited. */
typedef struct kids_seen {
    store_node node[4];
    int n;
} kids_seen;

static int kids_visit(void *ud, const store_node *n, char **err)
{
    kids_seen *k = ud;
    (void)err;
    if (k->n < 4) k->node[k->n] = *n;
    k->n++;
    return LC_OK;
}

/* A condensed node's children come back by id, in order, with their spans; a leaf has none. */
static void test_walk_children_gives_a_condensed_nodes_children_with_spans(void **state)
{
    (void)state;
    store *s = shapes_store("sess-k", NSHAPES);
    leaf_pair t = leaves_under_one(s, NULL, 1);
    char *err = NULL;
    kids_seen k = {0};
    assert_int_equal(store_dag_walk_children(s, t.top, kids_visit, &k, &err), LC_OK);
    assert_int_equal(k.n, 2);
    assert_int_equal(k.node[0].id, t.second);
    assert_int_equal(k.node[1].id, t.first);
    assert_int_equal(k.node[0].entry_count, 2);
    assert_int_equal(k.node[1].first_ordinal, 0);
    kids_seen none = {0};
    assert_int_equal(store_dag_walk_children(s, t.first, kids_visit, &none, &err), LC_OK);
    assert_int_equal(none.n, 0);
    store_close(s);
}

static int64_t fts_hits(store *s, const char *word)
{
    sqlite3_stmt *q = prepared(s, "SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH ?");
    sqlite3_bind_text(q, 1, word, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
}

/* A summary re-derived in place keeps its id; the index forgets the old words. */
static void test_summary_set_text_replaces_text_tokens_and_index(void **state)
{
    (void)state;
    store *s = shapes_store("sess-t", NSHAPES);
    const char *l1[] = {"e1", "e2"};
    store_summary a = {"leaf", 0, "mechanical oldword", NULL, 10, l1, 2, NULL, 0};
    int64_t id;
    char *err = NULL;
    assert_int_equal(store_summary_add(s, &a, &id, &err), LC_OK);
    assert_int_equal(fts_hits(s, "oldword"), 1);
    assert_int_equal(store_summary_set_text(s, id, "a healed newword", 4, &err), LC_OK);
    assert_int_equal(fts_hits(s, "oldword"), 0);
    assert_int_equal(fts_hits(s, "newword"), 1);
    sqlite3_stmt *q = prepared(s, "SELECT text, tokens FROM summaries WHERE id = ?");
    sqlite3_bind_int64(q, 1, id);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "a healed newword");
    assert_int_equal(sqlite3_column_int(q, 1), 4);
    sqlite3_finalize(q);
    assert_int_equal(store_summary_set_text(s, id + 100, "x", 1, &err), LC_NOTFOUND);
    free(err);
    store_close(s);
}

static void test_open_fixes_and_reports_modes_others_could_read(void **state)
{
    (void)state;
    store *s = NULL;
    assert_int_equal(store_open(home, "modes", "/w", &s, NULL), LC_OK);
    assert_null(store_mode_note(s));
    char *path = lc_strdup(store_path(s));
    store_close(s);
    char *dir = lc_asprintf("%s/lcm", home);
    chmod(path, 0644);
    chmod(dir, 0755);
    assert_int_equal(store_open(home, "modes", "/w", &s, NULL), LC_OK);
    const char *note = store_mode_note(s);
    assert_non_null(note);
    assert_non_null(strstr(note, "was 0755 (now 0700)"));
    assert_non_null(strstr(note, "was 0644 (now 0600)"));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    store_close(s);
    free(dir);
    free(path);
}

/* The seam: every store call goes through its backend's method table. A table built
 * against an older header (a smaller size) lacks the newer slots, and a NULL optional
 * slot is "not supported", answered with a sentence naming the backend. */
static void test_method_table_dispatch_checks_size_and_missing_slots(void **state)
{
    (void)state;
    const store_backend *b = store_backend_default();
    assert_int_equal(b->i_version, STORE_METHODS_VERSION);
    assert_int_equal(b->size, sizeof(store_backend));
    assert_string_equal(store_backend_name(), "sqlite");
    assert_non_null(store_backend_version());

    store *s = open_store("seam");
    const store_methods *m = *(const store_methods *const *)(const void *)s;
    assert_int_equal(m->size, sizeof(store_methods));
    assert_non_null(m->x_ingest);
    assert_non_null(m->x_dump);
    store_close(s);

    /* A backend built before the administration slots existed: its table ends there. */
    store_methods old = {.i_version = 1, .size = offsetof(store_methods, x_tx_begin), .name = "older"};
    struct { const store_methods *methods; } fake = {&old};
    char *err = NULL;
    assert_int_equal(store_tx_begin((store *)&fake, &err), LC_INVALID);
    assert_non_null(strstr(err, "older backend does not support tx_begin"));
    free(err);
    err = NULL;
    /* A full-size table with the optional slot left NULL reads the same. */
    store_methods none = {.i_version = STORE_METHODS_VERSION, .size = sizeof(store_methods), .name = "bare"};
    fake.methods = &none;
    assert_int_equal(store_check((store *)&fake, STORE_CHECK_SPANS, NULL, NULL, &err), LC_INVALID);
    assert_non_null(strstr(err, "bare backend does not support check"));
    free(err);
    assert_int_equal(store_summary_exists((store *)&fake, 1), 0);
    store_tx_rollback((store *)&fake);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HOME_TEST(test_open_fixes_and_reports_modes_others_could_read),
        HOME_TEST(test_method_table_dispatch_checks_size_and_missing_slots),
        HOME_TEST(test_open_creates_private_wal_store_with_schema_and_meta),
        HOME_TEST(test_open_refuses_session_id_with_path_separator),
        HOME_TEST(test_open_migrates_an_empty_older_file_forward),
        HOME_TEST(test_open_refuses_store_from_newer_build),
        HOME_TEST(test_ingest_writes_only_new_messages_idempotently),
        HOME_TEST(test_ingest_skips_messages_without_entry_id),
        HOME_TEST(test_ingest_rejects_malformed_json_and_rolls_back),
        HOME_TEST(test_ingest_indexes_a_batch_as_one_segment_every_message_findable),
        HOME_TEST(test_deferred_checkpoints_are_left_to_the_other_connections_commit),
        HOME_TEST(test_read_returns_verbatim_bytes_for_every_shape),
        HOME_TEST(test_delete_and_reingest_gives_identical_rows),
        HOME_TEST(test_tree_move_marks_left_entries_and_moving_back_clears),
        HOME_TEST(test_large_tool_result_with_path_becomes_file_handle),
        HOME_TEST(test_tool_path_found_for_call_ingested_by_earlier_process),
        HOME_TEST(test_summary_add_records_span_children_and_refuses_unknown_entries),
        HOME_TEST(test_summary_set_text_replaces_text_tokens_and_index),
        HOME_TEST(test_walk_children_gives_a_condensed_nodes_children_with_spans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
