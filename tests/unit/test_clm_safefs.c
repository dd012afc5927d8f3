/*
 * test_clm_safefs.c -- the mirror folder is writable by the model, so the plugin never
 * follows a symlink planted there, refuses a folder that is not private, and refuses a
 * mirror over the size cap without reading it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "clm_safefs.h"
#include "util.h"
#include "test_main.h"

static char *fresh_dir(void)
{
    char tmpl[] = "/tmp/lc-safefs.XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return lc_strdup(d);
}

static void rm_rf(const char *d)
{
    char *cmd = lc_asprintf("rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void test_write_replaces_a_planted_symlink_instead_of_following_it(void **state)
{
    (void)state;
    char *root = fresh_dir(), *dir = lc_asprintf("%s/m", root), *victim = lc_asprintf("%s/victim", root);
    char *link = lc_asprintf("%s/LIVE_CONTEXT.md", dir), *tmp = lc_asprintf("%s/.LIVE_CONTEXT.md.tmp.%ld", dir, (long)getpid());
    char *text = NULL, *err = NULL;
    size_t len;
    assert_int_equal(clm_safe_dir(dir, &err), LC_OK);
    FILE *f = fopen(victim, "w");
    fputs("VICTIM", f);
    fclose(f);
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(symlink(victim, tmp), 0);
    assert_int_equal(clm_safe_write(dir, "LIVE_CONTEXT.md", "MIRROR", 6, &err), LC_OK);
    assert_int_equal(lc_read_file(victim, &text, &len, NULL), LC_OK);
    assert_string_equal(text, "VICTIM");
    free(text);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    rm_rf(root);
    free(root), free(dir), free(victim), free(link), free(tmp);
}

static void test_read_refuses_a_symlink_at_the_mirror_path(void **state)
{
    (void)state;
    char *root = fresh_dir(), *link = lc_asprintf("%s/LIVE_CONTEXT.md", root);
    char *text = NULL, *err = NULL;
    size_t len;
    assert_int_equal(symlink("/etc/hostname", link), 0);
    assert_int_equal(clm_safe_read(link, CLM_MIRROR_MAX_BYTES, &text, &len, &err), LC_INVALID);
    assert_null(text);
    assert_non_null(strstr(err, "is a symlink, which is never followed"));
    free(err);
    err = NULL;
    unlink(link);
    assert_int_equal(clm_safe_read(link, CLM_MIRROR_MAX_BYTES, &text, &len, &err), LC_NOTFOUND);
    free(err);
    rm_rf(root);
    free(root), free(link);
}

static void test_read_refuses_a_mirror_over_the_cap_and_names_it(void **state)
{
    (void)state;
    char *root = fresh_dir(), *path = lc_asprintf("%s/LIVE_CONTEXT.md", root);
    char *text = NULL, *err = NULL;
    size_t len;
    /* 100 MB, sparse: the refusal must come from the size, not from reading it. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), 100L * 1024 * 1024), 0);
    fclose(f);
    assert_int_equal(clm_safe_read(path, CLM_MIRROR_MAX_BYTES, &text, &len, &err), LC_INVALID);
    assert_null(text);
    assert_non_null(strstr(err, "104857600 bytes, over the cap of 16777216 bytes (16 MB)"));
    free(err);
    err = NULL;
    f = fopen(path, "w");
    fputs("small", f);
    fclose(f);
    assert_int_equal(clm_safe_read(path, CLM_MIRROR_MAX_BYTES, &text, &len, &err), LC_OK);
    assert_int_equal(len, 5);
    assert_string_equal(text, "small");
    free(text);
    rm_rf(root);
    free(root), free(path);
}

static void test_folder_must_be_a_private_directory_of_this_user(void **state)
{
    (void)state;
    char *root = fresh_dir(), *open_dir = lc_asprintf("%s/open", root), *link = lc_asprintf("%s/link", root);
    char *err = NULL;
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0755), 0);
    assert_int_equal(clm_safe_dir(open_dir, &err), LC_INVALID);
    assert_non_null(strstr(err, "its mode is 755, not 0700"));
    assert_int_equal(clm_safe_write(open_dir, "x", "y", 1, &err), LC_INVALID);
    free(err);
    err = NULL;
    assert_int_equal(symlink(root, link), 0);
    assert_int_equal(clm_safe_dir(link, &err), LC_INVALID);
    assert_non_null(strstr(err, "it is a symlink"));
    free(err);
    rm_rf(root);
    free(root), free(open_dir), free(link);
}

TEST_MAIN(
    cmocka_unit_test(test_write_replaces_a_planted_symlink_instead_of_following_it),
    cmocka_unit_test(test_read_refuses_a_symlink_at_the_mirror_path),
    cmocka_unit_test(test_read_refuses_a_mirror_over_the_cap_and_names_it),
    cmocka_unit_test(test_folder_must_be_a_private_directory_of_this_user),
)
