/*
 * tools.c -- the reference host's built-in tools (see tools.h): read, write, edit and
 * bash, with the reference agent's argument names and output bounds. Every failure
 * becomes an isError result for the model; nothing here exits or crashes the host.
 * Owns the child processes bash starts (their process group is killed on timeout).
 */
#include "tools.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "message.h"
#include "util.h"

#define TOOLS_MAX_LINES 2000
#define TOOLS_MAX_BYTES (50 * 1024)
#define TOOLS_BASH_DEFAULT_TIMEOUT_S 120
#define TOOLS_BASH_MAX_TIMEOUT_S (24 * 3600)
/* After the shell exits, background children may still hold the pipe open; read what
 * they already wrote for this long, then stop waiting for an EOF that may never come. */
#define TOOLS_BASH_DRAIN_MS 200

/* ------------------------------------------------------------------------------------
 * results
 * ---------------------------------------------------------------------------------- */

/* Replace invalid UTF-8 and NUL bytes with U+FFFD: tool output goes into JSON, and a
 * session file must stay readable by strict parsers. */
static char *tools_utf8_clean(const char *s, size_t n)
{
    sbuf b = {0};
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    sb_reserve(&b, n);
    while (i < n) {
        unsigned char c = p[i];
        size_t len = 0;
        if (c >= 0x01 && c < 0x80) len = 1;
        else if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) len = 3;
        else if (c >= 0xF0 && c <= 0xF4) len = 4;
        int valid = len > 0 && i + len <= n;
        for (size_t k = 1; valid && k < len; k++)
            if ((p[i + k] & 0xC0) != 0x80) valid = 0;
        if (valid && len == 3) {
            if ((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] >= 0xA0)) valid = 0;
        } else if (valid && len == 4) {
            if ((c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] >= 0x90)) valid = 0;
        }
        if (valid) {
            sb_append(&b, s + i, len);
            i += len;
        } else {
            sb_puts(&b, "\xEF\xBF\xBD");
            i++;
        }
    }
    return sb_detach(&b);
}

/* {"content":[{"type":"text","text":text}],"details":details?,"isError":is_error};
 * takes ownership of details. */
static cJSON *tools_result(const char *text, size_t len, cJSON *details, int is_error)
{
    char *clean = tools_utf8_clean(text, len);
    cJSON *r = msg_tool_result(clean ? clean : "", details, is_error);
    free(clean);
    return r;
}

static cJSON *tools_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cJSON *tools_errorf(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tools_result(buf, strlen(buf), NULL, 1);
}

static const char *tools_arg_str(const cJSON *args, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A numeric argument; models sometimes send numbers as strings. -1 when absent. */
static long tools_arg_long(const cJSON *args, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
    if (cJSON_IsNumber(v)) return (long)v->valuedouble;
    if (cJSON_IsString(v) && v->valuestring[0]) {
        char *end = NULL;
        long n = strtol(v->valuestring, &end, 10);
        if (end && *end == '\0') return n;
    }
    return -1;
}

/* Absolute paths stay; "~/" is the user's home; anything else is relative to cwd. */
static char *tools_resolve(const char *path, const char *cwd)
{
    if (path[0] == '/') return lc_strdup(path);
    if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
        const char *home = getenv("HOME");
        if (home) return lc_asprintf("%s%s", home, path + 1);
    }
    if (!cwd || !cwd[0]) return lc_strdup(path);
    size_t n = strlen(cwd);
    return lc_asprintf("%s%s%s", cwd, cwd[n - 1] == '/' ? "" : "/", path);
}

/* ------------------------------------------------------------------------------------
 * read
 * ---------------------------------------------------------------------------------- */

/* Images larger than this are described, not sent: they would crowd out the context. */
#define TOOLS_MAX_IMAGE_BYTES (5 * 1024 * 1024)

/* The MIME type of an image file recognised by its magic bytes, or NULL. */
static const char *tools_image_mime(const unsigned char *d, size_t n)
{
    if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return "image/png";
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return "image/jpeg";
    if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0)) return "image/gif";
    if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0) return "image/webp";
    return NULL;
}

