/*
 * admin.c -- the bodies of /lcm and `lcm` maintenance commands (see admin.h): the texts
 * users read and the --json objects, over engine/maint.h, engine/dag.h and the store
 * (migrate's are admin_migrate.c).
 */
#include "admin.h"
#include "admin_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dag.h"
#include "maint.h"
#include "metrics.h"
#include "offline.h"
#include "project.h"
#include "store.h"
#include "ledger.h"
#include "util.h"
#include "zones.h"

void admin_result_free(admin_result *r)
{
    if (!r) return;
    LC_FREE(r->text, r->moved_to);
    cJSON_Delete(r->json);
    memset(r, 0, sizeof *r);
}

/* ---- shared pieces -------------------------------------------------------------------- */

char *admin_config_path(const char *home)
{
    return lc_asprintf("%s/lcm.json", home ? home : ".");
}

char *admin_metrics_path(const char *home)
{
    return lc_asprintf("%s/lcm/%s", home ? home : ".", METRICS_FILE);
}

/* The folder the admin files (exports, backups) go in, <home>/lcm, made (0700) when
 * missing: a home whose stores live in a shared database has no file there until its first
 * export. A folder that cannot be made is named by the open that follows. */
static char *admin_lcm_dir(const admin_env *env)
{
    char *dir = lc_asprintf("%s/lcm", env->home ? env->home : ".");
    if (dir) lc_mkdir_p(dir, 0700, NULL);
    return dir;
}

char *admin_tilde(const char *path)
{
    char *t = maint_diag_tilde(NULL, path);
    /* Outside $HOME the user still needs to find the file: print it whole. */
    if (t && !strcmp(t, "[path]")) {
        free(t);
        return lc_strdup(path);
    }
    return t;
}

void admin_stamp(char *buf, size_t n)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(buf, n, "%Y%m%dT%H%M%S", &tm);
    snprintf(buf + k, n - k, "%03ldZ", ts.tv_nsec / 1000000);
}

void admin_tokens(char *buf, size_t n, double t)
{
    if (t >= 1e6) snprintf(buf, n, "%.1fM", t / 1e6);
    else if (t >= 1e3) snprintf(buf, n, "%.1fk", t / 1e3);
    else snprintf(buf, n, "%.0f", t);
}

void admin_progress(const admin_env *env, long long done, long long total)
{
    if (env->progress) env->progress(env->progress_ud, done, total);
}

static int admin_resolve(const admin_env *env, zones_resolved *z)
{
    zones_cfg zc = lcm_config_zones_for(env->cfg, env->model);
    return zones_resolve(&zc, env->cfg->keep_recent_tokens, env->window_effective, z, NULL);
}

static char *admin_no_store(const admin_env *env)
{
    return lc_asprintf("%s: the store is not open (%s)", env->cmd,
                       env->no_store_why ? env->no_store_why : "no session");
}

