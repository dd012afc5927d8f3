/*
 * temp_dir.h -- a suite's own temporary folders: temp_dir_make creates a private one from
 * a mkdtemp pattern, temp_dir_remove deletes it with all it holds.
 */
#ifndef TEST_TEMP_DIR_H
#define TEST_TEMP_DIR_H

#include <stdio.h>
#include <stdlib.h>

/* A new private folder named from the mkdtemp template `pattern`, into dir[cap]. */
static inline void temp_dir_make(char *dir, size_t cap, const char *pattern)
{
    snprintf(dir, cap, "%s", pattern);
    assert_non_null(mkdtemp(dir));
}

/* The folder and all below it gone; 0 when removed. */
static inline int temp_dir_remove(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

#endif
