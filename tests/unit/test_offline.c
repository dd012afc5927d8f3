/*
 * test_offline.c -- the offline state's bounded reconnect policy (engine/lcm/offline.h), which
 * failures count as offline, and the status line's masking of a store URL's password
 * (store_url_redact / store_url_scrub / admin_store_line).
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
        /* libpq decodes a parameter's name: these are all `password` */
        {"postgresql:///lcm?host=/tmp&pass%77ord=s3cret&user=a", "postgresql:///lcm?host=/tmp&pass%77ord=***&user=a"},
        {"postgresql:///lcm?%70%61%73%73%77%6F%72%64=s3cret", "postgresql:///lcm?%70%61%73%73%77%6F%72%64=***"},
        {"postgresql:///lcm?user=a&sslpassword=s3cret", "postgresql:///lcm?user=a&sslpassword=***"},
        /* the user part runs to its '@' whatever it holds before the first '/' */
        {"postgresql://u:s3cret?x@h/db", "postgresql://u:***@h/db"},
        {"postgresql://u:s3/cret@h/db?sslmode=off", "postgresql://u:***@h/db?sslmode=off"},
        /* a store's path: the session suffix is kept */
        {"postgresql:///lcm?user=a&password=s3cret#12", "postgresql:///lcm?user=a&password=***#12"},
        {"postgresql:///lcm?user=a&password=s3cret#cret", "postgresql:///lcm?user=a&password=***"},
        {"host=/tmp password = 's3cret with \\' spaces' user=a", "host=/tmp password = *** user=a"},
        {"postgresql:///lcm?passwordx=s3cret", "postgresql:///lcm?passwordx=s3cret"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *r = store_url_redact(cases[i][0]);
        assert_string_equal(r, cases[i][1]);
        if (!strstr(cases[i][1], "s3cret")) assert_null(strstr(r, "s3cret"));
        free(r);
    }
    /* a driver's message is scrubbed of the secret as written and as decoded */
    char *m = store_url_scrub("postgresql:///lcm?pass%77ord=s3%63ret", "auth failed for s3cret (s3%63ret)");
    assert_string_equal(m, "auth failed for *** (***)");
    free(m);
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
