/*
 * maint_diag.c -- the diagnose block (maint_diag.h): one bounded text a user can paste into
 * a bug report. Owns what goes in (versions, platform, the store's facts from maint_doctor,
 * the effective config, recent metric rows) and what never does (bodies, summaries,
 * queries, paths outside home, secrets). No host, no plugin.
 */
#include "maint_diag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "maint.h"
#include "metrics.h"
#include "redact.h"
#include "util.h"

char *maint_diag_tilde(const char *home, const char *path)
{
    if (!path) return lc_strdup("-");
    if (!home) home = getenv("HOME");
    size_t hl = home ? strlen(home) : 0;
    while (hl > 1 && home[hl - 1] == '/') hl--;
    if (hl > 1 && !strncmp(path, home, hl) && (path[hl] == '/' || path[hl] == '\0'))
        return lc_asprintf("~%s", path + hl);
    if (path[0] == '/') return lc_strdup("[path]");
    return lc_strdup(path);
}

/* Replace every occurrence of the home prefix in `s` by `~`, then mask secrets: every
 * rule (redact), or only the credential shapes for text in this package's own vocabulary
 * (config keys and metric fields such as "summaryTokens":1200 are not secrets, but a key
 * pasted into a config value or carried by a provider error still must not leave). The
 * block is meant to be pasted in public, so redactSecrets: false does not apply here. */
static char *maint_scrub_as(const char *home, const char *s, int redact)
{
    sbuf b = {0};
    size_t hl = home ? strlen(home) : 0;
    while (hl > 1 && home[hl - 1] == '/') hl--;
    for (const char *p = s; *p;) {
        if (hl > 1 && !strncmp(p, home, hl)) {
            sb_putc(&b, '~');
            p += hl;
        } else {
            sb_putc(&b, *p++);
        }
    }
    char *t = b.oom ? NULL : sb_detach(&b);
    sb_free(&b);
    if (!t) return t;
    char *r = redact ? redact_text(t, strlen(t), 1, NULL) : redact_keys(t, strlen(t), NULL);
    free(t);
    return r;
}

static char *maint_scrub(const char *home, const char *s) { return maint_scrub_as(home, s, 1); }

static void maint_diag_line(sbuf *b, const char *home, const char *label, const char *value)
{
    char *v = maint_scrub(home, value ? value : "-");
    sb_printf(b, "%s: %s\n", label, v ? v : "?");
    free(v);
}

