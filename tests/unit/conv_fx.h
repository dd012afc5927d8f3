/*
 * conv_fx.h -- a conversation for the suites that drive requests (test_projstate,
 * test_request): messages of about 100 tokens, each saying something of its own, and the
 * summarizer chains a projection is given (extractive, and truncation alone for covering).
 * Included after cmocka.h.
 */
#ifndef TEST_CONV_FX_H
#define TEST_CONV_FX_H

#include <stdio.h>
#include <string.h>

#include "store.h"
#include "summarize.h"
#include "util.h"

/* The extractive chain, or (truncate_only) the one that covers by truncation at once. */
static inline summ_ctx *conv_fx_chain(int truncate_only)
{
    static const char *const names[] = {"extractive"};
    summ_config cfg = {.chain = names, .n_chain = 1, .truncate_only = truncate_only};
    summ_ctx *sc = NULL;
    assert_int_equal(summ_create(&cfg, &sc, NULL), LC_OK);
    return sc;
}

/* n messages, user and assistant in turn: ids[i] "e%03d", json[i] owned by the caller. */
static inline void conv_fx_fill(char *json[], char ids[][16], store_msg m[], int n)
{
    for (int i = 0; i < n; i++) {
        snprintf(ids[i], 16, "e%03d", i);
        json[i] = lc_asprintf("{\"role\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":\"Step %d of the "
                              "migration: the table orders_%d gets the column region_%d, the index on "
                              "customer_%d is rebuilt, and the report for week %d is checked against "
                              "the ledger before the next batch of rows is moved over.\"}]}",
                              i % 2 ? "assistant" : "user", i, i, i * 7, i * 3, i);
        assert_non_null(json[i]);
        m[i] = (store_msg){ids[i], json[i], strlen(json[i]), NULL};
    }
}

/* The first n messages' tokens as the projection measures raw JSON: a token per 4 bytes. */
static inline long conv_fx_tokens(const store_msg m[], size_t n)
{
    long t = 0;
    for (size_t i = 0; i < n; i++) t += (long)(m[i].json_len + 3) / 4;
    return t;
}

#endif
