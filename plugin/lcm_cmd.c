/*
 * lcm_cmd.c -- the /lcm command suite: status (the default), settings (the cockpit as
 * text, and live edits written to lcm.json), backup, export, import, report, doctor
 * [--repair], gc [--apply], migrate [--apply] and diagnose [--save FILE]. Owns the
 * session's effective config and its telemetry handle (the lcm_cmd_* fields of
 * struct lcm_glue). Reads and maintains the store through engine/maint.h; never writes
 * the session.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "dag.h"
#include "lcm.h"
#include "maint.h"
#include "metrics.h"
#include "project.h"
#include "summarize.h"
#include "util.h"
#include "zones.h"

#define LCM_CMD_VERSION "0.1.0"

/* ---- config and telemetry ------------------------------------------------------------- */

static char *lcm_cmd_config_path(lc_plugin *p)
{
    return lc_asprintf("%s/lcm.json", p->agent_home ? p->agent_home : ".");
}

void lcm_cmd_metric(lc_plugin *p, const char *kind, const cJSON *fields)
{
    char *e = NULL;
    if (!p->lcm || !p->agent_home) return;
    if (!p->lcm->metrics) {
        /* A test run must not write a real home (config.h's guard). */
        if (lcm_config_home_guard(p->agent_home, NULL) != LC_OK) return;
        if (metrics_open(p->agent_home, p->session_id, &p->lcm->metrics, &e) != LC_OK) {
            plugin_log(p, AP_LEVEL_WARNING, "lcm: metrics unavailable: %s", e ? e : "?");
            free(e);
            return;
        }
    }
    if (metrics_record(p->lcm->metrics, kind, fields, &e) != LC_OK) {
        plugin_log(p, AP_LEVEL_WARNING, "lcm: %s", e ? e : "metrics append failed");
        free(e);
    }
}

static void lcm_cmd_metric_kv(lc_plugin *p, const char *kind, const char *k1, const char *v1,
                              const char *k2, double v2)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return;
    if (k1) cJSON_AddStringToObject(o, k1, v1 ? v1 : "");
    if (k2) cJSON_AddNumberToObject(o, k2, v2);
    lcm_cmd_metric(p, kind, o);
    cJSON_Delete(o);
}

const struct lcm_config *lcm_cmd_config(lc_plugin *p)
{
    if (!p->lcm) return NULL;
    const char *sid = p->session_id ? p->session_id : "";
    if (p->lcm->cfg && p->lcm->cfg_session && !strcmp(p->lcm->cfg_session, sid)) return p->lcm->cfg;
    lcm_config *cfg = calloc(1, sizeof *cfg);
    char *path = lcm_cmd_config_path(p), *e = NULL;
    if (!cfg || !path) goto fail;
    if (lcm_config_load(path, cfg, &e) != LC_OK) {
        /* An unreadable file is reported like a corrupt one: defaults apply. */
        lcm_config_free(cfg);
        memset(cfg, 0, sizeof *cfg);
        if (lcm_config_defaults(cfg) != LC_OK) goto fail;
        plugin_notify(p, AP_LEVEL_WARNING, "lcm.json: %s; defaults apply", e ? e : "unreadable");
        lcm_cmd_metric_kv(p, METRIC_CONFIG_PROBLEM, "detail", e, NULL, 0);
    }
    for (size_t i = 0; i < cfg->n_problems; i++) {
        plugin_notify(p, AP_LEVEL_WARNING, "lcm.json: %s", cfg->problems[i]);
        lcm_cmd_metric_kv(p, METRIC_CONFIG_PROBLEM, "detail", cfg->problems[i], NULL, 0);
    }
    if (p->lcm->cfg) {
        lcm_config_free(p->lcm->cfg);
        free(p->lcm->cfg);
    }
    p->lcm->cfg = cfg;
    p->lcm->redact = cfg->redact_secrets;
    free(p->lcm->cfg_session);
    p->lcm->cfg_session = lc_strdup(sid);
    free(path);
    free(e);
    return p->lcm->cfg;
fail:
    free(cfg);
    free(path);
    free(e);
    return p->lcm->cfg;
}

void lcm_cmd_free(lc_plugin *p)
{
    if (!p->lcm) return;
    if (p->lcm->cfg) {
        lcm_config_free(p->lcm->cfg);
        free(p->lcm->cfg);
        p->lcm->cfg = NULL;
    }
    metrics_close(p->lcm->metrics);
    p->lcm->metrics = NULL;
    free(p->lcm->cfg_session);
    p->lcm->cfg_session = NULL;
}

/* ---- shared pieces -------------------------------------------------------------------- */

/* "400.0k", "1.0M", "950" */
static void lcm_cmd_tok(char *buf, size_t n, double t)
{
    if (t >= 1e6) snprintf(buf, n, "%.1fM", t / 1e6);
    else if (t >= 1e3) snprintf(buf, n, "%.1fk", t / 1e3);
    else snprintf(buf, n, "%.0f", t);
}

/* The request as last sent (after the projection) when the glue has one; else the raw
 * estimate of the last context call, or of the branch at session start. */
static size_t lcm_cmd_occupancy(lc_plugin *p)
{
    lcm_glue_view v;
    lcm_glue_view_get(p, &v);
    if (v.last_tokens > 0) return (size_t)v.last_tokens;
    return p->context_calls ? p->last_est_tokens : p->branch_occupancy;
}

