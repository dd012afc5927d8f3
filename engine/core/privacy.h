/*
 * privacy.h -- what of a session is never stored: the text of <private>...</private> spans
 * (always), the known secret shapes when lcm.json asks for `redactAtIngest` (redact.h's
 * rules, applied before the write instead of only on the way out), and whole sessions
 * whose folder matches an `exclude` glob. Owns the span rule over a message's strings, the
 * secret pass over them and the folder match; the store's row derivation (store_derive.c)
 * is the one caller on the write path, so the plugin, `lcm import` and the hooks cannot
 * miss it. The session file is the host's and is never touched here.
 */
#ifndef LC_PRIVACY_H
#define LC_PRIVACY_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* What a private span becomes in the store (its tags included). */
#define PRIVACY_MARK "[private]"

/* 0 when json[0..len) cannot hold a private tag (no "private" in any case): nothing to do
 * unless secrets are masked too. A cheap look over the raw bytes. */
int privacy_may_hold(const char *json, size_t len);

/* Mask one message's strings in place: every <private>...</private> span (tags matched in
 * any case) becomes PRIVACY_MARK; a span left open masks every later string of the message
 * (the safe side); a closing tag met before any opening one masks what precedes it (the
 * span opened in an earlier message). Structural strings (type, role, ids, names) are
 * never touched, so the message keeps its shape. With `redact`, each string is then masked
 * by redact_text, and a string member whose name names a secret ("password": "...") by the
 * same assignment rule. *n_private / *n_secrets (may be NULL) count what was masked.
 * LC_OK or LC_NOMEM (the tree is then partly masked: the caller must not store it). */
int privacy_mask_tree(cJSON *msg, int redact, size_t *n_private, size_t *n_secrets);

/* Mask the private spans of one text. *inside carries an open span from the text before
 * (in: 1 = the text starts inside a span; out: whether it ends inside one). The masked copy
 * (malloc'd; NULL on OOM); *n (may be NULL) counts the spans masked. */
char *privacy_mask_text(const char *s, size_t len, int *inside, size_t *n);

/* 1 when the folder `cwd` (absolute) or a folder above it matches one of the globs
 * (fnmatch with FNM_PATHNAME: `*` stays within one folder name; a leading "~" is $HOME),
 * with *which (may be NULL) the glob that matched (borrowed). 0 otherwise or for an empty
 * cwd; -1 out of memory (not known: a caller must not store the session). */
int privacy_excluded(char *const *globs, size_t n, const char *cwd, const char **which);

#endif