/* A result from a finished sbuf (NULL text on OOM: the caller reports it). */
int admin_finish(sbuf *b, cJSON *json, int status, admin_result *out, char **err)
{
    if (b->oom || !json) {
        sb_free(b);
        cJSON_Delete(json);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    out->text = sb_detach(b);
    out->json = json;
    out->status = status;
    return out->text ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
}

/* A one-line result: failures of the work are texts to show, not errors. */
int admin_line(admin_result *out, cJSON *json, int status, char *text, char **err)
{
    if (!text) {
        cJSON_Delete(json);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    if (!json) json = cJSON_CreateObject();
    if (status && json) cJSON_AddStringToObject(json, "error", text);
    out->text = text;
    out->json = json;
    out->status = status;
    return json ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
}

char *admin_chain(const lcm_config *cfg)
{
    /* The chain is built from the configured names alone; describing it calls no model,
     * so no completion functions are needed. */
    summ_config sc = {0};
    summ_ctx *ctx = NULL;
    sc.chain = (const char *const *)cfg->summarizer;
    sc.n_chain = cfg->n_summarizer;
    if (summ_create(&sc, &ctx, NULL) != LC_OK) return lc_strdup("?");
    char *d = summ_chain_describe(ctx);
    summ_free(ctx);
    return d;
}

static char *admin_config_origin(const lcm_config *cfg)
{
    sbuf b = {0};
    if (cfg->n_summarizer == 0) sb_puts(&b, "unset (behaves as auto)");
    for (size_t i = 0; i < cfg->n_summarizer; i++) sb_printf(&b, "%s\"%s\"", i ? ", " : "[", cfg->summarizer[i]);
    if (cfg->n_summarizer) sb_puts(&b, "]");
    return sb_detach(&b);
}

/* ---- status --------------------------------------------------------------------------- */

char *admin_store_line(const char *home, store *st, const char *offline_why)
{
    const char *url = getenv("LCM_STORE_URL");
    char *where = NULL, *shown = NULL, *line = NULL;
    if (st && store_path(st)) where = lc_strdup(store_path(st));
    else if (url && *url && strcmp(store_backend_name(), store_backend_label(store_backend_embedded())) != 0)
        where = lc_strdup(url);
    else where = lc_asprintf("%s/lcm", home ? home : ".");
    shown = where ? store_url_redact(where) : NULL;
    if (shown)
        line = offline_why ? lc_asprintf("store: %s (%s), %s", store_backend_name(), shown, offline_why)
                           : lc_asprintf("store: %s (%s), online", store_backend_name(), shown);
    free(where);
    free(shown);
    return line;
}

int admin_status(const admin_env *env, admin_result *out, char **err)
{
    sbuf b = {0};
    char w[32], occ[32];
    zones_resolved z;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "session", env->session_id ? env->session_id : "");
    /* Which store, and whether it can be reached: the first thing a user of a shared
     * store asks. */
    char *off = env->offline && env->offline->offline ? offline_describe(env->offline, lc_now_ms()) : NULL;
    char *sl = admin_store_line(env->home, env->st, off);
    sb_printf(&b, "%s\n", sl ? sl : "store: ?");
    cJSON_AddStringToObject(j, "backend", store_backend_name());
    cJSON_AddStringToObject(j, "storeState", off ? "offline" : env->st ? "online" : "closed");
    if (off) cJSON_AddStringToObject(j, "offline", off);
    free(sl);
    free(off);
    if (env->st) {
        project_pin pin;
        char *pd = project_pin_get(env->st, &pin, NULL) == LC_OK ? project_pin_describe(&pin) : lc_strdup("none");
        int64_t m = store_message_count(env->st), s = store_summary_count(env->st), db = store_db_bytes(env->st);
        sb_printf(&b, "LCM: %lld messages, %lld summaries, %lld KB\n", (long long)m, (long long)s,
                  (long long)(db / 1024));
        sb_printf(&b, "projection: %s\n", pd ? pd : "none");
        cJSON_AddNumberToObject(j, "messages", (double)m);
        cJSON_AddNumberToObject(j, "summaries", (double)s);
        cJSON_AddNumberToObject(j, "dbBytes", (double)db);
        cJSON_AddStringToObject(j, "projection", pd ? pd : "none");
        free(pd);
    } else {
        char *ns = admin_no_store(env);
        size_t skip = strlen(env->cmd) + 2;
        sb_printf(&b, "LCM: store not open (%s)\nprojection: none\n", ns && strlen(ns) > skip ? ns + skip : "?");
        cJSON_AddNullToObject(j, "messages");
        free(ns);
    }
    long window = env->window > 0 ? env->window : 0;
    admin_tokens(w, sizeof w, (double)window);
    admin_tokens(occ, sizeof occ, (double)env->occupancy);
    if (window > 0)
        sb_printf(&b, "context: %.0f%% of %s (%s tokens)\n", 100.0 * (double)env->occupancy / (double)window, w,
                  occ);
    else
        sb_printf(&b, "context: %s tokens (the host reports no window)\n", occ);
    cJSON_AddNumberToObject(j, "window", (double)window);
    cJSON_AddNumberToObject(j, "tokens", (double)env->occupancy);
    if (admin_resolve(env, &z) == LC_OK) {
        char *t = zones_format_thresholds(&z);
        sb_printf(&b, "thresholds: %s\n", t ? t : "?");
        cJSON_AddStringToObject(j, "thresholds", t ? t : "?");
        cJSON_AddNumberToObject(j, "swapTokens", (double)z.swap_tokens);
        cJSON_AddNumberToObject(j, "recutTokens", (double)z.recut_tokens);
        free(t);
    }
    /* What LCM's own model calls spent (every session of the home: the limits are the home's). */
    char *spend = ledger_status_line(env->home);
    if (spend) {
        sb_printf(&b, "%s\n", spend);
        cJSON_AddStringToObject(j, "spend", spend);
        free(spend);
    }
    return admin_finish(&b, j, 0, out, err);
}

/* ---- settings ------------------------------------------------------------------------- */

static void admin_row_long(sbuf *b, const char *key, long v, const char *effect)
{
    char val[32];
    if (v > 0) snprintf(val, sizeof val, "%ld", v);
    else snprintf(val, sizeof val, "unset");
    sb_printf(b, "  %-18s %-8s %s\n", key, val, effect);
}

/* A zone line's ratio and token rows (`line` is "swap" or "re-cut"); the row whose source
 * `src` is in effect says so (-1: the zones could not be resolved). */
static void admin_zone_rows(sbuf *b, const char *line, const char *ratio_key, double ratio, const char *tokens_key,
                            long tokens, const char *tokens_note, int src)
{
    char e[200];
    snprintf(e, sizeof e, "%s at this share of the window%s", line, src == ZONES_SRC_RATIO ? " (in effect)" : "");
    sb_printf(b, "  %-18s %-8.2f %s\n", ratio_key, ratio, e);
    snprintf(e, sizeof e, "%s at this many tokens%s%s", line, tokens_note,
             src == ZONES_SRC_TOKENS ? " (in effect)" : "");
    admin_row_long(b, tokens_key, tokens, e);
}

int admin_settings_page(const admin_env *env, admin_result *out, char **err)
{
    const lcm_config *cfg = env->cfg;
    sbuf b = {0};
    zones_resolved z;
    char w[32], a[32], c[32], e[200];
    char *path = admin_config_path(env->home), *tp = path ? admin_tilde(path) : NULL;
    zones_cfg zc = lcm_config_zones_for(cfg, env->model);
    int have_z = admin_resolve(env, &z) == LC_OK;
    admin_tokens(w, sizeof w, (double)env->window_effective);
    sb_printf(&b, "LCM settings (%s; `%s settings KEY VALUE` applies now and writes the file, "
                  "keeping the replaced one as lcm.json.bak)\n",
              tp ? tp : "lcm.json", env->cmd);
    sb_printf(&b, "window: %s%s; context now %.0f%%\n", w, env->window > 0 ? "" : " (default)",
              100.0 * (double)env->occupancy / (double)(env->window_effective > 0 ? env->window_effective : 1));
    if (have_z) {
        admin_tokens(a, sizeof a, (double)z.swap_tokens);
        admin_tokens(c, sizeof c, (double)z.recut_tokens);
    }
    sb_puts(&b, "swap (aged head becomes summary pointers):\n");
    admin_zone_rows(&b, "swap", "swapAtRatio", zc.swap_ratio > 0 ? zc.swap_ratio : ZONES_DEFAULT_SWAP_RATIO,
                    "swapAtTokens", zc.swap_tokens, "; wins over ratio and smartZone",
                    have_z ? (int)z.swap_source : -1);
    snprintf(e, sizeof e, "one number: swap at N tokens, re-cut at N x %.2f%s", ZONES_SMART_RECUT_FACTOR,
             have_z && z.swap_source == ZONES_SRC_SMART ? " (in effect)" : "");
    admin_row_long(&b, "smartZone", zc.smart_zone, e);
    sb_puts(&b, "re-cut (one monotonic re-cut to a smaller shape):\n");
    admin_zone_rows(&b, "re-cut", "recutAtRatio", zc.recut_ratio > 0 ? zc.recut_ratio : ZONES_DEFAULT_RECUT_RATIO,
                    "recutAtTokens", zc.recut_tokens, " (folded above the swap line)",
                    have_z ? (int)z.recut_source : -1);
    sb_puts(&b, "summaries:\n");
    snprintf(e, sizeof e, "the newest %ld tokens are never summarized%s",
             have_z ? z.keep_recent_tokens : cfg->keep_recent_tokens,
             have_z && z.keep_recent_clamped ? " (lowered to fit under the swap line)" : "");
    admin_row_long(&b, "keepRecentTokens", cfg->keep_recent_tokens, e);
    admin_row_long(&b, "summaryTokens", cfg->summary_tokens, "target size of one summary node");
    admin_row_long(&b, "leafChunkTokens", cfg->leaf_chunk_tokens, "source tokens one leaf summarizes");
    admin_row_long(&b, "asyncChunkTokens", cfg->async_chunk_tokens, "source tokens one between-turns pass may take");
    if (have_z) {
        char *t = zones_format_thresholds(&z);
        sb_printf(&b, "in effect: %s = swap at %s tokens (%s) / re-cut at %s tokens (%s)", t ? t : "?", a,
                  zones_source_name(z.swap_source), c, zones_source_name(z.recut_source));
        free(t);
    }
    free(path);
    free(tp);
    return admin_finish(&b, lcm_config_to_json(cfg), 0, out, err);
}

int admin_settings_set(const admin_env *env, const char *key, const char *raw, lcm_config *ncfg,
                       admin_result *out, char **err)
{
    char *e = NULL, *json = NULL, *path = admin_config_path(env->home), *tp = NULL, *value = NULL;
    admin_result page = {0};
    int rc;
    while (*raw == ' ' || *raw == '\t') raw++;
    value = lc_strdup(raw);
    if (!path || !value) {
        free(path);
        free(value);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    for (size_t n = strlen(value); n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'); n--) value[n - 1] = '\0';
    if (!*value) {
        rc = admin_line(out, NULL, 1,
                        lc_asprintf("%s settings %s: give a value (e.g. %s settings swapAtRatio 0.6)", env->cmd, key,
                                    env->cmd),
                        err);
        goto done;
    }
    if (lcm_config_home_guard(env->home, &e) != LC_OK) {
        rc = admin_line(out, NULL, 1, lc_asprintf("%s settings: %s", env->cmd, e ? e : "refused"), err);
        goto done;
    }
    /* A bare word is a string value: `summarizer auto` means "auto". */
    cJSON *probe = cJSON_Parse(value), *str = probe ? NULL : cJSON_CreateString(value);
    json = str ? cJSON_PrintUnformatted(str) : NULL;
    cJSON_Delete(probe);
    cJSON_Delete(str);
    if (lcm_config_set(path, key, json ? json : value, ncfg, &e) != LC_OK) {
        rc = admin_line(out, NULL, 1,
                        lc_asprintf("%s settings: %s not changed: %s", env->cmd, key, e ? e : "rejected"), err);
        goto done;
    }
    admin_env nenv = *env;
    nenv.cfg = ncfg;
    if ((rc = admin_settings_page(&nenv, &page, err)) != LC_OK) goto done;
    tp = admin_tilde(path);
    rc = admin_line(out, page.json, 0,
                    lc_asprintf("set %s = %s (written to %s; the file it replaced is kept as lcm.json.bak "
                                "unless a backup already existed)\n%s",
                                key, value, tp ? tp : path, page.text),
                    err);
    page.json = NULL;
done:
    admin_result_free(&page);
    cJSON_free(json);
    free(value);
    free(path);
    free(tp);
    free(e);
    return rc;
}

/* ---- backup / export / import --------------------------------------------------------- */

int admin_backup(const admin_env *env, admin_result *out, char **err)
{
    char stamp[48], *dir = NULL, *path = NULL, *e = NULL, *tp = NULL;
    int rc;
    struct stat sb;
    if (!env->st) return admin_line(out, NULL, 1, admin_no_store(env), err);
    admin_stamp(stamp, sizeof stamp);
    dir = admin_lcm_dir(env);
    path = dir ? lc_asprintf("%s/lcm-backup-%s-%s.db", dir, env->session_id ? env->session_id : "session", stamp)
               : NULL;
    if (!path) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if (maint_backup(env->st, path, &e) != LC_OK) {
        rc = admin_line(out, NULL, 1, lc_asprintf("%s backup failed: %s", env->cmd, e ? e : "?"), err);
        goto done;
    }
    long long bytes = stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
    tp = admin_tilde(path);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "session", env->session_id ? env->session_id : "");
    cJSON_AddStringToObject(j, "path", path);
    cJSON_AddNumberToObject(j, "bytes", (double)bytes);
    out->metric = bytes;
    rc = admin_line(out, j, 0,
                    lc_asprintf("backup: %s (%lld KB; a consistent copy of the live store)", tp ? tp : path,
                                bytes / 1024),
                    err);
done:
    free(dir);
    free(path);
    free(tp);
    free(e);
    return rc;
}

int admin_export(const admin_env *env, const char *to, admin_result *out, char **err)
{
    char stamp[48], *path = NULL, *e = NULL, *tp = NULL;
    int64_t rows = 0;
    int rc;
    if (!env->st) return admin_line(out, NULL, 1, admin_no_store(env), err);
    if (to) {
        path = lc_strdup(to);
    } else {
        /* Beside the stores, never in the working folder: it carries stored secrets. */
        char *dir = admin_lcm_dir(env);
        admin_stamp(stamp, sizeof stamp);
        path = dir ? lc_asprintf("%s/lcm-export-%s-%s.jsonl", dir, env->session_id ? env->session_id : "session",
                                 stamp)
                   : NULL;
        free(dir);
    }
    if (!path) return lc_errf(err, LC_NOMEM, "out of memory");
    int64_t messages = store_message_count(env->st);
    admin_progress(env, 0, messages);
    if (maint_export(env->st, env->session_id, path, &rows, &e) != LC_OK) {
        rc = admin_line(out, NULL, 1, lc_asprintf("%s export failed: %s", env->cmd, e ? e : "?"), err);
        goto done;
    }
    admin_progress(env, messages, messages);
    tp = admin_tilde(path);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "session", env->session_id ? env->session_id : "");
    cJSON_AddStringToObject(j, "path", path);
    cJSON_AddNumberToObject(j, "rows", (double)rows);
    cJSON_AddNumberToObject(j, "messages", (double)messages);
    out->metric = rows;
    rc = admin_line(out, j, 0,
                    lc_asprintf("export: %lld rows to %s (verbatim, secrets included; mode 0600)", (long long)rows,
                                tp ? tp : path),
                    err);
done:
    free(path);
    free(tp);
    free(e);
    return rc;
}

int admin_import(const admin_env *env, const char *path, admin_result *out, char **err)
{
    char *e = NULL;
    int64_t rows = 0;
    int rc;
    if (!env->st) return admin_line(out, NULL, 1, admin_no_store(env), err);
    if (!path)
        return admin_line(out, NULL, 1,
                          lc_asprintf("%s import: give the export file (%s import FILE.jsonl)", env->cmd, env->cmd),
                          err);
    if (maint_import(env->st, path, &rows, &e) != LC_OK) {
        rc = admin_line(out, NULL, 1, lc_asprintf("%s import refused: %s", env->cmd, e ? e : "?"), err);
    } else {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "rows", (double)rows);
        out->metric = rows;
        rc = admin_line(out, j, 0,
                        lc_asprintf("import: %lld rows added (existing rows kept); full-text index rebuilt",
                                    (long long)rows),
                        err);
    }
    free(e);
    return rc;
}

