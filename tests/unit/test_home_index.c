/*
 * test_home_index.c -- the home index (store.h, store_index_*; recall_sessions.c): a
 * cross-session query answered by one index over every session store gives the hits the
 * store-by-store walk gives; a store written after the index was built (by another
 * process) is found at the next query; a deleted index is built again and answers the
 * same; a damaged one is set aside and made anew, one from a newer build left for the walk
 * with a note, both losing nothing; two processes catching up at once add every row once.
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
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "recall.h"
#include "store.h"
#include "store_sqlite_tok.h"
#include "util.h"
#include "test_main.h"

#include "temp_home.h"

#define SESSIONS 6
#define MESSAGES 30

/* Words shared by every session, some by a few: the ranks have real counts to differ on. */
static const char *const words[] = {"kestrel", "harbor", "lantern", "quartz", "meadow", "cobalt", "falcon", "ember"};

/* Session `si`'s store: user prompts and assistant replies (and a tool result) over the
 * shared words, skewed per session, times increasing. */
static void put_session(int si, int messages, const char *extra)
{
    char sid[32];
    snprintf(sid, sizeof sid, "s%02d", si);
    store *s = home_store(sid, si % 2 ? "/proj/a" : "/proj/b");
    char *err = NULL;
    for (int i = 0; i < messages; i++) {
        char id[48], text[256], json[512];
        snprintf(id, sizeof id, "%s-%d", sid, i);
        /* Lengths and repeats differ from message to message, so scores seldom tie. */
        int n = snprintf(text, sizeof text, "%s %s and the %s near %s", words[(i + si) % 8], words[(i * 3 + si) % 8],
                         words[(i * 5) % 8], i % 4 ? "the dock" : words[si % 8]);
        for (int r = 0; r < (i * 7 + si * 3) % 9; r++)
            n += snprintf(text + n, sizeof text - (size_t)n, " %s%d", r % 3 ? "pad" : words[(i + r) % 8], r);
        if (extra) snprintf(text + n, sizeof text - (size_t)n, " %s", extra);
        const char *role = i % 3 == 0 ? "user" : i % 3 == 1 ? "assistant" : "toolResult";
        if (!strcmp(role, "toolResult"))
            snprintf(json, sizeof json,
                     "{\"role\":\"toolResult\",\"toolCallId\":\"c%d\",\"toolName\":\"bash\",\"content\":[{\"type\":"
                     "\"text\",\"text\":\"%s\"}],\"timestamp\":%d}",
                     i, text, 1000 * si + i + 1);
        else
            snprintf(json, sizeof json, "{\"role\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"timestamp\":%d}",
                     role, text, 1000 * si + i + 1);
        store_msg m = {id, json, strlen(json), NULL};
        assert_int_equal(store_ingest(s, &m, 1, NULL, &err), LC_OK);
    }
    char created[32];
    snprintf(created, sizeof created, "%d", 1700000000 + si);
    assert_int_equal(store_meta_put(s, "created", created, &err), LC_OK);
    store_close(s);
}

static void put_home(void)
{
    for (int si = 0; si < SESSIONS; si++) put_session(si, MESSAGES, NULL);
}

static char *index_path(void)
{
    return lc_asprintf("%s/lcm-home/recall-index.sqlite", home);
}

/* The query across every session: its hits as "session/entry" lines, and whether the home
 * index answered (and any note). */
static char *grep_lines(const char *q, recall_result *keep)
{
    /* A page larger than a store's messages: the walk then ranks every match of every store,
     * as the index does (a smaller page leaves it each store's best by the store's rank). */
    recall_grep_opts o = {.query = q, .limit = 40};
    recall_result r;
    char *err = NULL;
    int rc = recall_grep_sessions(home, "current", "/proj/a", RECALL_SCOPE_ALL_SESSIONS, &o, &r, &err);
    if (rc) print_error("grep: %s\n", err ? err : "?");
    assert_int_equal(rc, LC_OK);
    sbuf b = {0};
    for (size_t k = 0; k < r.n && k < 12; k++) sb_printf(&b, "%s/%s\n", r.hits[k].session_id, r.hits[k].entry_id);
    if (keep) {
        *keep = r;
    } else {
        recall_result_free(&r);
    }
    return sb_detach(&b);
}

