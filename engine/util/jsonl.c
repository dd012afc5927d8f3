/*
 * jsonl.c -- JSON Lines reader (see jsonl.h): reads the file in blocks and splits them at
 * newlines itself (lines may hold NULs), adds "\r\n", blank-line skipping, line numbers,
 * resumable byte offsets, and the bound on what one line may take in memory: a line past
 * JSONL_LINE_MAX bytes is read through to its end but only its first JSONL_LINE_MAX bytes
 * are kept (getline grew its buffer to the line, so a 1 GB sparse file took 1 GB).
 */
#include "jsonl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "util.h"

#define JSONL_BLOCK (256u << 10)

struct jsonl_reader {
    FILE *f;
    char *buf;        /* the current line, reused across lines */
    size_t cap;
    char *in;         /* the block read ahead, in[in_pos..in_len) not yet consumed */
    size_t in_pos, in_len;
    size_t lineno;    /* physical lines consumed so far */
    long long offset; /* bytes consumed so far */
    int last_complete;
    int clipped;      /* the last line was longer than JSONL_LINE_MAX */
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
    r->cap = 256;
    if (!(r->in = malloc(JSONL_BLOCK)) || !(r->buf = malloc(r->cap))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory opening %s", path);
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

/* Append s[0..n) to the line (len bytes so far), keeping at most JSONL_LINE_MAX. */
static int jsonl_keep(jsonl_reader *r, size_t *len, const char *s, size_t n)
{
    size_t room = JSONL_LINE_MAX - *len;
    if (n > room) {
        r->clipped = 1;
        n = room;
    }
    if (!n) return LC_OK;
    if (*len + n + 1 > r->cap) {
        size_t want = r->cap;
        while (want < *len + n + 1) want *= 2;
        if (want > (size_t)JSONL_LINE_MAX + 1) want = (size_t)JSONL_LINE_MAX + 1;
        char *nb = realloc(r->buf, want);
        if (!nb) return LC_NOMEM;
        r->buf = nb;
        r->cap = want;
    }
    memcpy(r->buf + *len, s, n);
    *len += n;
    return LC_OK;
}

int jsonl_next(jsonl_reader *r, const char **line, size_t *len, size_t *lineno)
{
    for (;;) {
        size_t l = 0, used = 0;
        int nl = 0, any = 0;
        r->clipped = 0;
        while (!nl) {
            if (r->in_pos == r->in_len) {
                errno = 0;
                size_t got = fread(r->in, 1, JSONL_BLOCK, r->f);
                if (got == 0) {
                    if (ferror(r->f)) {
                        int code = errno == ENOMEM ? LC_NOMEM : LC_ERR;
                        return lc_errf(&r->error, code, "cannot read line %zu: %s", r->lineno + 1,
                                       strerror(errno ? errno : EIO));
                    }
                    break;
                }
                r->in_pos = 0;
                r->in_len = got;
            }
            any = 1;
            const char *p = r->in + r->in_pos, *hit = memchr(p, '\n', r->in_len - r->in_pos);
            size_t take = hit ? (size_t)(hit - p) : r->in_len - r->in_pos;
            if (jsonl_keep(r, &l, p, take) != LC_OK)
                return lc_errf(&r->error, LC_NOMEM, "cannot read line %zu: out of memory", r->lineno + 1);
            used += take + (hit != NULL);
            r->in_pos += take + (hit != NULL);
            nl = hit != NULL;
        }
        if (!any) return LC_NOTFOUND;
        r->lineno++;
        r->offset += (long long)used;
        r->last_complete = nl;
        if (l > 0 && r->buf[l - 1] == '\r' && !r->clipped) l--;
        r->buf[l] = '\0';
        size_t i = 0;
        while (i < l && (r->buf[i] == ' ' || r->buf[i] == '\t' || r->buf[i] == '\r')) i++;
        if (i == l && !r->clipped) continue; /* blank: writers may leave them, they carry nothing */
        *line = r->buf;
        *len = l;
        if (lineno) *lineno = r->lineno;
        return LC_OK;
    }
}

int jsonl_clipped(const jsonl_reader *r) { return r->clipped; }

long long jsonl_offset(const jsonl_reader *r) { return r->offset; }

int jsonl_last_complete(const jsonl_reader *r) { return r->last_complete; }

const char *jsonl_error(const jsonl_reader *r) { return r->error; }

void jsonl_close(jsonl_reader *r)
{
    if (!r) return;
    if (r->f) fclose(r->f);
    LC_FREE(r->buf, r->in, r->error, r);
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