/* ---- report ---------------------------------------------------------------------------- */

int admin_report(const admin_env *env, admin_result *out, char **err)
{
    char *path = admin_metrics_path(env->home), *e = NULL;
    cJSON *rows = NULL;
    int rc;
    if (!path) return lc_errf(err, LC_NOMEM, "out of memory");
    if (metrics_load(path, env->session_id, &rows, NULL, &e) != LC_OK) {
        rc = admin_line(out, NULL, 1, lc_asprintf("%s report: %s", env->cmd, e ? e : "metrics unreadable"), err);
        goto done;
    }
    cJSON *j = cJSON_CreateObject(), *kinds = cJSON_CreateObject();
    if (env->session_id) cJSON_AddStringToObject(j, "session", env->session_id);
    else cJSON_AddNullToObject(j, "session");
    cJSON_AddNumberToObject(j, "rows", (double)cJSON_GetArraySize(rows));
    const cJSON *r;
    cJSON_ArrayForEach(r, rows)
    {
        const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "kind"));
        if (!k) continue;
        cJSON *n = cJSON_GetObjectItemCaseSensitive(kinds, k);
        if (n) cJSON_SetNumberValue(n, n->valuedouble + 1);
        else cJSON_AddNumberToObject(kinds, k, 1);
    }
    cJSON_AddItemToObject(j, "kinds", kinds);
    {
        char *m = metrics_report(rows, env->session_id);
        char *l = ledger_report(env->home, env->session_id, 0, j);
        rc = admin_line(out, j, 0, m && l ? lc_asprintf("%s\n%s", m, l) : NULL, err);
        free(m);
        free(l);
    }
