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

extern const char recall_args_grep_schema[];
extern const char recall_args_describe_schema[];
extern const char recall_args_expand_schema[];

/* A tool call's "arguments" object, or NULL when it has none. */
const cJSON *recall_args_of(const cJSON *call);

/* lcm_grep's arguments as options (o->redact is the caller's), its scope word (NULL:
 * the session) and whether mode is "hybrid". LC_INVALID with the tool's message for an
 * offset that is no count. */
int recall_args_grep(const cJSON *args, recall_grep_opts *o, const char **scope, int *hybrid, char **err);

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
