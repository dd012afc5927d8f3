/*
 * tomlscan.c -- TOML statements with byte spans.
 *
 * A statement ends at the newline that follows its value, and a value may run over lines
 * (multi-line strings, arrays, inline tables): the scan follows every string and bracket so
 * that a "[features]" or "codex_hooks = false" inside a string is text, never a statement.
 */
#include "tomlscan.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define TS_MAX_DEPTH 64

typedef struct ts {
    const char *s;
    size_t len, i;
    char **err;
} ts;

static int ts_fail(ts *p, const char *what)
{
    size_t line = 1;
    for (size_t k = 0; k < p->i && k < p->len; k++)
        if (p->s[k] == '\n') line++;
    return lc_errf(p->err, LC_INVALID, "line %zu: %s", line, what);
}

static void ts_ws(ts *p)
{
    while (p->i < p->len && (p->s[p->i] == ' ' || p->s[p->i] == '\t')) p->i++;
}

static size_t ts_nl(const ts *p)
{
    if (p->i < p->len && p->s[p->i] == '\n') return 1;
    if (p->i + 1 < p->len && p->s[p->i] == '\r' && p->s[p->i + 1] == '\n') return 2;
    return 0;
}

static void ts_comment(ts *p)
{
    while (p->i < p->len && p->s[p->i] != '\n' && !ts_nl(p)) p->i++;
}

/* Blanks, newlines and comments (inside arrays and inline tables). */
static void ts_gap(ts *p)
{
    for (;;) {
        ts_ws(p);
        size_t n = ts_nl(p);
        if (n) p->i += n;
        else if (p->i < p->len && p->s[p->i] == '#') ts_comment(p);
        else return;
    }
}

static int ts_at(const ts *p, const char *w)
{
    size_t l = strlen(w);
    return p->len - p->i >= l && memcmp(p->s + p->i, w, l) == 0;
}

static unsigned ts_hexval(const char *s, int n, int *ok)
{
    unsigned v = 0;
    for (int k = 0; k < n; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) *ok = 0;
        v = v * 16 + (unsigned)(d < 0 ? 0 : d);
    }
    return v;
}

/* A one-line string ('...' or "..."); with `out`, its decoded text. */
static int ts_line_string(ts *p, sbuf *out)
{
    char q = p->s[p->i++];
    while (p->i < p->len) {
        char c = p->s[p->i];
        if (c == q) {
            p->i++;
            return LC_OK;
        }
        if (c == '\n' || ts_nl(p)) break;
        if (c == '\\' && q == '"') {
            if (p->i + 1 >= p->len) break;
            char e = p->s[p->i + 1];
            int n = e == 'u' ? 4 : e == 'U' ? 8 : 0, ok = 1;
            if (n) {
                if (p->i + 2 + (size_t)n > p->len) break;
                unsigned cp = ts_hexval(p->s + p->i + 2, n, &ok);
                if (!ok) return ts_fail(p, "a bad \\u escape in a string");
                if (out) {
                    if (cp < 0x80) sb_putc(out, (char)cp);
                    else if (cp < 0x800) sb_printf(out, "%c%c", (char)(0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F)));
                    else if (cp < 0x10000)
                        sb_printf(out, "%c%c%c", (char)(0xE0 | cp >> 12), (char)(0x80 | (cp >> 6 & 0x3F)),
                                  (char)(0x80 | (cp & 0x3F)));
                    else
                        sb_printf(out, "%c%c%c%c", (char)(0xF0 | cp >> 18), (char)(0x80 | (cp >> 12 & 0x3F)),
                                  (char)(0x80 | (cp >> 6 & 0x3F)), (char)(0x80 | (cp & 0x3F)));
                }
                p->i += 2 + (size_t)n;
                continue;
            }
            const char *from = "\"\\btnfre", *to = "\"\\\b\t\n\f\r\x1b";
            const char *f = e ? strchr(from, e) : NULL;
            if (!f) return ts_fail(p, "a bad escape in a string");
            if (out) sb_putc(out, to[f - from]);
            p->i += 2;
            continue;
        }
        if (out) sb_putc(out, c);
        p->i++;
    }
    return ts_fail(p, "a string that does not end on its line");
}

/* A multi-line string ("""...""" or '''...'''): up to its closing quotes, which may be
 * followed by one or two more quotes of the content. */
static int ts_multi_string(ts *p)
{
    char q = p->s[p->i];
    p->i += 3;
    while (p->i < p->len) {
        if (q == '"' && p->s[p->i] == '\\') {
            p->i += 2;
            continue;
        }
        if (p->s[p->i] == q && p->i + 2 < p->len + 0 && p->s[p->i + 1] == q && p->s[p->i + 2] == q) {
            p->i += 3;
            for (int k = 0; k < 2 && p->i < p->len && p->s[p->i] == q; k++) p->i++;
            return LC_OK;
        }
        p->i++;
    }
    return ts_fail(p, "a multi-line string that never ends");
}

