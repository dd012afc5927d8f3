/*
 * temp_home.h -- a fresh temporary agent home for each test of a cmocka suite: `home` is
 * the folder, `setup`/`teardown` make and remove it, HOME_TEST(fn) names a test that runs
 * between them. Included by suites that open stores.
 */
#ifndef TEST_TEMP_HOME_H
#define TEST_TEMP_HOME_H

#include <stdio.h>
#include <stdlib.h>

static char home[256];

static int setup(void **state)
{
    (void)state;
    snprintf(home, sizeof home, "/tmp/lc-test-XXXXXX");
    assert_non_null(mkdtemp(home));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    return system(cmd);
}

/* A test run in its own fresh home. */
#define HOME_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

#endif
