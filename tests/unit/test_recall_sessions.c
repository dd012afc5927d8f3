/*
 * test_recall_sessions.c -- the grep across past sessions (recall_sessions.c) under
 * allocation failure: every allocation of one call is made to fail in turn, and the call
 * either says so (an error) or gives every hit, each labelled with its session, or says
 * that stores were skipped -- never fewer hits as if they were all there is. The failures
 * come from malloc / calloc / realloc of this binary failing after N of the engine's calls
 * (glibc's own allocator underneath); a sanitizer build replaces the allocator itself, so
 * there the sweep is left out and only the whole call is checked.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recall.h"
#include "store.h"
#include "util.h"
#include "test_main.h"

#include "temp_home.h"

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define FAULTS 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern char __executable_start, etext; /* this binary's code: the engine is linked in whole */

static long fault_left = -1; /* the engine's allocations that succeed before one fails; -1: all do */
static long fault_calls;     /* the engine's allocations made while armed */

/* Whether the allocation asked for from `caller` fails. Only the engine's own allocations
 * count: SQLite's (a shared library) are thousands a call, and SQLite answers its own
 * failures with SQLITE_NOMEM, which the store reports. */
static int fault_now(const void *caller)
{
    if (fault_left < 0 || (const char *)caller < &__executable_start || (const char *)caller >= &etext) return 0;
    fault_calls++;
    if (fault_left-- != 0) return 0;
    errno = ENOMEM; /* as the allocator it stands for says */
    return 1;
}

void *malloc(size_t n)
{
    return fault_now(__builtin_return_address(0)) ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    return fault_now(__builtin_return_address(0)) ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    return fault_now(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n);
}
#endif

/* Session `sid`'s store holding n messages that all say `word`. */
static void put_store(const char *sid, const char *created, int n, const char *word)
{
    store *s = home_store(sid, "/p");
    char *err = NULL, id[48], json[160];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "%s-%d", sid, i);
        snprintf(json, sizeof json, "{\"role\":\"user\",\"content\":\"note %d about the %s flag\",\"timestamp\":%d}",
                 i, word, i + 1);
        store_msg m = {id, json, strlen(json), NULL};
        assert_int_equal(store_ingest(s, &m, 1, NULL, &err), LC_OK);
    }
    assert_int_equal(store_meta_put(s, "created", created, &err), LC_OK);
    store_close(s);
}

static int grep_all(const recall_grep_opts *o, recall_result *r, char **err)
{
    return recall_grep_sessions(home, "current", "/p", RECALL_SCOPE_ALL_SESSIONS, o, r, err);
}

/* One call's outcome checked against the whole answer (`full` hits). */
static void check_outcome(int rc, const recall_result *r, size_t full, const char *err)
{
    if (rc != LC_OK) {
        assert_non_null(err); /* an error is said, with its sentence */
        return;
    }
    for (size_t k = 0; k < r->n; k++) {
        assert_non_null(r->hits[k].session_id);
        assert_non_null(r->hits[k].session_date);
        assert_non_null(r->hits[k].session_cwd);
    }
    if (r->n != full) assert_true(r->stores_skipped > 0); /* fewer hits, and said why */
}

static void sweep(const recall_grep_opts *o)
{
    recall_result r;
    char *err = NULL;
    assert_int_equal(grep_all(o, &r, &err), LC_OK);
    size_t full = r.n;
    assert_true(full >= 9); /* every store's hits */
    assert_int_equal(r.stores_searched, 3);
    check_outcome(LC_OK, &r, full, NULL);
    recall_result_free(&r);
#ifdef FAULTS
    long errors = 0, fails = 0;
    for (long n = 0;; n++) {
        err = NULL;
        fault_calls = 0;
        fault_left = n;
        int rc = grep_all(o, &r, &err);
        long made = fault_calls;
        fault_left = -1;
        check_outcome(rc, &r, full, err);
        errors += rc != LC_OK;
        if (rc == LC_OK) recall_result_free(&r);
        free(err);
        if (made <= n) break; /* no allocation failed: every one was passed */
        fails++;
    }
    assert_true(errors > 0);
    fprintf(stderr, "# %ld failing allocations tried, %ld reported as errors\n", fails, errors);
#endif
}

static void test_pattern_grep_out_of_memory_is_an_error_not_short_results(void **state)
{
    (void)state;
    put_store("a", "1000", 4, "frobnicate");
    put_store("b", "2000", 4, "frobnicate");
    put_store("c", "3000", 4, "frobnicate");
    recall_grep_opts o = {.pattern = "frobnicate", .limit = 40};
    sweep(&o);
}

static void test_query_grep_out_of_memory_is_an_error_not_short_results(void **state)
{
    (void)state;
    put_store("a", "1000", 4, "frobnicate");
    put_store("b", "2000", 4, "frobnicate");
    put_store("c", "3000", 4, "frobnicate");
    recall_grep_opts o = {.query = "frobnicate", .limit = 40};
    sweep(&o);
}

TEST_MAIN(
    HOME_TEST(test_pattern_grep_out_of_memory_is_an_error_not_short_results),
    HOME_TEST(test_query_grep_out_of_memory_is_an_error_not_short_results),
)
