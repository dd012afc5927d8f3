/*
 * fuzz_grep.c -- libFuzzer target for what a model can pass to lcm_grep: FTS5 query
 * strings and PCRE2 patterns, run by recall_grep against a small store built once (a
 * few messages of each role, a removed entry, a leaf and a condensed summary), with the
 * result formatted as the tool would. The same text also goes to recall_describe as an
 * id. The first input byte picks the options (query or pattern, case, removed entries,
 * paging, summary scope, redaction); the rest is the string.
 */
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recall.h"
#include "store.h"
#include "util.h"

static store *st;
static int64_t leaf_id, top_id;
static char home[] = "/tmp/lc-fuzz-grep.XXXXXX";

static const char *const MSGS[][2] = {
    {"e1", "{\"role\":\"user\",\"content\":\"Set N07=4821 and count the lines in src/handlers.c\"}"},
    {"e2", "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Reading the file.\"},"
           "{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"read\",\"arguments\":{\"path\":\"src/handlers.c\"}}]}"},
    {"e3", "{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"read\",\"content\":"
           "[{\"type\":\"text\",\"text\":\"int handle(void) { return 42; }\\n/* sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX */\"}],"
           "\"isError\":false}"},
    {"e4", "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\"},"
           "{\"type\":\"text\",\"text\":\"The file has 1 line; N07 is 4821. \\u00e9t\\u00e9 \\u65e5\\u672c\"}]}"},
    {"e5", "{\"role\":\"bashExecution\",\"command\":\"wc -l src/*.c\",\"output\":\"  12 a.c\\n  30 b.c\\n  42 total\","
           "\"exitCode\":0}"},
    {"e6", "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"abandoned branch text\"},"
           "{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"}]}"},
    {"e7", "{\"role\":\"custom\",\"customType\":\"note\",\"content\":\"remember: deploy on friday\",\"display\":true}"},
    {"e8", "{\"role\":\"compactionSummary\",\"summary\":\"Earlier: the handlers were refactored.\",\"tokensBefore\":900}"},
};

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    remove(p);
    return 0;
}

static void cleanup(void)
{
    store_close(st);
    nftw(home, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
    char *err = NULL;
    size_t n = sizeof MSGS / sizeof MSGS[0];
    store_msg m[sizeof MSGS / sizeof MSGS[0]];
    if (!mkdtemp(home)) abort();
    atexit(cleanup);
    if (store_open(home, "fuzz-grep", "/work", &st, &err) != LC_OK) abort();
    for (size_t i = 0; i < n; i++) {
        m[i] = (store_msg){MSGS[i][0], MSGS[i][1], strlen(MSGS[i][1]), NULL};
    }
    if (store_ingest(st, m, n, NULL, &err) != LC_OK) abort();
    const char *removed[] = {"e6"};
    if (store_set_removed(st, removed, 1, 1, NULL, &err) != LC_OK) abort();
    const char *leaf_entries[] = {"e1", "e2", "e3"};
    store_summary leaf = {.kind = "leaf", .depth = 0, .text = "Counted lines of handlers.c",
                          .tokens = 8, .entry_ids = leaf_entries, .n_entries = 3};
    if (store_summary_add(st, &leaf, &leaf_id, &err) != LC_OK) abort();
    store_summary top = {.kind = "condensed", .depth = 1, .text = "Session so far: handlers",
                         .tiers_json = "{\"rich\":\"Session so far: handlers, N07\"}",
                         .tokens = 6, .children = &leaf_id, .n_children = 1};
    if (store_summary_add(st, &top, &top_id, &err) != LC_OK) abort();
    free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!st) setup();
    if (size < 1) return 0;
    uint8_t sel = data[0];
    char *text = lc_strndup((const char *)data + 1, size - 1);
    if (!text) return 0;

    recall_grep_opts o = {0};
    if (sel & 1) o.pattern = text;
    else o.query = text;
    o.case_sensitive = (sel >> 1) & 1;
    o.include_removed = (sel >> 2) & 1;
    o.redact = (sel >> 3) & 1;
    o.offset = (sel >> 4) & 1 ? 1 : 0;
    o.summary_id = (sel >> 5) & 1 ? ((sel >> 6) & 1 ? top_id : leaf_id) : 0;
    o.limit = (sel >> 7) & 1 ? 2 : 0;
    /* A pathological pattern must stop at the bound; a short one keeps the fuzzer fast. */
    o.time_budget_ms = 200;

    recall_result r;
    char *err = NULL;
    if (recall_grep(st, &o, &r, &err) == LC_OK) {
        free(recall_grep_format(&o, RECALL_SCOPE_SESSION, &r));
        recall_result_free(&r);
    }
    free(err);
    err = NULL;

    char *out = NULL;
    if (recall_describe(st, text, o.redact, &out, &err) == LC_OK) free(out);
    free(err);
    free(text);
    return 0;
}
