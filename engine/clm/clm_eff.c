/*
 * clm_eff.c -- the effective context, kept across requests (see clm_eff.h).
 */
#include "clm_eff.h"

#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "util.h"

void clm_eff_free(clm_eff_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->items[i].own);
    LC_FREE(l->items, l->sum, l->ncap);
    memset(l, 0, sizeof *l);
}

static int clm_eff_grow(clm_eff_list *l, size_t n)
{
    if (n + 1 <= l->cap) return LC_OK;
    size_t cap = n + n / 2 + 64;
    clm_eff *it = realloc(l->items, cap * sizeof *it);
    if (!it) return LC_NOMEM;
    l->items = it;
    size_t *s = realloc(l->sum, (cap + 1) * sizeof *s);
    if (!s) return LC_NOMEM;
    l->sum = s;
    size_t *c = realloc(l->ncap, (cap + 1) * sizeof *c);
    if (!c) return LC_NOMEM;
    l->ncap = c;
    l->cap = cap;
    return LC_OK;
}

const char *clm_eff_json(const clm_eff_list *l, size_t i, const clm_input *in, size_t *len)
{
    const clm_eff *e = &l->items[i];
    if (e->json) {
        *len = e->len;
        return e->json;
    }
    const char *id, *json = NULL;
    in->get(in->ud, (size_t)e->src, &id, &json, len);
    return json;
}

/* The build in progress: items before `p` are final; those from `p` on are the previous
 * build's until overwritten, compared with what replaces them while all before were equal. */
typedef struct clm_eff_pass {
    clm_eff_list *l;
    size_t p;
    size_t old_n;       /* items of the previous build (in place from p on) */
    int equal;          /* every item so far equals the previous build's */
    size_t low;         /* raw messages below this are the ones the previous build saw */
    unsigned long rev_gen_old;
    size_t n_rev_old;
} clm_eff_pass;

static int clm_eff_put(clm_eff_pass *s, clm_eff *e, const char *text, int capped)
{
    clm_eff_list *l = s->l;
    if (clm_eff_grow(l, s->p + 1) != LC_OK) return LC_NOMEM;
    clm_eff *old = s->p < s->old_n ? &l->items[s->p] : NULL;
    int same = 0;
    if (old && s->equal) {
        if (text)   /* a projected text: equal bytes, and its estimate is kept */
            same = old->own && old->src < 0 && strcmp(old->own, text) == 0;
        else if (e->src >= 0)   /* raw bytes below `low` are the ones seen before */
            same = old->src == e->src && (size_t)e->src < s->low && old->json == e->json &&
                   old->raw == e->raw;
        else                    /* a revision message of the same revision */
            same = old->src < 0 && !old->own && old->json == e->json && old->raw == e->raw;
    }
    if (same) {
        e->own = old->own;
        if (text) {
            e->json = old->own;
            e->len = old->len;
            e->tokens = old->tokens;
        }
    } else {
        if (s->equal) {
            s->equal = 0;
            l->same = s->p;
        }
        if (old) {
            free(old->own);
            old->own = NULL;
        }
        if (text) {
            size_t len = strlen(text);
            if (!(e->own = lc_strndup(text, len))) return LC_NOMEM;
            e->json = e->own;
            e->len = len;
            e->tokens = msg_estimate_tokens_json(text);
        }
    }
    l->items[s->p] = *e;
    l->sum[s->p + 1] = l->sum[s->p] + e->tokens;
    l->ncap[s->p + 1] = l->ncap[s->p] + (capped ? 1 : 0);
    s->p++;
    return LC_OK;
}

static int clm_eff_put_raw(clm_eff_pass *s, clm_raw_cache *raw, const clm_input *in, size_t i,
                           long cap, double head)
{
    if (raw->excluded[i]) return LC_OK;
    clm_eff e = {NULL, 0, (long)i, (long)i, raw->ids[i], raw->tokens[i], NULL};
    int capped = 0;
    if (cap > 0) {
        const char *id, *json = NULL;
        size_t len, t = 0, clen = 0;
        in->get(in->ud, i, &id, &json, &len);
        const char *c = clm_raw_capped(raw, i, json, cap, head, &t, &clen);
        if (c) {
            e.json = c;
            e.len = clen;
            e.raw = -1;
            e.tokens = t;
            capped = 1;
        }
    }
    return clm_eff_put(s, &e, NULL, capped);
}