/* A dotted key: bare words, "basic" or 'literal' parts, with blanks around the dots. */
static int ts_key(ts *p, char ***key, size_t *n)
{
    for (;;) {
        sbuf b = {0};
        ts_ws(p);
        if (p->i >= p->len) return ts_fail(p, "a key expected");
        char c = p->s[p->i];
        if (c == '"' || c == '\'') {
            if (ts_at(p, "\"\"\"") || ts_at(p, "'''")) return ts_fail(p, "a multi-line string as a key");
            int rc = ts_line_string(p, &b);
            if (rc != LC_OK) {
                sb_free(&b);
                return rc;
            }
        } else {
            size_t at = p->i;
            while (p->i < p->len && (strchr("-_", p->s[p->i]) || (p->s[p->i] >= 'a' && p->s[p->i] <= 'z') ||
                                     (p->s[p->i] >= 'A' && p->s[p->i] <= 'Z') || (p->s[p->i] >= '0' && p->s[p->i] <= '9')) &&
                   p->s[p->i])
                p->i++;
            if (p->i == at) return ts_fail(p, "a key expected");
            sb_append(&b, p->s + at, p->i - at);
        }
        if (!b.p) sb_puts(&b, "");
        char **nk = realloc(*key, (*n + 1) * sizeof *nk);
        if (!nk || b.oom) {
            sb_free(&b);
            return lc_errf(p->err, LC_NOMEM, "out of memory");
        }
        *key = nk;
        (*key)[(*n)++] = sb_detach(&b);
        ts_ws(p);
        if (p->i < p->len && p->s[p->i] == '.') {
            p->i++;
            continue;
        }
        return LC_OK;
    }
}

static void ts_key_free(char **key, size_t n)
{
    for (size_t k = 0; k < n; k++) free(key[k]);
    free(key);
}

static int ts_value(ts *p, int depth);

/* An inline table; with `want`, the span of its top-level key `want` into *vs, *ve. */
static int ts_inline(ts *p, int depth, const char *want, size_t *vs, size_t *ve, int *found)
{
    p->i++;
    ts_gap(p);
    if (p->i < p->len && p->s[p->i] == '}') {
        p->i++;
        return LC_OK;
    }
    for (;;) {
        char **key = NULL;
        size_t nkey = 0;
        int rc = ts_key(p, &key, &nkey);
        int hit = rc == LC_OK && want && nkey == 1 && strcmp(key[0], want) == 0;
        ts_key_free(key, nkey);
        if (rc != LC_OK) return rc;
        if (p->i >= p->len || p->s[p->i] != '=') return ts_fail(p, "'=' expected in an inline table");
        p->i++;
        ts_ws(p);
        size_t at = p->i;
        if ((rc = ts_value(p, depth + 1)) != LC_OK) return rc;
        if (hit) {
            *vs = at;
            *ve = p->i;
            *found = 1;
        }
        ts_gap(p);
        if (p->i < p->len && p->s[p->i] == ',') {
            p->i++;
            ts_gap(p);
            continue;
        }
        if (p->i < p->len && p->s[p->i] == '}') {
            p->i++;
            return LC_OK;
        }
        return ts_fail(p, "',' or '}' expected in an inline table");
    }
}

static int ts_value(ts *p, int depth)
{
    if (depth > TS_MAX_DEPTH) return ts_fail(p, "values nested too deep");
    if (p->i >= p->len) return ts_fail(p, "a value expected");
    char c = p->s[p->i];
    if (ts_at(p, "\"\"\"") || ts_at(p, "'''")) return ts_multi_string(p);
    if (c == '"' || c == '\'') return ts_line_string(p, NULL);
    if (c == '[') {
        p->i++;
        for (;;) {
            ts_gap(p);
            if (p->i < p->len && p->s[p->i] == ']') {
                p->i++;
                return LC_OK;
            }
            int rc = ts_value(p, depth + 1);
            if (rc != LC_OK) return rc;
            ts_gap(p);
            if (p->i < p->len && p->s[p->i] == ',') {
                p->i++;
                continue;
            }
            if (p->i < p->len && p->s[p->i] == ']') {
                p->i++;
                return LC_OK;
            }
            return ts_fail(p, "',' or ']' expected in an array");
        }
    }
    if (c == '{') {
        int found = 0;
        return ts_inline(p, depth, NULL, NULL, NULL, &found);
    }
    /* a number, a boolean, a date: one word (a date and its time may be one space apart) */
    if (!strchr("0123456789+-tfin", c)) return ts_fail(p, "a value expected");
    for (;;) {
        size_t at = p->i;
        while (p->i < p->len && !strchr(" \t\r\n,]}#", p->s[p->i])) p->i++;
        if (p->i - at == 10 && p->s[at + 4] == '-' && p->s[at + 7] == '-' && p->i + 1 < p->len && p->s[p->i] == ' ' &&
            p->s[p->i + 1] >= '0' && p->s[p->i + 1] <= '9') {
            p->i++;
            continue;
        }
        return LC_OK;
    }
}

