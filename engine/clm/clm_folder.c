/*
 * clm_folder.c -- the mirror folder and LIVE_CONTEXT.md (see clm_folder.h).
 */
#include "clm_folder.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

void clm_folder_init(clm_folder *f)
{
    memset(f, 0, sizeof *f);
    f->own_fd = -1;
}

void clm_folder_free(clm_folder *f)
{
    clm_folder_release(f, 0);
    LC_FREE(f->base_dir, f->dir, f->path);
    clm_folder_init(f);
}

static int clm_folder_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void clm_folder_rm_tree(const char *path)
{
    nftw(path, clm_folder_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* What a dead owner left (a mirror, withheld texts) when we take the folder over, and the
 * whole mirror at /clm off. */
void clm_folder_clear(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, CLM_OWNER_FILE))
            continue;
        char *full = lc_asprintf("%s/%s", dir, e->d_name);
        if (full) clm_folder_rm_tree(full);
        free(full);
    }
    closedir(d);
}

/* Folders of sessions that ended without a shutdown (a crash, a kill) hold conversation
 * data. A folder whose owner lock is free belongs to a dead process and goes now; one
 * without an owner file (an older plugin version, which may still be running) goes after
 * seven days; a folder a live process owns is never touched. */
void clm_folder_sweep(const char *tmp_dir, const char *keep, char **log)
{
    const char *tmp = tmp_dir && *tmp_dir ? tmp_dir : "/tmp";
    sbuf b = {0};
    *log = NULL;
    DIR *d = opendir(tmp);
    if (!d) return;
    time_t now = time(NULL);
    struct dirent *e;
    size_t plen = strlen(CLM_FOLDER_PREFIX);
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, CLM_FOLDER_PREFIX, plen) != 0) continue;
        char *full = lc_asprintf("%s/%s", tmp, e->d_name);
        struct stat st;
        int lock = -1, stale;
        if (full && (!keep || strcmp(full, keep) != 0) && lstat(full, &st) == 0 &&
            S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
            ((stale = clm_dir_stale(full, &lock)) == 1 ||
             (stale < 0 && now - st.st_mtime > CLM_FOLDER_SWEEP_AGE_S))) {
            clm_folder_rm_tree(full);
            sb_printf(&b, "%slive context: removed the stale mirror folder %s (%s)",
                      b.len ? "\n" : "", full,
                      stale == 1 ? "its process is gone" : "older than seven days");
        }
        if (lock >= 0) close(lock);
        free(full);
    }
    closedir(d);
    *log = b.len ? sb_detach(&b) : NULL;
    sb_free(&b);
}

