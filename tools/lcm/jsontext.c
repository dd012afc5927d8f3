/*
 * jsontext.c -- JSON text with byte spans, and splices that keep every other byte.
 *
 * The parse is strict RFC 8259 (no comments, no trailing commas) so that a file we would
 * have to guess at is refused rather than rewritten. Values are never converted: a number
 * or a string stays the bytes the user wrote, and only the splices we make change the text.
 */
#include "jsontext.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define JT_MAX_DEPTH 256

typedef struct jt_parser {
    const char *s;
    size_t len, i;
    char **err;
} jt_parser;

static int jt_fail(jt_parser *p, const char *what)
{
    size_t line = 1;
    for (size_t k = 0; k < p->i && k < p->len; k++)
        if (p->s[k] == '\n') line++;
    return lc_errf(p->err, LC_INVALID, "%s at line %zu", what, line);
}

static void jt_ws(jt_parser *p)
{
    while (p->i < p->len && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static int jt_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int jt_string(jt_parser *p)
{
    p->i++; /* the opening quote */
    while (p->i < p->len) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') {
            p->i++;
            return LC_OK;
        }
        if (c < 0x20) return jt_fail(p, "a control character inside a string");
        if (c == '\\') {
            if (p->i + 1 >= p->len) break;
            char e = p->s[p->i + 1];
            if (e == 'u') {
                if (p->i + 6 > p->len || !jt_hex(p->s[p->i + 2]) || !jt_hex(p->s[p->i + 3]) || !jt_hex(p->s[p->i + 4]) ||
                    !jt_hex(p->s[p->i + 5]))
                    return jt_fail(p, "a bad \\u escape");
                p->i += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || !e) return jt_fail(p, "a bad escape");
            p->i += 2;
            continue;
        }
        p->i++;
    }
    return jt_fail(p, "an unterminated string");
}