static char *tools_base64(const unsigned char *d, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1);
    size_t o = 0;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)d[i] << 16;
        if (i + 1 < n) v |= (unsigned)d[i + 1] << 8;
        if (i + 2 < n) v |= d[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* An image file as {"content":[text note, {"type":"image","data","mimeType"}]}. */
static cJSON *tools_read_image(const char *path, const char *full, const char *mime,
                               const char *data, size_t len)
{
    char note[512];
    if (len > TOOLS_MAX_IMAGE_BYTES) {
        snprintf(note, sizeof note, "[%s is a %s image of %zu bytes, over the %d-byte limit "
                 "for images; not shown]", path, mime, len, TOOLS_MAX_IMAGE_BYTES);
        return tools_result(note, strlen(note), NULL, 0);
    }
    char *b64 = tools_base64((const unsigned char *)data, len);
    if (!b64) return NULL;
    snprintf(note, sizeof note, "Read image file %s [%s, %zu bytes]", path, mime, len);
    cJSON *details = cJSON_CreateObject();
    cJSON_AddStringToObject(details, "path", full);
    cJSON_AddStringToObject(details, "mimeType", mime);
    cJSON *r = tools_result(note, strlen(note), details, 0);
    cJSON *img = cJSON_CreateObject();
    cJSON_AddStringToObject(img, "type", "image");
    cJSON_AddStringToObject(img, "data", b64);
    cJSON_AddStringToObject(img, "mimeType", mime);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(r, "content"), img);
    free(b64);
    return r;
}

static cJSON *tools_read(const cJSON *args, const char *cwd)
{
    const char *path = tools_arg_str(args, "path");
    char *full = NULL, *data = NULL, *err = NULL;
    size_t len = 0;
    cJSON *result = NULL;
    sbuf out = {0};
    if (!path || !path[0]) return tools_errorf("read: missing required argument 'path'");
    full = tools_resolve(path, cwd);
    if (!full) return NULL;
    struct stat st;
    if (stat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
        result = tools_errorf("read: %s is a directory", path);
        goto done;
    }
    if (lc_read_file(full, &data, &len, &err) != LC_OK) {
        result = tools_errorf("read: cannot read %s: %s", path, err ? err : "error");
        goto done;
    }
    const char *mime = tools_image_mime((const unsigned char *)data, len);
    if (mime) {
        result = tools_read_image(path, full, mime, data, len);
        goto done;
    }
    long offset = tools_arg_long(args, "offset");
    long limit = tools_arg_long(args, "limit");
    if (offset < 1) offset = 1;
    if (limit < 1 || limit > TOOLS_MAX_LINES) limit = TOOLS_MAX_LINES;

    /* A trailing newline ends the last line; it does not start another. */
    long total = 0;
    for (size_t i = 0; i < len; i++)
        if (data[i] == '\n') total++;
    if (len > 0 && data[len - 1] != '\n') total++;
    if (len == 0) {
        result = tools_result("(empty file)", 12, NULL, 0);
        goto done;
    }
    if (offset > total) {
        result = tools_errorf("read: offset %ld is beyond the end of %s (%ld lines)", offset,
                              path, total);
        goto done;
    }
    size_t pos = 0;
    long line = 1;
    while (line < offset && pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        pos = nl ? (size_t)(nl - data) + 1 : len;
        line++;
    }
    long shown = 0;
    int byte_capped = 0;
    while (pos < len && shown < limit) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) + 1 : len;
        size_t n = end - pos;
        if (out.len + n > TOOLS_MAX_BYTES) {
            if (shown == 0) {
                /* One line alone exceeds the byte bound: show its head, say so. */
                sb_append(&out, data + pos, TOOLS_MAX_BYTES);
                sb_printf(&out, "\n[line %ld is %zu bytes; showing the first %d bytes; "
                          "use bash (e.g. cut -c) to read the rest]",
                          offset, n, TOOLS_MAX_BYTES);
                shown = 1;
            }
            byte_capped = 1;
            break;
        }
        sb_append(&out, data + pos, n);
        pos = end;
        shown++;
    }
    long next = offset + shown;
    long remaining = total - (next - 1);
    int truncated = remaining > 0;
    if (truncated) {
        if (out.len && out.p[out.len - 1] != '\n') sb_putc(&out, '\n');
        sb_printf(&out, "\n[%ld more lines; use offset=%ld to continue%s]", remaining, next,
                  byte_capped ? " (output capped at 50KB)" : "");
    }
    cJSON *details = cJSON_CreateObject();
    cJSON_AddStringToObject(details, "path", full);
    cJSON_AddNumberToObject(details, "totalLines", (double)total);
    cJSON_AddNumberToObject(details, "startLine", (double)offset);
    cJSON_AddNumberToObject(details, "endLine", (double)(next - 1));
    cJSON_AddBoolToObject(details, "truncated", truncated);
    result = tools_result(out.p ? out.p : "", out.len, details, 0);
