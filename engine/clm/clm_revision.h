/*
 * clm_revision.h -- accepted live-context revisions (docs/DESIGN.md §3.8, §4.1-§4.3): the digest
 * of the raw prefix a revision replaces, the `live-context-state` payloads (full for
 * accept/reset, slim for reject/toggle), and rebuilding the active revision from a
 * branch's session entries. Owns the revision objects it returns.
 */
#ifndef LC_CLM_REVISION_H
#define LC_CLM_REVISION_H

#include <stddef.h>

#include "clm_apply.h"
#include "clm_doc.h"

#define CLM_STATE_TYPE "live-context-state"

/* A borrowed JSON text, e.g. one raw message of the context event. */
typedef struct clm_text {
    const char *json;
    size_t len;
} clm_text;

/* SHA-256 over the first n texts, each prefixed by its decimal length and a newline, so
 * that no two different lists share a digest by re-splitting bytes. hex: 64 + NUL. */
void clm_prefix_digest(const clm_text *msgs, size_t n, char hex[65]);

typedef struct clm_revision {
    long revision;
    size_t anchor_count;        /* raw messages the revision replaces */
    char anchor_digest[65];     /* clm_prefix_digest of those raw messages */
    char **messages;            /* the revision's messages, JSON texts (owned) */
    size_t *lens;
    size_t n_messages;
    size_t tokens_before, tokens_after;
} clm_revision;

void clm_revision_free(clm_revision *r);

/* Full accept payload: {"kind":"accept","version":1,"revision","anchorCount",
 * "anchorDigest","tokensBefore","tokensAfter","messages":[...],"trace":[...]}. Message
 * bytes are copied verbatim. Rule 6 of docs/DESIGN.md §3.5: LC_INVALID when the result is not valid JSON. */
/* The revision an accepted edit of view `v` makes (`o`), numbered `revision`, anchored on
 * the anchor_count raw messages the view covered (their digest): its messages are the
 * outcome's items, and (*raw_idx, malloc'd) each one's raw index when it is a raw message
 * kept as it was, else -1. LC_NOMEM only (nothing to free then). */
int clm_revision_of_edit(const clm_view *v, const clm_outcome *o, long revision,
                         size_t anchor_count, const char *anchor_digest, clm_revision *r,
                         long **raw_idx);
int clm_payload_accept(const clm_view *v, const clm_outcome *o, long revision,
                       size_t anchor_count, const char *anchor_digest, char **out,
                       char **err);
/* Reset: back to the raw transcript, as a full payload with no messages. */
char *clm_payload_reset(long revision, const char *reason);
/* Slim entries: a rejection (reason), and the on/off switch. */
char *clm_payload_reject(long revision, const char *reason);
char *clm_payload_toggle(int enabled);

/* Parse an accept/reset payload (the `data` of a state entry). */
int clm_revision_parse(const char *json, size_t len, clm_revision *out, char **err);
/* The same from the parsed `data` object (a tree move has the entry parsed already). */
struct cJSON;
int clm_revision_from_data(const struct cJSON *data, clm_revision *out, char **err);

/* What the state entries of one branch say. */
typedef struct clm_branch_state {
    int has_revision;           /* rev holds the newest accepted revision in force */
    clm_revision rev;
    long last_revision;         /* highest revision number on the branch (0 if none) */
    int enabled;                /* newest toggle; 1 when never toggled */
    size_t malformed;           /* state entries skipped as unreadable */
    char why[160];              /* why there is no revision, when has_revision == 0 */
} clm_branch_state;

/* branch_json: the JSON array of session entries, root to leaf (host get_branch). A
 * compaction entry after the newest revision voids it (it is the new baseline). */
int clm_branch_reconstruct(const char *branch_json, size_t len, clm_branch_state *out,
                           char **err);
void clm_branch_state_free(clm_branch_state *s);

/* Does the revision's anchor still describe the raw messages (count and digest)?
 * 1 yes; 0 no, with *why (malloc'd) saying which part differs. */
int clm_revision_matches(const clm_revision *r, const clm_text *raw, size_t n_raw, char **why);

#endif