done:
    cJSON_Delete(rows);
    free(path);
    free(e);
    return rc;
}

/* ---- doctor ---------------------------------------------------------------------------- */

static cJSON *admin_report_json(const maint_report *rep, const char *path)
{
    cJSON *j = cJSON_CreateObject(), *checks = cJSON_AddArrayToObject(j, "checks");
    cJSON_AddStringToObject(j, "path", path ? path : "");
    cJSON_AddNumberToObject(j, "schema", rep->schema_version);
    for (size_t i = 0; i < rep->n_checks; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "name", rep->checks[i].name);
        cJSON_AddNumberToObject(c, "count", (double)rep->checks[i].count);
        cJSON_AddBoolToObject(c, "info", rep->checks[i].info);
        if (rep->checks[i].sample) cJSON_AddStringToObject(c, "sample", rep->checks[i].sample);
        cJSON_AddItemToArray(checks, c);
    }
    cJSON_AddNumberToObject(j, "faults", (double)maint_report_faults(rep));
    cJSON_AddNumberToObject(j, "messages", (double)rep->messages);
    cJSON_AddNumberToObject(j, "removed", (double)rep->removed);
    cJSON_AddNumberToObject(j, "summaries", (double)rep->summaries);
    cJSON_AddNumberToObject(j, "dbBytes", (double)rep->db_bytes);
    cJSON_AddBoolToObject(j, "damaged", 0);
    return j;
}

/* No store open: a store file that is not a readable SQLite database (cut short,
 * overwritten) is named; repair moves it aside, kept, for the caller to build again. */
static int admin_doctor_damaged(const admin_env *env, int repair, admin_result *out, char **err)
{
    char *path = env->home && env->session_id ? catalog_path(env->home, env->session_id) : NULL;
    char *why = NULL, *moved = NULL, *e = NULL, *tp = NULL;
    int rc;
    if (!path || !store_file_damaged(path, &why)) {
        free(path);
        rc = admin_line(out, NULL, 1, admin_no_store(env), err);
        return rc == LC_OK ? LC_NOTFOUND : rc;
    }
    tp = admin_tilde(path);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "path", path);
    cJSON_AddBoolToObject(j, "damaged", 1);
    cJSON_AddStringToObject(j, "why", why ? why : "damaged");
    cJSON_AddNumberToObject(j, "faults", 1);
    if (!repair) {
        rc = admin_line(out, j, 1,
                        lc_asprintf("LCM doctor: %s is not a readable SQLite database (%s); LCM is not active.\n"
                                    "faults: 1 (%s doctor --repair moves it aside, kept, and rebuilds the store "
                                    "from the session file)",
                                    tp ? tp : path, why ? why : "damaged", env->cmd),
                        err);
        goto done;
    }
    char stamp[48];
    admin_stamp(stamp, sizeof stamp);
    if (maint_store_set_aside(path, stamp, &moved, &e) != LC_OK) {
        cJSON_Delete(j);
        rc = admin_line(out, NULL, 1,
                        lc_asprintf("%s doctor --repair failed (nothing changed): %s", env->cmd, e ? e : "?"), err);
        goto done;
    }
    char *tm = admin_tilde(moved);
    cJSON_AddStringToObject(j, "movedTo", moved);
    out->moved_to = moved;
    moved = NULL;
    rc = admin_line(out, j, 0,
                    lc_asprintf("repair: %s was not a readable SQLite database (%s); moved aside to %s (kept)",
                                tp ? tp : path, why ? why : "damaged", tm ? tm : out->moved_to),
                    err);
    free(tm);
