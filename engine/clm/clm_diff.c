/*
 * clm_diff.c -- side-by-side LCS line diff for the /clm edits page (see clm_diff.h).
 */
#include "clm_diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* LCS tables are quadratic; past this many cells the middle is shown as one replaced
 * run, which is still a true statement about the texts. */
#define DIFF_MAX_CELLS ((size_t)4000000)

typedef struct line {
    const char *p;
    size_t n;
} line;

typedef struct op {
    char kind;   /* '=', '-', '+' */
    size_t a, b; /* line indexes in old / new */
} op;

static size_t split_lines(const char *s, line **out)
{
    size_t n = 0, cap = 16;
    line *v = malloc(cap * sizeof *v);
    if (!v) return (size_t)-1;
    const char *p = s;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (n == cap) {
            line *t = realloc(v, (cap *= 2) * sizeof *v);
            if (!t) { free(v); return (size_t)-1; }
            v = t;
        }
        v[n++] = (line){p, len};
        p += len + (nl ? 1 : 0);
    }
    *out = v;
    return n;
}

static int line_eq(const line *x, const line *y)
{
    return x->n == y->n && memcmp(x->p, y->p, x->n) == 0;
}

static int push(op **ops, size_t *n, size_t *cap, char kind, size_t a, size_t b)
{
    op *t = lc_grow(*ops, cap, *n + 1, sizeof *t);
    if (!t) return 0;
    *ops = t;
    (*ops)[(*n)++] = (op){kind, a, b};
    return 1;
}

/* Edit script over the trimmed middle: LCS by dynamic programming from the end. */
static int diff_ops(const line *A, size_t na, const line *B, size_t nb, op **ops, size_t *nops)
{
    size_t cap = 0, pre = 0, suf = 0;
    *ops = NULL;
    *nops = 0;
    while (pre < na && pre < nb && line_eq(&A[pre], &B[pre])) pre++;
    while (suf < na - pre && suf < nb - pre && line_eq(&A[na - 1 - suf], &B[nb - 1 - suf])) suf++;
    for (size_t i = 0; i < pre; i++)
        if (!push(ops, nops, &cap, '=', i, i)) return 0;
    size_t ma = na - pre - suf, mb = nb - pre - suf;
    if ((ma + 1) * (mb + 1) <= DIFF_MAX_CELLS && ma && mb) {
        uint32_t *t = calloc((ma + 1) * (mb + 1), sizeof *t);
        if (!t) return 0;
#define T(i, j) t[(i) * (mb + 1) + (j)]
        for (size_t i = ma; i-- > 0;)
            for (size_t j = mb; j-- > 0;)
                T(i, j) = line_eq(&A[pre + i], &B[pre + j]) ? T(i + 1, j + 1) + 1
                          : T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
        size_t i = 0, j = 0;
        int ok = 1;
        while (ok && (i < ma || j < mb)) {
            if (i < ma && j < mb && line_eq(&A[pre + i], &B[pre + j]))
                ok = push(ops, nops, &cap, '=', pre + i++, pre + j++);
            else if (j < mb && (i == ma || T(i, j + 1) >= T(i + 1, j)))
                ok = push(ops, nops, &cap, '+', 0, pre + j++);
            else
                ok = push(ops, nops, &cap, '-', pre + i++, 0);
        }
#undef T
        free(t);
        if (!ok) return 0;
    } else {
        for (size_t i = 0; i < ma; i++)
            if (!push(ops, nops, &cap, '-', pre + i, 0)) return 0;
        for (size_t j = 0; j < mb; j++)
            if (!push(ops, nops, &cap, '+', 0, pre + j)) return 0;
    }
    for (size_t k = 0; k < suf; k++)
        if (!push(ops, nops, &cap, '=', na - suf + k, nb - suf + k)) return 0;
    return 1;
}