char *maint_diagnose(const maint_diag_input *in)
{
    sbuf b = {0};
    const char *home = in->home ? in->home : getenv("HOME");
    struct utsname u;
    char *tmp = NULL;
    maint_report rep = {0};
    int have_rep = 0;
    if (uname(&u) != 0) {
        strcpy(u.sysname, "?");
        strcpy(u.machine, "?");
    }
    sb_puts(&b, "```lcm-diagnose\n");
    sb_printf(&b, "version: lossless-context %s (ABI %u, API level %u); host %s; %s %s\n",
              in->plugin_version ? in->plugin_version : "?", in->abi_version, in->api_level,
              in->host_name ? in->host_name : "?", store_backend_name(), store_backend_version());
    sb_printf(&b, "platform: %s %s; mode %s\n", u.sysname, u.machine, in->mode ? in->mode : "?");
    const char *base = in->session_file ? strrchr(in->session_file, '/') : NULL;
    base = base ? base + 1 : in->session_file;
    tmp = lc_asprintf("%s; file %s; format %d", in->session_id ? in->session_id : "-", base ? base : "-",
                      in->session_format);
    maint_diag_line(&b, home, "session", tmp);
    free(tmp);
    tmp = maint_diag_tilde(home, in->store_path);
    sb_printf(&b, "store: %s\n", tmp ? tmp : "?");
    free(tmp);
    if (in->st && maint_doctor(in->st, getpid(), &rep, NULL) == LC_OK) {
        have_rep = 1;
        sb_printf(&b, "facts: %lld messages (%lld removed), %lld summaries, %lld file handles, %lld KB, "
                      "payload %lld bytes, schema %d\n",
                  (long long)rep.messages, (long long)rep.removed, (long long)rep.summaries,
                  (long long)rep.file_handles, (long long)(rep.db_bytes / 1024), (long long)rep.payload_bytes,
                  rep.schema_version);
        sb_puts(&b, "depth:");
        for (int d = 0; d <= MAINT_MAX_DEPTH; d++)
            if (rep.depth_hist[d]) sb_printf(&b, " d%d=%lld", d, (long long)rep.depth_hist[d]);
        sb_puts(&b, rep.summaries ? "\n" : " none\n");
        sb_puts(&b, "integrity:");
        for (size_t i = 0; i < rep.n_checks; i++)
            sb_printf(&b, "%s %s=%lld", i ? "," : "", rep.checks[i].name, (long long)rep.checks[i].count);
        sb_puts(&b, "\n");
    } else {
        sb_puts(&b, "facts: store not open\n");
    }
    maint_diag_line(&b, home, "projection", in->pin ? in->pin : "none");
    maint_diag_line(&b, home, "thresholds", in->thresholds);
    tmp = lc_asprintf("%s; window %ld", in->model ? in->model : "none", in->window);
    maint_diag_line(&b, home, "model", tmp);
    free(tmp);
    maint_diag_line(&b, home, "summarizer", in->chain);
    tmp = maint_diag_tilde(home, in->config_path);
    sb_printf(&b, "config path: %s\n", tmp ? tmp : "?");
    free(tmp);
    char *cfg = in->config ? cJSON_PrintUnformatted(in->config) : NULL;
    /* The config is this package's own vocabulary: key names like summaryTokens must not
     * read as secrets; only the home prefix is rewritten. */
    char *cs = maint_scrub_as(home, cfg ? cfg : "{}", 0);
    sb_printf(&b, "config: %s\n", cs ? cs : "?");
    free(cs);
    cJSON_free(cfg);

    /* Metrics: tally, last context decision, then recent rows newest-first until the cap. */
    int nrows = in->metrics_rows ? cJSON_GetArraySize(in->metrics_rows) : 0;
    char *report = in->metrics_rows ? metrics_report(in->metrics_rows, in->session_id) : NULL;
    char *tally = report ? strstr(report, "by kind:") : NULL;
    sb_printf(&b, "metrics: %d rows; %s\n", nrows, tally ? tally : "by kind: none");
    free(report);
    const cJSON *last_ctx = NULL, *row;
    if (in->metrics_rows)
        cJSON_ArrayForEach(row, in->metrics_rows)
        {
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(row, "kind");
            if (cJSON_IsString(k) && !strcmp(k->valuestring, METRIC_CONTEXT)) last_ctx = row;
        }
    if (last_ctx) {
        cJSON *s = metrics_row_sanitized(last_ctx);
        char *t = s ? cJSON_PrintUnformatted(s) : NULL;
        char *sc = t ? maint_scrub_as(home, t, 0) : NULL;
        sb_printf(&b, "last context decision: %s\n", sc ? sc : "?");
        free(sc);
        cJSON_free(t);
        cJSON_Delete(s);
    } else {
        sb_puts(&b, "last context decision: none\n");
    }
    const char *tail_fmt = "recent rows: %d shown, %d left out\n";
    char **lines = nrows ? calloc((size_t)nrows, sizeof *lines) : NULL;
    size_t used = b.len + 64 /* the recent-rows line and the closing fence */;
    int first = nrows; /* rows [first, nrows) are shown */
    for (int i = nrows - 1; lines && i >= 0 && nrows - i <= MAINT_DIAG_ROWS; i--) {
        cJSON *s = metrics_row_sanitized(cJSON_GetArrayItem(in->metrics_rows, i));
        char *t = s ? cJSON_PrintUnformatted(s) : NULL;
        cJSON_Delete(s);
        char *sc = t ? maint_scrub_as(home, t, 0) : NULL; /* sanitized: no free text left */
        cJSON_free(t);
        if (!sc || used + strlen(sc) + 1 > MAINT_DIAG_BYTES) {
            free(sc);
            break;
        }
        used += strlen(sc) + 1;
        lines[i] = sc;
        first = i;
    }
    sb_printf(&b, tail_fmt, nrows - first, first);
    for (int i = first; i < nrows; i++) sb_printf(&b, "%s\n", lines[i]);
    for (int i = 0; lines && i < nrows; i++) free(lines[i]);
    free(lines);
    sb_puts(&b, "```");
    if (have_rep) maint_report_free(&rep);
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    /* The fixed part alone can only outgrow the cap through an enormous config: cut it at a
     * character boundary and say so, the cap is the promise. */
    if (b.len > MAINT_DIAG_BYTES) {
        static const char mark[] = "\n[diagnose: cut at 8192 bytes]";
        size_t keep = MAINT_DIAG_BYTES - (sizeof mark - 1);
        keep = lc_utf8_back(b.p, keep);
        memcpy(b.p + keep, mark, sizeof mark);
        b.len = keep + sizeof mark - 1;
    }
    return sb_detach(&b);
}

int maint_diag_save(const char *path, const char *text, char **err)
{
    if (!path || !*path) return lc_errf(err, LC_INVALID, "diagnose: --save needs a path");
    char *data = lc_asprintf("%s\n", text ? text : "");
    if (!data) return lc_errf(err, LC_NOMEM, "out of memory");
    int rc = lc_write_atomic(path, data, strlen(data), 0600, err);
    free(data);
    return rc;
}