done:
    free(path);
    free(why);
    free(moved);
    free(e);
    free(tp);
    return rc;
}

/* The maintenance that changes a store (doctor --repair, heal --apply, compact) takes the
 * store's "maintenance" lease, so two of them on any machines sharing the store never run
 * at once; a backend without leases goes on unguarded (its own write lock serializes the
 * writes). LC_OK: go on (*held says whether to drop it); LC_BUSY: refused, *out says why. */
#define ADMIN_LEASE "maintenance"
#define ADMIN_LEASE_MS (10 * 60 * 1000)
#define ADMIN_COMPACT_BATCH_MS 250 /* lcm compact: the nodes one commit carries, in time */
static int admin_lease_take(const admin_env *env, const char *verb, int *held, admin_result *out, char **err)
{
    char *holder = NULL, *e = NULL;
    int rc = store_lease_take(env->st, ADMIN_LEASE, ADMIN_LEASE_MS, &holder, &e);
    *held = rc == LC_OK;
    if (rc == LC_BUSY)
        rc = admin_line(out, NULL, 1,
                        lc_asprintf("%s %s: another maintenance run holds this store (%s); nothing changed, try "
                                    "again when it ends",
                                    env->cmd, verb, holder ? holder : "?"),
                        err) == LC_OK ? LC_BUSY : LC_ERR;
    else rc = LC_OK; /* no lease kept by this backend, or it could not be read: the write lock still guards */
    free(holder);
    free(e);
    return rc;
}

int admin_doctor(const admin_env *env, int repair, admin_result *out, char **err)
{
    const lcm_config *cfg = env->cfg;
    maint_report rep = {0};
    maint_repair_stats rs = {0};
    char *e = NULL, *checks = NULL, *chain = NULL, *origin = NULL, *cpath = NULL, *tp = NULL, *tc = NULL;
    sbuf b = {0};
    zones_resolved z;
    int rc;
    cJSON *j = NULL;
    if (!env->st) return admin_doctor_damaged(env, repair, out, err);
    if (repair) {
        int held = 0;
        if ((rc = admin_lease_take(env, "doctor --repair", &held, out, err)) != LC_OK) return rc == LC_BUSY ? LC_OK : rc;
        int mr = maint_repair(env->st, getpid(), &rs, &e);
        if (held) store_lease_drop(env->st, ADMIN_LEASE);
        if (mr != LC_OK) {
            rc = admin_line(out, NULL, 1,
                            lc_asprintf("%s doctor --repair failed (nothing changed): %s", env->cmd, e ? e : "?"),
                            err);
            goto done;
        }
        sb_printf(&b, "repair: full-text index rebuilt; %lld summaries dropped (span or child gone), "
                      "%lld duplicate spans removed, %lld dead-writer runs reaped, %lld orphan rows deleted\n",
                  (long long)rs.dropped, (long long)rs.duplicates, (long long)rs.reaped, (long long)rs.orphans);
    }
    if (maint_doctor(env->st, getpid(), &rep, &e) != LC_OK) {
        sb_free(&b);
        rc = admin_line(out, NULL, 1, lc_asprintf("%s doctor failed: %s", env->cmd, e ? e : "?"), err);
        goto done;
    }
    j = admin_report_json(&rep, store_path(env->st));
    if (repair) {
        cJSON *r = cJSON_AddObjectToObject(j, "repaired");
        cJSON_AddNumberToObject(r, "dropped", (double)rs.dropped);
        cJSON_AddNumberToObject(r, "duplicates", (double)rs.duplicates);
        cJSON_AddNumberToObject(r, "reaped", (double)rs.reaped);
        cJSON_AddNumberToObject(r, "orphans", (double)rs.orphans);
    }
    tp = admin_tilde(store_path(env->st));
    sb_printf(&b, "LCM doctor: %s (schema %d)\n", tp ? tp : "?", rep.schema_version);
    checks = maint_report_format(&rep);
    sb_printf(&b, "%s\n", checks ? checks : "?");
    int64_t faults = maint_report_faults(&rep);
    char *fx = faults ? lc_asprintf(" (%s doctor --repair fixes them)", env->cmd) : NULL;
    sb_printf(&b, "faults: %lld%s\n", (long long)faults, fx ? fx : "");
    free(fx);
    if (admin_resolve(env, &z) == LC_OK) {
        char *t = zones_format_thresholds(&z);
        sb_printf(&b, "thresholds: %s; zone %s at %zu tokens of %ld\n", t ? t : "?",
                  zones_zone_name(zones_classify(&z, (long)env->occupancy)), env->occupancy, z.window);
        free(t);
    }
    chain = admin_chain(cfg);
    origin = admin_config_origin(cfg);
    cpath = admin_config_path(env->home);
    tc = cpath ? admin_tilde(cpath) : NULL;
    sb_printf(&b, "summarizer chain that runs: %s (config: %s)\n", chain ? chain : "?", origin ? origin : "?");
    sb_printf(&b, "config: %s (%s%s)\n", tc ? tc : "lcm.json",
              cfg->file_state == LCM_CONFIG_LOADED   ? "loaded"
              : cfg->file_state == LCM_CONFIG_CORRUPT ? "corrupt: defaults apply"
                                                      : "absent: defaults",
              cfg->n_problems ? "; problems reported at session start" : "");
    sb_printf(&b, "footprint: %lld KB, %lld messages (%lld removed), %lld summaries, payload %lld bytes, "
                  "%lld file handles, %lld runs",
              (long long)(rep.db_bytes / 1024), (long long)rep.messages, (long long)rep.removed,
              (long long)rep.summaries, (long long)rep.payload_bytes, (long long)rep.file_handles,
              (long long)rep.runs);
    cJSON_AddStringToObject(j, "chain", chain ? chain : "?");
    out->metric = rs.dropped + rs.duplicates + rs.reaped;
    rc = admin_finish(&b, j, faults ? 1 : 0, out, err);
    j = NULL;
done:
    cJSON_Delete(j);
    maint_report_free(&rep);
    free(checks);
    free(chain);
    free(origin);
    free(cpath);
    free(tc);
    free(tp);
    free(e);
    return rc;
}

/* ---- gc / retention / restore -------------------------------------------------------- */

