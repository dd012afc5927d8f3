/*
 * fuzz_jsonl.c -- libFuzzer target for the session-file path: the input is a whole
 * session file, read by the JSON Lines reader (engine/util/jsonl.h), and every line that
 * parses as JSON goes through message derivation (role, derived text, token estimate,
 * tool ids, usage) both as the entry's `message` and as a bare AgentMessage. The file
 * is read a second time from a resume offset taken after the first line, the way an
 * incremental ingest reopens it. The file lives in a memfd, so no disk is touched.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "jsonl.h"
#include "message.h"
#include "util.h"

static int fd = -1;
static char path[64];

static void derive(const cJSON *m)
{
    int complete = 0;
    char *text = msg_derive_text(m, &complete);
    free(text);
    (void)msg_estimate_tokens(m);
    (void)msg_role_name(msg_role_of(m));
    (void)msg_tool_call_id(m);
    (void)msg_tool_name(m);
    (void)msg_tool_call_count(m);
    (void)msg_usage_total(m);
}

/* The reader's contract, checked on every line: no newline inside, NUL after, not blank,
 * line numbers rising, and at the end every byte from `offset` accounted for. */
static void read_all(long long offset, size_t size)
{
    jsonl_reader *r = NULL;
    char *err = NULL;
    if (jsonl_open_at(path, offset, &r, &err) != LC_OK) {
        free(err);
        return;
    }
    const char *line;
    size_t len, lineno, last = 0;
    while (jsonl_next(r, &line, &len, &lineno) == LC_OK) {
        if (len == 0 || line[len] != '\0' || memchr(line, '\n', len) || lineno <= last) abort();
        if (strspn(line, " \t\r") == len) abort();
        if (jsonl_offset(r) <= offset || jsonl_offset(r) > (long long)size) abort();
        last = lineno;
        cJSON *e = cJSON_ParseWithLength(line, len);
        (void)msg_estimate_tokens_json(line);
        if (!e) continue;
        derive(e);
        derive(cJSON_GetObjectItem(e, "message"));
        cJSON_Delete(e);
    }
    if (jsonl_offset(r) != (long long)size && size > (size_t)offset) abort();
    (void)jsonl_last_complete(r);
    jsonl_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fd < 0) {
        fd = memfd_create("fuzz_jsonl", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();

    read_all(0, size);

    /* Resume where an ingest that stopped after the first line would. */
    jsonl_reader *r = NULL;
    char *err = NULL;
    if (jsonl_open(path, &r, &err) == LC_OK) {
        const char *line;
        size_t len;
        long long off = -1;
        if (jsonl_next(r, &line, &len, NULL) == LC_OK && jsonl_last_complete(r))
            off = jsonl_offset(r);
        jsonl_close(r);
        if (off >= 0) read_all(off, size);
    }
    free(err);
    return 0;
}
