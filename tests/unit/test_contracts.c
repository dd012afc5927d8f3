/*
 * test_contracts.c -- the behavior contracts' state machine and trail over a real home
 * store: every allowed transition and every refused one, the append-only trail, and
 * supersede's atomicity when its second write fails and when the process is killed
 * between its two writes.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "contracts.h"
#include "homestore.h"
#include "util.h"

#include "temp_home.h"

static homestore *open_home(void)
{
    homestore *h = NULL;
    char *err = NULL;
    assert_int_equal(homestore_open(home, 1, &h, &err), LC_OK);
    free(err);
    return h;
}

static char *state_of(homestore *h, int64_t id)
{
    homestore_contract c;
    assert_int_equal(homestore_contract_get(h, id, &c, NULL), LC_OK);
    char *s = lc_strdup(c.state);
    homestore_contract_free(&c);
    return s;
}

static void assert_state(homestore *h, int64_t id, const char *want)
{
    char *s = state_of(h, id);
    assert_string_equal(s, want);
    free(s);
}

static int64_t proposed(homestore *h, const char *kind, const char *body)
{
    int64_t id = 0;
    assert_int_equal(contracts_propose(h, kind, body, NULL, 0, "test", &id, NULL), LC_OK);
    assert_true(id > 0);
    return id;
}

static size_t trail_len(homestore *h, int64_t id)
{
    homestore_trail *t = NULL;
    size_t n = 0;
    assert_int_equal(homestore_trail_list(h, id, &t, &n, NULL), LC_OK);
    homestore_trail_free(t, n);
    return n;
}

static void test_contracts_pending_to_active_and_rejected(void **state)
{
    (void)state;
    homestore *h = open_home();
    int64_t a = proposed(h, "prefer", "Use four spaces."), b = proposed(h, "forbid", "Never push to main.");
    assert_state(h, a, CONTRACTS_PENDING);
    assert_int_equal(contracts_approve(h, a, "alice", NULL, NULL), LC_OK);
    assert_state(h, a, CONTRACTS_ACTIVE);
    assert_int_equal(contracts_reject(h, b, "alice", "too strict", NULL), LC_OK);
    assert_state(h, b, CONTRACTS_REJECTED);
    /* A rejected contract cannot be approved later, an active one not approved twice. */
    char *err = NULL;
    assert_int_equal(contracts_approve(h, b, "alice", NULL, &err), LC_INVALID);
    assert_non_null(strstr(err, "Rejected"));
    free(err);
    err = NULL;
    assert_int_equal(contracts_approve(h, a, "alice", NULL, &err), LC_INVALID);
    free(err);
    assert_int_equal(contracts_approve(h, 999, "alice", NULL, NULL), LC_NOTFOUND);
    assert_int_equal(homestore_contract_count(h, CONTRACTS_ACTIVE), 1);
    homestore_close(h);
}

static void test_contracts_unknown_kind_and_empty_body_refused(void **state)
{
    (void)state;
    homestore *h = open_home();
    int64_t id = 0;
    assert_int_equal(contracts_propose(h, "maybe", "x", NULL, 0, "t", &id, NULL), LC_INVALID);
    assert_int_equal(contracts_propose(h, "forbid", "", NULL, 0, "t", &id, NULL), LC_INVALID);
    assert_int_equal(homestore_contract_count(h, NULL), 0);
    homestore_close(h);
}

