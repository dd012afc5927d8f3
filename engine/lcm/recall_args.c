/*
 * recall_args.c -- the recall tools' schemas and the reading of their arguments
 * (recall_args.h).
 */
#include "recall_args.h"

#include <math.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "embed.h"
#include "util.h"

const char recall_args_grep_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"query\":{\"type\":\"string\",\"description\":\"" RECALL_ARGS_QUERY_HELP "\"},"
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
    "meaning (embeddings configured in lcm.json) fused by reciprocal rank; finds paraphrases words miss\"},"
    RECALL_ARGS_FILTER_SCHEMA "}}";
const char recall_args_grep_description[] =
    "Search all stored history (also compacted-out and, with scope, past sessions): query (plain words or a "
    "whole question; punctuation is fine; more of its words rank first) or pattern (regex). Narrow with "
    "\"a phrase\", -word, AND, role (user/assistant/tool/thinking), since/until (2h, 3d, yesterday, last week, "
    "2026-03-01) and sort (newest/oldest); every hit shows its date and time. 20 hits a page.";
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
    return recall_args_grep_filters(args, (double)lc_epoch_ms(), o, err);
}

#define RECALL_ARGS_DAY_MS 86400000LL

/* 00:00 UTC of the day holding ms. */
static int64_t recall_args_day(int64_t ms)
{
    int64_t d = ms / RECALL_ARGS_DAY_MS;
    if (ms < 0 && ms % RECALL_ARGS_DAY_MS) d--;
    return d * RECALL_ARGS_DAY_MS;
}

int recall_args_time(const char *s, int until, double now_ms, int64_t *out_ms)
{
    int64_t now = (int64_t)now_ms, today = recall_args_day(now);
    /* 1970-01-01 was a Thursday: Monday 00:00 of this week. */
    int64_t wday = ((today / RECALL_ARGS_DAY_MS) + 3) % 7, monday = today - wday * RECALL_ARGS_DAY_MS;
    int y, mo, d, h = 0, mi = 0, se = 0, used = 0;
    char unit = 0, tail = 0;
    double n = 0;
    if (!s) return LC_INVALID;
    while (*s == ' ') s++;
    if (!strcasecmp(s, "now")) {
        *out_ms = now;
    } else if (!strcasecmp(s, "today")) {
        *out_ms = until ? today + RECALL_ARGS_DAY_MS : today;
    } else if (!strcasecmp(s, "yesterday")) {
        *out_ms = until ? today : today - RECALL_ARGS_DAY_MS;
    } else if (!strcasecmp(s, "this week")) {
        *out_ms = until ? monday + 7 * RECALL_ARGS_DAY_MS : monday;
    } else if (!strcasecmp(s, "last week")) {
        *out_ms = until ? monday : monday - 7 * RECALL_ARGS_DAY_MS;
    } else if (sscanf(s, "%d-%d-%d%n", &y, &mo, &d, &used) == 3 && y >= 1970 && y < 10000 && mo >= 1 &&
               mo <= 12 && d >= 1 && d <= 31) {
        const char *t = s + used;
        int timed = 0;
        if (*t == 'T' || *t == ' ') {
            int u2 = 0;
            if (sscanf(t + 1, "%d:%d%n", &h, &mi, &u2) != 2 || h < 0 || h > 23 || mi < 0 || mi > 59)
                return LC_INVALID;
            t += 1 + u2;
            if (*t == ':') {
                int u3 = 0;
                if (sscanf(t + 1, "%d%n", &se, &u3) != 1 || se < 0 || se > 60) return LC_INVALID;
                t += 1 + u3;
            }
            if (*t == 'Z') t++;
            timed = 1;
        }
        if (*t) return LC_INVALID;
        struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = se};
        int64_t ms = (int64_t)timegm(&tm) * 1000;
        *out_ms = until && !timed ? ms + RECALL_ARGS_DAY_MS : ms;
    } else if (sscanf(s, "%lf%c%c", &n, &unit, &tail) == 2 && n >= 0 && n < 1e6 &&
               (unit == 'm' || unit == 'h' || unit == 'd' || unit == 'w')) {
        double span = unit == 'm' ? 60e3 : unit == 'h' ? 3600e3 : unit == 'd' ? 86400e3 : 7 * 86400e3;
        *out_ms = now - (int64_t)(n * span);
    } else if (sscanf(s, "%lf%c", &n, &tail) == 1 && n >= 1e11 && n < 1e14) {
        *out_ms = (int64_t)n;
    } else {
        return LC_INVALID;
    }
    return LC_OK;
}

static const char *const recall_args_role_words[] = {"user", "assistant", "tool", "thinking"};

int recall_args_grep_filters(const cJSON *args, double now_ms, recall_grep_opts *o, char **err)
{
    const char *since = recall_args_str(args, "since"), *until = recall_args_str(args, "until");
    const char *sort = recall_args_str(args, "sort"), *role = recall_args_str(args, "role");
    if (since && recall_args_time(since, 0, now_ms, &o->since_ms) != LC_OK)
        return lc_errf(err, LC_INVALID, "lcm_grep: since \"%.60s\" is no time: write 2026-03-01, 2026-03-01T14:30, "
                       "90m, 2h, 3d, 2w, today, yesterday, this week or last week (UTC)", since);
    if (until && recall_args_time(until, 1, now_ms, &o->until_ms) != LC_OK)
        return lc_errf(err, LC_INVALID, "lcm_grep: until \"%.60s\" is no time: write 2026-03-01, 2026-03-01T14:30, "
                       "90m, 2h, 3d, 2w, today, yesterday, this week or last week (UTC)", until);
    if (o->since_ms > 0 && o->until_ms > 0 && o->until_ms <= o->since_ms)
        return lc_errf(err, LC_INVALID, "lcm_grep: until is not after since");
    if (!sort || !strcmp(sort, "relevance")) o->sort = RECALL_SORT_RELEVANCE;
    else if (!strcmp(sort, "newest")) o->sort = RECALL_SORT_NEWEST;
    else if (!strcmp(sort, "oldest")) o->sort = RECALL_SORT_OLDEST;
    else return lc_errf(err, LC_INVALID, "lcm_grep: sort is relevance (default), newest or oldest");
    if (role) {
        /* Each word of a comma list must be one of the four. */
        const char *p = role;
        while (*p) {
            size_t n = strcspn(p, ", ");
            int known = n == 0;
            for (size_t i = 0; !known && i < sizeof recall_args_role_words / sizeof *recall_args_role_words; i++)
                known = strlen(recall_args_role_words[i]) == n && !strncmp(p, recall_args_role_words[i], n);
            if (!known)
                return lc_errf(err, LC_INVALID, "lcm_grep: role is user, assistant, tool or thinking (several: "
                               "\"user,assistant\"); not \"%.40s\"", role);
            p += n;
            while (*p == ',' || *p == ' ') p++;
        }
        o->role_words = role;
    }
    return LC_OK;
}

int recall_args_hybrid(const recall_grep_opts *g, const lcm_embeddings *cfg, hybrid_opts *out, char **err)
{
    if (!cfg || !cfg->enabled) return lc_errf(err, LC_INVALID, "lcm_grep: %s", embed_not_configured);
    if (!g->query || g->pattern)
        return lc_errf(err, LC_INVALID, "lcm_grep: mode hybrid takes a query (words or a question), not a pattern");
    if (g->since_ms || g->until_ms || g->role_words || g->sort != RECALL_SORT_RELEVANCE)
        return lc_errf(err, LC_INVALID, "lcm_grep: mode hybrid does not take since, until, role or sort yet; "
                                        "mode fts (the default) does");
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
