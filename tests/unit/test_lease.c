/*
 * test_lease.c -- leases on a real store, whichever backend opened it (SQLite files; with
 * LCM_STORE_URL, as tests/contract/test_pg_store.sh runs it, a real PostgreSQL server): a
 * named lease has one holder at a time across processes, lapses by itself, is renewed by
 * its holder and freed by a drop; maintenance refuses to run beside another holder; on
 * PostgreSQL a run of another machine is judged by its lease, never by a pid there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admin.h"
#include "config.h"
#include "maint.h"
#include "store.h"
#include "util.h"
#include "test_main.h"

#include "store_q.h"
#include "temp_home.h"

static store *open_store(const char *sid)
{
    store *s = NULL;
    char *err = NULL;
    assert_int_equal(store_open(home, sid, "/work/proj", &s, &err), LC_OK);
    return s;
}

/* The session's store with this process holding its maintenance lease for ttl_ms. */
static store *open_holding_maintenance(const char *sid, long ttl_ms)
{
    store *s = open_store(sid);
    char *err = NULL;
    assert_int_equal(store_lease_take(s, "maintenance", ttl_ms, NULL, &err), LC_OK);
    return s;
}

/* admin_doctor's repair on the session's store, with default settings. */
static admin_result repair(store *s, const char *sid)
{
    lcm_config cfg;
    assert_int_equal(lcm_config_defaults(&cfg), LC_OK);
    admin_env env = {.cmd = "/lcm", .home = home, .st = s, .session_id = sid, .cfg = &cfg};
    admin_result out = {0};
    char *err = NULL;
    assert_int_equal(admin_doctor(&env, 1, &out, &err), LC_OK);
    return out;
}

/* In a child process (another holder): take `name` on the same session's store. Returns
 * the child's exit code: 0 taken, 1 busy with a holder naming `owner`, 2 busy otherwise,
 * 3 any other answer. */
static int take_in_child(const char *sid, const char *name, long ttl_ms, pid_t owner)
{
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        store *s = NULL;
        char *err = NULL, *holder = NULL;
        if (store_open(home, sid, "/work/proj", &s, &err) != LC_OK) _exit(3);
        int rc = store_lease_take(s, name, ttl_ms, &holder, &err);
        char want[32];
        snprintf(want, sizeof want, ":%ld until ", (long)owner);
        int code = rc == LC_OK ? 0 : rc == LC_BUSY ? (holder && strstr(holder, want) ? 1 : 2) : 3;
        store_close(s);
        _exit(code);
    }
    int ws = 0;
    assert_int_equal(waitpid(c, &ws, 0), c);
    assert_true(WIFEXITED(ws));
    return WEXITSTATUS(ws);
}

static void test_lease_has_one_holder_across_processes_until_it_is_dropped(void **state)
{
    (void)state;
    store *s = open_holding_maintenance("lease-one", 60000);
    assert_int_equal(take_in_child("lease-one", "maintenance", 60000, getpid()), 1);
    /* Another name is another lease. */
    assert_int_equal(take_in_child("lease-one", "other", 60000, getpid()), 0);
    store_lease_drop(s, "maintenance");
    assert_int_equal(take_in_child("lease-one", "maintenance", 60000, getpid()), 0);
    store_close(s);
}

static void test_lease_taken_again_by_its_holder_is_renewed(void **state)
{
    (void)state;
    store *s = open_holding_maintenance("lease-renew", 50);
    assert_int_equal(store_lease_take(s, "maintenance", 60000, NULL, NULL), LC_OK);
    usleep(200 * 1000);
    /* The second take set a minute: the first 50 ms are long past and it still holds. */
    assert_int_equal(take_in_child("lease-renew", "maintenance", 60000, getpid()), 1);
    store_close(s);
}

static void test_lease_lapses_when_its_holder_stops_renewing(void **state)
{
    (void)state;
    store *s = open_holding_maintenance("lease-lapse", 50);
    usleep(200 * 1000);
    assert_int_equal(take_in_child("lease-lapse", "maintenance", 60000, getpid()), 0);
    /* Now the child's, lapsed only in a minute: ours is gone. */
    char *holder = NULL;
    assert_int_equal(store_lease_take(s, "maintenance", 60000, &holder, NULL), LC_BUSY);
    assert_non_null(holder);
    assert_non_null(strstr(holder, " until "));
    free(holder);
    /* Dropping a lease this process does not hold leaves it with its holder. */
    store_lease_drop(s, "maintenance");
    assert_int_equal(store_lease_take(s, "maintenance", 60000, NULL, NULL), LC_BUSY);
    store_close(s);
}