done:
    sb_free(&out);
    free(full);
    free(data);
    free(err);
    return result;
}

/* ------------------------------------------------------------------------------------
 * write / edit
 * ---------------------------------------------------------------------------------- */

/* Create parent folders and write the whole buffer. Returns 0 or an errno value. */
static int tools_write_file(const char *full, const char *data, size_t len, char **err)
{
    char *dir = lc_strdup(full);
    int rc = 0;
    if (!dir) return ENOMEM;
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (lc_mkdir_p(dir, 0755, err) != LC_OK) {
            rc = errno ? errno : EIO;
            goto done;
        }
    }
    FILE *f = fopen(full, "wb");
    if (!f) {
        rc = errno;
        goto done;
    }
    if (len && fwrite(data, 1, len, f) != len) rc = errno ? errno : EIO;
    if (fclose(f) != 0 && rc == 0) rc = errno ? errno : EIO;
done:
    free(dir);
    return rc;
}

static cJSON *tools_write(const cJSON *args, const char *cwd)
{
    const char *path = tools_arg_str(args, "path");
    const char *content = tools_arg_str(args, "content");
    char *err = NULL;
    if (!path || !path[0]) return tools_errorf("write: missing required argument 'path'");
    if (!content) return tools_errorf("write: missing required argument 'content'");
    char *full = tools_resolve(path, cwd);
    if (!full) return NULL;
    size_t len = strlen(content);
    cJSON *result;
    int e = tools_write_file(full, content, len, &err);
    if (e != 0) {
        result = tools_errorf("write: cannot write %s: %s", path, err ? err : strerror(e));
    } else {
        char msg[256];
        snprintf(msg, sizeof msg, "Wrote %zu bytes to %s", len, path);
        cJSON *details = cJSON_CreateObject();
        cJSON_AddStringToObject(details, "path", full);
        cJSON_AddNumberToObject(details, "bytes", (double)len);
        result = tools_result(msg, strlen(msg), details, 0);
    }
    free(full);
    free(err);
    return result;
}

/* Occurrences of needle in data; overlapping ones count too: "aa" in "aaa" is
 * ambiguous, not unique. */
static size_t tools_count_matches(const char *data, size_t len, const char *needle, size_t n)
{
    size_t count = 0;
    for (const char *p = data; (size_t)(p - data) + n <= len;) {
        const char *hit = memmem(p, len - (size_t)(p - data), needle, n);
        if (!hit) break;
        count++;
        p = hit + 1;
    }
    return count;
}

static char *tools_lf_to_crlf(const char *s)
{
    sbuf b = {0};
    for (; *s; s++) {
        if (*s == '\n') sb_putc(&b, '\r');
        sb_putc(&b, *s);
    }
    return sb_detach(&b);
}

