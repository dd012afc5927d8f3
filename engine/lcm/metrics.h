/*
 * metrics.h -- LCM telemetry: one JSON row per event appended to
 * `<agent home>/lcm/metrics.jsonl` (mode 0600), and the readers behind `/lcm report` and
 * `/lcm diagnose`.
 *
 * Why a JSONL file and not a table in the store: the store is a derived index that a user
 * may delete to rebuild, while the metrics record what happened (costs, fallbacks, heal
 * runs) and cannot be re-derived from the session file; one file across sessions is also
 * what scripts and bug reports read without SQLite. Each row is written with one append
 * (O_APPEND, a single write), so concurrent writers interleave by whole lines.
 *
 * Row shape: {"ts": epoch ms, "session": store tag, "kind": KIND, ...fields}.
 */
#ifndef LC_METRICS_H
#define LC_METRICS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define METRICS_FILE "metrics.jsonl"

/* The row kinds (the vocabulary /lcm report and diagnose tally). */
#define METRIC_CONTEXT "context"                 /* one per context decision */
#define METRIC_USAGE "usage"                     /* provider usage per message */
#define METRIC_REQUEST "request"                 /* one per request sent: extends the
                                                  * previous one's bytes or not */
#define METRIC_SUMM_CALL "summarizer-call"
#define METRIC_SUMM_FALLBACK "summarizer-fallback"
#define METRIC_SUMM_MODEL "summarizer-model"
#define METRIC_SUMM_CAPPED "summarizer-capped"
#define METRIC_SUMM_BREAKER "summarizer-breaker"
#define METRIC_RECALL "recall"
#define METRIC_HEAL_START "heal-start"
#define METRIC_HEAL_NODE "heal-node"
#define METRIC_HEAL_COMPLETE "heal-complete"
#define METRIC_FILE "file-externalized"
#define METRIC_BRANCH "branch-change"
#define METRIC_CONFIG_PROBLEM "config-problem"
#define METRIC_MAINT "maintenance"               /* backup, export, repair, gc, migrate */

typedef struct metrics metrics;

/* Open (creating <agent_home>/lcm 0700 and the file 0600) the metrics log for a session.
 * session_id is the tag every row carries. */
int metrics_open(const char *agent_home, const char *session_id, metrics **out, char **err);
void metrics_close(metrics *m);
const char *metrics_path(const metrics *m);

/* Append one row: ts, session, kind, then every member of `fields` (an object or NULL;
 * borrowed; members named ts/session/kind are skipped). */
int metrics_record(metrics *m, const char *kind, const cJSON *fields, char **err);

/* A summ_event_fn (summarize.h) that records the event as a row; ud is a metrics*. */
void metrics_summ_event(void *ud, const char *kind, const cJSON *data);

/* Rows of the file at `path` whose session is `session` (every row when NULL), in file
 * order, as a cJSON array the caller deletes. A missing file is an empty array; a line that
 * is not a JSON object is skipped and counted in *skipped (may be NULL). */
int metrics_load(const char *path, const char *session, cJSON **rows, size_t *skipped,
                 char **err);

/* The `/lcm report` text for a set of rows (one session's): row count, tally by kind,
 * context decisions, summarizer calls with billed tokens, model-fallback, caps, breakers,
 * recall calls, heal runs, externalized files, branch changes, config problems.
 * malloc'd; NULL on OOM. */
char *metrics_report(const cJSON *rows, const char *session);

/* A copy of one row safe for a bug report: numbers, booleans and the strings of the
 * package's own vocabulary (kind, session, model, stage, zone, ...) are kept; any other
 * string is replaced by "[masked N chars]". Caller deletes; NULL on OOM. */
cJSON *metrics_row_sanitized(const cJSON *row);

#endif
