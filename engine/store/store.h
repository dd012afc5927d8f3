/*
 * store.h -- the lossless per-session store, by default one SQLite database (WAL, FTS5)
 * under <agent home>/lcm/<session id>.sqlite (the backend in store_sqlite*.c; the method
 * table in store_backend.h is how a store reaches its backend). Owns the schema and
 * its forward migrations, the passive ingest of session messages (verbatim JSON + derived
 * text + FTS index), the removed-branch marks, file-handle rows, the summary/provenance
 * tables the DAG writes, and the search and administration primitives recall and maint
 * run on. Nothing here names a SQLite type.
 * The session file stays the source of truth: the store is a derived index that is rebuilt
 * row for row from the same messages.
 */
#ifndef LC_STORE_H
#define LC_STORE_H

#include <stddef.h>
#include <stdint.h>

/* The schema this build writes and reads. A store below it is `older-generation` for
 * read-only openers; a read-write open migrates it forward. */
#define STORE_SCHEMA_VERSION 6
/* The oldest schema a read-only opener can answer from as it is: 3 only adds the vector
 * tables, which a reader of a schema-2 store finds absent (no vectors); 4 lets a
 * message's verbatim JSON be stored packed, and a reader takes either form; 5 changes
 * only the full-text index (its words and a `thinking` column): a reader of an older one
 * finds what its `text` column holds, as that build indexed it; 6 adds the words as written
 * beside their stems, and a reader of an older index matches a word-as-written phrase
 * (STORE_EXACT_MARK) by its stem. */
#define STORE_SCHEMA_READABLE 2
#define STORE_SCHEMA_ANSWERS(v) ((v) >= STORE_SCHEMA_READABLE && (v) <= STORE_SCHEMA_VERSION)

/* Bounds (characters are Unicode code points of the UTF-8 text). */
#define STORE_INDEX_CHARS 100000      /* FTS5 holds the first this-many characters */
#define STORE_LARGE_FILE_CHARS 32000  /* default largeFileChars */

typedef struct store store;

/* One message to ingest: the session entry id and the AgentMessage JSON exactly as the
 * session file holds it (borrowed for the call). Messages without an entry id are not
 * session entries (synthesized by the host) and are skipped. */
struct cJSON;
typedef struct store_msg {
    const char *entry_id;
    const char *json;
    size_t json_len;
    /* Optional, borrowed: the caller's own parse of exactly `json`, which saves the store
     * a second parse of each message (an import parses every line already). It must be
     * the tree the store would build: json holds no escaped NUL (`\u0000`, which the
     * store reads as U+FFFD) or the caller leaves this NULL. */
    const struct cJSON *msg;
} store_msg;

typedef struct store_options {
    size_t large_file_chars;   /* 0 = STORE_LARGE_FILE_CHARS */
    int externalize_files;     /* 0 disables file handles */
    int redact_at_ingest;      /* lcm.json redactAtIngest: secret shapes stored masked
                                * (privacy.h). store_open sets it from the home's file;
                                * a later store_set_options can turn it on, never off. */
} store_options;

typedef struct store_ingest_stats {
    size_t inserted;      /* new rows */
    size_t examined;      /* messages looked at (O(new) when nothing is new) */
    size_t text_bytes;    /* derived text bytes of the new rows */
    size_t file_handles;  /* handles recorded (incl. large-inline) */
} store_ingest_stats;

/* One stored message, as a read returns it (all strings malloc'd; store_row_free). */
typedef struct store_row {
    int64_t id;
    char *entry_id;
    int64_t ordinal;
    char *role;
    char *text;          /* derived text */
    char *raw_json;      /* the original AgentMessage bytes */
    size_t raw_len;
    char *payload;       /* JSON array of the blocks the text does not carry; NULL if complete */
    int64_t tokens;
    int64_t chars;       /* code points of text */
    int removed;
    char *tool_name;
    char *tool_path;
    int64_t created;
} store_row;

/* A summary to record (the DAG's writer). Borrowed for the call. */
typedef struct store_summary {
    const char *kind;                 /* "leaf" | "condensed" */
    int depth;
    const char *text;
    const char *tiers_json;           /* may be NULL: {"rich": "...", ...} */
    int64_t tokens;
    const char *const *entry_ids;     /* leaf: the covered entries, in order */
    size_t n_entries;
    const int64_t *children;          /* condensed: the child summary ids, in order */
    size_t n_children;
} store_summary;

/* Open (creating folder 0700 / file 0600 when absent) the session's store, migrate it to
 * STORE_SCHEMA_VERSION and record meta (session id, cwd, created) on creation. */
int store_open(const char *agent_home, const char *session_id, const char *session_cwd,
               store **out, char **err);
/* The same, waiting at most `wait_ms` for a lock another process holds (store_open waits
 * STORE_BUSY_MS). LC_BUSY: the store was locked the whole time (try again later); a file
 * that is not a SQLite database fails with a sentence naming `/lcm doctor --repair`. */
#define STORE_BUSY_MS 5000
int store_open_wait(const char *agent_home, const char *session_id, const char *session_cwd,
                    long wait_ms, store **out, char **err);
/* 1 when the home's lcm.json `exclude` names the folder session_cwd (or one above it): its
 * session is not stored, and store_open refuses it with LC_EXCLUDED. *why (may be NULL) a
 * malloc'd sentence naming the glob. */