/* The walk's answer: the index made unusable (a folder where its file goes). */
static char *walk_lines(const char *q)
{
    char *p = index_path(), *wal = lc_asprintf("%s-wal", p), *shm = lc_asprintf("%s-shm", p);
    unlink(p);
    unlink(wal);
    unlink(shm);
    assert_int_equal(mkdir(p, 0700), 0);
    recall_result r;
    char *lines = grep_lines(q, &r);
    assert_int_equal(r.home_index, 0);
    assert_non_null(r.index_note);
    recall_result_free(&r);
    rmdir(p);
    free(p);
    free(wal);
    free(shm);
    return lines;
}

static void test_home_index_answers_the_walks_top_hits(void **state)
{
    (void)state;
    put_home();
    const char *const queries[] = {"kestrel harbor", "lantern quartz meadow", "cobalt", "falcon ember dock"};
    for (size_t i = 0; i < sizeof queries / sizeof *queries; i++) {
        recall_result r;
        char *ix = grep_lines(queries[i], &r);
        assert_int_equal(r.home_index, 1);
        assert_int_equal(r.stores_searched, SESSIONS);
        assert_true(r.n > 0);
        int64_t total = r.total;
        recall_result_free(&r);
        char *walk = walk_lines(queries[i]);
        assert_string_equal(ix, walk);
        /* and the same count */
        char *again = grep_lines(queries[i], &r);
        assert_int_equal(r.total, total);
        recall_result_free(&r);
        free(again);
        free(ix);
        free(walk);
    }
}

static void test_home_index_finds_a_store_written_after_it_was_built(void **state)
{
    (void)state;
    put_home();
    recall_result r;
    free(grep_lines("kestrel", &r)); /* builds the index */
    assert_int_equal(r.home_index, 1);
    recall_result_free(&r);
    /* Another process writes: a new session, and more of an indexed one. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        put_session(SESSIONS, 5, "zebrafinch");
        store *s = NULL;
        char *err = NULL;
        if (store_open(home, "s01", "/proj/a", &s, &err) != LC_OK) _exit(1);
        const char *json = "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"the zebrafinch sang\"}],"
                           "\"timestamp\":99999}";
        store_msg m = {"s01-late", json, strlen(json), NULL};
        _exit(store_ingest(s, &m, 1, NULL, &err) == LC_OK ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *lines = grep_lines("zebrafinch", &r);
    assert_int_equal(r.home_index, 1);
    assert_int_equal(r.index_stale, 0);
    assert_int_equal(r.total, 6); /* five in the new session, one late in s01 */
    assert_non_null(strstr(lines, "s01/s01-late"));
    assert_non_null(strstr(lines, "s06/s06-0"));
    recall_result_free(&r);
    free(lines);
}

static void test_home_index_deleted_is_built_again_and_answers_the_same(void **state)
{
    (void)state;
    put_home();
    char *first = grep_lines("lantern harbor", NULL);
    char *p = index_path(), *wal = lc_asprintf("%s-wal", p), *shm = lc_asprintf("%s-shm", p);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    unlink(p);
    unlink(wal);
    unlink(shm);
    recall_result r;
    char *again = grep_lines("lantern harbor", &r);
    assert_int_equal(r.home_index, 1);
    assert_null(r.index_note);
    assert_int_equal(stat(p, &sb), 0);
    assert_string_equal(first, again);
    recall_result_free(&r);
    free(first);
    free(again);
    free(p);
    free(wal);
    free(shm);
}

static void test_home_index_damaged_is_set_aside_and_rebuilt_losing_nothing(void **state)
{
    (void)state;
    put_home();
    char *good = grep_lines("quartz meadow", NULL);
    char *p = index_path(), *wal = lc_asprintf("%s-wal", p), *shm = lc_asprintf("%s-shm", p),
         *aside = lc_asprintf("%s.damaged", p);
    unlink(wal);
    unlink(shm);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    for (int i = 0; i < 4096; i++) fputc((i * 37) & 0xff, f);
    fclose(f);
    recall_result r;
    char *lines = grep_lines("quartz meadow", &r);
    assert_int_equal(r.home_index, 1); /* made anew, not walked around from now on */
    assert_null(r.index_note);
    assert_string_equal(lines, good);
    /* The damaged file is kept beside it, byte for byte, for whoever wants to look. */
    struct stat sb;
    assert_int_equal(stat(aside, &sb), 0);
    assert_int_equal(sb.st_size, 4096);
    f = fopen(aside, "rb");
    assert_non_null(f);
    for (int i = 0; i < 4096; i++) assert_int_equal(fgetc(f), (i * 37) & 0xff);
    fclose(f);
    recall_result_free(&r);
    free(lines);
    free(good);
    free(p);
    free(wal);
    free(shm);
    free(aside);
}