cJSON *admin_list_stores(sbuf *b, const catalog_list *l)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < l->n; i++) {
        char *tp = admin_tilde(l->v[i].path);
        sb_printf(b, "  %s  session %s, schema %d, %lld KB\n", tp ? tp : l->v[i].path, l->v[i].session_id,
                  l->v[i].schema_version, (long long)(l->v[i].bytes / 1024));
        free(tp);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", l->v[i].path);
        cJSON_AddStringToObject(o, "session", l->v[i].session_id);
        cJSON_AddNumberToObject(o, "schema", l->v[i].schema_version);
        cJSON_AddNumberToObject(o, "bytes", (double)l->v[i].bytes);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* A plan's answer before it is applied: its stores, and `count_key` (what --apply does) at 0. */
void admin_plan_json(cJSON *j, const catalog_list *plan, const char *count_key)
{
    sbuf text = {0};
    cJSON_AddItemToObject(j, "stores", admin_list_stores(&text, plan));
    sb_free(&text);
    cJSON_AddNumberToObject(j, count_key, 0);
}

static void admin_mb(char *buf, size_t n, int64_t bytes)
{
    snprintf(buf, n, "%.1f MB", (double)bytes / 1e6);
}

int admin_retention(const admin_env *env, int apply, admin_result *out, char **err)
{
    const lcm_retention *r = env->cfg ? &env->cfg->retention : NULL;
    catalog_list plan = {0};
    char *e = NULL, *dir = NULL, *xpath = NULL;
    char total_s[32], kept_s[32];
    int64_t total = 0, kept = 0;
    sbuf b = {0};
    int rc;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "apply", apply);
    if (!r || !r->enabled) {
        rc = admin_line(out, j, 0,
                        lc_strdup("retention: not configured (lcm.json \"retention\": {\"days\": N, \"maxGB\": X}); "
                                  "nothing is ever deleted"),
                        err);
        goto done;
    }
    int64_t cap = r->max_gb > 0 ? (int64_t)(r->max_gb * 1e9) : 0;
    if (maint_retention_plan(env->home, r->days, cap, env->session_id, lc_epoch_ms(), &plan, &total, &kept,
                             &e) != LC_OK) {
        rc = admin_line(out, j, 1, lc_asprintf("%s gc --retention failed: %s", env->cmd, e ? e : "?"), err);
        goto done;
    }
    admin_mb(total_s, sizeof total_s, total);
    admin_mb(kept_s, sizeof kept_s, kept);
    admin_plan_json(j, &plan, "deleted");
    cJSON_AddNumberToObject(j, "homeBytes", (double)total);
    cJSON_AddNumberToObject(j, "keptBytes", (double)kept);
    if (plan.n == 0) {
        rc = admin_line(out, j, 0, lc_asprintf("retention: nothing to delete (the home's stores: %s)", total_s), err);
        goto done;
    }
    if (!apply) {
        sb_printf(&b, "retention (dry run): %zu stores would go (home %s -> %s; live sessions are never taken):\n",
                  plan.n, total_s, kept_s);
        cJSON_Delete(admin_list_stores(&b, &plan));
        sb_printf(&b, "%s gc --retention --apply %s, then DELETES them", env->cmd,
                  r->archive ? "archives them to lcm-archive-<ts>.jsonl.gz beside the stores (`lcm import` restores "
                               "it)"
                             : "does not archive (retention.archive: false)");
        rc = admin_finish(&b, j, 1, out, err);
        goto done;
    }
    if (lcm_config_home_guard(env->home, &e) != LC_OK) {
        rc = admin_line(out, j, 1, lc_asprintf("%s gc --retention: %s", env->cmd, e ? e : "refused"), err);
        goto done;
    }
    char stamp[48];
    admin_stamp(stamp, sizeof stamp);
    size_t deleted = 0;
    int arc = LC_OK;
    if (r->archive) {
        dir = admin_lcm_dir(env);
        if (!dir || !(xpath = lc_asprintf("%s/lcm-archive-%s.jsonl.gz", dir, stamp))) {
            cJSON_Delete(j);
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        arc = maint_retention_apply(&plan, xpath, &deleted, &e);
        cJSON_AddStringToObject(j, "archivePath", xpath);
    } else {
        for (size_t i = 0; i < plan.n && arc == LC_OK; i++)
            if ((arc = catalog_retire(&plan.v[i], &e)) == LC_OK) deleted++;
    }
    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "deleted"), (double)deleted);
    out->metric = (int64_t)deleted;
    if (arc != LC_OK) {
        rc = admin_line(out, j, 1,
                        lc_asprintf("%s gc --retention --apply: %s (%zu of %zu stores deleted)", env->cmd,
                                    e ? e : "failed", deleted, plan.n),
                        err);
        goto done;
    }
    char *tp = xpath ? admin_tilde(xpath) : NULL;
    sb_printf(&b, "retention: %s%s%s deleted %zu stores (home %s -> %s):\n", tp ? "archived to " : "", tp ? tp : "",
              tp ? ", then" : "", deleted, total_s, kept_s);
    free(tp);
    cJSON_Delete(admin_list_stores(&b, &plan));
    if (b.len) b.p[--b.len] = '\0';
    rc = admin_finish(&b, j, 0, out, err);
done:
    catalog_list_free(&plan);
    free(dir);
    free(xpath);
    free(e);
    return rc;
}

int admin_restore(const admin_env *env, const char *path, admin_result *out, char **err)
{
    size_t stores = 0;
    int64_t rows = 0;
    char *e = NULL;
    cJSON *j = cJSON_CreateObject();
    int rc;
    if (maint_restore(env->home, path, &stores, &rows, &e) != LC_OK) {
        rc = admin_line(out, j, 1, lc_asprintf("%s import %s: %s", env->cmd, path, e ? e : "failed"), err);
    } else {
        cJSON_AddNumberToObject(j, "stores", (double)stores);
        cJSON_AddNumberToObject(j, "rows", (double)rows);
        out->metric = rows;
        rc = admin_line(out, j, 0, lc_asprintf("restored %s: %zu stores, %lld rows", path, stores, (long long)rows), err);
    }
    free(e);
    return rc;
}

