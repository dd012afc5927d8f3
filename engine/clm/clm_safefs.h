/*
 * clm_safefs.h -- file access for the live-context mirror folder (docs/DESIGN.md §2.1),
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
/* What tells the file this process last wrote from any other: a write by anyone else, a
 * replacement or a hard link changes one of these. */
typedef struct clm_file_stamp {
    int valid;
    unsigned long long dev, ino, size;
    long long mtime_s, mtime_ns, ctime_s, ctime_ns;
} clm_file_stamp;

/* clm_safe_write, and *stamp describes the file written (invalid on failure). */
int clm_safe_write_stamped(const char *dir, const char *name, const void *data, size_t len,
                           clm_file_stamp *stamp, char **err);
/* Extend dir/name in place after clm_safe_dir(dir): `tail` at offset `at` (which must be
 * the file's end) and `head` over its first bytes. Only while the file is still the one
 * *stamp describes: a regular file of this user with one link, opened without following a
 * symlink, never written since. LC_BUSY when it is not (write it whole instead); LC_ERR
 * when a write failed half way (the file is unknown then: write it whole). On success
 * *stamp describes the extended file; otherwise it is invalid. */
int clm_safe_append(const char *dir, const char *name, clm_file_stamp *stamp, const void *head,
                    size_t head_len, const void *tail, size_t tail_len, size_t at, char **err);
/* Read a regular file without following a symlink, at most `cap` bytes. LC_NOTFOUND when
 * absent; LC_INVALID (with *err naming the reason or the cap) when refused. */
int clm_safe_read(const char *path, size_t cap, char **out, size_t *len, char **err);

/* The mirror folder belongs to one process: it holds CLM_OWNER_FILE, exclusively flock'ed
 * by the owner for as long as it runs, with the owner's pid as its text. A lock dies with
 * its process, so a folder whose lock anyone can take belongs to nobody. */
#define CLM_OWNER_FILE ".owner"

/* Claim `dir` (created by clm_safe_dir) for this process: take the owner lock without
 * waiting and write our pid. LC_OK with *fd holding the lock (O_CLOEXEC: tools the model
 * runs do not inherit it); LC_BUSY with *holder = the owner's pid (0 when it has not written
 * it yet) when a live process owns the folder; LC_INVALID / LC_ERR with *err otherwise. */
int clm_dir_claim(const char *dir, int *fd, long *holder, char **err);
/* 1 while `fd` (from clm_dir_claim) still locks the owner file that `dir` holds: 0 once the
 * folder or its owner file was removed or replaced (someone else's folder may be there). */
int clm_dir_held(const char *dir, int fd);
/* For the sweep: 1 when `dir` has an owner file whose lock was free (its owner is gone),
 * with the lock now held in *fd until the caller has removed the folder and closes it;
 * 0 when a live process owns it, or it is being created (an empty owner file younger than
 * a minute); -1 when it has no owner file (a folder of an older plugin version). */
int clm_dir_stale(const char *dir, int *fd);

#endif