static void test_home_index_from_a_newer_build_falls_back_with_a_note_and_loses_nothing(void **state)
{
    (void)state;
    put_home();
    char *good = grep_lines("quartz meadow", NULL);
    char *p = index_path();
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    recall_result r;
    char *lines = grep_lines("quartz meadow", &r);
    assert_int_equal(r.home_index, 0);
    assert_non_null(r.index_note);
    assert_int_equal(r.stores_searched, SESSIONS);
    recall_grep_opts o = {.query = "quartz meadow", .limit = 10};
    char *text = recall_grep_format(&o, RECALL_SCOPE_ALL_SESSIONS, &r);
    assert_non_null(strstr(text, "the home index was not used"));
    assert_non_null(strstr(text, "newer build"));
    assert_string_equal(lines, good);
    free(text);
    recall_result_free(&r);
    free(lines);
    free(good);
    free(p);
}

static void test_home_index_two_processes_catching_up_add_each_row_once(void **state)
{
    (void)state;
    put_home();
    pid_t pids[2];
    for (int k = 0; k < 2; k++) {
        pids[k] = fork();
        assert_true(pids[k] >= 0);
        if (pids[k] == 0) {
            recall_grep_opts o = {.query = "ember"};
            recall_result r;
            char *err = NULL;
            int rc = recall_grep_sessions(home, "current", "/proj/a", RECALL_SCOPE_ALL_SESSIONS, &o, &r, &err);
            _exit(rc == LC_OK && r.n > 0 ? 0 : 1);
        }
    }
    for (int k = 0; k < 2; k++) {
        int status = 0;
        assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    /* Every message names the dock or a word: the count of a word across the index equals
     * the stores' own counts summed, so no row was added twice. */
    recall_result r;
    free(grep_lines("ember", &r));
    assert_int_equal(r.home_index, 1);
    int64_t indexed = r.total;
    recall_result_free(&r);
    int64_t stored = 0;
    for (int si = 0; si < SESSIONS; si++) {
        char sid[32];
        snprintf(sid, sizeof sid, "s%02d", si);
        store *s = home_store(sid, si % 2 ? "/proj/a" : "/proj/b");
        stored += home_search_count(s, "ember");
        store_close(s);
    }
    assert_true(stored > 0);
    assert_int_equal(indexed, stored);
}

/* How many rows of the index file hold `word` (read with the stores' tokenizer). */
static int64_t index_word_rows(const char *word)
{
    char *p = index_path(), *err = NULL;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(store_sqlite_tok_register(db, &err), LC_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM ix_fts WHERE ix_fts MATCH ?", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, word, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(p);
    return n;
}

static void test_home_index_forgets_the_words_of_a_deleted_session(void **state)
{
    (void)state;
    put_home();
    put_session(SESSIONS, 4, "zebrafinch");
    recall_result r;
    free(grep_lines("zebrafinch", &r));
    assert_int_equal(r.total, 4);
    recall_result_free(&r);
    assert_int_equal(index_word_rows("zebrafinch"), 4);
    char path[512];
    const char *const tails[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/lcm/s%02d.sqlite%s", home, SESSIONS, tails[i]);
        unlink(path);
    }
    char *lines = grep_lines("zebrafinch kestrel", &r);
    assert_int_equal(r.home_index, 1);
    assert_null(strstr(lines, "zebrafinch"));
    recall_result_free(&r);
    free(lines);
    assert_int_equal(index_word_rows("zebrafinch"), 0);
}

TEST_MAIN(
    HOME_TEST(test_home_index_answers_the_walks_top_hits),
    HOME_TEST(test_home_index_finds_a_store_written_after_it_was_built),
    HOME_TEST(test_home_index_deleted_is_built_again_and_answers_the_same),
    HOME_TEST(test_home_index_damaged_is_set_aside_and_rebuilt_losing_nothing),
    HOME_TEST(test_home_index_from_a_newer_build_falls_back_with_a_note_and_loses_nothing),
    HOME_TEST(test_home_index_two_processes_catching_up_add_each_row_once),
    HOME_TEST(test_home_index_forgets_the_words_of_a_deleted_session),
)
