/*
 * test_store_file.c -- a store file of ours outside a connection (store_sqlite_file.c):
 * whatever this process does to a store that is open here (a second connection for a
 * worker, a damage check, the home store beside it), another process still sees the
 * first connection's lock, so it can never write under it.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"
#include "homestore.h"
#include "store.h"
#include "temp_home.h"
#include "test_main.h"

/* Whether another process sees a lock of ours on PATH: F_GETLK never reports the caller's
 * own locks, so a child asks. */
static int other_process_sees_lock(const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        int seen = fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
        _exit(seen ? 0 : 1);
    }
    int status = 0;
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static char *test_store_path(const char *sid)
{
    return lc_asprintf("%s/lcm/%s.sqlite", home, sid);
}

static void test_second_open_keeps_the_first_connections_lock(void **state)
{
    (void)state;
    store *host = home_store("live", "/w");
    char *path = test_store_path("live");
    assert_true(other_process_sees_lock(path));
    /* What a worker thread does at its start: its own connection to the same store. */
    store *worker = home_store("live", "/w");
    assert_true(other_process_sees_lock(path));
    store_close(worker);
    assert_true(other_process_sees_lock(path));
    store_close(host);
    free(path);
}

static void test_damage_check_of_an_open_store_keeps_its_lock(void **state)
{
    (void)state;
    store *host = home_store("live", "/w");
    char *path = test_store_path("live"), *why = NULL;
    assert_false(store_file_damaged(path, &why));
    assert_null(why);
    assert_true(other_process_sees_lock(path));
    store_close(host);
    free(path);
}

static void test_mode_fix_of_an_open_store_keeps_its_lock(void **state)
{
    (void)state;
    store *host = home_store("live", "/w");
    char *path = test_store_path("live");
    /* A mode someone widened is fixed by the next open, through no descriptor of the file. */
    assert_int_equal(chmod(path, 0644), 0);
    store *worker = home_store("live", "/w");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_true(other_process_sees_lock(path));
    store_close(worker);
    store_close(host);
    free(path);
}

static void test_home_store_reopen_keeps_its_lock(void **state)
{
    (void)state;
    homestore *a = NULL, *b = NULL;
    char *err = NULL;
    assert_int_equal(homestore_open(home, 1, &a, &err), LC_OK);
    char *path = lc_asprintf("%s/" HOMESTORE_DIR "/" HOMESTORE_FILE, home);
    assert_true(other_process_sees_lock(path));
    assert_int_equal(homestore_open(home, 1, &b, &err), LC_OK);
    homestore_close(b);
    assert_true(other_process_sees_lock(path));
    homestore_close(a);
    free(path);
}

static void test_damage_check_still_tells_a_damaged_file(void **state)
{
    (void)state;
    char *path = test_store_path("bad"), *why = NULL;
    char *dir = lc_asprintf("%s/lcm", home);
    assert_int_equal(mkdir(dir, 0700), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("this is not a database, but it is more than a hundred bytes long so the header can be read"
          " whole by the check ....................................",
          f);
    fclose(f);
    assert_true(store_file_damaged(path, &why));
    assert_non_null(why);
    assert_non_null(strstr(why, "do not start with a SQLite header"));
    free(why);
    free(path);
    free(dir);
}

static void test_fifo_at_the_store_name_is_refused_without_blocking(void **state)
{
    (void)state;
    char *dir = lc_asprintf("%s/lcm", home), *path = test_store_path("fifo"), *err = NULL;
    store *s = NULL;
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_false(store_file_damaged(path, NULL));
    assert_int_equal(store_open(home, "fifo", "/w", &s, &err), LC_INVALID);
    assert_non_null(strstr(err, "is not a regular file"));
    free(err);
    free(dir);
    free(path);
}

TEST_MAIN(HOME_TEST(test_second_open_keeps_the_first_connections_lock),
          HOME_TEST(test_damage_check_of_an_open_store_keeps_its_lock),
          HOME_TEST(test_mode_fix_of_an_open_store_keeps_its_lock),
          HOME_TEST(test_home_store_reopen_keeps_its_lock),
          HOME_TEST(test_damage_check_still_tells_a_damaged_file),
          HOME_TEST(test_fifo_at_the_store_name_is_refused_without_blocking))
