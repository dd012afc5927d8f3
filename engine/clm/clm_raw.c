/*
 * clm_raw.c -- the raw-prefix digest cache of the live context (see clm_raw.h).
 */
#include "clm_raw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clm_cap.h"
#include "message.h"
#include "util.h"

char clm_raw_uncapped[1];

void clm_raw_init(clm_raw_cache *c)
{
    memset(c, 0, sizeof *c);
    sha256_init(&c->ctx);
}

static void clm_raw_forget_check(clm_raw_cache *c)
{
    c->rev_checked = c->rev_ok = 0;
    free(c->rev_why);
    c->rev_why = NULL;
}

static void clm_raw_drop(clm_raw_cache *c, size_t from)
{
    for (size_t i = from; i < c->n; i++) {
        if (c->capped[i] != clm_raw_uncapped) free(c->capped[i]);
        if (!c->ids[i]) c->n_anon--;
        free(c->ids[i]);
    }
    if (from < c->changed_from) c->changed_from = from;
}

void clm_raw_reset(clm_raw_cache *c)
{
    clm_raw_drop(c, 0);
    c->n = 0;
    c->n_anon = 0;
    sha256_init(&c->ctx);
    c->n_ckpt = 0;
    clm_raw_forget_check(c);
}

void clm_raw_free(clm_raw_cache *c)
{
    clm_raw_reset(c);
    LC_FREE(c->tokens, c->capped, c->capped_tokens, c->capped_len, c->excluded, c->ids, c->ckpt);
    memset(c, 0, sizeof *c);
}

/* Put the digest back at the checkpoint at or below k and return how many messages it
 * covers; without such a checkpoint the whole cache is reset and (size_t)-1 returned. The
 * revision check goes when the anchor is no longer covered. */
static size_t clm_raw_resume(clm_raw_cache *c, size_t k, size_t anchor)
{
    size_t j = k / CLM_RAW_CKPT;
    if (j >= c->n_ckpt) {
        clm_raw_reset(c);
        return (size_t)-1;
    }
    size_t keep = j * CLM_RAW_CKPT;
    c->ctx = c->ckpt[j];
    c->n_ckpt = j + 1;
    if (keep < anchor || keep == 0) clm_raw_forget_check(c);
    return keep;
}

/* The digest resumes from the checkpoint at or below k, so at most CLM_RAW_CKPT - 1 kept
 * messages are hashed again. */
void clm_raw_truncate(clm_raw_cache *c, size_t k, size_t anchor)
{
    if (k >= c->n) return;
    size_t keep = clm_raw_resume(c, k, anchor);
    if (keep == (size_t)-1) return;
    clm_raw_drop(c, keep);
    c->n = keep;
}

void clm_raw_uncap(clm_raw_cache *c)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->capped[i] != clm_raw_uncapped) free(c->capped[i]);
        c->capped[i] = NULL;
    }
    c->changed_from = 0;
}

void clm_raw_rev_changed(clm_raw_cache *c, const clm_raw_anchor *a)
{
    if (a) clm_raw_truncate(c, a->count, a->count);
    clm_raw_forget_check(c);
}

/* A bashExecution the user kept private never reaches the model (the host drops it too). */
static int clm_raw_excluded(const char *json)
{
    return strstr(json, "\"bashExecution\"") && strstr(json, "\"excludeFromContext\":true");
}

static void clm_raw_check_anchor(clm_raw_cache *c, const clm_raw_anchor *a)
{
    char hex[65];
    clm_raw_digest_hex(c, hex);
    c->rev_checked = 1;
    c->rev_ok = strcmp(hex, a->digest) == 0;
    free(c->rev_why);
    c->rev_why = c->rev_ok ? NULL
                           : lc_asprintf("the %zu raw messages revision %ld replaces have changed",
                                         a->count, a->revision);
}

static int clm_raw_same(const clm_raw_cache *c, const clm_input *in, size_t i)
{
    const char *id = NULL, *json;
    size_t len;
    in->get(in->ud, i, &id, &json, &len);
    return c->ids[i] && id && strcmp(c->ids[i], id) == 0;
}

/* Entries are immutable and a branch is a path in a tree, so equal entry ids at index i
 * mean equal messages 0..i: the prefix shared with the previous request is found by a
 * binary search over ids (O(log n)). Messages without an entry id (made by an earlier
 * plugin) bound the trusted prefix. */
