/*
 * store_fx.h -- the fixture of a suite's cases on one store: STORE_TEST(fn) runs fn in a
 * fresh temp home (temp_home.h) with the store of session "sess" for folder /w as *state,
 * closed after the case. Included after temp_home.h.
 */
#ifndef TEST_STORE_FX_H
#define TEST_STORE_FX_H

#include "store.h"

static inline int store_fx_setup(void **state)
{
    setup(state);
    *state = home_store("sess", "/w");
    return 0;
}

static inline int store_fx_teardown(void **state)
{
    store_close(*state);
    return teardown(state);
}

#define STORE_TEST(fn) cmocka_unit_test_setup_teardown(fn, store_fx_setup, store_fx_teardown)

#endif
