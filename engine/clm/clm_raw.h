/*
 * clm_raw.h -- the raw prefix of the live context (docs/DESIGN.md §3.8): what the plugin
 * has seen of the host's raw messages, kept across requests so that a request whose prefix
 * did not change costs O(new), and one after a tree move O(distance moved). Owns a running
 * digest with checkpoints (the anchor a revision is checked against), and per raw message
 * its entry id, token estimate, exclusion flag and observation-capped form.
 */
#ifndef LC_CLM_RAW_H
#define LC_CLM_RAW_H

#include <stddef.h>

#include "sha256.h"

/* Digest checkpoints are kept every this many raw messages: a tree move re-hashes at
 * most this many messages of the common prefix, plus what is new. */
#define CLM_RAW_CKPT 64

/* The host's raw messages of one request, read through the caller (the engine does not
 * know the host's types): message i's entry id (NULL when none), JSON text and length. */
typedef struct clm_input {
    size_t n;
    const void *ud;
    void (*get)(const void *ud, size_t i, const char **id, const char **json, size_t *len);
} clm_input;

/* The revision a raw prefix is checked against: its anchor (count and digest). */
typedef struct clm_raw_anchor {
    size_t count;
    const char *digest;   /* 64 hex characters */
    long revision;
} clm_raw_anchor;

typedef struct clm_raw_cache {
    size_t n;                 /* raw messages folded into ctx */
    sha256_ctx ctx;
    sha256_ctx *ckpt;         /* ckpt[j]: the digest state after j * CLM_RAW_CKPT messages */
    size_t n_ckpt, ckpt_cap;
    char **ids;               /* per raw message: its entry id (owned) or NULL */
    size_t n_anon;            /* raw messages with no entry id (a full pass each time) */
    size_t *tokens;           /* per raw message */
    char **capped;            /* per raw message: observation-capped JSON, clm_raw_uncapped, or
                               * NULL (not looked at yet) */
    size_t *capped_tokens;    /* per raw message with a capped form: its estimate ... */
    size_t *capped_len;       /* ... and its length */
    unsigned char *excluded;  /* per raw message: kept out of the request (host rule) */
    size_t cap;
    /* The lowest raw index whose facts (bytes, capped form) were forgotten since the last
     * clm_raw_settle: every message below it is the one the previous request saw. */
    size_t changed_from;
    int rev_checked;          /* the revision's anchor was compared with this prefix */
    int rev_ok;
    char *rev_why;            /* why it did not match (owned) */
} clm_raw_cache;

/* Marks a raw message the observation cap looked at and left alone. */
extern char clm_raw_uncapped[1];

void clm_raw_init(clm_raw_cache *c);
/* Forget every message (the digest starts over). */
void clm_raw_reset(clm_raw_cache *c);
void clm_raw_free(clm_raw_cache *c);
/* Forget every raw message from index `k` on, back to the checkpoint at or below it. A
 * revision whose anchor lies past the cut is checked again. */
void clm_raw_truncate(clm_raw_cache *c, size_t k, size_t anchor);
/* The capped forms depend on the cap setting: forget them when it changes. */
void clm_raw_uncap(clm_raw_cache *c);
/* The revision changed: its anchor (NULL when none) must be checked again, which costs at
 * most a checkpoint's worth of messages. */
void clm_raw_rev_changed(clm_raw_cache *c, const clm_raw_anchor *a);
/* Fold the request's raw input in: the prefix shared with the previous request (found by
 * entry id) is kept, the rest digested; the revision anchor `a` (NULL when none) is
 * checked when the digest passes it. LC_NOMEM only. */
int clm_raw_update(clm_raw_cache *c, const clm_input *in, const clm_raw_anchor *a);
/* The request was composed: what it saw is the baseline of the next changed_from. */
void clm_raw_settle(clm_raw_cache *c);
/* The capped form of raw message i (its JSON `json`), computed once per cap setting: NULL
 * when the message needs no cap; *tokens its estimate and *len its length otherwise. */
const char *clm_raw_capped(clm_raw_cache *c, size_t i, const char *json, long cap, double head,
                           size_t *tokens, size_t *len);
/* The digest of the raw messages folded in so far, as hex. */
void clm_raw_digest_hex(const clm_raw_cache *c, char hex[65]);

#endif
