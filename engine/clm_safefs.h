/*
 * clm_safefs.h -- file access for the live-context mirror folder (CLM architecture §9),
 * which the model can write to: folders are used only when they are real directories
 * owned by this user with no group or other access; files are never opened through a
 * symlink, written temp + rename with O_EXCL, and read only up to a stated cap.
 */
#ifndef LC_CLM_SAFEFS_H
#define LC_CLM_SAFEFS_H

#include <stddef.h>

/* The mirror is refused beyond this size: an edit never needs more, and reading an
 * unbounded file into memory is what a hostile mirror would want. */
#define CLM_MIRROR_MAX_BYTES (16u * 1024 * 1024)

/* Create `dir` (mode 0700) if missing; LC_INVALID with *err when it is a symlink, not a
 * directory, owned by another user, or open to group or others. */
int clm_safe_dir(const char *dir, char **err);
/* Write dir/name atomically (mode 0600) after clm_safe_dir(dir); a scratch write (no fsync):
 * the mirror and withheld files are regenerated whenever they are needed. */
int clm_safe_write(const char *dir, const char *name, const void *data, size_t len, char **err);
/* Read a regular file without following a symlink, at most `cap` bytes. LC_NOTFOUND when
 * absent; LC_INVALID (with *err naming the reason or the cap) when refused. */
int clm_safe_read(const char *path, size_t cap, char **out, size_t *len, char **err);

#endif
