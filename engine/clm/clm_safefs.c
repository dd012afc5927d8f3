/*
 * clm_safefs.c -- refuse-to-follow file access for the mirror folder (see clm_safefs.h).
 */
#include "clm_safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int clm_safe_dir(const char *dir, char **err)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno != ENOENT) return lc_errf(err, LC_ERR, "cannot inspect %s: %s", dir, strerror(errno));
        int rc = lc_mkdir_p(dir, 0700, err);
        if (rc != LC_OK) return rc;
        if (lstat(dir, &st) != 0)
            return lc_errf(err, LC_ERR, "cannot inspect %s: %s", dir, strerror(errno));
    }
    if (S_ISLNK(st.st_mode))
        return lc_errf(err, LC_INVALID, "refusing to use %s: it is a symlink", dir);
    if (!S_ISDIR(st.st_mode))
        return lc_errf(err, LC_INVALID, "refusing to use %s: it is not a directory", dir);
    if (st.st_uid != geteuid())
        return lc_errf(err, LC_INVALID, "refusing to use %s: it is owned by uid %ld, not by this "
                       "user", dir, (long)st.st_uid);
    if (st.st_mode & 077)
        return lc_errf(err, LC_INVALID, "refusing to use %s: its mode is %03o, not 0700", dir,
                       (unsigned)(st.st_mode & 0777));
    return LC_OK;
}

int clm_safe_write(const char *dir, const char *name, const void *data, size_t len, char **err)
{
    int rc = clm_safe_dir(dir, err);
    if (rc != LC_OK) return rc;
    char *path = lc_asprintf("%s/%s", dir, name);
    if (!path) return lc_errf(err, LC_NOMEM, "out of memory");
    rc = lc_write_scratch(path, data, len, 0600, err);
    free(path);
    return rc;
}

static void clm_stamp_of(const struct stat *st, clm_file_stamp *s)
{
    s->valid = 1;
    s->dev = (unsigned long long)st->st_dev;
    s->ino = (unsigned long long)st->st_ino;
    s->size = (unsigned long long)st->st_size;
    s->mtime_s = (long long)st->st_mtim.tv_sec;
    s->mtime_ns = (long long)st->st_mtim.tv_nsec;
    s->ctime_s = (long long)st->st_ctim.tv_sec;
    s->ctime_ns = (long long)st->st_ctim.tv_nsec;
}

static int clm_write_all(int fd, const char *p, size_t len, size_t at)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t)at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        at += (size_t)n;
        len -= (size_t)n;
    }
    return 0;
}

/* The temp + rename of lc_write_scratch, keeping the descriptor until after the rename so
 * that the stamp is of the file this call created, whatever the path names by then. */