int store_session_excluded(const char *agent_home, const char *session_cwd, char **why);
/* Open a store file read-only with writes forbidden on the connection (query_only). It is
 * never migrated: *schema_version (if not NULL) reports what the file holds, and the
 * caller decides whether it can answer (== STORE_SCHEMA_VERSION). */
int store_open_readonly(const char *db_path, store **out, int *schema_version, char **err);
void store_close(store *s);
/* A cheap look (the first 100 bytes and the file sizes, no SQL) at whether a store file is
 * damaged: not empty yet not a SQLite database, or shorter than its header says while no
 * write-ahead log could hold the rest (a truncated copy). 1 = damaged, with *why (may be
 * NULL) a malloc'd sentence; 0 = absent, empty or plausible (SQLite's own checks decide). */
int store_file_damaged(const char *path, char **why);

/* 1 when `id` can name a store file: non-empty, at most 200 bytes, no '/', '\\' or control
 * character, not "." or "..". */
int store_valid_id(const char *id);

void store_set_options(store *s, const store_options *opt);
const char *store_path(const store *s);
/* When store_open found the folder or file readable by others and fixed it, a sentence
 * saying so (borrowed; NULL when the modes were right). */
const char *store_mode_note(const store *s);
/* meta values (session_id, cwd, created); NULL when absent. malloc'd. */
char *store_meta_get(store *s, const char *key);
/* Set (or replace) a meta value. */
int store_meta_put(store *s, const char *key, const char *value, char **err);
/* Set a meta value unless it already holds exactly `value` (no write for a value that is
 * right, as at every session start). */
int store_meta_ensure(store *s, const char *key, const char *value, char **err);
int store_schema_version(store *s);

/* Ingest what is new in `msgs` (a branch's messages root to leaf, or any suffix of it):
 * walks back from the end to the newest stored entry, so a call with nothing new costs
 * O(1) lookups. Idempotent (INSERT OR IGNORE on entry id), one transaction. */
int store_ingest(store *s, const store_msg *msgs, size_t n, store_ingest_stats *stats,
                 char **err);

/* A tree move: `active_ids` is the whole active branch (entry ids root to leaf). Entries
 * not in it are marked removed (bytes kept); entries in it lose the mark. Only rows whose
 * mark changes are written. *marked / *cleared (may be NULL) count them. */
int store_mark_branch(store *s, const char *const *active_ids, size_t n, size_t *marked,
                      size_t *cleared, char **err);
/* Incremental form: set or clear the mark on the given entries; *changed (may be NULL)
 * counts the rows whose mark changed. */
int store_set_removed(store *s, const char *const *entry_ids, size_t n, int removed, size_t *changed,
                      char **err);

/* ---- DAG progress ----------------------------------------------------------------------
 * The DAG's leaves cover eligible messages (not removed, role outside
 * STORE_DAG_EXCLUDED_ROLES). So that a compaction pass never rescans history, the store
 * keeps two numbers in `meta`, maintained by triggers on its own connection at every
 * write that can change them (ingest, removed marks, coverage):
 *   watermark: every eligible message with an ordinal below it is covered by a leaf
 *              (entries of a new branch, or restored ones, lower it);
 *   pending:   the tokens of the eligible, uncovered messages at or past the watermark.
 * A write through another connection that removes coverage or messages cannot keep them
 * exact; those triggers drop the numbers instead and the next read recomputes them. */
#define STORE_DAG_EXCLUDED_ROLES "'compactionSummary','branchSummary'"

/* The current watermark and pending tokens; recomputed (one scan) when absent. */
int store_dag_progress(store *s, int64_t *watermark, int64_t *pending, char **err);
/* Move the watermark from `expect` to `value` (a pass that covered everything before
 * `value`). The move is checked where it is written: a watermark that changed since
 * `expect` was read, or an uncovered eligible message in [expect, value) -- one another
 * connection stored while the pass ran, e.g. a new branch taking ordinals the pass had
 * read past -- keeps it where it is. *moved (may be NULL) says whether it moved. */
int store_dag_set_watermark(store *s, int64_t expect, int64_t value, int *moved, char **err);

/* The pointer block's tokens as the last pass measured them (dag_frontier), kept until a
 * summary or an edge changes (triggers drop it). *_get returns 0 when none is known. */
int store_dag_block_get(store *s, int64_t *tokens);
int store_dag_block_put(store *s, int64_t tokens, char **err);

/* Read one message by entry id (LC_NOTFOUND when absent). */
int store_get_message(store *s, const char *entry_id, store_row *out, char **err);
void store_row_free(store_row *r);
int64_t store_message_count(store *s);
/* Summaries stored (0 for a store older than the summaries table). */
int64_t store_summary_count(store *s);
/* The database's size as SQLite counts it: page_count x page_size. */
int64_t store_db_bytes(store *s);

/* Record a summary with its provenance (children, span, covered entries) and index its
 * text, in one transaction. *out_id receives the new id. LC_BUSY (nothing written) when
 * the node no longer applies: a leaf entry is already covered by a leaf or removed, or a
 * condensed child already has a parent -- another pass committed first. */