/* Drop the previous build's items from p on. */
static void clm_eff_cut(clm_eff_pass *s)
{
    clm_eff_list *l = s->l;
    for (size_t i = s->p; i < s->old_n; i++) free(l->items[i].own);
    if (s->equal) l->same = s->p < l->n ? s->p : l->n;
    l->n = s->p;
}

int clm_eff_build(clm_eff_list *l, const clm_eff_rev *rev, const clm_eff_suffix *suffix,
                  clm_raw_cache *raw, const clm_input *in, long cap, double head, char **err)
{
    int rc = LC_OK;
    size_t n = in->n, n_rev = rev ? rev->n : 0, anchor = rev ? rev->anchor : 0;
    unsigned long gen = rev ? rev->gen : 0;
    /* After a failed build the old items are only freed, never compared. */
    clm_eff_pass s = {l, 0, l->n, l->valid, raw->changed_from, l->rev_gen, l->n_rev};
    size_t from = anchor;
    if (clm_eff_grow(l, 0) != LC_OK) goto oom;
    l->sum[0] = l->ncap[0] = 0;
    l->same = 0;
    size_t lim = s.low < l->raw_n ? s.low : l->raw_n;
    if (l->valid && !suffix && !l->had_suffix && l->n_rev == n_rev && l->anchor == anchor &&
        l->rev_gen == gen && l->cap_chars == cap && l->cap_head == head && lim >= anchor) {
        /* The same composition as before: the revision and every raw item below `lim` stay,
         * and only the raw messages from there on are composed (O(new)). Raw items follow
         * the revision in increasing raw index. */
        size_t lo = n_rev, hi = l->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if ((size_t)l->items[mid].src < lim) lo = mid + 1;
            else hi = mid;
        }
        s.p = lo;
        s.equal = 0;
        l->same = lo;
        from = lim;
    } else {
        for (size_t i = 0; i < n_rev; i++) {
            long r = rev->raw && rev->raw[i] >= 0 && (size_t)rev->raw[i] < n ? rev->raw[i] : -1;
            clm_eff e = {rev->messages[i], rev->lens[i], r, -1, NULL, rev->tokens[i], NULL};
            /* Only the same revision's messages are the same items. */
            if (s.equal && (gen != s.rev_gen_old || i >= s.n_rev_old)) {
                s.equal = 0;
                l->same = s.p;
            }
            if (clm_eff_put(&s, &e, NULL, 0) != LC_OK) goto oom;
        }
    }
    if (suffix) {
        for (size_t k = 0; k < suffix->n; k++) {
            long idx = -1;
            const char *json = NULL;
            suffix->get(suffix->ud, k, &idx, &json);
            if (idx < 0) {
                /* A message the projection made (a summary pointer) in place of aged ones. */
                if (!json || !*json) continue;
                clm_eff e = {NULL, 0, -1, -1, NULL, 0, NULL};
                if (clm_eff_put(&s, &e, json, 0) != LC_OK) goto oom;
                continue;
            }
            if ((size_t)idx < anchor || (size_t)idx >= n) continue;
            if (clm_eff_put_raw(&s, raw, in, (size_t)idx, cap, head) != LC_OK) goto oom;
        }
    } else {
        for (size_t i = from; i < n; i++)
            if (clm_eff_put_raw(&s, raw, in, i, cap, head) != LC_OK) goto oom;
    }
    clm_eff_cut(&s);
    l->valid = 1;
    l->had_suffix = suffix != NULL;
    l->rev_gen = gen;
    l->n_rev = n_rev;
    l->anchor = anchor;
    l->raw_n = n;
    l->cap_chars = cap;
    l->cap_head = head;
    return LC_OK;
oom:
    /* The items may be half replaced: the next build starts from nothing. */
    clm_eff_cut(&s);
    l->valid = 0;
    rc = lc_errf(err, LC_NOMEM, "live context: out of memory");
    return rc;
}
