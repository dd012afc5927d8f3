/*
 * store_sqlite_file.c -- a SQLite database file of ours outside a connection: its private
 * folder and mode (store_sqlite_file_private) and the look at its header that tells a
 * damaged store before SQLite is asked to use it (store_file_damaged). The rule both keep
 * is in store_sqlite_file.h: no descriptor of a database file that could be open in this
 * process is ever opened for reading or writing and closed here, because that close would
 * drop SQLite's locks on it.
 */
#include "store.h"
#include "store_sqlite_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Two openers of one new store in this process (a host and its worker starting at once)
 * must not interleave the create-then-close below with a connection's first lock. */
static pthread_mutex_t store_file_mu = PTHREAD_MUTEX_INITIALIZER;

/* Why a path is refused: a store holds every word of a session, so it is only ever a
 * real folder and a real file of ours, never a link (whose target we would chmod, or
 * create outside the private folder). */
static int store_file_refuse(const char *what, const char *kind, const char *path, char **err)
{
    struct stat ls;
    if (lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode)) {
        char target[512];
        ssize_t n = readlink(path, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        return lc_errf(err, LC_INVALID,
                       "%s: the %s %s %s is a symlink (to %s), which is never followed; LCM is not"
                       " active: remove the link (or use another --home)",
                       what, what, kind, path, n > 0 ? target : "?");
    }
    return lc_errf(err, LC_INVALID, "%s: the %s %s %s is not a %s; LCM is not active", what, what,
                   kind, path, strcmp(kind, "folder") == 0 ? "folder" : "regular file");
}

/* chmod through an O_PATH descriptor: fchmod refuses one, so the change goes through the
 * descriptor's /proc name, which is the very inode held (a path could have been swapped
 * for another file since it was checked). */
static int store_file_chmod(int pfd, mode_t mode)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", pfd);
    return chmod(name, mode);
}

/* An O_PATH descriptor of DIR/NAME, made first when CREATE asks for it. A file that
 * exists is never opened for reading or writing here; one this call creates (O_EXCL)
 * did not exist a moment before, so no connection of this process can hold a lock on it
 * that the close of the creating descriptor would drop (the mutex keeps out a second
 * opener of this process meanwhile). */
static int store_file_path_fd(int dfd, const char *name, int create)
{
    for (int tries = 0; tries < 4; tries++) {
        int pfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (pfd >= 0 || errno != ENOENT || !create) return pfd;
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) close(fd);
        else if (errno != EEXIST) return -1;
    }
    errno = ENOENT;
    return -1;
}

int store_sqlite_file_private(const char *dir, const char *name, const char *what, int create,
                              mode_t *dir_was, mode_t *file_was, char **err)
{
    char *path = lc_asprintf("%s/%s", dir, name);
    int dfd = -1, pfd = -1, rc = LC_OK;
    struct stat st;
    pthread_mutex_lock(&store_file_mu);
    if (!path) {
        rc = lc_errf(err, LC_NOMEM, "%s: out of memory", what);
        goto done;
    }
    if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
        rc = lc_errf(err, LC_ERR, "%s: cannot create folder %s: %s", what, dir, strerror(errno));
        goto done;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        rc = errno == ELOOP || errno == ENOTDIR ? store_file_refuse(what, "folder", dir, err)
             : errno == ENOENT && !create      ? LC_NOTFOUND
                                               : lc_errf(err, LC_ERR, "%s: cannot open folder %s: %s",
                                                         what, dir, strerror(errno));
        goto done;
    }
    if (fstat(dfd, &st) != 0) {
        rc = lc_errf(err, LC_ERR, "%s: cannot stat %s: %s", what, dir, strerror(errno));
        goto done;
    }
    if (dir_was) *dir_was = st.st_mode & 07777;
    /* Stores hold every word of a session: a folder others can read is fixed and reported. */
    if ((st.st_mode & 07777) != 0700 && fchmod(dfd, 0700) != 0) {
        rc = lc_errf(err, LC_ERR, "%s: cannot make %s private (0700): %s", what, dir, strerror(errno));
        goto done;
    }
    /* O_PATH with O_NOFOLLOW names a link itself rather than failing, so a link, a FIFO or
     * a device is seen by its type below without ever being opened. */
    if ((pfd = store_file_path_fd(dfd, name, create)) < 0) {
        rc = errno == ENOENT && !create
                 ? LC_NOTFOUND
                 : lc_errf(err, LC_ERR, "%s: cannot create %s: %s", what, path, strerror(errno));
        goto done;
    }
    if (fstat(pfd, &st) != 0) {
        rc = lc_errf(err, LC_ERR, "%s: cannot stat %s: %s", what, path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = store_file_refuse(what, "file", path, err);
        goto done;
    }
    /* A second name for the file is another way to reach a file outside the folder. */
    if (st.st_nlink > 1) {
        rc = lc_errf(err, LC_INVALID, "%s: the %s file %s has %lu hard links (another name"
                     " elsewhere); it is not opened and LCM is not active", what, what, path,
                     (unsigned long)st.st_nlink);
        goto done;
    }
    if (file_was) *file_was = st.st_mode & 07777;
    if ((st.st_mode & 07777) != 0600 && store_file_chmod(pfd, 0600) != 0) {
        rc = lc_errf(err, LC_ERR, "%s: cannot make %s private (0600): %s", what, path, strerror(errno));
        goto done;
    }
done:
    pthread_mutex_unlock(&store_file_mu);
    if (pfd >= 0) close(pfd);
    if (dfd >= 0) close(dfd);
    free(path);
    return rc;
}