int admin_gc(const admin_env *env, const char *const *session_dirs, size_t n_dirs, int apply, admin_result *out,
             char **err)
{
    catalog_list plan = {0};
    char *e = NULL, *dir = NULL, *xpath = NULL;
    sbuf b = {0};
    int rc;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "apply", apply);
    if (maint_gc_plan(env->home, session_dirs, n_dirs, env->session_id, &plan, &e) != LC_OK) {
        rc = admin_line(out, j, 1, lc_asprintf("%s gc failed: %s", env->cmd, e ? e : "?"), err);
        goto done;
    }
    admin_plan_json(j, &plan, "deleted");
    if (plan.n == 0) {
        rc = admin_line(out, j, 0, lc_strdup("gc: no retired stores (every store's session file still exists)"), err);
        goto done;
    }
    if (!apply) {
        sb_printf(&b, "gc (dry run): %zu retired stores (no session file names them):\n", plan.n);
        cJSON_Delete(admin_list_stores(&b, &plan));
        sb_printf(&b, "%s gc --apply exports them to lcm-export-gc-<ts>.jsonl beside the stores, then "
                      "DELETES them: cross-session search can no longer read them",
                  env->cmd);
        rc = admin_finish(&b, j, 1, out, err);
        goto done_nojson;
    }
    if (lcm_config_home_guard(env->home, &e) != LC_OK) {
        rc = admin_line(out, j, 1, lc_asprintf("%s gc: %s", env->cmd, e ? e : "refused"), err);
        goto done;
    }
    char stamp[48];
    admin_stamp(stamp, sizeof stamp);
    dir = admin_lcm_dir(env);
    xpath = dir ? lc_asprintf("%s/lcm-export-gc-%s.jsonl", dir, stamp) : NULL;
    size_t deleted = 0;
    if (!xpath) {
        cJSON_Delete(j);
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done_nojson;
    }
    admin_progress(env, 0, (long long)plan.n);
    int arc = maint_gc_apply(&plan, xpath, &deleted, &e);
    admin_progress(env, (long long)deleted, (long long)plan.n);
    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "deleted"), (double)deleted);
    cJSON_AddStringToObject(j, "exportPath", xpath);
    out->metric = (int64_t)deleted;
    if (arc != LC_OK) {
        rc = admin_line(out, j, 1,
                        lc_asprintf("%s gc --apply: %s (%zu of %zu stores deleted)", env->cmd, e ? e : "failed",
                                    deleted, plan.n),
                        err);
        goto done;
    }
    char *tp = admin_tilde(xpath);
    sb_printf(&b, "gc: exported %zu stores to %s, then deleted them:\n", plan.n, tp ? tp : xpath);
    free(tp);
    cJSON_Delete(admin_list_stores(&b, &plan));
    if (b.len) b.p[--b.len] = '\0';
    rc = admin_finish(&b, j, 0, out, err);
    goto done_nojson;
done:
    sb_free(&b);
done_nojson:
    catalog_list_free(&plan);
    free(dir);
    free(xpath);
    free(e);
    return rc;
}

/* ---- diagnose ------------------------------------------------------------------------------ */

int admin_diagnose(const admin_env *env, const maint_diag_input *host, const char *save, admin_result *out,
                   char **err)
{
    char *e = NULL, *pin = NULL, *thr = NULL, *block = NULL, *mpath = admin_metrics_path(env->home);
    cJSON *rows = NULL;
    zones_resolved z;
    project_pin pp;
    int rc;
    maint_diag_input in = *host;
    if (env->st && project_pin_get(env->st, &pp, NULL) == LC_OK) pin = project_pin_describe(&pp);
    if (admin_resolve(env, &z) == LC_OK) thr = zones_format_thresholds(&z);
    /* Unreadable metrics leave the rows out: the block still helps. */
    if (mpath && metrics_load(mpath, env->session_id ? env->session_id : "-", &rows, NULL, NULL) != LC_OK)
        rows = NULL;
    in.session_id = env->session_id;
    in.st = env->st;
    in.store_path = env->st ? store_path(env->st) : NULL;
    in.pin = pin ? pin : "none";
    in.thresholds = thr;
    in.model = env->model;
    in.window = env->window;
    char *chain = admin_chain(env->cfg), *cpath = admin_config_path(env->home);
    cJSON *cj = lcm_config_to_json(env->cfg);
    in.chain = chain;
    in.config = cj;
    in.config_path = cpath;
    in.metrics_rows = rows;
    block = maint_diagnose(&in);
    if (!block) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
    } else if (!save) {
        rc = admin_line(out, NULL, 0, block, err);
        block = NULL;
    } else if (maint_diag_save(save, block, &e) != LC_OK) {
        rc = admin_line(out, NULL, 1, lc_asprintf("%s diagnose --save failed: %s", env->cmd, e ? e : "?"), err);
    } else {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "path", save);
        cJSON_AddNumberToObject(j, "bytes", (double)strlen(block) + 1);
        rc = admin_line(out, j, 0,
                        lc_asprintf("diagnose: %zu bytes written to %s (mode 0600)", strlen(block) + 1, save), err);
    }
    free(block);
    free(pin);
    free(thr);
    free(chain);
    free(cpath);
    free(mpath);
    free(e);
    cJSON_Delete(cj);
    cJSON_Delete(rows);
    return rc;
}

/* ---- heal / compact -------------------------------------------------------------------- */