int store_summary_add(store *s, const store_summary *in, int64_t *out_id, char **err);
/* Replace a summary's text (and its token count) and re-index it, in one transaction: a
 * node re-derived in place (dag_heal) keeps its id, provenance and place in the DAG.
 * LC_NOTFOUND (nothing written) when the summary is gone. */
int store_summary_set_text(store *s, int64_t id, const char *text, int64_t tokens, char **err);

/* ---- the DAG's reads and its bookkeeping ------------------------------------------------
 * A pass walks rows through a visitor, so it can stop at its boundary without reading
 * further (the fresh tail is O(tail), a chunk O(chunk)). A visitor returns LC_OK to go on,
 * STORE_VISIT_STOP to end the walk there (the walk returns LC_OK with *stopped = 1), or an
 * error status (with *err set), which the walk returns. */
#define STORE_VISIT_STOP (-1)

/* One message as a pass reads it (borrowed for the visit). */
typedef struct store_dag_msg {
    int64_t ordinal;
    const char *entry_id;
    const char *role;
    const char *text;   /* NULL in the tail walk, which reads no text */
    int64_t tokens;
    int uncovered;      /* eligible and covered by no leaf */
} store_dag_msg;
typedef int (*store_msg_visit)(void *ud, const store_dag_msg *m, char **err);

/* The messages of the active branch (not removed), newest first. */
int store_dag_walk_tail(store *s, store_msg_visit visit, void *ud, int *stopped, char **err);
/* The messages of the active branch with their text, newest first: a reader of the
 * session's latest turns (the start-of-session bundle) stops when it has enough. */
int store_walk_newest(store *s, store_msg_visit visit, void *ud, int *stopped, char **err);
/* When the newest stored message was stored (epoch ms), else meta "created"; 0 unknown. */
long long store_last_activity_ms(store *s);
/* The eligible messages no leaf covers with after < ordinal < before, oldest first. */
int store_dag_walk_uncovered(store *s, int64_t after, int64_t before, store_msg_visit visit, void *ud,
                             int *stopped, char **err);
/* How many eligible messages no leaf covers at or past `from` (and before `before` when it
 * is > 0). */
int store_dag_count_uncovered(store *s, int64_t from, int64_t before, int64_t *count, char **err);

/* One summary with its span (borrowed for the visit). */
typedef struct store_node {
    int64_t id;
    int depth;
    int leaf;
    const char *text;
    const char *tiers_json;   /* may be NULL */
    int64_t tokens;
    int64_t first_ordinal, last_ordinal;
    const char *first_entry, *last_entry;
    int64_t entry_count;
} store_node;
typedef int (*store_node_visit)(void *ud, const store_node *n, char **err);

/* The summaries no other summary condenses, in span order. */
int store_dag_walk_frontier(store *s, store_node_visit visit, void *ud, char **err);
/* The summaries whose text starts with `prefix`, by id (only id, depth, leaf and text are
 * set). */
int store_dag_walk_prefixed(store *s, const char *prefix, store_node_visit visit, void *ud, char **err);
/* What a summary was made from, in order: a leaf's messages (role, text) or a condensed
 * node's children (role "", text). */
int store_dag_walk_source(store *s, int64_t id, int leaf, store_msg_visit visit, void *ud, char **err);
/* A condensed summary's children with their spans, in order (nothing for a leaf): a
 * reader drilling down the DAG (lcm tui) by id. */
int store_dag_walk_children(store *s, int64_t id, store_node_visit visit, void *ud, char **err);

/* A `runs` row while a pass works: doctor tells a pass in progress from one whose writer
 * died. A run is a lease: on a backend many machines write (PostgreSQL) it holds until
 * STORE_RUN_LEASE_MS after its begin or its last renewal, since a pid means nothing on
 * another machine; the SQLite file's runs are judged by their pid. Begin returns its id, 0
 * when it could not be written (the pass runs anyway); renew extends the lease (a pass
 * renews at each node it writes; nothing for id 0 or a backend without leases); end
 * records the finish (nothing for id 0). */
#define STORE_RUN_LEASE_MS 300000
int64_t store_run_begin(store *s, const char *kind);
void store_run_renew(store *s, int64_t id);
void store_run_end(store *s, int64_t id, const char *status);

/* A named lease on a store: one holder at a time for work two processes must not do at
 * once (doctor --repair, heal --apply), on any machine that shares the store. The holder is
 * this process ("host:pid"); the lease ends by itself `ttl_ms` after it was taken or last
 * taken again, so a holder that died frees it. LC_OK: held by this process now (taken, or
 * renewed when it already held it); LC_BUSY: another holder has it, *holder (may be NULL;
 * malloc'd) names it and its expiry as "host:pid until YYYY-MM-DD HH:MM:SS UTC";
 * LC_INVALID: the backend keeps no leases (the caller goes on without one). Drop releases
 * it when this process holds it. */
int store_lease_take(store *s, const char *name, long ttl_ms, char **holder, char **err);
void store_lease_drop(store *s, const char *name);
/* on = 1: this connection's commits leave the write-ahead log's checkpoints to another
 * connection of the store (the summarizer worker's, whose commits checkpoint as usual), up
 * to a bound that keeps the log from growing without end; on = 0: back to checkpointing
 * itself. So the agent's thread does not copy the log into the database. No-op on a
 * backend without such a log. */
void store_checkpoints_defer(store *s, int on);
/* This process as a lease holder: "host:pid" (malloc'd). */
char *store_lease_holder(void);