static size_t clm_raw_common(const clm_raw_cache *c, const clm_input *in)
{
    size_t lim = c->n < in->n ? c->n : in->n;
    if (lim == 0 || c->n_anon > 0 || !clm_raw_same(c, in, 0)) return 0;
    if (clm_raw_same(c, in, lim - 1)) return lim;
    size_t lo = 1, hi = lim - 1; /* [0..lo) shared; hi is not */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (clm_raw_same(c, in, mid)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int clm_raw_grow(clm_raw_cache *c, size_t n)
{
    if (n > c->cap) {
        size_t cap = n + n / 2 + 16;
        size_t *t = realloc(c->tokens, cap * sizeof *t);
        if (!t) return LC_NOMEM;
        c->tokens = t;
        size_t *ct = realloc(c->capped_tokens, cap * sizeof *ct);
        if (!ct) return LC_NOMEM;
        c->capped_tokens = ct;
        size_t *cl = realloc(c->capped_len, cap * sizeof *cl);
        if (!cl) return LC_NOMEM;
        c->capped_len = cl;
        char **cp = realloc(c->capped, cap * sizeof *cp);
        if (!cp) return LC_NOMEM;
        c->capped = cp;
        unsigned char *ex = realloc(c->excluded, cap);
        if (!ex) return LC_NOMEM;
        c->excluded = ex;
        char **ids = realloc(c->ids, cap * sizeof *ids);
        if (!ids) return LC_NOMEM;
        c->ids = ids;
        c->cap = cap;
    }
    sha256_ctx *k = lc_grow(c->ckpt, &c->ckpt_cap, n / CLM_RAW_CKPT + 1, sizeof *k);
    if (!k) return LC_NOMEM;
    c->ckpt = k;
    return LC_OK;
}

/* Fold message i's bytes into the digest (a checkpoint after every CLM_RAW_CKPT-th);
 * its text, and its entry id in *id. */
static const char *clm_raw_fold(clm_raw_cache *c, const clm_input *in, size_t i, const char **id)
{
    const char *json = NULL;
    size_t len = 0;
    in->get(in->ud, i, id, &json, &len);
    char lenbuf[32];
    int w = snprintf(lenbuf, sizeof lenbuf, "%zu\n", len);
    sha256_update(&c->ctx, lenbuf, (size_t)w);
    sha256_update(&c->ctx, json, len);
    if ((i + 1) % CLM_RAW_CKPT == 0) c->ckpt[c->n_ckpt++] = c->ctx;
    return json;
}

/* The branch left the cached prefix at k: the digest resumes from the checkpoint at or
 * below k and folds the messages up to k in again -- the same entries, whose facts (and
 * the pointers a composition borrowed from them) stay -- and the facts from k on go. */
static void clm_raw_rewind(clm_raw_cache *c, const clm_input *in, size_t k, const clm_raw_anchor *a)
{
    size_t anchor = a ? a->count : 0, keep = clm_raw_resume(c, k, anchor);
    if (keep == (size_t)-1) return;
    clm_raw_drop(c, k);
    for (size_t i = keep; i < k; i++) {
        if (a && !c->rev_checked && i == anchor) clm_raw_check_anchor(c, a);
        const char *id;
        clm_raw_fold(c, in, i, &id);
    }
    c->n = k;
}

int clm_raw_update(clm_raw_cache *c, const clm_input *in, const clm_raw_anchor *a)
{
    size_t n = in->n, anchor = a ? a->count : 0;
    size_t k = clm_raw_common(c, in);
    if (k == 0 && c->n) clm_raw_reset(c);
    else if (k < c->n) clm_raw_rewind(c, in, k, a);
    if (clm_raw_grow(c, n) != LC_OK) return LC_NOMEM;
    if (c->n == 0) {
        sha256_init(&c->ctx);
        c->ckpt[0] = c->ctx;
        c->n_ckpt = 1;
    }
    for (size_t i = c->n; i < n; i++) {
        if (a && !c->rev_checked && i == anchor) clm_raw_check_anchor(c, a);
        const char *id = NULL, *json = clm_raw_fold(c, in, i, &id);
        c->tokens[i] = msg_estimate_tokens_json(json);
        c->capped[i] = NULL;
        c->excluded[i] = (unsigned char)clm_raw_excluded(json);
        c->ids[i] = id ? lc_strdup(id) : NULL;
        if (!c->ids[i]) c->n_anon++;
        c->n = i + 1;
    }
    if (a && !c->rev_checked && n == anchor) clm_raw_check_anchor(c, a);
    if (a && !c->rev_checked) {
        c->rev_checked = 1;
        c->rev_ok = 0;
        free(c->rev_why);
        c->rev_why = lc_asprintf("revision %ld replaces %zu raw messages, but the branch has "
                                 "only %zu", a->revision, a->count, n);
    }
    return LC_OK;
}

void clm_raw_settle(clm_raw_cache *c)
{
    c->changed_from = c->n;
}

const char *clm_raw_capped(clm_raw_cache *c, size_t i, const char *json, long cap, double head,
                           size_t *tokens, size_t *len)
{
    if (!c->capped[i]) {
        char *t = clm_cap_message(json, cap, head);
        c->capped[i] = t ? t : clm_raw_uncapped;
        /* Estimated once: a capped form is re-read by nobody until the cap changes. */
        if (t) {
            c->capped_tokens[i] = msg_estimate_tokens_json(t);
            c->capped_len[i] = strlen(t);
        }
    }
    if (c->capped[i] == clm_raw_uncapped) return NULL;
    *tokens = c->capped_tokens[i];
    *len = c->capped_len[i];
    return c->capped[i];
}

void clm_raw_digest_hex(const clm_raw_cache *c, char hex[65])
{
    sha256_ctx x = c->ctx;
    uint8_t d[32];
    sha256_final(&x, d);
    sha256_to_hex(d, hex);
}