static int lcm_cmd_resolve(lc_plugin *p, const lcm_config *cfg, zones_resolved *z)
{
    zones_cfg zc = lcm_config_zones_for(cfg, p->model);
    return zones_resolve(&zc, cfg->keep_recent_tokens, plugin_window(p), z, NULL);
}

static store *lcm_cmd_store(lc_plugin *p)
{
    return p->lcm ? p->lcm->st : NULL;
}

/* The projection pin as status prints it; "none" when nothing is pinned (or no store). */
static char *lcm_cmd_pin(store *st)
{
    project_pin pin;
    if (!st || project_pin_get(st, &pin, NULL) != LC_OK) return lc_strdup("none");
    return project_pin_describe(&pin);
}

static char *lcm_cmd_no_store(lc_plugin *p)
{
    return lc_asprintf("/lcm: the store is not open (%s)",
                       p->lcm && p->lcm->open_error ? p->lcm->open_error : "no session");
}

/* A timestamp for file names: sortable, unique to the millisecond. */
static void lcm_cmd_stamp(char *buf, size_t n)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(buf, n, "%Y%m%dT%H%M%S", &tm);
    snprintf(buf + k, n - k, "%03ldZ", ts.tv_nsec / 1000000);
}

static char *lcm_cmd_tilde(lc_plugin *p, const char *path)
{
    (void)p;
    char *t = maint_tilde(NULL, path);
    /* Outside $HOME the user still needs to find the file: print it whole. */
    if (t && !strcmp(t, "[path]")) {
        free(t);
        return lc_strdup(path);
    }
    return t;
}

static char *lcm_cmd_lcm_dir(lc_plugin *p)
{
    return lc_asprintf("%s/lcm", p->agent_home ? p->agent_home : ".");
}

/* The next word of *s (advanced past it), or NULL at the end. Writes into a copy. */
static char *lcm_cmd_word(char **s)
{
    char *p = *s;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) {
        *s = p;
        return NULL;
    }
    char *w = p;
    while (*p && *p != ' ' && *p != '\t') p++;
    if (*p) *p++ = '\0';
    *s = p;
    return w;
}

/* ---- status --------------------------------------------------------------------------- */