/* An event row (condensation-stalled, heal results) that status and doctor read. */
int store_event_add(store *s, const char *kind, const char *data_json, char **err);
int64_t store_event_count(store *s, const char *kind);

/* ---- the projection's rows ---------------------------------------------------------------
 * The prepared cuts and the pin (project.h gives them their meaning); the store keeps them
 * byte for byte. */

/* A prepared cut as stored (strings malloc'd; store_cut_free). */
typedef struct store_cut {
    int64_t id;
    char *anchor_entry;
    int64_t anchor_ordinal;
    char *message;        /* the pointer AgentMessage JSON, exactly as sent */
    char *nodes_json;     /* the frontier node ids, a JSON array */
    int stubbed;
} store_cut;
void store_cut_free(store_cut *c);

typedef enum store_cut_which {
    STORE_CUT_BY_ID = 0,  /* the cut `id` */
    STORE_CUT_NEWEST,     /* the newest cut */
    STORE_CUT_ON_BRANCH   /* the newest cut whose anchor message is not removed */
} store_cut_which;
/* LC_NOTFOUND (a zeroed cut) when there is none. */
int store_cut_get(store *s, store_cut_which which, int64_t id, store_cut *out, char **err);
/* Record a cut (in->id is ignored); `tokens` is its measured size. *out_id the new id. */
int store_cut_add(store *s, const store_cut *in, int64_t tokens, int64_t *out_id, char **err);

/* Which cut is applied, at what occupancy, against which window. */
typedef struct store_pin {
    int64_t cut_id;         /* 0 = nothing swapped */
    long applied_tokens;    /* occupancy when it was applied */
    long window;            /* the window it was measured against */
} store_pin;
/* LC_NOTFOUND (and a zeroed pin) when nothing is pinned. */
int store_pin_get(store *s, store_pin *out, char **err);
int store_pin_set(store *s, const store_pin *pin, char **err);
int store_pin_clear(store *s, char **err);

/* ---- search: recall's primitives -----------------------------------------------------------
 * Recall (recall.h) owns the algorithms -- bounds, paging, snippets, PCRE2 matching -- and
 * reads rows through these. A scope is a summary's originals (through its descendants;
 * 0 = the whole store) and whether entries of removed branches count. Rows are borrowed for
 * the visit; a visitor returns as in the DAG walks (LC_OK, STORE_VISIT_STOP, or an error). */

/* One message as a search reads it. */
typedef struct store_search_row {
    int64_t id;            /* the row id (the index's rowid) */
    const char *entry_id;
    const char *role;
    int64_t ordinal;
    int removed;
    const char *text;      /* the derived text, text_len bytes */
    size_t text_len;
    /* full-text page only: the query matched the message's thinking and none of its text,
     * and `text` is its thinking (a hit shows the words it matched, labelled) */
    int thinking;
    int64_t created;       /* the message's own time, ms since the epoch (0 unknown) */
    double score;          /* a ranked page's score, higher first (0 elsewhere) */
    /* a ranked page: the score's inputs, so scores of several stores can be made one list
     * ({rows, avgdl, dl, then per phrase df, tf}); NULL elsewhere */
    const double *rank_in;
    size_t rank_n;
    /* a ranked page: the ordinal of the user message the row's turn answers (the last one
     * before it, within 256 messages), so recall can weigh a reply by the prompt it replies
     * to; has_prompt 0: none, or a backend that does not say */
    int64_t prompt_ordinal;
    int has_prompt;
} store_search_row;
typedef int (*store_search_visit)(void *ud, const store_search_row *r, char **err);

typedef struct store_search_scope {
    int64_t summary_id;    /* > 0: only that node's originals */
    int include_removed;
    /* scan only: start after the row (after_ordinal, after_id) in the scan's order -- where
     * a bounded scan stopped; both 0 = from the start */
    int64_t after_ordinal, after_id;
    /* count / page only: */
    const double *weights;  /* per phrase of the query, its weight in the rank (recall_query.h);
                             * NULL: every phrase 1 */
    size_t nweights;
    int64_t since_ms, until_ms; /* the message's time in [since, until); 0 = open */
    const char *roles;      /* "user,assistant": only these stored roles; NULL = all */
    int order;              /* STORE_ORDER_*: the page's order */
    double deadline_ms;     /* lc_now_ms() clock: past it, LC_CANCELLED; 0 = none */
    /* page only, may be NULL: where a backend that counts the matches in the page's own pass
     * writes their number (a second run of the query saved); left untouched otherwise and
     * when the page has no row */
    int64_t *total_out;
} store_search_scope;
enum { STORE_ORDER_RANK = 0, STORE_ORDER_NEWEST, STORE_ORDER_OLDEST };

/* A query phrase starting with this byte asks for its words as written (case folded), not
 * their stems: "\001importing" matches "importing" and "Importing", not "imports". A
 * backend that indexes stems alone takes it as the word (a match of every form). */
#define STORE_EXACT_MARK '\001'
/* The longest word (bytes) held as written beside its stem: FTS5's porter stems none longer. */
#define STORE_EXACT_MAX 64

/* How many messages in `scope` the full-text `query` (FTS5 syntax) matches. LC_INVALID
 * when the query is not valid syntax, with *err the engine's reason alone (the caller
 * words the sentence). */