static void test_contracts_retract_needs_a_reason_that_stays_in_the_trail(void **state)
{
    (void)state;
    homestore *h = open_home();
    int64_t a = proposed(h, "verify-before", "Run make test before a commit.");
    assert_int_equal(contracts_retract(h, a, "bob", "because", NULL), LC_INVALID); /* still Pending */
    assert_int_equal(contracts_approve(h, a, "bob", NULL, NULL), LC_OK);
    assert_int_equal(contracts_retract(h, a, "bob", NULL, NULL), LC_INVALID);
    assert_int_equal(contracts_retract(h, a, "bob", "", NULL), LC_INVALID);
    assert_state(h, a, CONTRACTS_ACTIVE);
    assert_int_equal(contracts_retract(h, a, "bob", "CI runs it now", NULL), LC_OK);
    assert_state(h, a, CONTRACTS_RETRACTED);
    homestore_trail *t = NULL;
    size_t n = 0;
    assert_int_equal(homestore_trail_list(h, a, &t, &n, NULL), LC_OK);
    assert_int_equal(n, 3); /* propose, approve, retract */
    assert_string_equal(t[2].action, "retract");
    assert_string_equal(t[2].actor, "bob");
    assert_string_equal(t[2].from_state, CONTRACTS_ACTIVE);
    assert_string_equal(t[2].to_state, CONTRACTS_RETRACTED);
    assert_string_equal(t[2].reason, "CI runs it now");
    assert_true(t[2].at > 0);
    homestore_trail_free(t, n);
    homestore_close(h);
}

