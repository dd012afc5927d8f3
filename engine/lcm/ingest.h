/*
 * ingest.h -- what of a session gets stored, and how: the policy shared by the plugin (live
 * requests, tree moves, session start and end) and by `lcm import` (transcripts on disk).
 *
 * Owns the message an entry contributes (a message entry's AgentMessage byte for byte, the
 * messages the reference host builds for custom messages, branch summaries and
 * compactions), the id set both sides index entries with, batching into store_ingest, the
 * walk between two leaves of a move (O(distance moved)), the unstored tail of a branch,
 * the messages that sit on no branch, the removed marks from an active branch, and the
 * O(new) ingest of a request (what the previous one carried is not looked at again).
 * Host data comes in as JSON and engine structs; where the host must be asked, through an
 * ingest_entry_fn. Knows nothing of the ABI.
 */
#ifndef LC_INGEST_H
#define LC_INGEST_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "store.h"

/* One session entry as the host holds it, by id: *text malloc'd (the caller frees it).
 * A status (LC_OK, or the host's: LC_NOTFOUND, ...) and *err on failure. */
typedef int (*ingest_entry_fn)(void *ud, const char *id, char **text, char **err);

/* ---- entries and their messages ------------------------------------------------------- */

/* The AgentMessage of a "message" entry exactly as the entry holds it (malloc'd), the bytes
 * a request carries; NULL when the entry is not a message entry or is no JSON object. */
char *ingest_entry_message(const char *text, size_t len);

/* The message any entry contributes to the model context, as the reference host derives it
 * (malloc'd; NULL when the entry never reaches the model): a message entry's own bytes, a
 * built message for custom_message, branch_summary and compaction. `root` is `text`
 * parsed; ts_ms the entry's time. */
char *ingest_context_message(const cJSON *root, const char *text, size_t len, long long ts_ms);

/* ---- a set of entry ids, in insertion order --------------------------------------------- */

typedef struct ingest_idset {
    char **ids;          /* owned copies; ids[i] is the i-th added */
    size_t n, cap;
    size_t *slots;       /* open addressing: position + 1, 0 = empty */
    size_t nslots;
} ingest_idset;
/* Position of id, or -1. */
long ingest_idset_find(const ingest_idset *s, const char *id);
/* Append id (no duplicate check: find first). LC_NOMEM. */
int ingest_idset_add(ingest_idset *s, const char *id);
void ingest_idset_free(ingest_idset *s);

/* ---- batches into store_ingest ---------------------------------------------------------- */

typedef struct ingest_batch {
    store_msg *m;
    char **own;          /* the JSON texts the batch owns (NULL: borrowed or empty) */
    cJSON **trees;       /* their parses the batch owns (NULL: the store parses) */
    size_t n, cap;
} ingest_batch;
/* Queue one message: entry_id borrowed until the flush; json owned from here (NULL: an
 * entry known to be stored, queued only so the store's walk back stops at it). LC_NOMEM
 * (json freed). */
int ingest_batch_add(ingest_batch *b, const char *entry_id, char *json);
/* The same with the caller's parse of json (owned from here, may be NULL), which the
 * store then reads instead of parsing json again: store_msg.msg says what it must be. */
int ingest_batch_add_tree(ingest_batch *b, const char *entry_id, char *json, cJSON *tree);
/* Store what is queued in one transaction and empty the batch, whatever the outcome.
 * *inserted (may be NULL) gets the new rows. */
int ingest_batch_flush(store *st, ingest_batch *b, size_t *inserted, char **err);
void ingest_batch_free(ingest_batch *b);

/* ---- the plugin's host-side ingest -------------------------------------------------------- */

/* Store the message entries among ids (leaf first, as a tree walk yields them) that the
 * store lacks, reading each through get; entries that are no messages or cannot be read
 * are skipped. *inserted (may be NULL). */
int ingest_entries(store *st, ingest_entry_fn get, void *ud, char *const *ids, size_t n,
                   size_t *inserted, char **err);

/* A tree move from old_leaf to new_leaf (either may be NULL): walk parent links from both
 * leaves in turn until one side reaches an entry the other passed (the common ancestor),
 * store the messages of the side that left (no request may have carried them), mark it
 * removed and clear the mark on the side that joined. Costs O(distance moved) reads.
 * A failure to store the left side is no failure of the move: *warn (malloc'd) says why. */
int ingest_move(store *st, ingest_entry_fn get, void *ud, const char *old_leaf,
                const char *new_leaf, char **warn, char **err);

/* Store what the active branch (the host's JSON array of entries, root to leaf) ends with
 * that the store lacks: the last turn of a session, what a crash or a failed write left
 * out. Walks back from the leaf to the first stored message. */
int ingest_branch_tail(store *st, const cJSON *branch, ingest_entry_fn get, void *ud,
                       char **err);

/* 1 when the store lacks the last k message entries of the active branch, judged as
 * ingest_lacks_tail judges a request's messages (nine lookups). */
int ingest_branch_lacks_tail(store *st, const cJSON *branch, size_t k);

/* Store every message entry of `all` (every entry of the session) that sits on no active
 * branch and is not stored: a branch abandoned while the store could not be written. Its
 * exact bytes come from one get each. *inserted (may be NULL). */
int ingest_offbranch(store *st, const cJSON *all, const cJSON *branch, ingest_entry_fn get,
                     void *ud, size_t *inserted, char **err);

/* Marks from the whole active branch: entries not on it are removed, entries on it are
 * not. *marked / *cleared may be NULL. */
int ingest_mark_branch(store *st, const cJSON *branch, size_t *marked, size_t *cleared,
                       char **err);

/* ---- a request's messages: only what is new ------------------------------------------ */

/* What the previous request carried, so the next one touches only what is new. */
typedef struct ingest_seen {
    size_t n;            /* messages; 0 = the next call starts over */
    size_t tokens;       /* their ceil(bytes/4) sum */
    char *first, *last;  /* entry ids of its first and last message */
    int stored;          /* its ingest succeeded */
} ingest_seen;
void ingest_seen_reset(ingest_seen *s);

/* How many leading messages of msgs the previous request carried (0 when the input did not
 * only grow: its first message moved, or the previous last one), and *tokens, the
 * ceil(bytes/4) sum over all msgs, summed over the new ones only. */
size_t ingest_known(const ingest_seen *s, const store_msg *msgs, size_t n, size_t *tokens);

/* 1 when the store lacks the last k messages of msgs (k <= n), judged by nine lookups
 * spread over them from the last: what a branch has stored is a prefix of it, so a stored
 * message among them ends the tail. 0 when one is stored or has no entry id. */
int ingest_lacks_tail(store *st, const store_msg *msgs, size_t n, size_t k);

/* Remember a request in *s as ingest_request does, its messages stored by someone else
 * (stored: they are in the store already). */
void ingest_seen_note(ingest_seen *s, const store_msg *msgs, size_t n, size_t tokens, int stored);

/* Store the new messages of a request (known from ingest_known; the previous last message
 * goes too when it was stored, so the store's walk back stops at it) and remember the
 * request in *s. n > 0. A store failure is returned and remembered (the next request
 * offers the store everything again). */
int ingest_request(store *st, ingest_seen *s, const store_msg *msgs, size_t n, size_t known,
                   size_t tokens, char **err);

#endif