int store_search_count(store *s, const char *query, const store_search_scope *scope, int64_t *count,
                       char **err);
/* One page of the matches: ranked (bm25 with a coverage term: more of the query's distinct
 * phrases first, weighted by rarity and scope->weights; ties by row id), by time
 * (scope->order) or, with `newest_first`, newest stored first; `limit` rows after `offset`.
 * LC_CANCELLED when scope->deadline_ms passed first. */
int store_search_page(store *s, const char *query, const store_search_scope *scope, int newest_first,
                      size_t limit, size_t offset, store_search_visit visit, void *ud, char **err);
/* The best `limit` matches on the active branch (bm25, or newest stored with
 * `newest_first`), visited in conversation order. */
int store_search_top(store *s, const char *query, int newest_first, size_t limit, store_search_visit visit,
                     void *ud, char **err);
/* Messages longer than the index's reach (STORE_INDEX_CHARS); 0 when unknown. */
int64_t store_search_unindexed(store *s);
/* Every message in `scope`, in conversation order (the pattern scan's walk). *stopped
 * (may be NULL) says a visitor ended it. */
int store_search_scan(store *s, const store_search_scope *scope, store_search_visit visit, void *ud,
                      int *stopped, char **err);

/* The summary the model sees for an entry (the top of its chain) and the leaf covering
 * it; 0 and 0 when none does. */
void store_search_cover(store *s, const char *entry_id, int64_t *top, int64_t *leaf);
/* One message by its row id (a home index's hit, store_index_search), visited as a page row:
 * with `thinking`, its thinking as the text (the hit matched that alone), and the ordinal of
 * the prompt its turn answers. LC_NOTFOUND when the store holds no such row; LC_INVALID for
 * a backend without it. */
int store_search_row_get(store *s, int64_t id, int thinking, store_search_visit visit, void *ud, char **err);

/* ---- the home index: one full-text index over every session store of an agent home ------
 * Derived: it holds the stores' searchable words (the same tokenizer and columns as each
 * store's own index) and, per message, what a rank and a page need; deleting it loses
 * nothing (it is built again); a store's own data is never written by it. A backend whose
 * sessions already share one database (PostgreSQL) has none: store_index_open answers
 * LC_INVALID and recall walks the stores. */
typedef struct store_index store_index;

/* One store the index is asked to hold, as the catalog listed it. */
typedef struct store_index_source {
    const char *path;      /* the store file */
    const char *name;      /* its address (the file name without .sqlite) */
    long long created;
    /* filled by store_index_catch_up: */
    int fresh;             /* every row of it is in the index */
    int64_t key;           /* the index's key of it (hits name it); 0 when not indexed */
} store_index_source;

typedef struct store_index_stats {
    size_t checked;        /* stores looked at (a stat each) */
    size_t updated;        /* stores read for new rows */
    size_t stale;          /* stores left not caught up (the time bound, a read failure) */
    int64_t rows_added;
    int reset;             /* a store was replaced: the index was emptied and begun again */
} store_index_stats;

/* Open (creating when absent) the index of `agent_home`. LC_INVALID: this backend has none;
 * LC_ERR: it cannot be opened or written (read-only, damaged), *err says why. */
int store_index_open(const char *agent_home, store_index **out, char **err);
void store_index_close(store_index *ix);
/* Bring the index up to date with the `n` stores listed: a store whose files (size, time,
 * inode, and its -wal's) are as when last indexed costs a stat; a changed one is opened
 * read-only and its rows past the last indexed added, its removed flags read again; a
 * replaced one (another file, fewer rows) empties the index, which is caught up again.
 * Stops at `deadline_ms` (lc_now_ms clock; 0 none): the stores not reached are not fresh.
 * One write transaction a store, idempotent by (store, row), so two processes catching up
 * at once add each row once. */
int store_index_catch_up(store_index *ix, store_index_source *v, size_t n, double deadline_ms,
                         store_index_stats *st, char **err);

/* One hit of the index: which store and row, and what the rank and a page need. */
typedef struct store_index_hit {
    int64_t key;           /* the store (store_index_source.key) */
    int64_t id;            /* the message's row id in its store (store_search_row_get) */
    int64_t ordinal, created;
    const char *role;
    int thinking;          /* matched only its thinking */
    int tool_words;        /* a tool's output or a call's arguments (weighed tool_weight) */
    double score;          /* the rank's score, weights applied (the turn's too); 0 in a time order */
    int64_t prompt_ordinal;
    int has_prompt;
} store_index_hit;
typedef int (*store_index_visit)(void *ud, const store_index_hit *h, char **err);

typedef struct store_index_query {
    const char *match;            /* FTS5 query (recall_query.h's translation) */
    const store_search_scope *scope; /* weights, since/until, roles, order, include_removed,
                                   * deadline; summary_id must be 0 */
    const int64_t *keys;          /* only these stores (sorted ascending) */
    size_t nkeys;
    double tool_weight, thinking_weight; /* factors of the score (recall's) */
    double turn_weight;           /* a reply also scores this much of its matching prompt's score */
    int64_t rank_max;             /* more matches than this: newest first, not ranked */
    size_t limit, offset;
} store_index_query;

