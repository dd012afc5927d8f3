/*
 * recall.h -- every way of reading the lossless store: grep (FTS5 query or PCRE2 pattern,
 * paged, bounded), describe (a summary or a file handle), expand (a bounded reader over
 * the originals through a caller-supplied completion function, or verbatim windows when
 * there is no model), and the same over past sessions' stores opened read-only.
 * Owns no state between calls; every text it hands out passes redaction when asked.
 */
#ifndef LC_RECALL_H
#define LC_RECALL_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The bounds, each named in the output that hits it. */
#define RECALL_PAGE 20                   /* hits per page */
#define RECALL_LINE_CHARS 400            /* one grep line */
#define RECALL_PATTERN_CHARS 200000      /* a pattern reads this much of a message */
#define RECALL_PATTERN_MS 1000.0         /* a pattern call's time bound */
#define RECALL_WINDOW_CHARS 20000        /* one reader window */
#define RECALL_DEFAULT_MAX_TOKENS 10000  /* expand budget per call */
#define RECALL_MAX_TURNS 6               /* reader turns per call */
#define RECALL_SESSIONS_MAX 20           /* hybrid: past stores walked */
#define RECALL_SESSIONS_HITS 40          /* hits across past sessions */
#define RECALL_SESSIONS_MS 3000.0        /* cross-session wall-clock bound */
#define RECALL_QUERY_MS 3000.0           /* one store's query: its time bound */
#define RECALL_RANK_MAX 50000            /* query: more matches than this are not ranked */
#define RECALL_INDEX_CATCHUP_MS 1500.0   /* cross-session: the home index's catch-up, within
                                          * RECALL_SESSIONS_MS */

typedef enum recall_scope {
    RECALL_SCOPE_SESSION = 0,   /* this session's store */
    RECALL_SCOPE_SESSIONS,      /* this project's past sessions (same cwd) */
    RECALL_SCOPE_ALL_SESSIONS,  /* every past session this agent home wrote */
    RECALL_SCOPE_FLEET          /* every session in the shared store, whoever wrote it:
                                 * refused unless lcm.json sets "fleetRecall": true */
} recall_scope;

/* "session" | "sessions" | "all_sessions" | "fleet" -> *out. LC_INVALID for any other
 * word (or NULL), with a sentence listing the four. */
int recall_scope_parse(const char *name, recall_scope *out, char **err);
/* The scope's word, as recall_scope_parse reads it. */
const char *recall_scope_name(recall_scope scope);
/* The scope policy: agents do not read each other's history by default. `fleet` is
 * allowed only when <agent_home>/lcm.json sets "fleetRecall": true (read at each call, so
 * a change applies at once); every other scope is. LC_INVALID (refused) with a sentence
 * naming the setting; LC_ERR when lcm.json cannot be read (refused too). */
int recall_scope_check(const char *agent_home, recall_scope scope, char **err);

typedef enum recall_sort { RECALL_SORT_RELEVANCE = 0, RECALL_SORT_NEWEST, RECALL_SORT_OLDEST } recall_sort;

typedef struct recall_grep_opts {
    const char *query;        /* recall_query.h's language; exactly one of query / pattern */
    const char *pattern;      /* PCRE2 regular expression */
    int case_sensitive;       /* pattern only; default insensitive */
    size_t offset;            /* hits to skip (paging) */
    int64_t summary_id;       /* > 0: search inside that node's originals only */
    int include_removed;      /* include entries of abandoned branches, labelled */
    int redact;               /* mask secrets in snippets */
    size_t limit;             /* 0 = RECALL_PAGE */
    double time_budget_ms;    /* pattern bound; 0 = RECALL_PATTERN_MS */
    const char *resume;       /* pattern, one session: "ORDINAL:ID" where a bounded scan
                               * stopped (the output names it); query across sessions:
                               * "sessions:N", the first N sessions skipped; NULL = from the start */
    int64_t since_ms, until_ms; /* query: the message's time in [since, until); 0 = open */
    const char *role_words;   /* query: user, assistant, tool, thinking, comma-separated
                               * (recall_args_grep_filters checks them); NULL = all */
    recall_sort sort;         /* query: relevance (default), newest or oldest first */
} recall_grep_opts;

typedef struct recall_hit {
    char *entry_id;
    char *role;
    int64_t ordinal;
    int removed;
    char *snippet;            /* whitespace collapsed, <= RECALL_LINE_CHARS code points */
    int clipped;              /* the line was cut at RECALL_LINE_CHARS */
    int thinking;             /* matched only the message's thinking: the snippet is from it */
    int tool_words;           /* what a tool printed, or a call with no prose (its arguments) */
    int64_t summary_id;       /* covering node the model sees (top of the DAG), 0 none */
    int64_t leaf_id;          /* the leaf that covers the entry, 0 none */
    char *session_id;         /* cross-session hits: where it came from */
    char *session_date;       /* YYYY-MM-DD */
    char *session_cwd;
    int64_t created;          /* the message's time, ms (0 unknown) */
    double score;             /* query, relevance: the rank's score (merging stores) */
    double *rank_in;          /* query, relevance: the score's inputs (store_search_row) */
    int64_t prompt_ordinal;   /* query, relevance: the user message its turn answers */
    int has_prompt;           /*   (store_search_row); 0: none known */
    size_t rank_n;
    /* cross-session, the home index's: a candidate not yet read from its store (no
     * entry_id, snippet or labels), its store's place in the listing and its row id */
    int pending;
    size_t store_at;
    int64_t row_id;
} recall_hit;