static char *lcm_cmd_status(lc_plugin *p)
{
    const lcm_config *cfg = lcm_cmd_config(p);
    store *st = lcm_cmd_store(p);
    sbuf b = {0};
    char w[32], occ[32];
    zones_resolved z;
    if (!cfg) return NULL;
    if (st) {
        char *pin = lcm_cmd_pin(st);
        sb_printf(&b, "LCM: %lld messages, %lld summaries, %lld KB\n",
                  (long long)store_message_count(st), (long long)store_summary_count(st),
                  (long long)(store_db_bytes(st) / 1024));
        sb_printf(&b, "projection: %s\n", pin ? pin : "none");
        free(pin);
    } else {
        char *ns = lcm_cmd_no_store(p);
        sb_printf(&b, "LCM: store not open (%s)\nprojection: none\n", ns ? ns + 6 : "?");
        free(ns);
    }
    long window = p->window > 0 ? p->window : 0;
    size_t tokens = lcm_cmd_occupancy(p);
    lcm_cmd_tok(w, sizeof w, (double)window);
    lcm_cmd_tok(occ, sizeof occ, (double)tokens);
    if (window > 0)
        sb_printf(&b, "context: %.0f%% of %s (%s tokens)\n", 100.0 * (double)tokens / (double)window, w, occ);
    else
        sb_printf(&b, "context: %s tokens (the host reports no window)\n", occ);
    if (lcm_cmd_resolve(p, cfg, &z) == LC_OK) {
        char *t = zones_format_thresholds(&z);
        sb_printf(&b, "thresholds: %s\n", t ? t : "?");
        free(t);
    }
    lcm_summ_status(p, &b);
    if (p->window_corrected > 0 && p->window == p->window_corrected) {
        char bw[32];
        lcm_cmd_tok(bw, sizeof bw, (double)p->window_believed);
        sb_printf(&b, "window: the host believes %s, corrected to %s (%s)", bw, w, p->window_source);
    } else {
        sb_printf(&b, "window: %s (%s)", window > 0 ? w : "unknown", window > 0 ? "host" : "default 128.0k");
    }
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

/* ---- settings ------------------------------------------------------------------------- */

static void lcm_cmd_row_long(sbuf *b, const char *key, long v, const char *effect)
{
    char val[32];
    if (v > 0) snprintf(val, sizeof val, "%ld", v);
    else snprintf(val, sizeof val, "unset");
    sb_printf(b, "  %-18s %-8s %s\n", key, val, effect);
}

static char *lcm_cmd_settings_page(lc_plugin *p, const lcm_config *cfg)
{
    sbuf b = {0};
    zones_resolved z;
    char w[32], a[32], c[32], e[200];
    char *path = lcm_cmd_config_path(p), *tp = path ? lcm_cmd_tilde(p, path) : NULL;
    zones_cfg zc = lcm_config_zones_for(cfg, p->model);
    int have_z = lcm_cmd_resolve(p, cfg, &z) == LC_OK;
    lcm_cmd_tok(w, sizeof w, (double)plugin_window(p));
    sb_printf(&b, "LCM settings (%s; `/lcm settings KEY VALUE` applies now and writes the file, "
                  "keeping the replaced one as lcm.json.bak)\n",
              tp ? tp : "lcm.json");
    sb_printf(&b, "window: %s%s; context now %.0f%%\n", w, p->window > 0 ? "" : " (default)",
              100.0 * (double)lcm_cmd_occupancy(p) / (double)plugin_window(p));
    if (have_z) {
        lcm_cmd_tok(a, sizeof a, (double)z.swap_tokens);
        lcm_cmd_tok(c, sizeof c, (double)z.recut_tokens);
    }
    sb_puts(&b, "swap (aged head becomes summary pointers):\n");
    snprintf(e, sizeof e, "swap at this share of the window%s",
             have_z && z.swap_source == ZONES_SRC_RATIO ? " (in effect)" : "");
    sb_printf(&b, "  %-18s %-8.2f %s\n", "swapAtRatio", zc.swap_ratio > 0 ? zc.swap_ratio : ZONES_DEFAULT_SWAP_RATIO, e);
    snprintf(e, sizeof e, "swap at this many tokens; wins over ratio and smartZone%s",
             have_z && z.swap_source == ZONES_SRC_TOKENS ? " (in effect)" : "");
    lcm_cmd_row_long(&b, "swapAtTokens", zc.swap_tokens, e);
    snprintf(e, sizeof e, "one number: swap at N tokens, re-cut at N x %.2f%s", ZONES_SMART_RECUT_FACTOR,
             have_z && z.swap_source == ZONES_SRC_SMART ? " (in effect)" : "");
    lcm_cmd_row_long(&b, "smartZone", zc.smart_zone, e);
    sb_puts(&b, "re-cut (one monotonic re-cut to a smaller shape):\n");
    snprintf(e, sizeof e, "re-cut at this share of the window%s",
             have_z && z.recut_source == ZONES_SRC_RATIO ? " (in effect)" : "");
    sb_printf(&b, "  %-18s %-8.2f %s\n", "recutAtRatio", zc.recut_ratio > 0 ? zc.recut_ratio : ZONES_DEFAULT_RECUT_RATIO, e);
    snprintf(e, sizeof e, "re-cut at this many tokens (folded above the swap line)%s",
             have_z && z.recut_source == ZONES_SRC_TOKENS ? " (in effect)" : "");
    lcm_cmd_row_long(&b, "recutAtTokens", zc.recut_tokens, e);
    sb_puts(&b, "summaries:\n");
    snprintf(e, sizeof e, "the newest %ld tokens are never summarized%s",
             have_z ? z.keep_recent_tokens : cfg->keep_recent_tokens,
             have_z && z.keep_recent_clamped ? " (lowered to fit under the swap line)" : "");
    lcm_cmd_row_long(&b, "keepRecentTokens", cfg->keep_recent_tokens, e);
    lcm_cmd_row_long(&b, "summaryTokens", cfg->summary_tokens, "target size of one summary node");
    lcm_cmd_row_long(&b, "leafChunkTokens", cfg->leaf_chunk_tokens, "source tokens one leaf summarizes");
    lcm_cmd_row_long(&b, "asyncChunkTokens", cfg->async_chunk_tokens,
                     "source tokens one between-turns pass may take");
    if (have_z) {
        char *t = zones_format_thresholds(&z);
        sb_printf(&b, "in effect: %s = swap at %s tokens (%s) / re-cut at %s tokens (%s)", t ? t : "?", a,
                  zones_source_name(z.swap_source), c, zones_source_name(z.recut_source));
        free(t);
    }
    free(path);
    free(tp);
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

static char *lcm_cmd_settings(lc_plugin *p, char *rest)
{
    const lcm_config *cfg = lcm_cmd_config(p);
    char *key = lcm_cmd_word(&rest);
    if (!cfg) return NULL;
    if (!key) return lcm_cmd_settings_page(p, cfg);
    while (*rest == ' ') rest++;
    char *value = rest;
    size_t vl = strlen(value);
    while (vl > 0 && value[vl - 1] == ' ') value[--vl] = '\0';
    if (!*value) return lc_asprintf("/lcm settings %s: give a value (e.g. /lcm settings swapAtRatio 0.6)", key);
    char *e = NULL, *path = lcm_cmd_config_path(p), *out = NULL;
    lcm_config *ncfg = calloc(1, sizeof *ncfg);
    if (!path || !ncfg) goto done;
    if (lcm_config_home_guard(p->agent_home, &e) != LC_OK) {
        out = lc_asprintf("/lcm settings: %s", e ? e : "refused");
        goto done;
    }
    /* A bare word is a string value: `summarizer auto` means "auto". */
    char *json = NULL;
    cJSON *probe = cJSON_Parse(value);
    if (!probe) {
        cJSON *s = cJSON_CreateString(value);
        json = s ? cJSON_PrintUnformatted(s) : NULL;
        cJSON_Delete(s);
    }
    cJSON_Delete(probe);
    int rc = lcm_config_set(path, key, json ? json : value, ncfg, &e);
    cJSON_free(json);
    if (rc != LC_OK) {
        out = lc_asprintf("/lcm settings: %s not changed: %s", key, e ? e : "rejected");
        goto done;
    }
    /* Applies at once: the rest of the session reads the new config. */
    if (p->lcm->cfg) {
        lcm_config_free(p->lcm->cfg);
        free(p->lcm->cfg);
    }
    p->lcm->cfg = ncfg;
    p->lcm->redact = ncfg->redact_secrets;
    ncfg = NULL;
    /* The chains and the worker copied the old values (and hold pointers into it). */
    if (p->lcm->summ) lcm_summ_open(p);
    lcm_cmd_metric_kv(p, METRIC_MAINT, "action", "settings", NULL, 0);
    {
        char *tp = lcm_cmd_tilde(p, path);
        char *page = lcm_cmd_settings_page(p, p->lcm->cfg);
        out = lc_asprintf("set %s = %s (written to %s; the file it replaced is kept as lcm.json.bak "
                          "unless a backup already existed)\n%s",
                          key, value, tp ? tp : path, page ? page : "");
        free(tp);
        free(page);
    }
done:
    if (ncfg) {
        lcm_config_free(ncfg);
        free(ncfg);
    }
    free(path);
    free(e);
    return out;
}

/* ---- backup / export / import --------------------------------------------------------- */

static char *lcm_cmd_backup(lc_plugin *p)
{
    char stamp[48], *dir = NULL, *path = NULL, *e = NULL, *out = NULL, *tp = NULL;
    store *st = lcm_cmd_store(p);
    if (!st) return lcm_cmd_no_store(p);
    lcm_cmd_stamp(stamp, sizeof stamp);
    dir = lcm_cmd_lcm_dir(p);
    path = lc_asprintf("%s/lcm-backup-%s-%s.db", dir ? dir : ".", p->session_id ? p->session_id : "session", stamp);
    if (!dir || !path) goto done;
    if (maint_backup(st, path, &e) != LC_OK) {
        out = lc_asprintf("/lcm backup failed: %s", e ? e : "?");
        goto done;
    }
    struct stat sb;
    tp = lcm_cmd_tilde(p, path);
    out = lc_asprintf("backup: %s (%lld KB; a consistent copy of the live store)", tp ? tp : path,
                      stat(path, &sb) == 0 ? (long long)sb.st_size / 1024 : 0LL);
    lcm_cmd_metric_kv(p, METRIC_MAINT, "action", "backup", "bytes", stat(path, &sb) == 0 ? (double)sb.st_size : 0);
done:
    free(dir);
    free(path);
    free(tp);
    free(e);
    return out;
}

static char *lcm_cmd_export(lc_plugin *p, char *rest)
{
    char stamp[48], *dir = NULL, *path = NULL, *e = NULL, *out = NULL, *tp = NULL;
    store *st = lcm_cmd_store(p);
    int64_t rows = 0;
    char *arg = lcm_cmd_word(&rest);
    if (!st) return lcm_cmd_no_store(p);
    if (arg) {
        path = lc_strdup(arg);
    } else {
        /* Beside the stores, never in the working folder: it carries stored secrets. */
        lcm_cmd_stamp(stamp, sizeof stamp);
        dir = lcm_cmd_lcm_dir(p);
        path = lc_asprintf("%s/lcm-export-%s-%s.jsonl", dir ? dir : ".", p->session_id ? p->session_id : "session",
                           stamp);
    }
    if (!path) goto done;
    if (maint_export(st, p->session_id, path, &rows, &e) != LC_OK) {
        out = lc_asprintf("/lcm export failed: %s", e ? e : "?");
        goto done;
    }
    tp = lcm_cmd_tilde(p, path);
    out = lc_asprintf("export: %lld rows to %s (verbatim, secrets included; mode 0600)", (long long)rows,
                      tp ? tp : path);
    lcm_cmd_metric_kv(p, METRIC_MAINT, "action", "export", "rows", (double)rows);
done:
    free(dir);
    free(path);
    free(tp);
    free(e);
    return out;
}

static char *lcm_cmd_import(lc_plugin *p, char *rest)
{
    char *arg = lcm_cmd_word(&rest), *e = NULL, *out;
    store *st = lcm_cmd_store(p);
    int64_t rows = 0;
    if (!st) return lcm_cmd_no_store(p);
    if (!arg) return lc_strdup("/lcm import: give the export file (/lcm import FILE.jsonl)");
    if (maint_import(st, arg, &rows, &e) != LC_OK) {
        out = lc_asprintf("/lcm import refused: %s", e ? e : "?");
    } else {
        out = lc_asprintf("import: %lld rows added (existing rows kept); full-text index rebuilt", (long long)rows);
        lcm_cmd_metric_kv(p, METRIC_MAINT, "action", "import", "rows", (double)rows);
    }
    free(e);
    return out;
}

/* ---- report / doctor ------------------------------------------------------------------- */

static char *lcm_cmd_metrics_file(lc_plugin *p)
{
    return lc_asprintf("%s/lcm/%s", p->agent_home ? p->agent_home : ".", METRICS_FILE);
}

static char *lcm_cmd_report(lc_plugin *p)
{
    char *path = lcm_cmd_metrics_file(p), *e = NULL, *out = NULL;
    cJSON *rows = NULL;
    if (!path) return NULL;
    if (metrics_load(path, p->session_id ? p->session_id : "-", &rows, NULL, &e) != LC_OK)
        out = lc_asprintf("/lcm report: %s", e ? e : "metrics unreadable");
    else
        out = metrics_report(rows, p->session_id);
    cJSON_Delete(rows);
    free(path);
    free(e);
    return out;
}

static int lcm_cmd_stub_auto(void *ud, const char *sp, const char *pr, long mt, summ_completion *out, char **err)
{
    (void)ud, (void)sp, (void)pr, (void)mt, (void)out;
    return lc_errf(err, LC_NOTFOUND, "not called");
}

static int lcm_cmd_stub_model(void *ud, const char *pv, const char *m, const char *sp, const char *pr, long mt,
                              summ_completion *out, char **err)
{
    (void)ud, (void)pv, (void)m, (void)sp, (void)pr, (void)mt, (void)out;
    return lc_errf(err, LC_NOTFOUND, "not called");
}

/* The chain that runs for this config ("auto" expanded, the floor appended). malloc'd. */
static char *lcm_cmd_chain(const lcm_config *cfg)
{
    summ_config sc = {0};
    summ_ctx *ctx = NULL;
    sc.chain = (const char *const *)cfg->summarizer;
    sc.n_chain = cfg->n_summarizer;
    sc.auto_fn = lcm_cmd_stub_auto;
    sc.model_fn = lcm_cmd_stub_model;
    if (summ_create(&sc, &ctx, NULL) != LC_OK) return lc_strdup("?");
    char *d = summ_chain_describe(ctx);
    summ_free(ctx);
    return d;
}

static char *lcm_cmd_config_origin(const lcm_config *cfg)
{
    sbuf b = {0};
    if (cfg->n_summarizer == 0) sb_puts(&b, "unset (behaves as auto)");
    for (size_t i = 0; i < cfg->n_summarizer; i++) sb_printf(&b, "%s\"%s\"", i ? ", " : "[", cfg->summarizer[i]);
    if (cfg->n_summarizer) sb_puts(&b, "]");
    return sb_detach(&b);
}

/* Doctor with no store open: a store file that is not a readable SQLite database (cut
 * short, overwritten) is named; --repair moves it aside, kept, and builds the store again
 * from the session file, which is the source of truth. */
static char *lcm_cmd_doctor_damaged(lc_plugin *p, int repair)
{
    char *path = p->agent_home && p->session_id
                     ? catalog_path(p->agent_home, p->session_id) : NULL;
    char *why = NULL, *moved = NULL, *e = NULL, *out = NULL, *tp = NULL, *tm = NULL;
    if (!path || !store_file_damaged(path, &why)) {
        free(path);
        return lcm_cmd_no_store(p);
    }
    tp = lcm_cmd_tilde(p, path);
    if (!repair) {
        out = lc_asprintf("LCM doctor: %s is not a readable SQLite database (%s); LCM is not active.\n"
                          "faults: 1 (/lcm doctor --repair moves it aside, kept, and rebuilds the store "
                          "from the session file)", tp ? tp : path, why ? why : "damaged");
        goto done;
    }
    char stamp[48];
    lcm_cmd_stamp(stamp, sizeof stamp);
    if (maint_store_set_aside(path, stamp, &moved, &e) != LC_OK) {
        out = lc_asprintf("/lcm doctor --repair failed (nothing changed): %s", e ? e : "?");
        goto done;
    }
    tm = lcm_cmd_tilde(p, moved);
    if (lcm_glue_attach(p) != LC_OK || !p->lcm->st) {
        out = lc_asprintf("repair: moved %s aside to %s (kept); a new store did not open: %s", tp ? tp : path,
                          tm ? tm : moved, p->lcm->open_error ? p->lcm->open_error : "?");
        goto done;
    }
    out = lc_asprintf("repair: %s was not a readable SQLite database (%s); moved aside to %s (kept) and "
                      "rebuilt from the session file: %lld messages stored; LCM is active",
                      tp ? tp : path, why ? why : "damaged", tm ? tm : moved,
                      (long long)store_message_count(p->lcm->st));
    lcm_cmd_metric_kv(p, METRIC_MAINT, "action", "rebuild", "messages", (double)store_message_count(p->lcm->st));
done:
    free(path);
    free(why);
    free(moved);
    free(e);
    free(tp);
    free(tm);
    return out;
}

static char *lcm_cmd_doctor(lc_plugin *p, char *rest)
{
    const lcm_config *cfg = lcm_cmd_config(p);
    store *st = lcm_cmd_store(p);
    maint_report rep = {0};
    maint_repair_stats rs = {0};
    char *e = NULL, *checks = NULL, *out = NULL, *chain = NULL, *origin = NULL, *cpath = NULL, *tp = NULL;
    sbuf b = {0};
    int repair = 0;
    zones_resolved z;
    for (char *w; (w = lcm_cmd_word(&rest));)
        if (!strcmp(w, "--repair")) repair = 1;
        else return lc_asprintf("/lcm doctor: unknown option '%s' (try --repair)", w);
    if (!cfg) return NULL;
    if (!st) return lcm_cmd_doctor_damaged(p, repair);
    if (repair) {
        if (maint_repair(st, getpid(), &rs, &e) != LC_OK) {
            out = lc_asprintf("/lcm doctor --repair failed (nothing changed): %s", e ? e : "?");
            goto done;
        }
        sb_printf(&b, "repair: full-text index rebuilt; %lld summaries dropped (span or child gone), "
                      "%lld duplicate spans removed, %lld dead-writer runs reaped, %lld orphan rows deleted\n",
                  (long long)rs.dropped, (long long)rs.duplicates, (long long)rs.reaped, (long long)rs.orphans);
        cJSON *o = cJSON_CreateObject();
        if (o) {
            cJSON_AddStringToObject(o, "action", "repair");
            cJSON_AddNumberToObject(o, "dropped", (double)rs.dropped);
            cJSON_AddNumberToObject(o, "duplicates", (double)rs.duplicates);
            cJSON_AddNumberToObject(o, "reaped", (double)rs.reaped);
            lcm_cmd_metric(p, METRIC_MAINT, o);
            cJSON_Delete(o);
        }
    }
    if (maint_doctor(st, getpid(), &rep, &e) != LC_OK) {
        out = lc_asprintf("/lcm doctor failed: %s", e ? e : "?");
        goto done;
    }
    tp = lcm_cmd_tilde(p, store_path(st));
    sb_printf(&b, "LCM doctor: %s (schema %d)\n", tp ? tp : "?", rep.schema_version);
    checks = maint_report_format(&rep);
    sb_printf(&b, "%s\n", checks ? checks : "?");
    int64_t faults = maint_report_faults(&rep);
    sb_printf(&b, "faults: %lld%s\n", (long long)faults, faults ? " (/lcm doctor --repair fixes them)" : "");
    if (lcm_cmd_resolve(p, cfg, &z) == LC_OK) {
        char *t = zones_format_thresholds(&z);
        sb_printf(&b, "thresholds: %s; zone %s at %zu tokens of %ld\n", t ? t : "?",
                  zones_zone_name(zones_classify(&z, (long)lcm_cmd_occupancy(p))), lcm_cmd_occupancy(p), z.window);
        free(t);
    }
    chain = lcm_cmd_chain(cfg);
    origin = lcm_cmd_config_origin(cfg);
    cpath = lcm_cmd_config_path(p);
    char *tc = cpath ? lcm_cmd_tilde(p, cpath) : NULL;
    sb_printf(&b, "summarizer chain that runs: %s (config: %s)\n", chain ? chain : "?", origin ? origin : "?");
    sb_printf(&b, "config: %s (%s%s)\n", tc ? tc : "lcm.json",
              cfg->file_state == LCM_CONFIG_LOADED ? "loaded" : cfg->file_state == LCM_CONFIG_CORRUPT
                                                                    ? "corrupt: defaults apply"
                                                                    : "absent: defaults",
              cfg->n_problems ? "; problems reported at session start" : "");
    free(tc);
    sb_printf(&b, "footprint: %lld KB, %lld messages (%lld removed), %lld summaries, payload %lld bytes, "
                  "%lld file handles, %lld runs",
              (long long)(rep.db_bytes / 1024), (long long)rep.messages, (long long)rep.removed,
              (long long)rep.summaries, (long long)rep.payload_bytes, (long long)rep.file_handles,
              (long long)rep.runs);
    out = b.oom ? NULL : sb_detach(&b);
done:
    sb_free(&b);
    maint_report_free(&rep);
    free(checks);
    free(chain);
    free(origin);
    free(cpath);
    free(tp);
    free(e);
    return out;
}

/* ---- gc / migrate ---------------------------------------------------------------------- */

static char *lcm_cmd_list_stores(lc_plugin *p, sbuf *b, const catalog_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        char *tp = lcm_cmd_tilde(p, l->v[i].path);
        sb_printf(b, "  %s  session %s, schema %d, %lld KB\n", tp ? tp : l->v[i].path, l->v[i].session_id,
                  l->v[i].schema_version, (long long)(l->v[i].bytes / 1024));
        free(tp);
    }
    return NULL;
}

static char *lcm_cmd_gc(lc_plugin *p, char *rest)
{
    int apply = 0;
    catalog_list plan = {0};
    char *e = NULL, *out = NULL, *sessions = NULL, *sdir = NULL, *dir = NULL, *xpath = NULL;
    sbuf b = {0};
    for (char *w; (w = lcm_cmd_word(&rest));)
        if (!strcmp(w, "--apply")) apply = 1;
        else return lc_asprintf("/lcm gc: unknown option '%s' (try --apply)", w);
    if (!p->agent_home) return lc_strdup("/lcm gc: the host gave no agent home");
    /* A session lives in the host's sessions folder or beside the current session file. */
    sessions = lc_asprintf("%s/sessions", p->agent_home);
    if (p->session_file) {
        sdir = lc_strdup(p->session_file);
        char *slash = sdir ? strrchr(sdir, '/') : NULL;
        if (slash) *slash = '\0';
        else if (sdir) strcpy(sdir, ".");
    }
    const char *dirs[2] = {sessions, sdir};
    if (maint_gc_plan(p->agent_home, dirs, 2, p->session_id, &plan, &e) != LC_OK) {
        out = lc_asprintf("/lcm gc failed: %s", e ? e : "?");
        goto done;
    }
    if (plan.n == 0) {
        out = lc_strdup("gc: no retired stores (every store's session file still exists)");
        goto done;
    }
    if (!apply) {
        sb_printf(&b, "gc (dry run): %zu retired stores (no session file names them):\n", plan.n);
        lcm_cmd_list_stores(p, &b, &plan);
        sb_puts(&b, "/lcm gc --apply exports them to lcm-export-gc-<ts>.jsonl beside the stores, then "
                    "DELETES them: cross-session search can no longer read them");
        out = sb_detach(&b);
        goto done;
    }
    if (lcm_config_home_guard(p->agent_home, &e) != LC_OK) {
        out = lc_asprintf("/lcm gc: %s", e ? e : "refused");
        goto done;
    }
    char stamp[48];
    lcm_cmd_stamp(stamp, sizeof stamp);
    dir = lcm_cmd_lcm_dir(p);
    xpath = lc_asprintf("%s/lcm-export-gc-%s.jsonl", dir ? dir : ".", stamp);
    size_t deleted = 0;
    if (!xpath) goto done;
    if (maint_gc_apply(&plan, xpath, &deleted, &e) != LC_OK) {
        out = lc_asprintf("/lcm gc --apply: %s (%zu of %zu stores deleted)", e ? e : "failed", deleted, plan.n);
        goto done;
    }
    char *tp = lcm_cmd_tilde(p, xpath);
    sb_printf(&b, "gc: exported %zu stores to %s, then deleted them:\n", plan.n, tp ? tp : xpath);
    free(tp);
    lcm_cmd_list_stores(p, &b, &plan);
    if (b.len) b.p[--b.len] = '\0';
    out = sb_detach(&b);
    lcm_cmd_metric_kv(p, METRIC_MAINT, "action", "gc", "deleted", (double)deleted);
done:
    sb_free(&b);
    catalog_list_free(&plan);
    free(sessions);
    free(sdir);
    free(dir);
    free(xpath);
    free(e);
    return out;
}

static char *lcm_cmd_migrate(lc_plugin *p, char *rest)
{
    int apply = 0;
    catalog_list plan = {0};
    char *e = NULL, *out = NULL;
    sbuf b = {0};
    size_t n = 0;
    for (char *w; (w = lcm_cmd_word(&rest));)
        if (!strcmp(w, "--apply")) apply = 1;
        else return lc_asprintf("/lcm migrate: unknown option '%s' (try --apply)", w);
    if (!p->agent_home) return lc_strdup("/lcm migrate: the host gave no agent home");
    if (maint_migrate_plan(p->agent_home, &plan, &e) != LC_OK) {
        out = lc_asprintf("/lcm migrate failed: %s", e ? e : "?");
        goto done;
    }
    if (plan.n == 0) {
        out = lc_asprintf("migrate: every store is at schema %d", STORE_SCHEMA_VERSION);
        goto done;
    }
    if (!apply) {
        sb_printf(&b, "migrate (dry run): %zu stores below schema %d (cross-session search skips them):\n",
                  plan.n, STORE_SCHEMA_VERSION);
        lcm_cmd_list_stores(p, &b, &plan);
        sb_puts(&b, "/lcm migrate --apply upgrades them in place");
        out = sb_detach(&b);
        goto done;
    }
    if (lcm_config_home_guard(p->agent_home, &e) != LC_OK) {
        out = lc_asprintf("/lcm migrate: %s", e ? e : "refused");
        goto done;
    }
    int rc = maint_migrate_apply(p->agent_home, &plan, &n, &e);
    out = lc_asprintf("migrate: %zu of %zu stores upgraded to schema %d%s%s", n, plan.n, STORE_SCHEMA_VERSION,
                      rc != LC_OK ? "; " : "", rc != LC_OK && e ? e : "");
    lcm_cmd_metric_kv(p, METRIC_MAINT, "action", "migrate", "migrated", (double)n);
done:
    sb_free(&b);
    catalog_list_free(&plan);
    free(e);
    return out;
}

/* ---- diagnose -------------------------------------------------------------------------- */

static char *lcm_cmd_diagnose(lc_plugin *p, char *rest)
{
    const lcm_config *cfg = lcm_cmd_config(p);
    char *save = NULL, *out = NULL, *e = NULL, *pin = NULL, *thr = NULL, *chain = NULL, *cpath = NULL;
    char *mpath = NULL, *block = NULL;
    int want_save = 0;
    cJSON *cj = NULL, *rows = NULL;
    zones_resolved z;
    for (char *w; (w = lcm_cmd_word(&rest));) {
        if (!strcmp(w, "--save")) {
            want_save = 1;
            save = lcm_cmd_word(&rest);
        } else if (!strncmp(w, "--save=", 7)) {
            want_save = 1;
            save = w + 7;
        } else {
            return lc_asprintf("/lcm diagnose: unknown option '%s' (try --save FILE)", w);
        }
    }
    if (want_save && (!save || !*save))
        return lc_strdup("/lcm diagnose --save: give a file path (the block was not printed)");
    if (!cfg) return NULL;
    store *st = lcm_cmd_store(p);
    pin = lcm_cmd_pin(st);
    if (lcm_cmd_resolve(p, cfg, &z) == LC_OK) thr = zones_format_thresholds(&z);
    chain = lcm_cmd_chain(cfg);
    cpath = lcm_cmd_config_path(p);
    cj = lcm_config_to_json(cfg);
    mpath = lcm_cmd_metrics_file(p);
    if (mpath && metrics_load(mpath, p->session_id ? p->session_id : "-", &rows, NULL, &e) != LC_OK) {
        free(e);
        e = NULL;
        rows = NULL;
    }
    maint_diag_input in = {0};
    in.plugin_version = LCM_CMD_VERSION;
    in.host_name = "agent host (ABI)";
    in.abi_version = AP_ABI_VERSION;
    in.api_level = AP_API_LEVEL;
    in.mode = p->host && p->host->api_level ? "plugin" : "?";
    in.session_id = p->session_id;
    in.session_file = p->session_file;
    in.session_format = 3;
    in.st = st;
    in.store_path = p->lcm && p->lcm->st ? store_path(p->lcm->st) : NULL;
    in.pin = pin;
    in.thresholds = thr;
    in.model = p->model;
    in.window = p->window;
    in.chain = chain;
    in.config = cj;
    in.config_path = cpath;
    in.metrics_rows = rows;
    block = maint_diagnose(&in);
    if (!block) goto done;
    if (want_save) {
        if (maint_save(save, block, &e) != LC_OK) {
            out = lc_asprintf("/lcm diagnose --save failed: %s", e ? e : "?");
        } else {
            out = lc_asprintf("diagnose: %zu bytes written to %s (mode 0600)", strlen(block) + 1, save);
        }
    } else {
        out = block;
        block = NULL;
    }
done:
    free(block);
    free(pin);
    free(thr);
    free(chain);
    free(cpath);
    free(mpath);
    free(e);
    cJSON_Delete(cj);
    cJSON_Delete(rows);
    return out;
}

/* ---- entry ------------------------------------------------------------------------------ */

/* /lcm heal [--apply] [--max-nodes N]: find summaries the mechanical truncation wrote and,
 * with --apply, re-derive them with the summarizer chain within summarizerTokensPerHeal. A
 * dry run spends nothing. */
static char *lcm_cmd_heal(lc_plugin *p, char *rest)
{
    const lcm_config *cfg = lcm_cmd_config(p);
    dag_heal_opts o = {0};
    dag_heal_report r = {0};
    char *e = NULL, *out = NULL, *w;
    if (!p->lcm || !p->lcm->st || !p->lcm->summ) return lcm_cmd_no_store(p);
    while ((w = lcm_cmd_word(&rest)) != NULL) {
        if (!strcmp(w, "--apply")) {
            o.apply = 1;
        } else if (!strcmp(w, "--max-nodes")) {
            char *n = lcm_cmd_word(&rest), *end = NULL;
            long v = n ? strtol(n, &end, 10) : 0;
            if (!n || *end || v <= 0) return lc_strdup("/lcm heal: --max-nodes takes a positive number");
            o.max_nodes = (int)v;
        } else {
            return lc_asprintf("/lcm heal: unknown option '%s' (--apply, --max-nodes N)", w);
        }
    }
    o.tokens_per_heal = cfg ? cfg->summarizer_tokens_per_heal : 120000;
    o.heal_source_tokens = cfg ? lcm_config_heal_source_tokens(cfg) : 9600;
    o.summary_tokens = cfg ? cfg->summary_tokens : 1200;
    lcm_cmd_metric_kv(p, METRIC_HEAL_START, "mode", o.apply ? "apply" : "dry-run", "maxNodes",
                      (double)o.max_nodes);
    if (dag_heal(p->lcm->st, p->lcm->summ, &o, &r, &e) != LC_OK) {
        out = lc_asprintf("/lcm heal: %s", e ? e : "failed");
    } else {
        out = lc_asprintf("heal (%s): %d mechanical node(s), %d healed, %d unchanged, %d blocked "
                          "(source beyond eight windows), %s%ld tokens billed\n%s",
                          o.apply ? "apply" : "dry run", r.candidates, r.healed, r.unchanged,
                          r.blocked, r.budget_stopped ? "stopped by summarizerTokensPerHeal, " : "",
                          r.billed_tokens, r.text ? r.text : "");
        lcm_cmd_metric_kv(p, METRIC_HEAL_COMPLETE, "mode", o.apply ? "apply" : "dry-run", "healed",
                          (double)r.healed);
    }
    dag_heal_report_free(&r);
    free(e);
    return out;
}

static const char lcm_cmd_help[] =
    "/lcm [status]            projection state: messages, pin, occupancy, thresholds, window\n"
    "/lcm settings [KEY VAL]  the cockpit; KEY VAL applies now and writes lcm.json (.bak kept)\n"
    "/lcm backup              a timestamped online copy of the live store beside the stores\n"
    "/lcm export [FILE]       the whole store as JSONL, verbatim (secrets included)\n"
    "/lcm import FILE         load an export (refused while a pass is running)\n"
    "/lcm report              metrics summary for this session\n"
    "/lcm doctor [--repair]   store checks, thresholds, summarizer chain, footprint\n"
    "/lcm gc [--apply]        retired stores; --apply exports then DELETES them\n"
    "/lcm migrate [--apply]   older-schema stores; --apply upgrades them in place\n"
    "/lcm heal [--apply] [--max-nodes N]  re-derive truncated summaries (dry run spends nothing)\n"
    "/lcm diagnose [--save F] one block for a bug report (<= 8 KB, no bodies, no paths)";

int lcm_cmd_run(lc_plugin *p, const char *args, char **out_text, char **err)
{
    char *copy = lc_strdup(args ? args : ""), *rest = copy, *sub;
    char *text = NULL;
    if (!copy) return lc_errf(err, AP_NOMEM, "out of memory");
    sub = lcm_cmd_word(&rest);
    /* Maintenance may repair, rebuild or retire what a background pass is working on. */
    if (sub && (!strcmp(sub, "doctor") || !strcmp(sub, "gc") || !strcmp(sub, "migrate") ||
                !strcmp(sub, "heal") || !strcmp(sub, "import")))
        lcm_summ_invalidate(p);
    if (!sub || !strcmp(sub, "status")) text = lcm_cmd_status(p);
    else if (!strcmp(sub, "settings")) text = lcm_cmd_settings(p, rest);
    else if (!strcmp(sub, "backup")) text = lcm_cmd_backup(p);
    else if (!strcmp(sub, "export")) text = lcm_cmd_export(p, rest);
    else if (!strcmp(sub, "import")) text = lcm_cmd_import(p, rest);
    else if (!strcmp(sub, "report")) text = lcm_cmd_report(p);
    else if (!strcmp(sub, "doctor")) text = lcm_cmd_doctor(p, rest);
    else if (!strcmp(sub, "gc")) text = lcm_cmd_gc(p, rest);
    else if (!strcmp(sub, "migrate")) text = lcm_cmd_migrate(p, rest);
    else if (!strcmp(sub, "heal")) text = lcm_cmd_heal(p, rest);
    else if (!strcmp(sub, "diagnose")) text = lcm_cmd_diagnose(p, rest);
    else if (!strcmp(sub, "help")) text = lc_strdup(lcm_cmd_help);
    else text = lc_asprintf("/lcm: unknown subcommand '%s'\n%s", sub, lcm_cmd_help);
    free(copy);
    if (!text) return lc_errf(err, AP_NOMEM, "out of memory");
    *out_text = text;
    return AP_OK;
}
