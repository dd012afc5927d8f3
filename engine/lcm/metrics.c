/*
 * metrics.c -- the telemetry log (metrics.h): append rows to <home>/lcm/metrics.jsonl,
 * read one session's rows back, summarize them for /lcm report and sanitize them for
 * /lcm diagnose. Owns the log's file descriptor.
 */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

struct metrics {
    int fd;
    char *path;
    char *session;
};

int metrics_open(const char *agent_home, const char *session_id, metrics **out, char **err)
{
    char *dir = NULL;
    metrics *m = NULL;
    int rc = LC_OK;
    *out = NULL;
    if (!agent_home || !*agent_home) {
        rc = lc_errf(err, LC_INVALID, "metrics: no agent home");
        goto done;
    }
    if (!(m = calloc(1, sizeof *m)) || !(dir = lc_asprintf("%s/lcm", agent_home)) ||
        !(m->path = lc_asprintf("%s/%s", dir, METRICS_FILE)) ||
        !(m->session = lc_strdup(session_id ? session_id : "-"))) {
        rc = lc_errf(err, LC_NOMEM, "metrics: out of memory");
        goto done;
    }
    m->fd = -1;
    if ((rc = lc_mkdir_p(dir, 0700, err)) != LC_OK) goto done;
    m->fd = open(m->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (m->fd < 0) {
        rc = lc_errf(err, LC_ERR, "metrics: cannot open %s: %s", m->path, strerror(errno));
        goto done;
    }
    *out = m;
    m = NULL;
done:
    metrics_close(m);
    free(dir);
    return rc;
}

void metrics_close(metrics *m)
{
    if (!m) return;
    if (m->fd >= 0) close(m->fd);
    LC_FREE(m->path, m->session, m);
}

const char *metrics_path(const metrics *m) { return m ? m->path : NULL; }

int metrics_record(metrics *m, const char *kind, const cJSON *fields, char **err)
{
    cJSON *row = cJSON_CreateObject();
    char *line = NULL;
    int rc = LC_OK;
    if (!m || !kind) {
        rc = lc_errf(err, LC_INVALID, "metrics: no log or kind");
        goto done;
    }
    if (!row || !cJSON_AddNumberToObject(row, "ts", (double)lc_epoch_ms()) ||
        !cJSON_AddStringToObject(row, "session", m->session) ||
        !cJSON_AddStringToObject(row, "kind", kind)) {
        rc = lc_errf(err, LC_NOMEM, "metrics: out of memory");
        goto done;
    }
    const cJSON *f;
    if (cJSON_IsObject(fields)) {
        cJSON_ArrayForEach(f, fields)
        {
            if (!f->string || !strcmp(f->string, "ts") || !strcmp(f->string, "session") ||
                !strcmp(f->string, "kind"))
                continue;
            cJSON *dup = cJSON_Duplicate(f, 1);
            if (!dup || !cJSON_AddItemToObject(row, f->string, dup)) {
                cJSON_Delete(dup);
                rc = lc_errf(err, LC_NOMEM, "metrics: out of memory");
                goto done;
            }
        }
    }
    if (!(line = cJSON_PrintUnformatted(row))) {
        rc = lc_errf(err, LC_NOMEM, "metrics: out of memory");
        goto done;
    }
    size_t n = strlen(line);
    line[n] = '\n'; /* replaces the NUL: the row goes out in one write */
    ssize_t w = write(m->fd, line, n + 1);
    if (w != (ssize_t)(n + 1))
        rc = lc_errf(err, LC_ERR, "metrics: append to %s failed: %s", m->path,
                     w < 0 ? strerror(errno) : "short write");
done:
    cJSON_free(line);
    cJSON_Delete(row);
    return rc;
}

void metrics_summ_event(void *ud, const char *kind, const cJSON *data)
{
    /* Telemetry never fails the summarizer: a lost row is better than a lost summary. */
    char *e = NULL;
    metrics_record(ud, kind, data, &e);
    free(e);
}

int metrics_load(const char *path, const char *session, cJSON **rows, size_t *skipped,
                 char **err)
{
    char *text = NULL;
    size_t len = 0, bad = 0;
    int rc;
    *rows = cJSON_CreateArray();
    if (!*rows) return lc_errf(err, LC_NOMEM, "metrics: out of memory");
    rc = lc_read_file(path, &text, &len, err);
    if (rc == LC_NOTFOUND) {
        if (err) {
            free(*err);
            *err = NULL;
        }
        rc = LC_OK;
        goto done;
    }
    if (rc != LC_OK) goto done;
    for (char *p = text; p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        char *end = nl ? nl : text + len;
        if (end > p) {
            cJSON *row = cJSON_ParseWithLength(p, (size_t)(end - p));
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(row, "session");
            if (!cJSON_IsObject(row)) {
                bad++;
                cJSON_Delete(row);
            } else if (session && !(cJSON_IsString(s) && !strcmp(s->valuestring, session))) {
                cJSON_Delete(row);
            } else {
                cJSON_AddItemToArray(*rows, row);
            }
        }
        p = end + 1;
    }
done:
    if (skipped) *skipped = bad;
    free(text);
    if (rc != LC_OK) {
        cJSON_Delete(*rows);
        *rows = NULL;
    }
    return rc;
}

/* ---- report --------------------------------------------------------------------------- */

typedef struct metrics_tally {
    const char *kind;
    size_t n;
} metrics_tally;

static const char *metrics_str(const cJSON *row, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double metrics_num(const cJSON *row, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

char *metrics_report(const cJSON *rows, const char *session)
{
    sbuf b = {0};
    metrics_tally *t = NULL;
    size_t nt = 0, total = 0;
    size_t n_ctx = 0, n_calls = 0, n_fallback = 0, n_capped = 0, n_breaker = 0, n_model = 0;
    size_t n_recall = 0, n_heal_start = 0, n_heal_done = 0, n_heal_node = 0, n_files = 0;
    size_t n_branch = 0, n_config = 0, n_usage = 0, n_req = 0, n_compared = 0, n_extends = 0, n_raw = 0, n_raw_ext = 0;
    double billed_in = 0, billed_out = 0, usage_in = 0, usage_cached = 0, usage_cost = 0, usage_written = 0;
    const cJSON *last_ctx = NULL, *row;
    int cap_rows = cJSON_GetArraySize(rows);
    if (cap_rows > 0 && !(t = calloc((size_t)cap_rows, sizeof *t))) return NULL;
    cJSON_ArrayForEach(row, rows)
    {
        const char *k = metrics_str(row, "kind");
        if (!k) continue;
        total++;
        size_t i = 0;
        while (i < nt && strcmp(t[i].kind, k) != 0) i++;
        if (i == nt) t[nt++].kind = k;
        t[i].n++;
        if (!strcmp(k, METRIC_CONTEXT)) {
            n_ctx++;
            last_ctx = row;
        } else if (!strcmp(k, METRIC_SUMM_CALL)) {
            n_calls++;
            billed_in += metrics_num(row, "inputTokens");
            billed_out += metrics_num(row, "outputTokens");
        } else if (!strcmp(k, METRIC_SUMM_FALLBACK)) n_fallback++;
        else if (!strcmp(k, METRIC_SUMM_CAPPED)) n_capped++;
        else if (!strcmp(k, METRIC_SUMM_BREAKER)) n_breaker++;
        else if (!strcmp(k, METRIC_SUMM_MODEL)) n_model++;
        else if (!strcmp(k, METRIC_RECALL)) n_recall++;
        else if (!strcmp(k, METRIC_HEAL_START)) n_heal_start++;
        else if (!strcmp(k, METRIC_HEAL_NODE)) n_heal_node++;
        else if (!strcmp(k, METRIC_HEAL_COMPLETE)) n_heal_done++;
        else if (!strcmp(k, METRIC_FILE)) n_files++;
        else if (!strcmp(k, METRIC_BRANCH)) n_branch++;
        else if (!strcmp(k, METRIC_CONFIG_PROBLEM)) n_config++;
        else if (!strcmp(k, METRIC_USAGE)) {
            n_usage++;
            usage_in += metrics_num(row, "input");
            usage_cached += metrics_num(row, "cacheRead");
            usage_written += metrics_num(row, "cacheWrite");
            usage_cost += metrics_num(row, "cost");
        } else if (!strcmp(k, METRIC_REQUEST)) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(row, "extends");
            n_req++;
            n_compared += cJSON_IsBool(x);
            n_extends += cJSON_IsTrue(x);
            const cJSON *rx = cJSON_GetObjectItemCaseSensitive(row, "rawExtends");
            n_raw += cJSON_IsBool(rx);
            n_raw_ext += cJSON_IsTrue(rx);
        }
    }
    sb_printf(&b, "LCM report for session %s: %zu metric rows\n", session ? session : "?", total);
    sb_printf(&b, "context decisions: %zu", n_ctx);
    if (last_ctx) {
        const char *zone = metrics_str(last_ctx, "zone"), *dec = metrics_str(last_ctx, "decision");
        sb_printf(&b, " (last: %s%s%s)", dec ? dec : "?", zone ? " in zone " : "", zone ? zone : "");
    }
    /* The usage rows' input leaves the cached tokens out (the ABI's shape). */
    sb_printf(&b, "\nprovider usage: %zu messages, %.0f input tokens (%.0f cached), cost %.4f\n",
              n_usage, usage_in + usage_cached + usage_written, usage_cached, usage_cost);
    sb_printf(&b, "prompt cache: %zu of %zu requests extended the previous request byte for byte", n_extends,
              n_compared);
    if (n_compared) sb_printf(&b, " (%.1f%%)", 100.0 * (double)n_extends / (double)n_compared);
    /* The same session without LCM: the host's input as it came, whose only changes are
     * appends unless the host compacts or moves in its tree. */
    if (n_raw) sb_printf(&b, "; without LCM %zu of %zu (%.1f%%)", n_raw_ext, n_raw, 100.0 * (double)n_raw_ext / (double)n_raw);
    if (usage_in + usage_cached + usage_written > 0)
        sb_printf(&b, "; the provider served %.1f%% of input tokens from its cache",
                  100.0 * usage_cached / (usage_in + usage_cached + usage_written));
    else
        sb_puts(&b, "; the provider reported no cached tokens");
    sb_putc(&b, '\n');
    sb_printf(&b, "summarizer calls: %zu, billed %.0f in / %.0f out tokens\n", n_calls, billed_in,
              billed_out);
    sb_printf(&b, "model-fallback: %zu\n", n_fallback);
    sb_printf(&b, "summarizer-capped: %zu, breaker opened: %zu, unknown models: %zu\n", n_capped,
              n_breaker, n_model);
    sb_printf(&b, "recall calls: %zu\n", n_recall);
    sb_printf(&b, "heal runs: %zu started, %zu completed, %zu nodes attempted\n", n_heal_start,
              n_heal_done, n_heal_node);
    sb_printf(&b, "files externalized: %zu, branch changes: %zu, config problems: %zu\n", n_files,
              n_branch, n_config);
    sb_puts(&b, "by kind:");
    if (nt == 0) sb_puts(&b, " none");
    for (size_t i = 0; i < nt; i++) sb_printf(&b, "%s %s=%zu", i ? "," : "", t[i].kind, t[i].n);
    free(t);
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

/* ---- sanitizing ------------------------------------------------------------------------ */

/* Keys whose values are the package's own vocabulary (ids, names, tags), never free text. */
static const char *const metrics_vocab_keys[] = {
    "kind", "session", "model", "stage", "zone", "decision", "source", "reason", "provider",
    "entry", "level", "status", "regime", "action", "subcommand", "key", "mode", "tool",
    "entryId", "firstKeptEntryId", "cut", "result", "scope",
};

static int metrics_vocab_value(const char *s)
{
    size_t n = strlen(s);
    /* One token of ids and names: anything with a space is a sentence, a leading slash a
     * path, and a long value may be a key. */
    if (n > 80 || s[0] == '/' || s[0] == '~') return 0;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '@' || c == '+'))
            return 0;
    }
    return 1;
}