void clm_folder_set_paths(clm_folder *f, const char *tmp_dir, const char *session_id)
{
    const char *tmp = tmp_dir && *tmp_dir ? tmp_dir : "/tmp";
    char *sid = lc_strdup(session_id && *session_id ? session_id : "session");
    for (char *c = sid; c && *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_'))
            *c = '_';
    free(f->base_dir);
    free(f->dir);
    free(f->path);
    /* '.' never survives the sanitizing above, so BASE.PID cannot be another session's BASE */
    f->base_dir = lc_asprintf("%s/%s%s", tmp, CLM_FOLDER_PREFIX, sid ? sid : "session");
    f->dir = lc_strdup(f->base_dir);
    f->path = f->dir ? lc_asprintf("%s/%s", f->dir, CLM_FOLDER_FILE) : NULL;
    f->current = 0;
    f->stamp.valid = 0;
    free(sid);
}

void clm_folder_release(clm_folder *f, int remove)
{
    if (f->own_fd < 0) return;
    /* Only while the lock still names the folder's owner file is the folder ours. */
    if (remove && f->dir && clm_dir_held(f->dir, f->own_fd)) clm_folder_rm_tree(f->dir);
    close(f->own_fd);
    f->own_fd = -1;
    f->stamp.valid = 0;
}

int clm_folder_held(const clm_folder *f)
{
    return f->dir && f->own_fd >= 0 && clm_dir_held(f->dir, f->own_fd);
}

int clm_folder_claim(clm_folder *f, char **notice, char **warn)
{
    *notice = *warn = NULL;
    if (!f->base_dir) return 0;
    if (f->own_fd >= 0 && clm_dir_held(f->dir, f->own_fd)) return 0;
    clm_folder_release(f, 0);
    char *before = f->dir ? lc_strdup(f->dir) : NULL, *e = NULL, *mine = NULL;
    long holder = 0;
    int fd = -1, rc = clm_dir_claim(f->base_dir, &fd, &holder, &e);
    if (rc == LC_OK) {
        mine = lc_strdup(f->base_dir);
        clm_folder_clear(f->base_dir); /* a dead owner's leftovers are not our mirror */
    } else if (rc == LC_BUSY) {
        free(e);
        e = NULL;
        mine = lc_asprintf("%s.%ld", f->base_dir, (long)getpid());
        if (mine && (rc = clm_dir_claim(mine, &fd, &(long){0}, &e)) == LC_OK) clm_folder_clear(mine);
        if (holder != f->other_pid || !f->other_pid) {
            f->other_pid = holder ? holder : -1;
            char who[48];
            if (holder) snprintf(who, sizeof who, "process %ld", holder);
            else snprintf(who, sizeof who, "another process");
            *notice = lc_asprintf("live context: this session is open in another process (%s), "
                                  "which owns the mirror folder %s; this process uses its own, "
                                  "%s. Neither sees the other's edits, and both append to the "
                                  "same session file.", who, f->base_dir,
                                  mine ? mine : "(out of memory)");
        }
    }
    if (rc != LC_OK) /* a symlink, a foreign owner: the write there is refused and names why */
        *warn = lc_asprintf("live context: the mirror folder cannot be claimed: %s",
                            e ? e : "out of memory");
    free(e);
    if (mine) {
        free(f->dir);
        free(f->path);
        f->dir = mine;
        f->path = lc_asprintf("%s/%s", f->dir, CLM_FOLDER_FILE);
    }
    f->own_fd = rc == LC_OK ? fd : -1;
    /* A folder claimed again holds no file of ours: the next render writes it whole, even
     * when the rendering did not change. */
    f->stamp.valid = 0;
    f->current = 0;
    int changed = before && f->dir && strcmp(before, f->dir) != 0;
    free(before);
    return changed;
}

int clm_folder_read(clm_folder *f, char **text, size_t *len, char **refused, char **err)
{
    char *e = NULL;
    *refused = NULL;
    int rc = clm_safe_read(f->path, CLM_MIRROR_MAX_BYTES, text, len, &e);
    if (rc == LC_OK) return LC_OK;
    f->current = 0;
    if (rc == LC_INVALID) {
        /* A file of any kind (a symlink, a huge file) is replaced by the next write; a
         * directory is not, so it is moved aside (kept: it is the model's) first. */
        struct stat st;
        char *aside = NULL, *what = NULL;
        if (lstat(f->path, &st) == 0 && S_ISDIR(st.st_mode)) {
            aside = lc_asprintf("%s.dir-%ld", f->path, (long)time(NULL));
            if (aside && rename(f->path, aside) == 0)
                what = lc_asprintf("It was a directory, moved aside to %s; LIVE_CONTEXT.md is "
                                   "written again before your next request.", aside);
            else
                what = lc_asprintf("It is a directory and could not be moved aside (%s), so "
                                   "the mirror cannot be written until it is removed.",
                                   strerror(errno));
        }
        *refused = lc_asprintf("[CLM] LIVE_CONTEXT.md was not read, so your edit was ignored: "
                               "%s. %s", e ? e : "refused",
                               what ? what : "It is written again before your next request.");
        free(aside);
        free(what);
    }
    if (err) *err = e;
    else free(e);
    return rc;
}

int clm_folder_render(clm_folder *f, clm_view *v, char **err)
{
    char *head = NULL, *text = NULL;
    size_t head_len = 0, len = 0, at = 0;
    uint8_t h[32];
    /* In place only over the very file last written, holding the view's last render. */
    int rc = clm_view_render_delta(v, f->current && f->stamp.valid, &head, &head_len, &text,
                                   &len, &at, h, err);
    if (rc != LC_OK) goto done;
    if (f->current && memcmp(h, f->hash, 32) == 0) goto done;
    if (head) {
        char *e = NULL;
        rc = clm_safe_append(f->dir, CLM_FOLDER_FILE, &f->stamp, head, head_len, text, len, at, &e);
        if (rc == LC_OK) {
            f->appends++;
            goto written;
        }
        /* Changed by someone else, or a write failed half way: written whole instead. */
        free(e);
        free(head);
        free(text);
        head = text = NULL;
        if ((rc = clm_view_render_digest(v, &text, &len, h, err)) != LC_OK) goto done;
    }
    f->current = 0;
    if ((rc = clm_safe_write_stamped(f->dir, CLM_FOLDER_FILE, text, len, &f->stamp, err)) != LC_OK)
        goto done;
    f->writes++;
written:
    memcpy(f->hash, h, 32);
    f->current = 1;
done:
    if (rc != LC_OK) {
        f->current = 0;
        f->stamp.valid = 0;
    }
    free(head);
    free(text);
    return rc;
}
