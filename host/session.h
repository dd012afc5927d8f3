/*
 * session.h -- the reference host's session file: an append-only JSONL tree in the
 * reference format (header line, then entries {type, id, parentId, timestamp, ...}).
 *
 * Owns the entries as read (each line's text is kept verbatim and never rewritten), an
 * id -> entry hash map, the active branch path (root -> leaf, extended in O(1) on append,
 * rebuilt once on a tree move) and the active branch's model context as an array of
 * `ap_message_in` pointing at per-entry message texts serialized once. Building a
 * request's context is therefore O(1) on the host side.
 */
#ifndef HOST_SESSION_H
#define HOST_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent_plugin.h"

typedef struct sess_entry {
    char *id;
    char *parent_id;       /* NULL for a root */
    char *type;            /* "message", "custom", "compaction", ... */
    char *line;            /* the entry's JSON text as written (no newline) */
    size_t line_len;
    char *msg;             /* the AgentMessage it contributes to the context, or NULL */
    size_t msg_len;
    size_t tokens;         /* msg_estimate_tokens of msg */
    long usage_total;      /* assistant usage total, 0 when none */
    int role;              /* msg_role of msg */
    long long ts_ms;       /* timestamp as epoch milliseconds (0 when unparsable) */
    long lineno;           /* 1-based line in the file */
    size_t bpos;           /* position on the active branch when it is on it */
} sess_entry;

typedef struct session session;

/* Called for every problem found while reading (malformed line, dangling parent). */
typedef void (*session_warn_fn)(void *ud, const char *msg);

/* Open `path`; create it with a fresh header when it is missing or empty. A malformed
 * line is reported through warn with its line number and skipped (the file is left as
 * it is). *existed is set to 1 when the file already held a header. `header_line`, when
 * not NULL, is the header written to a new file (the replay keeps the input's). */
int session_open(const char *path, const char *cwd, const char *header_line,
                 session_warn_fn warn, void *warn_ud, session **out, int *existed,
                 char **err);
void session_close(session *s);

const char *session_id(const session *s);
const char *session_path_name(const session *s);
const char *session_cwd(const session *s);

sess_entry *session_find(const session *s, const char *id);
sess_entry *session_leaf(const session *s);
size_t session_entry_count(const session *s);
/* The active branch root -> leaf (borrowed). */
sess_entry *const *session_branch(const session *s, size_t *n);
/* The active branch as a JSON array of entries (malloc'd). */
char *session_branch_json(const session *s);
/* Every entry (all branches, file order) as a JSON array (malloc'd). */
char *session_entries_json(const session *s);

/* Append an entry built from `entry` (its type and fields; id, parentId and timestamp
 * are filled here: parentId is the leaf). The leaf moves to it. durable: fsync before
 * returning. *out (optional) borrows the new entry. */
int session_append(session *s, cJSON *entry, int durable, sess_entry **out, char **err);
/* Append an entry line that already has its id/parentId/timestamp (replay). The text is
 * written as given. Fails with LC_INVALID on a duplicate id or malformed JSON. */
int session_append_line(session *s, const char *line, int durable, sess_entry **out,
                        char **err);
/* Flush and fsync what was written. */
int session_sync(session *s, char **err);

/* Move the leaf to `id` (NULL: before the first entry). Rebuilds the branch once. */
int session_move_leaf(session *s, const char *id, char **err);

/* The active branch's context, built as the reference host builds it (latest compaction
 * -> compactionSummary + kept entries + later entries; custom_message and
 * branch_summary become messages; everything else is left out). Borrowed; valid until
 * the next append or move. */
const ap_message_in *session_context(const session *s, size_t *n);
/* Estimated tokens of the context: the last assistant usage after the latest
 * compaction plus estimates of later messages when use_usage, else the sum of all
 * estimates. */
size_t session_context_tokens(const session *s, int use_usage);
/* Tokens of context messages [from, n) (estimates only). */
size_t session_context_tokens_from(const session *s, size_t from);
/* The estimate of context message i (as session_context orders them). */
size_t session_context_message_tokens(const session *s, size_t i);
/* The entry behind context message i (NULL for the synthesized compaction summary). */
sess_entry *session_context_entry(const session *s, size_t i);
/* The latest compaction entry on the branch, or NULL. */
sess_entry *session_latest_compaction(const session *s);

/* Deterministic ids and timestamps for replay: ids from a PRNG seeded with `seed`, and
 * new entries stamped with `fixed_iso` (NULL: the wall clock). */
void session_seed_ids(session *s, uint64_t seed);
void session_set_clock(session *s, const char *fixed_iso);

/* ISO-8601 UTC with milliseconds for epoch ms (buf >= 32 bytes), and back (-1 if bad). */
void session_iso_time(long long ms, char *buf, size_t len);
long long session_parse_iso(const char *iso);

#endif
