/*
 * corpus.h -- the generated store corpus bench_store and bench_recall share (header-only,
 * each bench is one file): user/assistant turns of 40..600 words from 20, an `idN` token
 * now and then, a needle `N<i>=<7i+3>` every 997th message. Same n, same bytes.
 */
#ifndef BENCH_CORPUS_H
#define BENCH_CORPUS_H

#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "util.h"

typedef struct corpus {
    store_msg *m;
    char **bufs;
    char **ids;
    size_t n;
    size_t text_bytes;
} corpus;

static const char *const words[] = {"engine", "store", "summary", "branch", "window", "token", "cache",
                                    "provider", "request", "context", "message", "index", "pattern",
                                    "file", "handle", "reader", "budget", "turn", "session", "node"};

static void corpus_make(corpus *c, size_t n)
{
    unsigned long long x = 88172645463325252ULL;
    c->m = calloc(n, sizeof *c->m);
    c->bufs = calloc(n, sizeof *c->bufs);
    c->ids = calloc(n, sizeof *c->ids);
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        sbuf t = {0};
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t nw = 40 + x % 560;
        for (size_t w = 0; w < nw; w++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            sb_printf(&t, "%s%s", w ? " " : "", words[x % 20]);
            if (x % 50 == 0) sb_printf(&t, " id%llu", x % 100000);
        }
        if (i % 997 == 0) sb_printf(&t, " N%zu=%zu", i, i * 7 + 3);
        c->text_bytes += t.len;
        c->ids[i] = lc_asprintf("e%zu", i);
        c->bufs[i] = lc_asprintf("{\"role\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"timestamp\":%zu}",
                                 i % 2 ? "assistant" : "user", t.p, 1700000000000 + i);
        c->m[i] = (store_msg){c->ids[i], c->bufs[i], strlen(c->bufs[i]), NULL};
        sb_free(&t);
    }
}

static void corpus_free(corpus *c)
{
    for (size_t i = 0; i < c->n; i++) free(c->bufs[i]), free(c->ids[i]);
    free(c->bufs), free(c->ids), free(c->m);
}

#endif
