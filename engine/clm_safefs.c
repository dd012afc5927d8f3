/*
 * clm_safefs.c -- refuse-to-follow file access for the mirror folder (see clm_safefs.h).
 */
#include "clm_safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
