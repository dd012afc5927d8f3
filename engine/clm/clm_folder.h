/*
 * clm_folder.h -- the live-context mirror folder and the mirror file in it (CLM
 * docs/DESIGN.md §2.1, issue 14.5): the session's folder TMP/lossless-context-SID, claimed by
 * one process (another live process on the same session gets BASE.PID), cleared of a dead
 * owner's leftovers, swept when stale, removed at shutdown; and LIVE_CONTEXT.md, written
 * whole (temp + rename) or, when the context only grew, extended in place. Owns the paths,
 * the owner lock and what is known of the file last written. All file access goes through
 * clm_safefs (no symlink is followed).
 */
#ifndef LC_CLM_FOLDER_H
#define LC_CLM_FOLDER_H

#include <stddef.h>
#include <stdint.h>

#include "clm_doc.h"
#include "clm_safefs.h"

#define CLM_FOLDER_PREFIX "lossless-context-"
#define CLM_FOLDER_FILE "LIVE_CONTEXT.md"
#define CLM_FOLDER_SWEEP_AGE_S (7L * 24 * 3600)

typedef struct clm_folder {
    char *base_dir;          /* the session's folder; when another live process owns it, dir
                              * is BASE.PID (our own) */
    char *dir, *path;        /* the folder this process uses, and its LIVE_CONTEXT.md */
    int own_fd;              /* holds the owner lock of dir (clm_safefs.h); -1 none */
    long other_pid;          /* the owner of base_dir when it is not us (0 none, told once) */
    uint8_t hash[32];        /* clm_mirror_digest of what was last written or read: a later
                              * write by anyone else is a draft */
    int current;             /* the file holds exactly the last rendering */
    clm_file_stamp stamp;    /* the file as last written (an append needs it unchanged) */
    unsigned long writes, appends; /* whole writes / in-place extensions */
} clm_folder;

void clm_folder_init(clm_folder *f);
void clm_folder_free(clm_folder *f);
/* The session's folder under tmp_dir (NULL or empty: /tmp) for session_id (sanitized). */
void clm_folder_set_paths(clm_folder *f, const char *tmp_dir, const char *session_id);
/* Let the folder go; with `remove`, remove it while it is still ours. */
void clm_folder_release(clm_folder *f, int remove);
/* 1 while this process holds the folder it uses. */
int clm_folder_held(const clm_folder *f);
/* Make f->dir a folder this process owns: the session's folder when it is free, else
 * BASE.PID. Run at session start and before every write: the model can remove the folder,
 * and then it is claimed again. Returns 1 when dir/path changed since the last claim.
 * *notice (malloc'd, for the user) when another live process owns the session's folder
 * (once per owner); *warn (malloc'd, for the log) when no folder could be claimed. */
int clm_folder_claim(clm_folder *f, char **notice, char **warn);
/* Remove everything in `dir` but its owner file. */
void clm_folder_clear(const char *dir);
/* Remove the folders under tmp_dir of sessions that ended without a shutdown (their owner
 * lock is free), and those without an owner file older than seven days; never `keep` or
 * a folder a live process owns. *log (malloc'd, one line per folder) says what went. */
void clm_folder_sweep(const char *tmp_dir, const char *keep, char **log);
/* Read LIVE_CONTEXT.md (at most CLM_MIRROR_MAX_BYTES, no symlink followed). When it is
 * refused (LC_INVALID: a symlink, a huge file, a directory, which is moved aside, kept, so
 * that the next write can replace it), *refused (malloc'd) tells the model why; any
 * failure means the file no longer holds the last rendering. */
int clm_folder_read(clm_folder *f, char **text, size_t *len, char **refused, char **err);
/* Render the view into LIVE_CONTEXT.md: nothing when the file already holds it; extended in
 * place when the file is the one last written and the view only grew; else written whole. */
int clm_folder_render(clm_folder *f, clm_view *v, char **err);

#endif