static int jt_digits(jt_parser *p)
{
    size_t at = p->i;
    while (p->i < p->len && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    return p->i > at;
}

static int jt_number(jt_parser *p)
{
    if (p->s[p->i] == '-') p->i++;
    if (p->i < p->len && p->s[p->i] == '0') p->i++;
    else if (!jt_digits(p)) return jt_fail(p, "a bad number");
    if (p->i < p->len && p->s[p->i] == '.') {
        p->i++;
        if (!jt_digits(p)) return jt_fail(p, "a bad number");
    }
    if (p->i < p->len && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->len && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (!jt_digits(p)) return jt_fail(p, "a bad number");
    }
    return LC_OK;
}

static int jt_value(jt_parser *p, jt_node *parent, int depth, jt_node **out);

static jt_node *jt_new(jt_node *parent)
{
    jt_node *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->parent = parent;
    if (parent) {
        if (parent->last) parent->last->next = n;
        else parent->child = n;
        parent->last = n;
        parent->n++;
    }
    return n;
}

static int jt_container(jt_parser *p, jt_node *n, int depth)
{
    int obj = p->s[p->i] == '{';
    char close = obj ? '}' : ']';
    p->i++;
    jt_ws(p);
    if (p->i < p->len && p->s[p->i] == close) {
        p->i++;
        return LC_OK;
    }
    for (;;) {
        size_t ks = 0, ke = 0;
        jt_ws(p);
        if (obj) {
            if (p->i >= p->len || p->s[p->i] != '"') return jt_fail(p, "a member name expected");
            ks = p->i;
            int rc = jt_string(p);
            if (rc != LC_OK) return rc;
            ke = p->i;
            jt_ws(p);
            if (p->i >= p->len || p->s[p->i] != ':') return jt_fail(p, "':' expected");
            p->i++;
            jt_ws(p);
        }
        jt_node *c = NULL;
        int rc = jt_value(p, n, depth + 1, &c);
        if (rc != LC_OK) return rc;
        c->key_start = ks;
        c->key_end = ke;
        jt_ws(p);
        if (p->i < p->len && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->len && p->s[p->i] == close) {
            p->i++;
            return LC_OK;
        }
        return jt_fail(p, obj ? "',' or '}' expected" : "',' or ']' expected");
    }
}

static int jt_value(jt_parser *p, jt_node *parent, int depth, jt_node **out)
{
    if (depth > JT_MAX_DEPTH) return jt_fail(p, "nesting too deep");
    if (p->i >= p->len) return jt_fail(p, "a value expected");
    jt_node *n = jt_new(parent);
    if (!n) return lc_errf(p->err, LC_NOMEM, "out of memory");
    *out = n;
    n->start = p->i;
    char c = p->s[p->i];
    int rc = LC_OK;
    if (c == '{' || c == '[') {
        n->type = c == '{' ? JT_OBJ : JT_ARR;
        rc = jt_container(p, n, depth);
    } else if (c == '"') {
        n->type = JT_STR;
        rc = jt_string(p);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        n->type = JT_NUM;
        rc = jt_number(p);
    } else {
        static const char *lits[] = {"true", "false", "null"};
        size_t k = 0, l = 0;
        n->type = JT_LIT;
        for (; k < 3; k++) {
            l = strlen(lits[k]);
            if (p->len - p->i >= l && memcmp(p->s + p->i, lits[k], l) == 0) break;
        }
        if (k < 3) p->i += l;
        else rc = jt_fail(p, "a value expected");
    }
    n->end = p->i;
    return rc;
}

void jt_free(jt_node *n)
{
    while (n) {
        jt_node *next = n->next;
        jt_free(n->child);
        free(n);
        n = next;
    }
}

int jt_parse(const char *text, size_t len, jt_node **root, char **err)
{
    jt_parser p = {text, len, 0, err};
    jt_node *holder = calloc(1, sizeof *holder), *v = NULL;
    *root = NULL;
    if (!holder) return lc_errf(err, LC_NOMEM, "out of memory");
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.i = 3;
    jt_ws(&p);
    int rc = jt_value(&p, holder, 0, &v);
    if (rc == LC_OK) {
        jt_ws(&p);
        if (p.i != len) rc = jt_fail(&p, "text after the value");
    }
    if (rc == LC_OK) {
        *root = holder->child;
        holder->child->parent = NULL;
        holder->child = NULL;
    }
    jt_free(holder->child);
    free(holder);
    return rc;
}

char *jt_key(const char *text, const jt_node *member)
{
    jt_node k = {.type = JT_STR, .start = member->key_start, .end = member->key_end};
    return member->parent && member->parent->type == JT_OBJ ? jt_str(text, &k) : NULL;
}

jt_node *jt_get(const char *text, const jt_node *obj, const char *key)
{
    jt_node *found = NULL;
    if (!obj || obj->type != JT_OBJ) return NULL;
    for (jt_node *c = obj->child; c; c = c->next) {
        char *name = jt_key(text, c);
        if (name && strcmp(name, key) == 0) found = c;
        free(name);
    }
    return found;
}

static unsigned jt_hex4(const char *s)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

char *jt_str(const char *text, const jt_node *n)
{
    sbuf b = {0};
    if (!n || n->type != JT_STR) return NULL;
    for (size_t i = n->start + 1; i + 1 < n->end;) {
        char c = text[i];
        if (c != '\\') {
            sb_putc(&b, c);
            i++;
            continue;
        }
        char e = text[i + 1];
        if (e != 'u') {
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            sb_putc(&b, to[strchr(from, e) - from]);
            i += 2;
            continue;
        }
        unsigned cp = jt_hex4(text + i + 2);
        i += 6;
        if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= n->end && text[i] == '\\' && text[i + 1] == 'u') {
            unsigned lo = jt_hex4(text + i + 2);
            if (lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
        }
        if (cp == 0) {
            sb_free(&b);
            return NULL;
        }
        if (cp < 0x80) sb_putc(&b, (char)cp);
        else if (cp < 0x800) sb_printf(&b, "%c%c", (char)(0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F)));
        else if (cp < 0x10000)
            sb_printf(&b, "%c%c%c", (char)(0xE0 | cp >> 12), (char)(0x80 | (cp >> 6 & 0x3F)), (char)(0x80 | (cp & 0x3F)));
        else
            sb_printf(&b, "%c%c%c%c", (char)(0xF0 | cp >> 18), (char)(0x80 | (cp >> 12 & 0x3F)),
                      (char)(0x80 | (cp >> 6 & 0x3F)), (char)(0x80 | (cp & 0x3F)));
    }
    if (!b.p) sb_puts(&b, "");
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

char *jt_quote(const char *s)
{
    sbuf b = {0};
    sb_putc(&b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') sb_printf(&b, "\\%c", *p);
        else if (*p == '\n') sb_puts(&b, "\\n");
        else if (*p == '\t') sb_puts(&b, "\\t");
        else if (*p == '\r') sb_puts(&b, "\\r");
        else if (*p < 0x20) sb_printf(&b, "\\u%04x", *p);
        else sb_putc(&b, (char)*p);
    }
    sb_putc(&b, '"');
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

void jt_style(const char *text, size_t len, const char **nl, char unit[17])
{
    const char *first = memchr(text, '\n', len);
    *nl = first && first > text && first[-1] == '\r' ? "\r\n" : "\n";
    strcpy(unit, "  ");
    for (const char *p = first; p && p < text + len; p = memchr(p + 1, '\n', (size_t)(text + len - p - 1))) {
        size_t k = 0;
        while (p + 1 + k < text + len && (p[1 + k] == ' ' || p[1 + k] == '\t') && k < 16) k++;
        if (k && p + 1 + k < text + len && p[1 + k] != '\r' && p[1 + k] != '\n') {
            memcpy(unit, p + 1, k);
            unit[k] = 0;
            return;
        }
    }
}

/* ---- splices ------------------------------------------------------------------------------ */

static void jt_splice(jt_edits *e, size_t start, size_t end, char *with)
{
    if (!with) {
        e->oom = 1;
        return;
    }
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 8;
        struct jt_splice *v = realloc(e->v, cap * sizeof *v);
        if (!v) {
            free(with);
            e->oom = 1;
            return;
        }
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = (struct jt_splice){start, end, with};
}

void jt_replace(jt_edits *e, size_t start, size_t end, const char *with)
{
    jt_splice(e, start, end, lc_strdup(with));
}

static size_t jt_child_start(const jt_node *c)
{
    return c->parent && c->parent->type == JT_OBJ ? c->key_start : c->start;
}

void jt_remove(jt_edits *e, const char *text, const jt_node *container, const unsigned char *drop)
{
    (void)text;
    size_t i = 0, kept = 0;
    const jt_node *first_kept = NULL;
    for (const jt_node *c = container->child; c; c = c->next, i++)
        if (!drop[i]) {
            kept++;
            if (!first_kept) first_kept = c;
        }
    if (!kept) {
        if (container->n) jt_splice(e, container->start + 1, container->end - 1, lc_strdup(""));
        return;
    }
    i = 0;
    const jt_node *prev = NULL;
    for (const jt_node *c = container->child; c; prev = c, c = c->next, i++) {
        if (!drop[i]) continue;
        if (c == container->child) {
            jt_splice(e, jt_child_start(c), jt_child_start(first_kept), lc_strdup(""));
        } else if (prev && jt_child_start(prev) >= jt_child_start(first_kept)) {
            jt_splice(e, prev->end, c->end, lc_strdup(""));
        }
        /* otherwise c is in the leading run, which its first child's splice covers */
    }
}

/* The blanks that start the line holding text[at]. */
static char *jt_line_indent(const char *text, size_t at)
{
    size_t ls = at;
    while (ls > 0 && text[ls - 1] != '\n') ls--;
    size_t k = ls;
    while (k < at && (text[k] == ' ' || text[k] == '\t')) k++;
    return lc_strndup(text + ls, k - ls);
}

void jt_append(jt_edits *e, const char *text, size_t len, const jt_node *container, const char *key,
               jt_value_fn value, const void *ctx)
{
    const char *nl;
    char unit[17];
    jt_style(text, len, &nl, unit);
    char *qk = key ? jt_quote(key) : lc_strdup("");
    char *indent = NULL, *sep = NULL, *val = NULL, *with = NULL, *outer = NULL;
    if (!qk) goto oom;
    if (container->n) {
        const jt_node *last = container->last;
        size_t cs = jt_child_start(last), ls = cs;
        while (ls > 0 && (text[ls - 1] == ' ' || text[ls - 1] == '\t')) ls--;
        if (ls == 0 || text[ls - 1] == '\n') {
            /* one child a line: the new one on its own line, as indented as the last */
            indent = lc_strndup(text + ls, cs - ls);
            sep = indent ? lc_asprintf(",%s%s", nl, indent) : NULL;
            val = indent ? value(ctx, indent, unit, nl) : NULL;
        } else {
            /* children on one line: the same separator, the value on one line */
            const jt_node *before = NULL;
            for (const jt_node *c = container->child; c && c != last; c = c->next) before = c;
            sep = before ? lc_strndup(text + before->end, cs - before->end) : lc_strdup(", ");
            val = value(ctx, "", "", "");
        }
        if (!sep || !val) goto oom;
        with = lc_asprintf("%s%s%s%s", sep, qk, key ? ": " : "", val);
        jt_splice(e, last->end, last->end, with);
    } else {
        outer = jt_line_indent(text, container->parent && container->parent->type == JT_OBJ ? container->key_start
                                                                                             : container->start);
        indent = outer ? lc_asprintf("%s%s", outer, unit) : NULL;
        val = indent ? value(ctx, indent, unit, nl) : NULL;
        if (!val) goto oom;
        with = lc_asprintf("%s%s%s%s%s%s%s", nl, indent, qk, key ? ": " : "", val, nl, outer);
        jt_splice(e, container->start + 1, container->end - 1, with);
    }
    free(qk);
    free(indent);
    free(sep);
    free(val);
    free(outer);
    return;
oom:
    e->oom = 1;
    free(qk);
    free(indent);
    free(sep);
    free(val);
    free(outer);
}

void jt_edits_free(jt_edits *e)
{
    for (size_t i = 0; i < e->n; i++) free(e->v[i].with);
    free(e->v);
    memset(e, 0, sizeof *e);
}

char *jt_apply(const char *text, size_t len, jt_edits *e)
{
    sbuf b = {0};
    char *out = NULL;
    if (e->oom) goto done;
    /* few splices: an insertion sort by start */
    for (size_t i = 1; i < e->n; i++)
        for (size_t j = i; j > 0 && e->v[j - 1].start > e->v[j].start; j--) {
            struct jt_splice t = e->v[j];
            e->v[j] = e->v[j - 1];
            e->v[j - 1] = t;
        }
    size_t at = 0;
    for (size_t i = 0; i < e->n; i++) {
        if (e->v[i].start < at) goto done; /* overlapping: a bug, never a guess */
        sb_append(&b, text + at, e->v[i].start - at);
        sb_puts(&b, e->v[i].with);
        at = e->v[i].end;
    }
    sb_append(&b, text + at, len - at);
    if (!b.p) sb_puts(&b, "");
    if (!b.oom) out = sb_detach(&b);
done:
    sb_free(&b);
    jt_edits_free(e);
    return out;
}