int clm_safe_write_stamped(const char *dir, const char *name, const void *data, size_t len,
                           clm_file_stamp *stamp, char **err)
{
    int fd = -1;
    struct stat st;
    memset(stamp, 0, sizeof *stamp);
    int rc = clm_safe_dir(dir, err);
    if (rc != LC_OK) return rc;
    char *path = lc_asprintf("%s/%s", dir, name);
    char *tmp = lc_asprintf("%s/.%s.tmp.%ld", dir, name, (long)getpid());
    if (!path || !tmp) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    /* Whatever sits at the temp name (a leftover, or a planted symlink) goes; O_EXCL and
     * O_NOFOLLOW then guarantee the bytes land in a file this call created. */
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = lc_errf(err, LC_ERR, "cannot create %s: %s", tmp, strerror(errno));
        goto done;
    }
    if (clm_write_all(fd, data, len, 0) != 0) {
        rc = lc_errf(err, LC_ERR, "cannot write %s: %s", tmp, strerror(errno));
        unlink(tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        rc = lc_errf(err, LC_ERR, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        goto done;
    }
    if (fstat(fd, &st) == 0) clm_stamp_of(&st, stamp); /* after the rename: it sets ctime */
done:
    if (fd >= 0) close(fd);
    free(path);
    free(tmp);
    return rc;
}

static int clm_stamp_equal(const clm_file_stamp *a, const clm_file_stamp *b)
{
    return a->valid && b->valid && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns && a->ctime_s == b->ctime_s &&
           a->ctime_ns == b->ctime_ns;
}

int clm_safe_append(const char *dir, const char *name, clm_file_stamp *stamp, const void *head,
                    size_t head_len, const void *tail, size_t tail_len, size_t at, char **err)
{
    int fd = -1;
    struct stat st;
    clm_file_stamp now;
    clm_file_stamp want = *stamp;
    memset(stamp, 0, sizeof *stamp);
    int rc = clm_safe_dir(dir, err);
    if (rc != LC_OK) return rc;
    char *path = lc_asprintf("%s/%s", dir, name);
    if (!path) return lc_errf(err, LC_NOMEM, "out of memory");
    fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        rc = lc_errf(err, LC_BUSY, "%s cannot be opened in place: %s", path, strerror(errno));
        goto done;
    }
    /* One link: a hard link elsewhere would see the write too (a rename leaves it alone). */
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        st.st_nlink != 1) {
        rc = lc_errf(err, LC_BUSY, "%s is not a private regular file with one link", path);
        goto done;
    }
    clm_stamp_of(&st, &now);
    if (!clm_stamp_equal(&now, &want) || now.size != (unsigned long long)at ||
        head_len > (size_t)at) {
        rc = lc_errf(err, LC_BUSY, "%s changed since it was written", path);
        goto done;
    }
    if ((tail_len && clm_write_all(fd, tail, tail_len, at) != 0) ||
        (head_len && clm_write_all(fd, head, head_len, 0) != 0)) {
        rc = lc_errf(err, LC_ERR, "cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    if (fstat(fd, &st) == 0) clm_stamp_of(&st, stamp);
done:
    if (fd >= 0) close(fd);
    free(path);
    return rc;
}

int clm_safe_read(const char *path, size_t cap, char **out, size_t *len, char **err)
{
    int rc = LC_OK;
    struct stat st;
    char *buf = NULL;
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return lc_errf(err, LC_NOTFOUND, "%s does not exist", path);
        if (errno == ELOOP)
            return lc_errf(err, LC_INVALID, "%s is a symlink, which is never followed", path);
        return lc_errf(err, LC_ERR, "cannot open %s: %s", path, strerror(errno));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = lc_errf(err, LC_INVALID, "%s is not a regular file", path);
        goto done;
    }
    if ((unsigned long long)st.st_size > cap) {
        rc = lc_errf(err, LC_INVALID, "%s is %lld bytes, over the cap of %zu bytes (%zu MB)",
                     path, (long long)st.st_size, cap, cap / (1024 * 1024));
        goto done;
    }
    /* Read at most cap + 1 bytes: a file that grew after fstat is still refused. */
    if (!(buf = malloc((size_t)st.st_size + 2))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    size_t want = (size_t)st.st_size + 1, got = 0;
    while (got < want) {
        ssize_t n = read(fd, buf + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = lc_errf(err, LC_ERR, "cannot read %s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0) break;
        got += (size_t)n;
    }
    if (got > (size_t)st.st_size) {
        rc = lc_errf(err, LC_INVALID, "%s changed while it was read", path);
        goto done;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    buf = NULL;
done:
    free(buf);
    close(fd);
    return rc;
}

/* fd and path name the same file. */
static int clm_same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static long clm_owner_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    long pid = strtol(buf, NULL, 10);
    return pid > 0 ? pid : 0;
}

int clm_dir_claim(const char *dir, int *out_fd, long *holder, char **err)
{
    int rc = LC_OK, fd = -1;
    *out_fd = -1;
    *holder = 0;
    char *path = lc_asprintf("%s/%s", dir, CLM_OWNER_FILE);
    if (!path) return lc_errf(err, LC_NOMEM, "out of memory");
    /* A sweeper that found the folder stale holds the lock while it removes the folder:
     * an owner it names that is not alive is waited for briefly, then the claim retried. */
    long dead = -1;
    for (int attempt = 0; attempt < 20; attempt++) {
        if ((rc = clm_safe_dir(dir, err)) != LC_OK) goto done;
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            rc = errno == ELOOP ? lc_errf(err, LC_INVALID, "refusing to use %s: it is a symlink", path)
                                : lc_errf(err, LC_ERR, "cannot open %s: %s", path, strerror(errno));
            goto done;
        }
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
            rc = lc_errf(err, LC_INVALID, "refusing to use %s: not a regular file of this user", path);
            goto done;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK) {
                rc = lc_errf(err, LC_ERR, "cannot lock %s: %s", path, strerror(errno));
                goto done;
            }
            long pid = clm_owner_pid(fd);
            if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
                dead = pid;
                close(fd);
                fd = -1;
                nanosleep(&(struct timespec){0, 25 * 1000 * 1000}, NULL);
                continue;
            }
            *holder = pid;
            rc = lc_errf(err, LC_BUSY, "%s is owned by %s %ld", dir, pid ? "process" : "another process",
                         pid);
            goto done;
        }
        /* Between open and flock a sweeper may have removed the file: a lock on an unlinked
         * file guards nothing, so it must be the file the path names now. */
        if (!clm_same_file(fd, path)) {
            close(fd);
            fd = -1;
            continue;
        }
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
            rc = lc_errf(err, LC_ERR, "cannot write %s: %s", path, strerror(errno));
            goto done;
        }
        *out_fd = fd;
        fd = -1;
        goto done;
    }
    /* Still held under a pid this process cannot see (another pid namespace): busy. */
    *holder = dead > 0 ? dead : 0;
    rc = dead > 0 ? lc_errf(err, LC_BUSY, "%s is owned by process %ld", dir, dead)
                  : lc_errf(err, LC_ERR, "cannot claim %s: it kept being removed", dir);
done:
    if (fd >= 0) close(fd);
    free(path);
    return rc;
}

int clm_dir_held(const char *dir, int fd)
{
    if (fd < 0) return 0;
    char *path = lc_asprintf("%s/%s", dir, CLM_OWNER_FILE);
    int held = path && clm_same_file(fd, path);
    free(path);
    return held;
}

int clm_dir_stale(const char *dir, int *out_fd)
{
    *out_fd = -1;
    char *path = lc_asprintf("%s/%s", dir, CLM_OWNER_FILE);
    if (!path) return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int missing = fd < 0 && errno == ENOENT;
    int stale = 0;
    struct stat st;
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && clm_same_file(fd, path) &&
        fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        /* empty: its creator has not written its pid yet, unless that was long ago */
        (st.st_size > 0 || time(NULL) - st.st_mtime > 60))
        stale = 1;
    free(path);
    if (stale) {
        *out_fd = fd;
        return 1;
    }
    if (fd >= 0) close(fd);
    return missing ? -1 : 0;
}
