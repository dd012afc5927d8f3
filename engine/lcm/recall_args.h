/*
 * recall_args.h -- the recall tools' arguments (lcm_grep, lcm_describe, lcm_expand_query):
 * their JSON schemas as a host registers them, and the one reading of a call's arguments
 * into recall's and hybrid's options, with the tools' refusals of what no option can be.
 * Owns no state: the options borrow the strings of the arguments they were read from.
 */
#ifndef LC_RECALL_ARGS_H
#define LC_RECALL_ARGS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "hybrid.h"
#include "recall.h"

/* What lcm_grep's query is, for every surface's description (JSON-safe: no quotes). */
#define RECALL_ARGS_QUERY_HELP                                                                              \
    "plain words or a whole question: any word may match, messages with more of them (rarer ones) rank "   \
    "first; punctuation never fails. Narrow with \\\"an exact phrase\\\", a-hyphenated or dotted.name "       \
    "(a phrase), prefix*, -word (exclude), AND / OR in capitals; fts5: before the query passes FTS5 syntax " \
    "as it is"
/* since, until, sort and role: the same on the plugin's tool and MCP (JSON schema members). */
#define RECALL_ARGS_FILTER_SCHEMA                                                                                \
    "\"since\":{\"type\":\"string\",\"description\":\"query: only messages from then on (UTC): 2026-03-01, "        \
    "2026-03-01T14:30, 90m, 2h, 3d, 2w, today, yesterday, this week, last week\"},"                              \
    "\"until\":{\"type\":\"string\",\"description\":\"query: only messages before then (same forms; a day counts "  \
    "whole)\"},"                                                                                                 \
    "\"sort\":{\"type\":\"string\",\"enum\":[\"relevance\",\"newest\",\"oldest\"],\"description\":\"query: order of "  \
    "the hits (default relevance); every hit shows its date and time\"},"                                      \
    "\"role\":{\"type\":\"string\",\"description\":\"query: only messages of user, assistant, tool or thinking "     \
    "(several: user,assistant)\"}"

extern const char recall_args_grep_schema[];
/* lcm_grep's description as a host registers it: plain words work, and how to narrow. */
extern const char recall_args_grep_description[];
extern const char recall_args_describe_schema[];
extern const char recall_args_expand_schema[];

/* A tool call's "arguments" object, or NULL when it has none. */
const cJSON *recall_args_of(const cJSON *call);

/* lcm_grep's arguments as options (o->redact is the caller's), its scope word (NULL:
 * the session) and whether mode is "hybrid". LC_INVALID with the tool's message for an
 * offset that is no count. */
int recall_args_grep(const cJSON *args, recall_grep_opts *o, const char **scope, int *hybrid, char **err);

/* since / until / sort / role of lcm_grep (the plugin's tool, MCP and the CLI read them the
 * same): into o->since_ms, until_ms, sort, roles. LC_INVALID with the tool's sentence for a
 * time, order or role it cannot read. `now_ms` is the clock relative times count from. */
int recall_args_grep_filters(const cJSON *args, double now_ms, recall_grep_opts *o, char **err);
/* One time as since (`until` 0) or until (1): "2026-03-01", "2026-03-01T14:30[:00][Z]",
 * "2026-03-01 14:30", "90m", "2h", "3d", "2w", "today", "yesterday", "this week",
 * "last week", or epoch milliseconds. A day named as `until` counts whole (its end).
 * LC_INVALID when it is none of these. UTC. */
int recall_args_time(const char *s, int until, double now_ms, int64_t *out_ms);

/* mode "hybrid" over the same options: the query's words and meaning with the embeddings
 * of cfg. LC_INVALID with the tool's message when embeddings are not configured or the
 * call gave a pattern or no query (hybrid never silently falls back to words alone). */
int recall_args_hybrid(const recall_grep_opts *g, const lcm_embeddings *cfg, hybrid_opts *out, char **err);

/* lcm_describe's address: id, else summary_id (written into buf), else path; NULL when
 * the call names none. */
const char *recall_args_describe_id(const cJSON *args, char *buf, size_t n);

/* lcm_expand_query's arguments as options (o->redact is the caller's) and the past
 * session it names (NULL: none). LC_INVALID with the tool's message for a max_tokens or
 * char_offset that is no count. */
int recall_args_expand(const cJSON *args, recall_expand_opts *o, const char **session, char **err);

#endif