/* The query once over the index: *total the matches among the keyed stores (when more than
 * rank_max: rank_max + 1, and *newest_first set, the page then newest stored first), then
 * `limit` hits after `offset` in rank (or time) order visited. LC_INVALID: not valid FTS5
 * syntax (*err the engine's reason); LC_CANCELLED: the deadline passed. */
int store_index_search(store_index *ix, const store_index_query *q, store_index_visit visit, void *ud,
                       int64_t *total, int *newest_first, char **err);
/* 1 when the store holds summary `id`. */
int store_summary_exists(store *s, int64_t id);
/* Summary `id` with its span (a span the store lacks reads as NULL entries and zeros),
 * handed to `visit` once. LC_NOTFOUND when there is none. */
int store_summary_get(store *s, int64_t id, store_node_visit visit, void *ud, char **err);

/* What a summary's originals hold, through its descendants. */
typedef struct store_scope_totals {
    int64_t messages, tokens, chars, removed;
} store_scope_totals;
/* LC_NOTFOUND when nothing could be counted. */
int store_scope_totals_get(store *s, int64_t summary_id, store_scope_totals *out, char **err);

/* A file handle (borrowed for the visit). */
typedef struct store_file_handle {
    const char *entry_id;
    const char *path;        /* NULL: a large inline result */
    const char *content_id;  /* sha256 hex */
    const char *kind;
    int64_t chars;
    const char *preview;
    const char *summary;
} store_file_handle;
typedef int (*store_handle_visit)(void *ud, const store_file_handle *h, char **err);
/* The file handles among a summary's originals, oldest first. */
int store_scope_handles(store *s, int64_t summary_id, store_handle_visit visit, void *ud, char **err);
/* The newest handle whose entry id, path or content id is `key`, visited once;
 * LC_NOTFOUND when there is none. */
int store_handle_find(store *s, const char *key, store_handle_visit visit, void *ud, char **err);

/* ---- administration: maint's primitives ----------------------------------------------------
 * Maintenance (maint.h) owns the policy -- which checks a doctor runs and how they read,
 * what a repair keeps, the export's file format, backup's temp names and links, which
 * runs are dead -- and reaches the rows through these. Each tolerates tables an older
 * build has not created (there is nothing to visit). */

/* The default backend's name and library version, for a bug report ("sqlite", "3.45.1"). */
const char *store_backend_name(void);
const char *store_backend_version(void);

/* A write transaction the caller spans over several of the calls below (import, repair):
 * begin takes the write lock; rollback is safe when none is open. */
int store_tx_begin(store *s, char **err);
int store_tx_commit(store *s, char **err);
void store_tx_rollback(store *s);

/* A bulk ingest (`lcm import`): a transaction like store_tx_begin over many store_ingest
 * batches (each stays all or nothing), in which the backend may defer per-row bookkeeping
 * (the DAG progress numbers) and bring it up to date once at the commit, with the same
 * result as row by row. Commit is durable like any commit; a backend without the slots
 * runs a plain transaction. store_tx_rollback ends one that must not be kept. */
int store_bulk_begin(store *s, char **err);
int store_bulk_commit(store *s, char **err);

/* Copy the whole store into the existing empty file `dest_path` in one read snapshot
 * (consistent while another connection writes), leaving it a standalone file (no
 * write-ahead log). The caller owns the file's name, mode and durability. */
int store_backup_to(store *from, const char *dest_path, char **err);

/* One column value of a dumped or loaded row (borrowed). */
typedef enum store_value_type {
    STORE_VALUE_NULL = 0,
    STORE_VALUE_INT,
    STORE_VALUE_REAL,
    STORE_VALUE_TEXT,
    STORE_VALUE_BLOB
} store_value_type;
typedef struct store_value {
    store_value_type type;
    int64_t i;
    double d;
    const void *p;   /* TEXT (not NUL-terminated in a dump) or BLOB bytes */
    size_t n;
} store_value;

/* A dump's visitor: `tables` once (the ordinary tables, by name: the full-text indexes
 * are derived and left out), then every row of each table in that order. */
typedef struct store_dump_visitor {
    int (*tables)(void *ud, int schema_version, const char *const *names, size_t n, char **err);
    int (*row)(void *ud, const char *table, size_t ncol, const char *const *cols, const store_value *vals,
               char **err);
} store_dump_visitor;
/* Every row of every ordinary table inside one read transaction (the caller's, when one
 * is open). */
int store_dump(store *s, const store_dump_visitor *v, void *ud, char **err);

/* 1 when `table` is one a load may write into (an ordinary table of this store). */
int store_table_loadable(store *s, const char *table);
/* INSERT OR IGNORE one row; *inserted (may be NULL) is 1 when it was new. On failure *err
 * is the engine's reason alone (the caller names the line). */
int store_row_load(store *s, const char *table, size_t ncol, const char *const *cols, const store_value *vals,
                   int *inserted, char **err);
/* Re-derive both full-text indexes from their rows, with ingest's reach. */
int store_rebuild_index(store *s, char **err);

/* The DAG's depth cap, which the shape check holds summaries to. */
#define STORE_MAX_DEPTH 8

/* The store's facts for a doctor report; a table that does not exist counts 0. */
typedef struct store_facts {
    int schema_version;              /* -1 when unreadable */
    int has_messages, has_summaries, has_provenance, has_runs;
    int64_t messages, removed, payload_bytes, summaries, file_handles, runs;
    int64_t unleafed;                /* active messages no leaf covers */
    int64_t depth_hist[STORE_MAX_DEPTH + 1]; /* summaries per depth */
} store_facts;
int store_facts_get(store *s, store_facts *out, char **err);