static void test_contracts_trail_refuses_update_and_delete(void **state)
{
    (void)state;
    homestore *h = open_home();
    int64_t a = proposed(h, "prefer", "Prefer small commits.");
    homestore_close(h);
    /* Another writer of the file (not our API) cannot rewrite the trail either. */
    sqlite3 *db = NULL;
    char *path = homestore_path(home);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_not_equal(sqlite3_exec(db, "UPDATE contract_trail SET reason = 'forged'", NULL, NULL, NULL), SQLITE_OK);
    assert_int_not_equal(sqlite3_exec(db, "DELETE FROM contract_trail", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    free(path);
    h = open_home();
    assert_int_equal(trail_len(h, a), 1);
    homestore_close(h);
}

static void test_contracts_supersede_makes_a_new_active_one(void **state)
{
    (void)state;
    homestore *h = open_home();
    int64_t a = proposed(h, "forbid", "Never push to main."), nid = 0;
    assert_int_equal(contracts_supersede(h, a, "carol", "New rule.", NULL, &nid, NULL), LC_INVALID); /* Pending */
    assert_int_equal(contracts_approve(h, a, "carol", NULL, NULL), LC_OK);
    assert_int_equal(contracts_supersede(h, a, "carol", "", NULL, &nid, NULL), LC_INVALID);
    assert_int_equal(contracts_supersede(h, a, "carol", "Open a pull request for main.", "clearer", &nid, NULL), LC_OK);
    assert_true(nid > a);
    homestore_contract o, n;
    assert_int_equal(homestore_contract_get(h, a, &o, NULL), LC_OK);
    assert_int_equal(homestore_contract_get(h, nid, &n, NULL), LC_OK);
    assert_string_equal(o.state, CONTRACTS_SUPERSEDED);
    assert_int_equal(o.superseded_by, nid);
    assert_string_equal(n.state, CONTRACTS_ACTIVE);
    assert_string_equal(n.kind, "forbid");
    assert_string_equal(n.body, "Open a pull request for main.");
    assert_int_equal(n.supersedes, a);
    homestore_contract_free(&o);
    homestore_contract_free(&n);
    assert_int_equal(trail_len(h, a), 3);
    assert_int_equal(trail_len(h, nid), 1);
    homestore_close(h);
}

static int fail_between(const char *point, char **err)
{
    return lc_errf(err, LC_ERR, "injected failure at %s", point);
}

static int kill_between(const char *point, char **err)
{
    (void)point;
    (void)err;
    raise(SIGKILL);
    return LC_OK;
}

/* The state after a supersede that did not finish: exactly as before it. */
static void assert_untouched(homestore *h, int64_t a, size_t trail_before)
{
    assert_state(h, a, CONTRACTS_ACTIVE);
    assert_int_equal(homestore_contract_count(h, NULL), 1);
    assert_int_equal(trail_len(h, a), trail_before);
    assert_int_equal(trail_len(h, 0), trail_before); /* no trail row of a new contract either */
}

static void test_contracts_supersede_second_write_failing_leaves_nothing(void **state)
{
    (void)state;
    homestore *h = open_home();
    int64_t a = proposed(h, "prefer", "Use four spaces."), nid = 0;
    assert_int_equal(contracts_approve(h, a, "dave", NULL, NULL), LC_OK);
    size_t before = trail_len(h, a);
    contracts_set_fault(fail_between);
    char *err = NULL;
    assert_int_equal(contracts_supersede(h, a, "dave", "Use tabs.", NULL, &nid, &err), LC_ERR);
    contracts_set_fault(NULL);
    assert_non_null(strstr(err, "injected"));
    free(err);
    assert_int_equal(nid, 0);
    assert_untouched(h, a, before);
    /* The store is usable after the rollback: the same supersede goes through. */
    assert_int_equal(contracts_supersede(h, a, "dave", "Use tabs.", NULL, &nid, NULL), LC_OK);
    assert_state(h, a, CONTRACTS_SUPERSEDED);
    homestore_close(h);
}

static void test_contracts_supersede_killed_between_its_writes_is_atomic(void **state)
{
    (void)state;
    homestore *h = open_home();
    int64_t a = proposed(h, "prefer", "Use four spaces.");
    assert_int_equal(contracts_approve(h, a, "erin", NULL, NULL), LC_OK);
    size_t before = trail_len(h, a);
    homestore_close(h);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The child dies inside the transaction, after the new contract's insert. */
        homestore *ch = NULL;
        int64_t nid = 0;
        if (homestore_open(home, 1, &ch, NULL) != LC_OK) _exit(2);
        contracts_set_fault(kill_between);
        contracts_supersede(ch, a, "erin", "Use tabs.", NULL, &nid, NULL);
        _exit(3); /* not reached */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    h = open_home();
    assert_untouched(h, a, before);
    int64_t nid = 0;
    assert_int_equal(contracts_supersede(h, a, "erin", "Use tabs.", NULL, &nid, NULL), LC_OK);
    assert_int_equal(homestore_contract_count(h, NULL), 2);
    homestore_close(h);
}

static void test_contracts_command_text_and_usage(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    /* A home without a home store: list says so and creates nothing. */
    assert_int_equal(contracts_command(home, 0, NULL, "t", NULL, &out, &err), LC_OK);
    assert_non_null(strstr(out, "no contracts yet"));
    free(out);
    char *path = homestore_path(home);
    assert_int_not_equal(access(path, F_OK), 0);
    free(path);
    homestore *h = open_home();
    int64_t a = proposed(h, "forbid", "Never push to main.");
    homestore_close(h);
    assert_int_equal(contracts_command_line(home, "retract 1", "t", NULL, &out, &err), LC_INVALID);
    free(err);
    err = NULL;
    assert_int_equal(contracts_command_line(home, "approve #1", "t", NULL, &out, &err), LC_OK);
    assert_non_null(strstr(out, "[Active]"));
    free(out);
    assert_int_equal(contracts_command_line(home, "retract 1 --reason the team   changed its mind", "t", NULL, &out, &err),
                     LC_OK);
    assert_non_null(strstr(out, "reason: the team changed its mind"));
    free(out);
    assert_int_equal(contracts_command_line(home, "frobnicate 1", "t", NULL, &out, &err), LC_INVALID);
    assert_non_null(strstr(err, "unknown action"));
    free(err);
    (void)a;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HOME_TEST(test_contracts_pending_to_active_and_rejected),
        HOME_TEST(test_contracts_unknown_kind_and_empty_body_refused),
        HOME_TEST(test_contracts_retract_needs_a_reason_that_stays_in_the_trail),
        HOME_TEST(test_contracts_trail_refuses_update_and_delete),
        HOME_TEST(test_contracts_supersede_makes_a_new_active_one),
        HOME_TEST(test_contracts_supersede_second_write_failing_leaves_nothing),
        HOME_TEST(test_contracts_supersede_killed_between_its_writes_is_atomic),
        HOME_TEST(test_contracts_command_text_and_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