static cJSON *tools_edit(const cJSON *args, const char *cwd)
{
    const char *path = tools_arg_str(args, "path");
    const char *old_text = tools_arg_str(args, "oldText");
    const char *new_text = tools_arg_str(args, "newText");
    char *full = NULL, *data = NULL, *err = NULL, *old_crlf = NULL, *new_crlf = NULL;
    size_t len = 0;
    cJSON *result = NULL;
    sbuf out = {0};
    if (!path || !path[0]) return tools_errorf("edit: missing required argument 'path'");
    if (!old_text || !old_text[0])
        return tools_errorf("edit: missing or empty required argument 'oldText'");
    if (!new_text) return tools_errorf("edit: missing required argument 'newText'");
    full = tools_resolve(path, cwd);
    if (!full) return NULL;
    if (lc_read_file(full, &data, &len, &err) != LC_OK) {
        result = tools_errorf("edit: cannot read %s: %s", path, err ? err : "error");
        goto done;
    }
    /* A CRLF file edited with LF text (models write "\n"): match and replace in the
     * file's own line endings rather than fail or mix endings. */
    if (!memmem(data, len, old_text, strlen(old_text)) && memmem(data, len, "\r\n", 2) &&
        !strchr(old_text, '\r') && strchr(old_text, '\n')) {
        old_crlf = tools_lf_to_crlf(old_text);
        new_crlf = tools_lf_to_crlf(new_text);
        if (!old_crlf || !new_crlf) goto done;
        old_text = old_crlf;
        new_text = new_crlf;
    }
    size_t olen = strlen(old_text);
    size_t count = tools_count_matches(data, len, old_text, olen);
    const char *first = memmem(data, len, old_text, olen);
    if (count == 0) {
        result = tools_errorf("edit: oldText not found in %s (it must match exactly, "
                              "including whitespace)", path);
        goto done;
    }
    if (count > 1) {
        result = tools_errorf("edit: oldText found %zu times; make oldText unique (add "
                              "surrounding lines) to edit %s", count, path);
        goto done;
    }
    size_t at = (size_t)(first - data);
    sb_append(&out, data, at);
    sb_puts(&out, new_text);
    sb_append(&out, data + at + olen, len - at - olen);
    if (out.oom) goto done;
    int e = tools_write_file(full, out.p, out.len, &err);
    if (e != 0) {
        result = tools_errorf("edit: cannot write %s: %s", path, err ? err : strerror(e));
        goto done;
    }
    long line = 1;
    for (size_t i = 0; i < at; i++)
        if (data[i] == '\n') line++;
    char msg[256];
    snprintf(msg, sizeof msg, "Replaced 1 occurrence in %s (at line %ld)", path, line);
    cJSON *details = cJSON_CreateObject();
    cJSON_AddStringToObject(details, "path", full);
    cJSON_AddNumberToObject(details, "firstChangedLine", (double)line);
    cJSON_AddNumberToObject(details, "bytes", (double)out.len);
    result = tools_result(msg, strlen(msg), details, 0);
done:
    sb_free(&out);
    free(full);
    free(data);
    free(err);
    free(old_crlf);
    free(new_crlf);
    return result;
}

/* ------------------------------------------------------------------------------------
 * bash
 * ---------------------------------------------------------------------------------- */

/* Keep only the tail of the output: a bounded window of at most 2x the cap is held,
 * and trimmed back to the cap when it fills. */
static void tools_tail_append(sbuf *b, const char *s, size_t n)
{
    sb_append(b, s, n);
    if (b->len > 2 * TOOLS_MAX_BYTES) {
        size_t drop = b->len - TOOLS_MAX_BYTES;
        memmove(b->p, b->p + drop, b->len - drop);
        b->len -= drop;
        b->p[b->len] = '\0';
    }
}