/* The integrity checks: each visits the offending rows' ids (as text). */
typedef enum store_check_kind {
    STORE_CHECK_MESSAGES_INDEX = 0,  /* the message index's own integrity: visits its name */
    STORE_CHECK_MESSAGES_INDEX_ROWS, /* messages missing from it, or documents without a message */
    STORE_CHECK_SUMMARIES_INDEX,
    STORE_CHECK_SUMMARIES_INDEX_ROWS,
    STORE_CHECK_SPANS,               /* summaries naming an entry the store lacks */
    STORE_CHECK_SHAPE,               /* summaries whose depth, kind and provenance disagree */
    STORE_CHECK_CHILDREN,            /* summaries whose child is gone */
    STORE_CHECK_DUPLICATES,          /* the later rows of summaries sharing a depth and a span */
    STORE_CHECK_FOREIGN_KEYS         /* "table:rowid" */
} store_check_kind;
typedef int (*store_id_visit)(void *ud, const char *id, char **err);
int store_check(store *s, store_check_kind kind, store_id_visit visit, void *ud, char **err);

/* The runs with no finish, by id, each with what its backend knows of its writer:
 * STORE_RUN_HELD (its lease runs: in progress, wherever it runs), STORE_RUN_LAPSED (its
 * lease ran out: its writer is gone) or STORE_RUN_BY_PID (no lease to read, or a run of
 * this machine: the caller asks whether `pid` lives). */
enum { STORE_RUN_BY_PID = -1, STORE_RUN_LAPSED = 0, STORE_RUN_HELD = 1 };
typedef int (*store_run_visit)(void *ud, int64_t id, long pid, int lease, char **err);
int store_runs_open(store *s, store_run_visit visit, void *ud, char **err);
/* Close run `id` as reaped (its writer is dead). */
int store_run_reap(store *s, int64_t id, char **err);

/* Repairs (inside the caller's transaction). Prune: delete provenance rows that name no
 * summary (*orphans), then every summary a check above calls broken (spans, children)
 * and, transitively, each parent that loses a child (*dropped). Dedupe: of summaries
 * sharing a depth and a span keep the expandable one (all provenance present), the oldest
 * among equals, re-pointing parents to it (*removed). */
int store_prune_broken(store *s, int64_t *orphans, int64_t *dropped, char **err);
int store_dedupe_spans(store *s, int64_t *removed, char **err);

/* ---- vectors: hybrid recall's rows (schema 3) ------------------------------------------------
 * One embedding per message and per summary, with the model that made it and its
 * dimension: float32 in this machine's byte order, L2-normalised by the writer (embed.h)
 * so a dot product is the cosine. A message's vector goes with its row (deleted with it),
 * a summary's with the summary and with any change of its text. Hybrid recall (hybrid.h)
 * owns the similarity and the fusion; these only keep and walk the rows. Optional in a
 * backend: a NULL slot answers LC_INVALID naming the backend ("cannot store vectors").
 * A backend with vectors keeps meta `vec_version`, a number it bumps whenever what
 * store_vec_walk would visit changes (a vector written or deleted, a message's removal
 * mark), whichever connection or process made the change: vecindex.h's cache reloads on it. */
typedef enum store_vec_kind { STORE_VEC_MESSAGE = 1, STORE_VEC_SUMMARY = 2 } store_vec_kind;

/* A vector to write (borrowed for the call). */
typedef struct store_vec {
    store_vec_kind kind;
    int64_t id;            /* the message row id or the summary id */
    const char *model;
    int dim;
    const float *v;        /* dim floats */
} store_vec;
/* Write (or replace) `n` vectors in one transaction. A row that has gone meanwhile is
 * skipped, not an error. */
int store_vec_put(store *s, const store_vec *v, size_t n, char **err);

/* A stored vector as the similarity scan reads it (borrowed for the visit). */
typedef struct store_vec_row {
    store_vec_kind kind;
    int64_t id;
    const char *entry_id;  /* messages; NULL for a summary */
    int removed;           /* messages: of an abandoned branch */
    int dim;
    const float *v;        /* dim floats, aligned */
} store_vec_row;
typedef int (*store_vec_visit)(void *ud, const store_vec_row *r, char **err);
/* Every vector `model` made (removed branches' only with include_removed). */
int store_vec_walk(store *s, const char *model, int include_removed, store_vec_visit visit, void *ud,
                   char **err);

/* The vectors of `model` for the rows `ids` (all of `kind`), in no particular order; a row
 * with none (gone since, another model's) is not visited. The vector cache's re-rank reads
 * its few candidates here rather than holding every float in memory (vecindex.h). LC_INVALID
 * when the backend cannot (vecindex then keeps the floats itself). */
int store_vec_get(store *s, const char *model, store_vec_kind kind, const int64_t *ids, size_t n,
                  store_vec_visit visit, void *ud, char **err);
/* Whether store_vec_get answers for this store. */
int store_vec_get_supported(store *s);