static int ts_push(toml_doc *d, size_t *cap, const toml_stmt *st)
{
    if (d->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        toml_stmt *v = realloc(d->v, nc * sizeof *v);
        if (!v) return LC_NOMEM;
        d->v = v;
        *cap = nc;
    }
    d->v[d->n++] = *st;
    return LC_OK;
}

/* One statement from p->i: its kind, key and spans into *st (its key freed by the caller,
 * also on failure); *table follows the headers. */
static int ts_statement(ts *p, toml_stmt *st, long *table, size_t index)
{
    int rc = LC_OK;
    ts_ws(p);
    char c = p->i < p->len ? p->s[p->i] : '\n';
    if (c == '#' || c == '\n' || ts_nl(p) || p->i >= p->len) {
        st->kind = TOML_BLANK;
    } else if (c == '[') {
        int arr = p->i + 1 < p->len && p->s[p->i + 1] == '[';
        st->kind = arr ? TOML_ARRAY_TABLE : TOML_TABLE;
        p->i += arr ? 2 : 1;
        if ((rc = ts_key(p, &st->key, &st->nkey)) != LC_OK) return rc;
        if (!ts_at(p, arr ? "]]" : "]")) return ts_fail(p, "a table header that does not close");
        p->i += arr ? 2 : 1;
        *table = (long)index;
    } else {
        st->kind = TOML_KEYVAL;
        if ((rc = ts_key(p, &st->key, &st->nkey)) != LC_OK) return rc;
        if (p->i >= p->len || p->s[p->i] != '=') return ts_fail(p, "'=' expected after a key");
        p->i++;
        ts_ws(p);
        st->val_start = p->i;
        if ((rc = ts_value(p, 0)) != LC_OK) return rc;
        st->val_end = p->i;
    }
    ts_ws(p);
    st->com_start = p->i;
    if (p->i < p->len && p->s[p->i] == '#') ts_comment(p);
    st->line_end = p->i;
    size_t nl = ts_nl(p);
    if (!nl && p->i < p->len) return ts_fail(p, "unexpected text after a statement");
    p->i += nl;
    st->end = p->i;
    return LC_OK;
}

int toml_scan(const char *text, size_t len, toml_doc *d, char **err)
{
    ts p = {text, len, 0, err};
    size_t cap = 0, line = 1, counted = 0;
    long table = -1;
    int rc = LC_OK;
    memset(d, 0, sizeof *d);
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.i = 3;
    while (p.i < len) {
        toml_stmt st = {0};
        for (; counted < p.i; counted++)
            if (text[counted] == '\n') line++;
        st.start = p.i == 3 && d->n == 0 ? 0 : p.i; /* the BOM goes with the first statement */
        st.line = line;
        st.table = table;
        if ((rc = ts_statement(&p, &st, &table, d->n)) == LC_OK && (rc = ts_push(d, &cap, &st)) == LC_NOMEM)
            rc = lc_errf(err, LC_NOMEM, "out of memory");
        if (rc != LC_OK) {
            ts_key_free(st.key, st.nkey);
            goto done;
        }
    }
done:
    if (rc != LC_OK) toml_doc_free(d);
    return rc;
}

void toml_doc_free(toml_doc *d)
{
    for (size_t i = 0; i < d->n; i++) ts_key_free(d->v[i].key, d->v[i].nkey);
    free(d->v);
    memset(d, 0, sizeof *d);
}

int toml_key_is(const toml_stmt *st, const char *const *path, size_t n)
{
    if (st->nkey != n) return 0;
    for (size_t k = 0; k < n; k++)
        if (strcmp(st->key[k], path[k]) != 0) return 0;
    return 1;
}

int toml_inline_get(const char *text, size_t start, size_t end, const char *key, size_t *vs, size_t *ve)
{
    ts p = {text, end, start, NULL};
    int found = 0;
    if (start >= end || text[start] != '{') return 0;
    if (ts_inline(&p, 0, key, vs, ve, &found) != LC_OK) return 0;
    return found;
}
