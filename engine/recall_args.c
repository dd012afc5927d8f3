/*
 * recall_args.c -- the recall tools' schemas and the reading of their arguments
 * (recall_args.h).
 */
#include "recall_args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed.h"
#include "util.h"

const char recall_args_grep_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"query\":{\"type\":\"string\",\"description\":\"FTS5 full-text query: words, \\\"quoted phrases\\\", AND/OR, prefix*\"},"
    "\"pattern\":{\"type\":\"string\",\"description\":\"regular expression (PCRE2) over the full text\"},"
    "\"case_sensitive\":{\"type\":\"boolean\"},"
    "\"offset\":{\"type\":\"integer\",\"description\":\"hits to skip; pages are 20 hits\"},"
    "\"summary_id\":{\"type\":\"integer\",\"description\":\"search inside one summary's originals\"},"
    "\"include_removed\":{\"type\":\"boolean\",\"description\":\"include abandoned branches, labelled [removed]\"},"
    "\"resume\":{\"type\":\"string\",\"description\":\"pattern: continue a scan that stopped at its time bound, from the point its output names\"},"
    "\"scope\":{\"type\":\"string\",\"enum\":[\"session\",\"sessions\",\"all_sessions\",\"fleet\"],"
    "\"description\":\"session (default), sessions (this project's past sessions), all_sessions (every session of this agent home), "
    "fleet (every session in the shared store; only when lcm.json sets fleetRecall)\"},"
    "\"mode\":{\"type\":\"string\",\"enum\":[\"fts\",\"hybrid\"],\"description\":\"hybrid: the query's words and its "
    "meaning (embeddings configured in lcm.json) fused by reciprocal rank; finds paraphrases words miss\"}}}";
const char recall_args_describe_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"id\":{\"type\":\"string\",\"description\":\"a summary id (#12) or a file handle's entry id, path or content id\"},"
    "\"summary_id\":{\"type\":\"integer\"}}}";
const char recall_args_expand_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"question\":{\"type\":\"string\",\"description\":\"what to find in the originals\"},"
    "\"summary_id\":{\"type\":\"integer\"},"
    "\"entry_id\":{\"type\":\"string\"},"
    "\"session\":{\"type\":\"string\",\"description\":\"a past session id from an lcm_grep scope hit\"},"
    "\"max_tokens\":{\"type\":\"integer\",\"description\":\"retrieval budget, default 10000\"},"
    "\"char_offset\":{\"type\":\"integer\",\"description\":\"with entry_id: continue reading at this character\"}}}";

const cJSON *recall_args_of(const cJSON *call)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(call, "arguments");
    return cJSON_IsObject(a) ? a : NULL;
}

static const char *recall_args_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static int recall_args_true(const cJSON *o, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* A count argument (offset, max_tokens, char_offset): 0 when absent or negative, -1 when
 * it is no number a count can be (2^63, 1e300, NaN): refused by the caller, never wrapped. */
#define RECALL_ARGS_COUNT_MAX 1e9
static double recall_args_count(const cJSON *o, const char *k)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, k);
    double v = cJSON_IsNumber(n) ? n->valuedouble : 0;
    if (!isfinite(v) || v > RECALL_ARGS_COUNT_MAX) return -1;
    return v > 0 ? floor(v) : 0;
}

/* A summary id given as 12, "12" or "#12"; 0 when absent, -1 when it is no id (refused). */
static int64_t recall_args_summary_id(const cJSON *o)
{
    int64_t v = 0;
    int rc = lc_json_int(cJSON_GetObjectItemCaseSensitive(o, "summary_id"), 1, LC_JSON_INT_MAX, &v);
    return rc == LC_NOTFOUND ? 0 : rc == LC_OK ? v : -1;
}

#define RECALL_ARGS_BAD_SUMMARY_ID "summary_id is an integer from 1 to 9007199254740991"

int recall_args_grep(const cJSON *args, recall_grep_opts *o, const char **scope, int *hybrid, char **err)
{
    const char *mode = recall_args_str(args, "mode");
    *o = (recall_grep_opts){.query = recall_args_str(args, "query"),
                            .pattern = recall_args_str(args, "pattern"),
                            .case_sensitive = recall_args_true(args, "case_sensitive"),
                            .include_removed = recall_args_true(args, "include_removed"),
                            .resume = recall_args_str(args, "resume"),
                            .summary_id = recall_args_summary_id(args)};
    *scope = recall_args_str(args, "scope");
    *hybrid = mode && !strcmp(mode, "hybrid");
    if (o->summary_id < 0) return lc_errf(err, LC_INVALID, "lcm_grep: " RECALL_ARGS_BAD_SUMMARY_ID);
    double offset = recall_args_count(args, "offset");
    if (offset < 0) return lc_errf(err, LC_INVALID, "lcm_grep: offset is an integer from 0 to 1000000000");
    o->offset = (size_t)offset;
    return LC_OK;
}

int recall_args_hybrid(const recall_grep_opts *g, const lcm_embeddings *cfg, hybrid_opts *out, char **err)
{
    if (!cfg || !cfg->enabled) return lc_errf(err, LC_INVALID, "lcm_grep: %s", embed_not_configured);
    if (!g->query || g->pattern)
        return lc_errf(err, LC_INVALID, "lcm_grep: mode hybrid takes a query (words or a question), not a pattern");
    *out = (hybrid_opts){.query = g->query, .cfg = cfg, .offset = g->offset, .include_removed = g->include_removed,
                         .redact = g->redact};
    return LC_OK;
}

const char *recall_args_describe_id(const cJSON *args, char *buf, size_t n)
{
    const char *id = recall_args_str(args, "id");
    if (!id && recall_args_summary_id(args) > 0) {
        snprintf(buf, n, "%lld", (long long)recall_args_summary_id(args));
        id = buf;
    }
    return id ? id : recall_args_str(args, "path");
}

int recall_args_expand(const cJSON *args, recall_expand_opts *o, const char **session, char **err)
{
    double max_tokens = recall_args_count(args, "max_tokens"), char_offset = recall_args_count(args, "char_offset");
    *o = (recall_expand_opts){.summary_id = recall_args_summary_id(args),
                              .entry_id = recall_args_str(args, "entry_id"),
                              .question = recall_args_str(args, "question")};
    if (!o->question) o->question = recall_args_str(args, "query");
    *session = recall_args_str(args, "session");
    if (o->summary_id < 0) return lc_errf(err, LC_INVALID, "lcm_expand_query: " RECALL_ARGS_BAD_SUMMARY_ID);
    if (max_tokens < 0 || char_offset < 0)
        return lc_errf(err, LC_INVALID, "lcm_expand_query: max_tokens and char_offset are integers from 0 "
                                        "to 1000000000");
    o->max_tokens = (size_t)max_tokens;
    o->char_offset = (size_t)char_offset;
    return LC_OK;
}