typedef struct recall_result {
    recall_hit *hits;
    size_t n;
    int64_t total;            /* query mode: total hits; -1 when not computed (pattern) */
    int more;                 /* more hits exist past this page */
    int timed_out;            /* stopped at the time bound */
    size_t scanned;           /* pattern: messages read */
    size_t matched;           /* pattern: matches seen, the skipped (offset) ones included */
    size_t long_unindexed;    /* query: messages longer than the index reach */
    int newest_first;         /* query: total > RECALL_RANK_MAX, so the page is newest
                                 stored first instead of ranked by bm25 */
    int64_t rank_skipped_total; /* cross-session: the largest such store's match count */
    size_t pattern_clipped;   /* pattern: messages read only to RECALL_PATTERN_CHARS */
    /* pattern: messages whose match a PCRE2 limit left undecided (never "no match") */
    size_t limit_hits;
    char *limit_entry;        /* the first such message's entry id */
    char *limit_session;      /* cross-session: the store it is in */
    int limit_rc;             /* its PCRE2 error code (rx_limit_name) */
    char *stop_entry;         /* pattern: the message the time bound stopped inside */
    int64_t last_ordinal, last_id; /* pattern: the last message read whole (the resume point) */
    int resumed;              /* pattern: the scan started at o->resume */
    /* cross-session accounting */
    size_t stores_searched;
    size_t stores_older;      /* older-generation stores counted, not searched */
    size_t stores_skipped;    /* other project / unreadable */
    int stop_stores, stop_hits, stop_time;
    int shared;               /* the stores searched are a shared store's (catalog_list) */
    size_t stores_total;      /* cross-session: stores in the scope's list */
    size_t stores_from;       /* cross-session: the first store searched (resume "sessions:N") */
    int64_t unreached_before; /* cross-session, stopped: the newest store not searched was created
                               * at or before this (ms) */
    /* query: what the language did with the words */
    size_t words_dropped;     /* past RECALL_QUERY_TERMS */
    size_t stopwords;         /* left out as stopwords */
    int no_words;             /* the query holds no word to search */
    int raw;                  /* fts5: syntax */
    /* cross-session query: answered by the home index (store_index_*) */
    int home_index;
    size_t index_stale;       /* sessions not yet in it, searched one by one */
    char *index_note;         /* why the home index was not used (it failed), NULL otherwise */
} recall_result;

int recall_grep(store *s, const recall_grep_opts *o, recall_result *out, char **err);
/* A new zeroed hit at the end of r->hits (recall.c and recall_sessions.c fill them); NULL
 * when out of memory, r unchanged. */
recall_hit *recall_hit_push(recall_result *r);
/* One message of `s` by row id as a query's hit shows it (the home index's candidate read
 * from its store): snippet at the query's first word, covering summaries. `thinking`: the
 * match was in its thinking alone. LC_NOTFOUND when the row is gone. Fills *h (its
 * session labels left as they are). */
int recall_hit_read(store *s, const recall_grep_opts *o, int64_t id, int thinking, recall_hit *h, char **err);
/* The store scope a query of `o` reads (one store's, or the home index's): removed entries,
 * since/until, the role words as the stored roles (kept in rolebuf, which must outlive the
 * scope) and the order (rank, newest, oldest). */
store_search_scope recall_query_scope(const recall_grep_opts *o, char *rolebuf, size_t n);
/* Past sessions' stores under <agent_home>/lcm/ (current excluded); with
 * RECALL_SCOPE_FLEET every session of the store (catalog_filter.all_homes; the caller has
 * passed recall_scope_check). Hits are paged for
 * real across stores: the stores in a stable order (newest created first, then by file
 * name; a store's creation date never changes, unlike its mtime), each store's hits in
 * its own order, `offset` skipping into that sequence, RECALL_SESSIONS_HITS a page.
 * Query mode counts every store walked, so `total` is the number of hits in them. */
int recall_grep_sessions(const char *agent_home, const char *current_session_id,
                         const char *cwd, recall_scope scope, const recall_grep_opts *o,
                         recall_result *out, char **err);
/* The tool's text for a result (malloc'd): header with totals, one line per hit, and
 * every bound the call hit. */
char *recall_grep_format(const recall_grep_opts *o, recall_scope scope, const recall_result *r);
void recall_result_free(recall_result *r);
/* The line a hit shows (malloc'd): from a little before byte `at`, whitespace collapsed,
 * clipped at RECALL_LINE_CHARS (*clipped), masked when `redact`. Hybrid recall's lines. */
char *recall_line(const char *text, size_t len, size_t at, int redact, int *clipped);

/* Describe "#12" / "12" (a summary) or a file handle by entry id, path or content id. */
int recall_describe(store *s, const char *id, int redact, char **out, char **err);

/* The completion service: request_json is {"systemPrompt","messages":[AgentMessage],
 * "maxTokens"}; *out_json is the assistant AgentMessage (or plain text), malloc'd. A
 * non-zero return is a failure (*err malloc'd). */
typedef int (*recall_complete_fn)(void *ud, const char *request_json, char **out_json,
                                  char **err);

typedef struct recall_expand_opts {
    int64_t summary_id;       /* address: a node's originals */
    const char *entry_id;     /* address: one message */
    const char *question;     /* what to answer (also the address when none given) */
    size_t max_tokens;        /* 0 = RECALL_DEFAULT_MAX_TOKENS */
    size_t char_offset;       /* entry_id only: start reading here (paging a message) */
    int redact;
    const char *past_label;   /* non-NULL: findings are tagged as a past session's history */
} recall_expand_opts;

int recall_expand(store *s, const recall_expand_opts *o, recall_complete_fn complete,
                  void *ud, char **out, char **err);
/* The same on a past session's store (opened read-only, never migrated). */
int recall_expand_session(const char *agent_home, const char *session_id,
                          const recall_expand_opts *o, recall_complete_fn complete, void *ud,
                          char **out, char **err);

#endif