/* Display form of a line: tabs and control characters made visible, cut to `max`. */
static void put_clean(sbuf *b, const char *p, size_t n, size_t max)
{
    size_t shown = n < max ? n : max;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\t') sb_puts(b, "    ");
        else if (c < 0x20 || c == 0x7f) sb_putc(b, '?');
        else sb_putc(b, (char)c);
    }
    if (n > max) sb_puts(b, "...");
}

/* Cut or pad a cell to exactly w columns. */
static void put_cell(sbuf *b, const char *p, size_t n, size_t w)
{
    size_t c = 0, i = 0;
    while (i < n) {
        size_t k = 1;
        while (i + k < n && ((unsigned char)p[i + k] & 0xC0) == 0x80) k++;
        if (c + 1 > w) break;
        sb_append(b, p + i, k);
        i += k;
        c++;
    }
    if (i < n && w > 0 && c == w) {
        /* mark the cut: replace the last column with '>' */
        size_t back = b->len;
        while (back > 0 && ((unsigned char)b->p[back - 1] & 0xC0) == 0x80) back--;
        if (back > 0) b->len = back - 1, b->p[b->len] = '\0';
        sb_putc(b, '>');
    }
    for (; c < w; c++) sb_putc(b, ' ');
}

static int is_word(char c)
{
    return c != ' ' && c != '\t';
}

/* Word emphasis: the differing middle (after the common word prefix and suffix) of each
 * side is wrapped in markers. */
static void emphasize(const line *x, const line *y, size_t max, sbuf *lx, sbuf *ly)
{
    size_t nx = x->n < max ? x->n : max, ny = y->n < max ? y->n : max;
    size_t pre = 0;
    while (pre < nx && pre < ny && x->p[pre] == y->p[pre]) pre++;
    while (pre > 0 && pre < nx && is_word(x->p[pre - 1]) && is_word(x->p[pre])) pre--;
    size_t suf = 0;
    while (suf < nx - pre && suf < ny - pre && x->p[nx - 1 - suf] == y->p[ny - 1 - suf]) suf++;
    while (suf > 0 && suf < nx - pre && is_word(x->p[nx - suf]) && is_word(x->p[nx - 1 - suf]))
        suf--;
    if (suf > ny - pre) suf = ny - pre;
    put_clean(lx, x->p, pre, max);
    sb_puts(lx, "[-");
    put_clean(lx, x->p + pre, nx - pre - suf, max);
    sb_puts(lx, "-]");
    put_clean(lx, x->p + nx - suf, suf, max);
    put_clean(ly, y->p, pre, max);
    sb_puts(ly, "{+");
    put_clean(ly, y->p + pre, ny - pre - suf, max);
    sb_puts(ly, "+}");
    put_clean(ly, y->p + ny - suf, suf, max);
}

typedef struct rows {
    sbuf out;
    size_t n, max, half;
    int truncated;
} rows;

static void row(rows *r, const char *l, size_t ln, char mark, const char *rt, size_t rn)
{
    if (r->n >= r->max) {
        r->truncated = 1;
        return;
    }
    put_cell(&r->out, l, ln, r->half);
    sb_printf(&r->out, " %c ", mark);
    put_cell(&r->out, rt, rn, r->half);
    /* no trailing blanks */
    while (r->out.len && r->out.p[r->out.len - 1] == ' ') r->out.p[--r->out.len] = '\0';
    sb_putc(&r->out, '\n');
    r->n++;
}