static int metrics_vocab_key(const char *k)
{
    for (size_t i = 0; i < sizeof metrics_vocab_keys / sizeof metrics_vocab_keys[0]; i++)
        if (!strcmp(k, metrics_vocab_keys[i])) return 1;
    return 0;
}

static cJSON *metrics_sanitize_value(const char *key, const cJSON *v)
{
    if (cJSON_IsNumber(v) || cJSON_IsBool(v) || cJSON_IsNull(v)) return cJSON_Duplicate(v, 0);
    if (cJSON_IsString(v)) {
        if (key && metrics_vocab_key(key) && metrics_vocab_value(v->valuestring))
            return cJSON_CreateString(v->valuestring);
        char buf[48];
        snprintf(buf, sizeof buf, "[masked %zu chars]", strlen(v->valuestring));
        return cJSON_CreateString(buf);
    }
    cJSON *out = cJSON_IsArray(v) ? cJSON_CreateArray() : cJSON_CreateObject();
    const cJSON *c;
    if (!out) return NULL;
    cJSON_ArrayForEach(c, v)
    {
        cJSON *d = metrics_sanitize_value(cJSON_IsArray(v) ? key : c->string, c);
        if (!d) {
            cJSON_Delete(out);
            return NULL;
        }
        if (cJSON_IsArray(v)) cJSON_AddItemToArray(out, d);
        else cJSON_AddItemToObject(out, c->string, d);
    }
    return out;
}

cJSON *metrics_row_sanitized(const cJSON *row)
{
    return metrics_sanitize_value(NULL, row);
}
