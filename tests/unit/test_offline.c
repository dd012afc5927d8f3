/*
 * test_offline.c -- the offline state's bounded reconnect policy (engine/offline.h), which
 * failures count as offline, and the status line's masking of a store URL's password
 * (admin_url_redact / admin_store_line).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "offline.h"
#include "store.h"
#include "util.h"
#include "expect_text.h"
#include "test_main.h"

static void test_reconnect_is_due_every_n_calls_not_every_request(void **state)
{
    (void)state;
    offline_state o = {0};
    assert_int_equal(offline_due(&o, 0), 0); /* online: nothing to retry */
    offline_enter(&o, "server unreachable", 1000);
    int due = 0;
    for (int i = 0; i < 3 * OFFLINE_RETRY_REQUESTS; i++) due += offline_due(&o, 1000 + i);
    assert_int_equal(due, 3);
    offline_still(&o, "still unreachable", 1100);
    assert_int_equal(o.attempts, 1);
    assert_string_equal(o.reason, "still unreachable");
    assert_true(o.since_ms == 1000); /* going offline again keeps when it began */
    /* Time alone makes it due too, without waiting for the calls. */
    assert_int_equal(offline_due(&o, 1100 + OFFLINE_RETRY_MS), 1);
    char *d = offline_describe(&o, 5000);
    expect_has(d, "offline for 4 s (still unreachable)", "1 reconnect attempt(s) failed");
    free(d);
    assert_true(offline_leave(&o, 11000) == 10.0);
    assert_int_equal(o.offline, 0);
    assert_null(o.reason);
    d = offline_describe(&o, 0);
    assert_string_equal(d, "online");
    free(d);
}

static void test_refusals_and_busy_stores_are_not_offline(void **state)
{
    (void)state;
    assert_int_equal(offline_failure(LC_ERR), 1);
    assert_int_equal(offline_failure(LC_INVALID), 0);
    assert_int_equal(offline_failure(LC_BUSY), 0);
    assert_int_equal(offline_failure(LC_NOMEM), 0);
    assert_int_equal(offline_failure(LC_OK), 0);
}

static void test_store_url_password_is_never_printed(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"postgresql://agent:s3cret@db.example:5432/lcm", "postgresql://agent:***@db.example:5432/lcm"},
        {"postgresql://agent@db/lcm", "postgresql://agent@db/lcm"},
        {"postgresql:///lcm?host=/run/pg&password=s3cret&sslmode=off", "postgresql:///lcm?host=/run/pg&password=***&sslmode=off"},
        {"host=/tmp dbname=lcm password=s3cret user=a", "host=/tmp dbname=lcm password=*** user=a"},
        {"/home/a/.agent/lcm/s1.sqlite", "/home/a/.agent/lcm/s1.sqlite"},
        {"postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *r = admin_url_redact(cases[i][0]);
        assert_string_equal(r, cases[i][1]);
        assert_null(strstr(r, "s3cret"));
        free(r);
    }
    setenv("LCM_STORE_URL", "postgresql://agent:s3cret@db/lcm", 1);
    char *line = admin_store_line("/h", NULL, "offline for 3 s (server unreachable)");
    assert_null(strstr(line, "s3cret"));
    assert_non_null(strstr(line, "offline for 3 s"));
    /* Served by the embedded store (no backend of this build takes the URL): its folder. */
    if (!strcmp(store_backend_name(), "sqlite")) assert_non_null(strstr(line, "(/h/lcm)"));
    else assert_non_null(strstr(line, "agent:***@db/lcm"));
    free(line);
    unsetenv("LCM_STORE_URL");
    line = admin_store_line("/h", NULL, NULL);
    assert_string_equal(line, "store: sqlite (/h/lcm), online");
    free(line);
}

TEST_MAIN(
    cmocka_unit_test(test_reconnect_is_due_every_n_calls_not_every_request),
    cmocka_unit_test(test_refusals_and_busy_stores_are_not_offline),
    cmocka_unit_test(test_store_url_password_is_never_printed),
)