char *clm_diff_side_by_side(const char *old_text, const char *new_text, const clm_diff_opts *o)
{
    size_t width = o && o->width ? o->width : 120;
    size_t max_rows = o && o->max_rows ? o->max_rows : 400;
    size_t ctx = o && o->context ? o->context : 3;
    size_t max_line = o && o->max_line ? o->max_line : 2000;
    line *A = NULL, *B = NULL;
    op *ops = NULL;
    size_t nops = 0;
    rows r;
    memset(&r, 0, sizeof r);
    r.max = max_rows;
    r.half = width > 7 ? (width - 3) / 2 : 2;
    char *result = NULL;
    size_t na = split_lines(old_text ? old_text : "", &A);
    size_t nb = split_lines(new_text ? new_text : "", &B);
    if (na == (size_t)-1 || nb == (size_t)-1) goto done;
    if (!diff_ops(A, na, B, nb, &ops, &nops)) goto done;
    int any = 0;
    for (size_t k = 0; k < nops; k++) any |= ops[k].kind != '=';
    if (!any) {
        result = lc_strdup("(no difference)\n");
        goto done;
    }
    sbuf l = {0}, rt = {0};
    for (size_t k = 0; k < nops && !r.truncated;) {
        if (ops[k].kind == '=') {
            size_t e = k;
            while (e < nops && ops[e].kind == '=') e++;
            size_t run = e - k;
            size_t head = k == 0 ? 0 : ctx, tail = e == nops ? 0 : ctx;
            if (run <= head + tail + 1) head = run, tail = 0;
            for (size_t i = 0; i < head && i < run; i++) {
                l.len = rt.len = 0;
                put_clean(&l, A[ops[k + i].a].p, A[ops[k + i].a].n, max_line);
                row(&r, l.p ? l.p : "", l.len, ' ', l.p ? l.p : "", l.len);
            }
            if (run > head + tail) {
                char *fold = lc_asprintf("... %zu unchanged lines ...", run - head - tail);
                if (fold) row(&r, fold, strlen(fold), ' ', "", 0);
                free(fold);
            }
            for (size_t i = run - tail; i < run && tail; i++) {
                l.len = 0;
                put_clean(&l, A[ops[k + i].a].p, A[ops[k + i].a].n, max_line);
                row(&r, l.p ? l.p : "", l.len, ' ', l.p ? l.p : "", l.len);
            }
            k = e;
            continue;
        }
        /* a change run: removed lines paired with added lines, like diff -y */
        size_t e = k, nd = 0, ni = 0;
        while (e < nops && ops[e].kind != '=') {
            nd += ops[e].kind == '-';
            ni += ops[e].kind == '+';
            e++;
        }
        size_t *del = malloc((nd + 1) * sizeof *del), *ins = malloc((ni + 1) * sizeof *ins);
        if (!del || !ins) {
            free(del);
            free(ins);
            sb_free(&l);
            sb_free(&rt);
            goto done;
        }
        nd = ni = 0;
        for (size_t i = k; i < e; i++) {
            if (ops[i].kind == '-') del[nd++] = ops[i].a;
            else ins[ni++] = ops[i].b;
        }
        size_t pairs = nd > ni ? nd : ni;
        for (size_t i = 0; i < pairs; i++) {
            l.len = rt.len = 0;
            if (l.p) l.p[0] = '\0';
            if (rt.p) rt.p[0] = '\0';
            if (i < nd && i < ni) {
                emphasize(&A[del[i]], &B[ins[i]], max_line, &l, &rt);
                row(&r, l.p, l.len, '|', rt.p, rt.len);
            } else if (i < nd) {
                put_clean(&l, A[del[i]].p, A[del[i]].n, max_line);
                row(&r, l.p ? l.p : "", l.len, '<', "", 0);
            } else {
                put_clean(&rt, B[ins[i]].p, B[ins[i]].n, max_line);
                row(&r, "", 0, '>', rt.p ? rt.p : "", rt.len);
            }
        }
        free(del);
        free(ins);
        k = e;
    }
    sb_free(&l);
    sb_free(&rt);
    if (r.truncated)
        sb_printf(&r.out, "[diff preview truncated at %zu rows; the comparison covered the "
                          "full texts: %zu -> %zu lines]\n", r.max, na, nb);
    if (r.out.oom) goto done;
    result = sb_detach(&r.out);
done:
    sb_free(&r.out);
    free(A);
    free(B);
    free(ops);
    return result;
}
