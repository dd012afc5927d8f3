/*
 * dag_fx.h -- the fixture of the DAG suites: a private home holding the store of session
 * "sess" for folder /w, and an extractive summarizer (deterministic, no model). fx_setup
 * and fx_teardown make and remove it; the suite's cases get it as *state.
 */
#ifndef TEST_DAG_FX_H
#define TEST_DAG_FX_H

#include <stdlib.h>

#include "store.h"
#include "summarize.h"
#include "temp_dir.h"

typedef struct fx {
    char home[64];
    store *st;
    summ_ctx *sc;
} fx;

/* The extractive-only summarizer chain. */
static inline summ_ctx *extractive_ctx(void)
{
    static const char *const chain[] = {"extractive"};
    summ_config cfg = {.chain = chain, .n_chain = 1};
    summ_ctx *sc = NULL;
    assert_int_equal(summ_create(&cfg, &sc, NULL), LC_OK);
    return sc;
}

static inline int fx_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    temp_dir_make(f->home, sizeof f->home, "/tmp/lc-dag-XXXXXX");
    assert_int_equal(store_open(f->home, "sess", "/w", &f->st, NULL), LC_OK);
    f->sc = extractive_ctx();
    *state = f;
    return 0;
}

static inline int fx_teardown(void **state)
{
    fx *f = *state;
    summ_free(f->sc);
    store_close(f->st);
    int rc = temp_dir_remove(f->home);
    free(f);
    return rc;
}

#endif
