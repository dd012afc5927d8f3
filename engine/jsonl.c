/*
 * jsonl.c -- JSON Lines reader over stdio's getline (see jsonl.h). getline already handles
 * lines of any length and embedded NULs; this file adds "\r\n", blank-line skipping,
 * line numbers and resumable byte offsets.
 */
#include "jsonl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "util.h"

struct jsonl_reader {
    FILE *f;
    char *buf;        /* getline's buffer, reused across lines */
    size_t cap;
    size_t lineno;    /* physical lines consumed so far */
    long long offset; /* bytes consumed so far */
    int last_complete;
    char *error;
};

int jsonl_open_at(const char *path, long long offset, jsonl_reader **out, char **err)
{
    int rc = LC_OK;
    jsonl_reader *r = calloc(1, sizeof *r);
    *out = NULL;
    if (!r) return lc_errf(err, LC_NOMEM, "out of memory opening %s", path);
    r->last_complete = 1;
    r->f = fopen(path, "re");
    if (!r->f) {
        rc = lc_errf(err, errno == ENOENT ? LC_NOTFOUND : LC_ERR, "cannot open %s: %s", path,
                     strerror(errno));
        goto done;
    }
    if (offset > 0 && fseeko(r->f, (off_t)offset, SEEK_SET) != 0) {
        rc = lc_errf(err, LC_ERR, "cannot seek %s to %lld: %s", path, offset, strerror(errno));
        goto done;
    }
    r->offset = offset > 0 ? offset : 0;
    *out = r;
    r = NULL;
done:
    jsonl_close(r);
    return rc;
}

int jsonl_open(const char *path, jsonl_reader **out, char **err)
{
    return jsonl_open_at(path, 0, out, err);
}

int jsonl_next(jsonl_reader *r, const char **line, size_t *len, size_t *lineno)
{
    for (;;) {
        errno = 0;
        ssize_t n = getline(&r->buf, &r->cap, r->f);
        if (n < 0) {
            if (ferror(r->f)) {
                int code = errno == ENOMEM ? LC_NOMEM : LC_ERR;
                return lc_errf(&r->error, code, "cannot read line %zu: %s", r->lineno + 1,
                               strerror(errno ? errno : EIO));
            }
            return LC_NOTFOUND;
        }
        r->lineno++;
        r->offset += n;
        size_t l = (size_t)n;
        r->last_complete = l > 0 && r->buf[l - 1] == '\n';
        if (l > 0 && r->buf[l - 1] == '\n') l--;
        if (l > 0 && r->buf[l - 1] == '\r') l--;
        r->buf[l] = '\0';
        size_t i = 0;
        while (i < l && (r->buf[i] == ' ' || r->buf[i] == '\t' || r->buf[i] == '\r')) i++;
        if (i == l) continue; /* blank: writers may leave them, they carry nothing */
        *line = r->buf;
        *len = l;
        if (lineno) *lineno = r->lineno;
        return LC_OK;
    }
}

long long jsonl_offset(const jsonl_reader *r) { return r->offset; }

int jsonl_last_complete(const jsonl_reader *r) { return r->last_complete; }

const char *jsonl_error(const jsonl_reader *r) { return r->error; }

void jsonl_close(jsonl_reader *r)
{
    if (!r) return;
    if (r->f) fclose(r->f);
    LC_FREE(r->buf, r->error, r);
}

/* ---- member spans ------------------------------------------------------------------- */

static size_t json_skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

/* Index just past the string starting at s[i] == '"', or n when unterminated. */
static size_t json_skip_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\') i++;
        else if (s[i] == '"') return i + 1;
    }
    return n;
}

/* Index just past the value starting at s[i]; strings are skipped whole, so brackets
 * inside them do not count. */
static size_t json_skip_value(const char *s, size_t n, size_t i)
{
    if (i >= n) return n;
    if (s[i] == '"') return json_skip_string(s, n, i);
    if (s[i] != '{' && s[i] != '[') {
        while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' &&
               s[i] != '\n' && s[i] != '\r' && s[i] != '\t')
            i++;
        return i;
    }
    size_t depth = 0;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '"') {
            i = json_skip_string(s, n, i) - 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) return i + 1;
        }
    }
    return n;
}

int json_member_span(const char *s, size_t n, const char *key, size_t *off, size_t *len)
{
    size_t klen = strlen(key);
    size_t i = json_skip_ws(s, n, 0);
    if (i >= n || s[i] != '{') return LC_INVALID;
    i = json_skip_ws(s, n, i + 1);
    while (i < n && s[i] == '"') {
        size_t kend = json_skip_string(s, n, i);
        if (kend >= n) return LC_INVALID;
        int match = kend - i - 2 == klen && memcmp(s + i + 1, key, klen) == 0;
        i = json_skip_ws(s, n, kend);
        if (i >= n || s[i] != ':') return LC_INVALID;
        i = json_skip_ws(s, n, i + 1);
        size_t vend = json_skip_value(s, n, i);
        if (vend > n || vend == i) return LC_INVALID;
        if (match) {
            *off = i;
            *len = vend - i;
            return LC_OK;
        }
        i = json_skip_ws(s, n, vend);
        if (i < n && s[i] == ',') i = json_skip_ws(s, n, i + 1);
        else break;
    }
    return LC_NOTFOUND;
}