/* A row that needs an embedding (borrowed for the visit). */
typedef struct store_vec_pending {
    store_vec_kind kind;
    int64_t id;
    const char *text;      /* the derived text or the summary's text */
    size_t text_len;
    const char *other_model; /* it carries this other model's vector; NULL: it has none */
} store_vec_pending;
typedef int (*store_vec_pending_visit)(void *ud, const store_vec_pending *t, char **err);
/* The messages (by row id) then the summaries (by id) with non-empty text and no vector
 * of `model`; rows carrying another model's vector only with `other_models`. A visitor
 * stops the walk with STORE_VISIT_STOP (*stopped = 1); a later walk resumes where the
 * writes left off, since written rows are no longer visited. */
int store_vec_walk_missing(store *s, const char *model, int other_models, store_vec_pending_visit visit,
                           void *ud, int *stopped, char **err);

/* How far the vectors reach. */
typedef struct store_vec_coverage {
    int64_t messages, messages_embedded, messages_other;   /* embedded: by `model` */
    int64_t summaries, summaries_embedded, summaries_other;
    char *other_model;     /* one of the other models found (malloc'd, NULL none) */
} store_vec_coverage;
/* LC_OK with zeros for a store older than the vectors. */
int store_vec_coverage_get(store *s, const char *model, store_vec_coverage *out, char **err);
void store_vec_coverage_free(store_vec_coverage *c);


/* ---- backends ------------------------------------------------------------------------------
 * A store reaches its backend (the SQLite files, store/sqlite/; a shared PostgreSQL server,
 * store/postgres/) through the backend's method table, which is store_backend.h's: only
 * store.c and the backends include it. Callers see a backend as an opaque handle. */
typedef struct store_backend store_backend;

/* One session of a shared store, as a listing sees it (borrowed for the visit). */
typedef struct store_session_info {
    const char *path;          /* what store_open_readonly takes (no password in it) */
    const char *session_id;
    const char *agent_home;    /* the realpath of the home that wrote it */
    const char *host;          /* the machine that wrote it */
    const char *cwd;
    const char *session_file;
    long long created, last_activity;   /* epoch ms */
    int64_t messages, summaries;        /* -1 / 0 without counts */
    int64_t db_bytes;                   /* the bytes its rows hold; 0 without counts */
} store_session_info;
typedef int (*store_session_visit)(void *ud, const store_session_info *si, char **err);

/* The one store_open and store_open_readonly use: PostgreSQL when LCM_STORE_URL is set,
 * else SQLite (an agent home's lcm.json `store` key is consulted by the calls that take a
 * home, through store_url). */
const store_backend *store_backend_default(void);

/* A backend named by a caller that opens a store in one other than an agent home's own:
 * `lcm migrate --to` copies the embedded stores into the default (shared) backend, or into
 * another home's embedded one. */
const store_backend *store_backend_embedded(void);            /* the SQLite files */
const char *store_backend_label(const store_backend *b);      /* "sqlite", "postgresql" */
/* store_open_wait and store_open_readonly in backend `b`, whatever the home's choice. */
int store_open_in(const store_backend *b, const char *agent_home, const char *session_id,
                  const char *session_cwd, long wait_ms, store **out, char **err);
int store_open_readonly_in(const store_backend *b, const char *path, store **out, int *schema_version,
                           char **err);

/* ---- the shared store ----------------------------------------------------------------------
 * Where an agent home's stores live when they are not files under it: the environment's
 * LCM_STORE_URL, else the `store` key of <agent home>/lcm.json (a postgresql:// or
 * postgres:// URI). NULL (no URL: the SQLite files, exactly as before) or malloc'd. */
char *store_url(const char *agent_home);
/* 1 when a store's path names a session of a shared store ("postgresql://...#sid") rather
 * than a file. */
int store_path_is_url(const char *path);
/* A store address or connection string as it may be shown: every secret libpq would read
 * from it (a URI's user-part password, a `password=` or `sslpassword=` parameter however
 * its name is percent-encoded, a keyword/value string's password) replaced by "***";
 * anything else as given (malloc'd; NULL on OOM). The one masking of store addresses. */
char *store_url_redact(const char *url);
/* `msg` (a server or driver message about `url`) with each secret of `url`, as written
 * and percent-decoded, replaced by "***" (malloc'd; NULL on OOM). */
char *store_url_scrub(const char *url, const char *msg);
/* This installation's identity (32 hex digits into out): made once at random and kept in
 * <agent home>/lcm/installation-id (0600). A shared store tells homes apart by it, not by
 * host name and path alone, which two machines may share. */
int store_identity(const char *agent_home, char out[33], char **err);
/* Delete the session of a shared store that `path` names (store_path_is_url), every row of
 * it: gc's retirement of a store that is no file. LC_INVALID for a file's path. */
int store_retire_url(const char *path, char **err);
/* Open session `session_id` of `agent_home` read-only, in whichever backend holds it
 * (catalog_open's read). LC_NOTFOUND when there is none; nothing is created. */
int store_open_session_readonly(const char *agent_home, const char *session_id, store **out,
                                int *schema_version, char **err);
/* With a shared store: visit the sessions `agent_home` wrote (every session in the
 * database with `all_homes`), oldest first; *listed = 1. Without one: *listed = 0 and
 * nothing is visited (the catalog reads the folder). */
int store_list_sessions(const char *agent_home, int all_homes, int counts, store_session_visit visit,
                        void *ud, int *listed, char **err);

#endif