static cJSON *tools_bash(const cJSON *args, const char *cwd)
{
    const char *command = tools_arg_str(args, "command");
    long timeout = tools_arg_long(args, "timeout");
    sbuf out = {0}, text = {0};
    cJSON *result = NULL;
    int fds[2] = {-1, -1};
    pid_t pid = -1;
    if (!command || !command[0]) return tools_errorf("bash: missing required argument 'command'");
    if (timeout <= 0) timeout = TOOLS_BASH_DEFAULT_TIMEOUT_S;
    if (timeout > TOOLS_BASH_MAX_TIMEOUT_S) timeout = TOOLS_BASH_MAX_TIMEOUT_S;
    if (pipe2(fds, O_CLOEXEC) != 0) {
        result = tools_errorf("bash: pipe failed: %s", strerror(errno));
        goto done;
    }
    pid = fork();
    if (pid < 0) {
        result = tools_errorf("bash: fork failed: %s", strerror(errno));
        goto done;
    }
    if (pid == 0) {
        /* Child: only async-signal-safe calls until exec. Its own process group, so a
         * timeout kills everything the command started. */
        setpgid(0, 0);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        signal(SIGPIPE, SIG_DFL);
        if (cwd && cwd[0] && chdir(cwd) != 0) {
            static const char msg[] = "bash: cannot enter the working directory\n";
            ssize_t w = write(2, msg, sizeof msg - 1);
            (void)w;
            _exit(126);
        }
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid); /* also from the parent: no race with an early kill */
    close(fds[1]);
    fds[1] = -1;

    double start = lc_now_ms();
    double deadline = start + (double)timeout * 1000.0;
    double drain_until = -1;
    size_t total = 0;
    int status = 0, exited = 0, timed_out = 0, eof = 0;
    char buf[8192];
    while (!eof) {
        double now = lc_now_ms();
        if (!exited) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) {
                exited = 1;
                drain_until = now + TOOLS_BASH_DRAIN_MS;
            }
        }
        if (!exited && now >= deadline) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            exited = 1;
            timed_out = 1;
            drain_until = now + TOOLS_BASH_DRAIN_MS;
        }
        if (exited && now >= drain_until) break;
        double until = exited ? drain_until : deadline;
        int wait_ms = (int)(until - now);
        if (wait_ms > 100) wait_ms = 100; /* re-check the child regularly */
        if (wait_ms < 0) wait_ms = 0;
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&pfd, 1, wait_ms);
        if (pr < 0 && errno != EINTR) break;
        if (pr > 0) {
            ssize_t n = read(fds[0], buf, sizeof buf);
            if (n > 0) {
                tools_tail_append(&out, buf, (size_t)n);
                total += (size_t)n;
            } else if (n == 0) {
                eof = 1;
            } else if (errno != EINTR && errno != EAGAIN) {
                break;
            }
        }
    }
    if (!exited) {
        waitpid(pid, &status, 0);
    }
    int exit_code;
    int signaled = 0;
    if (WIFEXITED(status)) {
        exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        signaled = WTERMSIG(status);
        exit_code = 128 + signaled;
    } else {
        exit_code = -1;
    }

    int truncated = total > TOOLS_MAX_BYTES;
    const char *shown = out.p ? out.p : "";
    size_t shown_len = out.len;
    if (shown_len > TOOLS_MAX_BYTES) {
        shown += shown_len - TOOLS_MAX_BYTES;
        shown_len = TOOLS_MAX_BYTES;
    }
    /* Start the tail on a character boundary. */
    while (truncated && shown_len > 0 && (((unsigned char)*shown) & 0xC0) == 0x80) {
        shown++;
        shown_len--;
    }
    if (truncated)
        sb_printf(&text, "[output truncated: showing the last %zu of %zu bytes]\n", shown_len,
                  total);
    if (shown_len)
        sb_append(&text, shown, shown_len);
    else
        sb_puts(&text, "(no output)");
    if (text.len && text.p[text.len - 1] != '\n') sb_putc(&text, '\n');
    if (timed_out)
        sb_printf(&text, "\n[command timed out after %ld seconds; its process group was killed]",
                  timeout);
    else if (signaled)
        sb_printf(&text, "\n[killed by signal %d; exit code %d]", signaled, exit_code);
    else
        sb_printf(&text, "\n[exit code %d]", exit_code);
    cJSON *details = cJSON_CreateObject();
    cJSON_AddNumberToObject(details, "exitCode", exit_code);
    cJSON_AddBoolToObject(details, "timedOut", timed_out);
    cJSON_AddBoolToObject(details, "truncated", truncated);
    cJSON_AddNumberToObject(details, "totalBytes", (double)total);
    result = tools_result(text.p ? text.p : "", text.len, details, timed_out || exit_code != 0);
