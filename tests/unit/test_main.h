/*
 * test_main.h -- a suite's main: TEST_MAIN(tests...) runs the listed cmocka tests as one
 * group, TEST_MAIN_GROUP(setup, teardown, tests...) with a setup before the group and a
 * teardown after it. A suite then lists only its tests. Included after cmocka.h.
 */
#ifndef TEST_MAIN_H
#define TEST_MAIN_H

#define TEST_MAIN_GROUP(group_setup, group_teardown, ...)                                   \
    int main(void)                                                                          \
    {                                                                                       \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                                    \
        return cmocka_run_group_tests(tests, group_setup, group_teardown);                  \
    }

#define TEST_MAIN(...) TEST_MAIN_GROUP(NULL, NULL, __VA_ARGS__)

#endif