int admin_heal(const admin_env *env, summ_ctx *sc, int apply, int max_nodes, admin_result *out, char **err)
{
    const lcm_config *cfg = env->cfg;
    dag_heal_opts o = {0};
    dag_heal_report r = {0};
    char *e = NULL;
    int rc;
    if (!env->st || !sc) return admin_line(out, NULL, 1, admin_no_store(env), err);
    o.apply = apply;
    o.max_nodes = max_nodes;
    o.tokens_per_heal = cfg ? cfg->summarizer_tokens_per_heal : 120000;
    o.heal_source_tokens = cfg ? lcm_config_heal_source_tokens(cfg) : 9600;
    o.summary_tokens = cfg ? cfg->summary_tokens : 1200;
    int held = 0;
    if (apply && (rc = admin_lease_take(env, "heal --apply", &held, out, err)) != LC_OK) return rc == LC_BUSY ? LC_OK : rc;
    int hr = dag_heal(env->st, sc, &o, &r, &e);
    if (held) store_lease_drop(env->st, ADMIN_LEASE);
    if (hr != LC_OK) {
        rc = admin_line(out, NULL, 1, lc_asprintf("%s heal: %s", env->cmd, e ? e : "failed"), err);
        goto done;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "apply", apply);
    cJSON_AddNumberToObject(j, "candidates", r.candidates);
    cJSON_AddNumberToObject(j, "healed", r.healed);
    cJSON_AddNumberToObject(j, "unchanged", r.unchanged);
    cJSON_AddNumberToObject(j, "blocked", r.blocked);
    cJSON_AddBoolToObject(j, "budgetStopped", r.budget_stopped);
    cJSON_AddNumberToObject(j, "billedTokens", (double)r.billed_tokens);
    out->metric = r.healed;
    rc = admin_line(out, j, !apply && r.candidates > 0,
                    lc_asprintf("heal (%s): %d mechanical node(s), %d healed, %d unchanged, %d blocked "
                                "(source beyond eight windows), %s%ld tokens billed\n%s",
                                apply ? "apply" : "dry run", r.candidates, r.healed, r.unchanged, r.blocked,
                                r.budget_stopped ? "stopped by summarizerTokensPerHeal, " : "", r.billed_tokens,
                                r.text ? r.text : ""),
                    err);
    /* admin_line marks status 1 with an "error" field; a dry run with work is not one */
    cJSON_DeleteItemFromObjectCaseSensitive(out->json, "error");
done:
    dag_heal_report_free(&r);
    free(e);
    return rc;
}

int admin_compact(const admin_env *env, summ_ctx *sc, int max_rounds, admin_result *out, char **err)
{
    const lcm_config *cfg = env->cfg;
    int64_t pending = 0, left = 0;
    int leaves = 0, condensed = 0, passes = 0, rc, in_tx = 0;
    char *e = NULL;
    if (!env->st || !sc) return admin_line(out, NULL, 1, admin_no_store(env), err);
    if (max_rounds <= 0) max_rounds = 1000;
    int held = 0;
    if ((rc = admin_lease_take(env, "compact", &held, out, err)) != LC_OK) return rc == LC_BUSY ? LC_OK : rc;
    if (dag_uncovered(env->st, 0, &pending, &e) != LC_OK) goto failed;
    admin_progress(env, 0, pending);
    /* Everything stored is history here (no live tail to keep): flush until nothing is left. */
    dag_opts o = {.keep_recent_tokens = 0, .leaf_chunk_tokens = cfg->leaf_chunk_tokens,
                  .summary_tokens = cfg->summary_tokens, .block_budget = cfg->summary_tokens * 8, .flush = 1,
                  .max_nodes = 1};
    /* The bar follows the messages each pass's leaves cover; counting what is left after
     * every pass read every uncovered row each time (a 56k-message store: 591 passes, 20 s
     * of 26). The count that is reported is taken once, at the end. */
    int64_t covered = 0;
    /* The passes commit in batches of about ADMIN_COMPACT_BATCH_MS (each node stays all or
     * nothing inside): a commit per node wrote the same index and meta pages to the log
     * hundreds of times and checkpointed every few nodes. A batch holds the write lock
     * no longer than that, and a crash loses at most one batch (the next run redoes it). */
    double batch_at = 0;
    for (; passes < max_rounds; passes++) {
        dag_stats ds;
        if (!in_tx) {
            if (store_tx_begin(env->st, &e) != LC_OK) goto failed;
            in_tx = 1;
            batch_at = lc_now_ms();
        }
        summ_pass_begin(sc);
        /* Taken again: a long compaction keeps its lease while it works. */
        if (held) store_lease_take(env->st, ADMIN_LEASE, ADMIN_LEASE_MS, NULL, NULL);
        if (dag_pass(env->st, sc, &o, &ds, &e) != LC_OK) goto failed;
        leaves += ds.leaves;
        condensed += ds.condensed;
        covered += ds.messages;
        int last = ds.leaves + ds.condensed == 0 && !ds.conflicts;
        if (last || lc_now_ms() - batch_at >= ADMIN_COMPACT_BATCH_MS) {
            in_tx = 0;
            if (store_tx_commit(env->st, &e) != LC_OK) goto failed;
        }
        admin_progress(env, covered < pending ? covered : pending, pending);
        if (last) break;
    }
    if (in_tx) {
        in_tx = 0;
        if (store_tx_commit(env->st, &e) != LC_OK) goto failed;
    }
    if (dag_uncovered(env->st, 0, &left, &e) != LC_OK) goto failed;
    admin_progress(env, pending - left, pending);
    if (held) store_lease_drop(env->st, ADMIN_LEASE);
    cJSON *j = cJSON_CreateObject();
    int64_t summaries = store_summary_count(env->st);
    cJSON_AddStringToObject(j, "session", env->session_id ? env->session_id : "");
    cJSON_AddNumberToObject(j, "leaves", leaves);
    cJSON_AddNumberToObject(j, "condensed", condensed);
    cJSON_AddNumberToObject(j, "passes", passes);
    cJSON_AddNumberToObject(j, "summaries", (double)summaries);
    cJSON_AddNumberToObject(j, "uncovered", (double)left);
    out->metric = leaves + condensed;
    rc = admin_line(out, j, 0,
                    lc_asprintf("compact %s: %d leaves and %d condensed nodes made in %d passes; %lld summaries, "
                                "%lld messages left uncovered",
                                env->session_id ? env->session_id : "?", leaves, condensed, passes,
                                (long long)summaries, (long long)left),
                    err);
    free(e);
    return rc;
failed:
    /* The nodes of the open batch are whole (a failed one was undone): keep them. */
    if (in_tx && store_tx_commit(env->st, NULL) != LC_OK) store_tx_rollback(env->st);
    if (held) store_lease_drop(env->st, ADMIN_LEASE);
    rc = admin_line(out, NULL, 1,
                    lc_asprintf("%s compact %s: %s (%d leaves, %d condensed kept)", env->cmd,
                                env->session_id ? env->session_id : "?", e ? e : "failed", leaves, condensed),
                    err);
    free(e);
    return rc;
}