/* The first bytes of PATH and its size, read through a read-only SQLite connection of
 * its own: its descriptor is SQLite's, so closing it never drops a lock another
 * connection of this process holds (SQLite defers that close). Returns the bytes read,
 * 0 for a file that is missing, empty or not a regular file (nothing to judge). */
static int store_file_head(const char *path, unsigned char *h, int want, sqlite3_int64 *size)
{
    struct stat ls;
    sqlite3 *db = NULL;
    sqlite3_file *f = NULL;
    int n = 0;
    /* A FIFO or a device is never handed to SQLite, whose open would block or read forever. */
    if (lstat(path, &ls) != 0 || !S_ISREG(ls.st_mode) || ls.st_size == 0) return 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, NULL) == SQLITE_OK &&
        sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &f) == SQLITE_OK && f && f->pMethods) {
        /* The header first and the size after it, so a store another process is creating
         * (growing while looked at) never pairs a header with an older, smaller size. A
         * short read fills the rest with zeros and says so; the size tells how much was real. */
        int rc = f->pMethods->xRead(f, h, want, 0);
        if ((rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ) &&
            f->pMethods->xFileSize(f, size) == SQLITE_OK)
            n = *size < want ? (int)*size : want;
    }
    sqlite3_close(db);
    return n;
}

/* One look at the file. */
static int store_file_damaged_once(const char *path, char **why)
{
    unsigned char h[100];
    sqlite3_int64 size = 0;
    struct stat wb;
    int n = store_file_head(path, h, (int)sizeof h, &size);
    if (n <= 0) return 0; /* empty: a store about to be created */
    char *wal = lc_asprintf("%s-wal", path);
    int wal_frames = wal && stat(wal, &wb) == 0 && wb.st_size > 32;
    free(wal);
    if (n < (int)sizeof h || memcmp(h, "SQLite format 3", 16) != 0) {
        if (why) *why = lc_asprintf("%lld bytes that do not start with a SQLite header", (long long)size);
        return 1;
    }
    /* The in-header page count is valid when the change counter (24) equals the
     * version-valid-for number (92). A checkpoint cut short may leave the file shorter
     * than it, but then the log still holds the pages: only judged without one. */
    uint32_t page = (uint32_t)h[16] << 8 | h[17];
    uint32_t pages = (uint32_t)h[28] << 24 | (uint32_t)h[29] << 16 | (uint32_t)h[30] << 8 | h[31];
    int valid = memcmp(h + 24, h + 92, 4) == 0 && pages > 0;
    if (page == 1) page = 65536;
    if (valid && !wal_frames && (uint64_t)size < (uint64_t)pages * page) {
        if (why)
            *why = lc_asprintf("truncated: %lld bytes where its header counts %u pages of %u bytes (%llu)",
                               (long long)size, pages, page, (unsigned long long)pages * page);
        return 1;
    }
    return 0;
}

int store_file_damaged(const char *path, char **why)
{
    if (why) *why = NULL;
    if (!store_file_damaged_once(path, NULL)) return 0;
    /* Judged damaged: look once more a moment later, since a store being created (its
     * header written, its first page not yet) looks truncated for that moment. */
    nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    return store_file_damaged_once(path, why);
}