static void test_repair_refuses_while_another_process_holds_the_maintenance_lease(void **state)
{
    (void)state;
    store *s = open_store("lease-repair");
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        store *cs = NULL;
        char *err = NULL;
        close(p[0]);
        if (store_open(home, "lease-repair", "/work/proj", &cs, &err) != LC_OK) _exit(3);
        char ok = store_lease_take(cs, "maintenance", 60000, NULL, &err) == LC_OK ? 'y' : 'n';
        if (write(p[1], &ok, 1) != 1) _exit(3);
        alarm(60); /* holds the lease until the parent ends it, or gives up on its own */
        pause();
        _exit(0);
    }
    close(p[1]);
    char got = 0;
    ssize_t n = read(p[0], &got, 1);
    close(p[0]);
    if (n != 1 || got != 'y') {
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
        fail_msg("the child could not take the lease");
    }
    admin_result out = repair(s, "lease-repair");
    assert_int_equal(out.status, 1);
    assert_non_null(strstr(out.text, "another maintenance run holds this store"));
    admin_result_free(&out);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    /* The killed holder's lease still runs (a minute): refused again, it never waits on a
     * pid. A short lease of our own replaces it only once it lapses, as the next test shows. */
    out = repair(s, "lease-repair");
    assert_int_equal(out.status, 1);
    admin_result_free(&out);
    store_close(s);
}

static void test_repair_runs_and_frees_the_lease_when_nobody_holds_it(void **state)
{
    (void)state;
    store *s = open_store("lease-free");
    admin_result out = repair(s, "lease-free");
    assert_null(strstr(out.text, "another maintenance run"));
    assert_non_null(strstr(out.text, "repair: full-text index rebuilt"));
    admin_result_free(&out);
    /* Dropped after the repair: another process takes it at once. */
    assert_int_equal(take_in_child("lease-free", "maintenance", 60000, getpid()), 0);
    store_close(s);
}

/* Open runs as the doctor's visitor sees them. */
typedef struct runs_seen {
    int n, lease[8];
    int64_t id[8];
} runs_seen;

static int runs_visit(void *ud, int64_t id, long pid, int lease, char **err)
{
    runs_seen *r = ud;
    (void)pid, (void)err;
    if (r->n < 8) r->id[r->n] = id, r->lease[r->n++] = lease;
    return LC_OK;
}

static void test_run_of_another_machine_is_judged_by_its_lease(void **state)
{
    (void)state;
    store *s = open_store("lease-runs");
    char *err = NULL;
    if (!store_q_pg()) {
        /* A SQLite file is written on one machine: its runs are judged by their pid. */
        int64_t id = store_run_begin(s, "dag-pass");
        assert_true(id > 0);
        runs_seen r = {0};
        assert_int_equal(store_runs_open(s, runs_visit, &r, &err), LC_OK);
        assert_int_equal(r.n, 1);
        assert_int_equal(r.lease[0], STORE_RUN_BY_PID);
        store_run_end(s, id, "ok");
        store_close(s);
        return;
    }
    /* pid 1 lives on every machine: only the lease can tell these two apart. */
    char q[600];
    long long now = lc_epoch_ms();
    snprintf(q, sizeof q,
             "INSERT INTO runs(kind, pid, started, host, lease_until) VALUES"
             "('dag-pass', 1, %lld, 'another-machine', %lld), ('dag-pass', 1, %lld, 'another-machine', %lld),"
             "('dag-pass', 1, %lld, 'another-machine', NULL)",
             now, now - 1000, now, now + 600000, now - STORE_RUN_LEASE_MS - 1000);
    assert_int_equal(store_qexec(s, q), 0);
    runs_seen r = {0};
    assert_int_equal(store_runs_open(s, runs_visit, &r, &err), LC_OK);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.lease[0], STORE_RUN_LAPSED);
    assert_int_equal(r.lease[1], STORE_RUN_HELD);
    /* A row from before leases holds one lease from its start. */
    assert_int_equal(r.lease[2], STORE_RUN_LAPSED);
    maint_repair_stats rs = {0};
    assert_int_equal(maint_repair(s, getpid(), &rs, &err), LC_OK);
    assert_int_equal(rs.reaped, 2);
    snprintf(q, sizeof q, "SELECT count(*) FROM runs WHERE id = %lld AND status = 'reaped'", (long long)r.id[0]);
    assert_int_equal(store_q1(s, q), 1);
    assert_int_equal(store_q1(s, "SELECT count(*) FROM runs WHERE finished IS NULL"), 1);
    /* A run this process begins carries a lease that its renewals push on. */
    int64_t id = store_run_begin(s, "dag-pass");
    snprintf(q, sizeof q, "SELECT lease_until - started FROM runs WHERE id = %lld", (long long)id);
    assert_true(store_q1(s, q) >= STORE_RUN_LEASE_MS);
    snprintf(q, sizeof q, "UPDATE runs SET lease_until = 0 WHERE id = %lld", (long long)id);
    assert_int_equal(store_qexec(s, q), 0);
    store_run_renew(s, id);
    snprintf(q, sizeof q, "SELECT count(*) FROM runs WHERE id = %lld AND lease_until > %lld", (long long)id, now);
    assert_int_equal(store_q1(s, q), 1);
    store_run_end(s, id, "ok");
    store_close(s);
}

TEST_MAIN(
    HOME_TEST(test_lease_has_one_holder_across_processes_until_it_is_dropped),
    HOME_TEST(test_lease_taken_again_by_its_holder_is_renewed),
    HOME_TEST(test_lease_lapses_when_its_holder_stops_renewing),
    HOME_TEST(test_repair_refuses_while_another_process_holds_the_maintenance_lease),
    HOME_TEST(test_repair_runs_and_frees_the_lease_when_nobody_holds_it),
    HOME_TEST(test_run_of_another_machine_is_judged_by_its_lease),
)