done:
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
    sb_free(&out);
    sb_free(&text);
    return result;
}

/* ------------------------------------------------------------------------------------
 * definitions and dispatch
 * ---------------------------------------------------------------------------------- */

static const struct tools_def {
    const char *name;
    const char *description;
    const char *parameters;
} tools_defs[] = {
    {"read",
     "Read a text file. Output is limited to 2000 lines or 50KB; use offset and limit to "
     "page through larger files.",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"Path to the file (relative to the working directory, or absolute)\"},"
     "\"offset\":{\"type\":\"number\",\"description\":\"Line number to start from (1-based)\"},"
     "\"limit\":{\"type\":\"number\",\"description\":\"Maximum number of lines to read\"}},"
     "\"required\":[\"path\"],\"additionalProperties\":false}"},
    {"write",
     "Write content to a file, creating it and its parent folders if needed, replacing it "
     "if it exists.",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"Path to the file (relative to the working directory, or absolute)\"},"
     "\"content\":{\"type\":\"string\",\"description\":\"The whole new content of the file\"}},"
     "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}"},
    {"edit",
     "Edit a file by replacing one exact occurrence of oldText with newText. oldText must "
     "match exactly (including whitespace) and occur exactly once.",
     "{\"type\":\"object\",\"properties\":{"
     "\"path\":{\"type\":\"string\",\"description\":\"Path to the file (relative to the working directory, or absolute)\"},"
     "\"oldText\":{\"type\":\"string\",\"description\":\"Exact text to find; must be unique in the file\"},"
     "\"newText\":{\"type\":\"string\",\"description\":\"Text to put in its place\"}},"
     "\"required\":[\"path\",\"oldText\",\"newText\"],\"additionalProperties\":false}"},
    {"bash",
     "Run a shell command (/bin/sh -c) in the working directory. Returns stdout and stderr "
     "combined (the last 50KB) and the exit code. Default timeout 120 seconds.",
     "{\"type\":\"object\",\"properties\":{"
     "\"command\":{\"type\":\"string\",\"description\":\"The command to run\"},"
     "\"timeout\":{\"type\":\"number\",\"description\":\"Timeout in seconds (default 120)\"}},"
     "\"required\":[\"command\"],\"additionalProperties\":false}"},
};

cJSON *tools_builtin_definitions(void)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr) return NULL;
    for (size_t i = 0; i < sizeof tools_defs / sizeof tools_defs[0]; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "name", tools_defs[i].name);
        cJSON_AddStringToObject(d, "description", tools_defs[i].description);
        cJSON_AddItemToObject(d, "parameters", cJSON_Parse(tools_defs[i].parameters));
        cJSON_AddItemToArray(arr, d);
    }
    return arr;
}

int tools_is_builtin(const char *name)
{
    if (!name) return 0;
    for (size_t i = 0; i < sizeof tools_defs / sizeof tools_defs[0]; i++)
        if (strcmp(name, tools_defs[i].name) == 0) return 1;
    return 0;
}

cJSON *tools_run(const char *name, const cJSON *arguments, const char *cwd)
{
    if (!name) return tools_errorf("tool call without a name");
    if (arguments && !cJSON_IsObject(arguments))
        return tools_errorf("%s: arguments must be a JSON object", name);
    const cJSON *raw = cJSON_GetObjectItemCaseSensitive(arguments, "_raw");
    if (cJSON_IsString(raw) && cJSON_GetArraySize(arguments) == 1)
        return tools_errorf("%s: the arguments were not valid JSON: %.300s", name,
                            raw->valuestring);
    if (strcmp(name, "read") == 0) return tools_read(arguments, cwd);
    if (strcmp(name, "write") == 0) return tools_write(arguments, cwd);
    if (strcmp(name, "edit") == 0) return tools_edit(arguments, cwd);
    if (strcmp(name, "bash") == 0) return tools_bash(arguments, cwd);
    return tools_errorf("unknown tool '%s'", name);
}
