/*
 * lcm_cmd.c -- the /lcm command suite: status (the default), settings (the cockpit as
 * text, and live edits written to lcm.json), backup, export, import, report, doctor
 * [--repair], gc [--apply], migrate [--apply], heal [--apply] and diagnose [--save FILE];
 * dream and contracts dispatch into engine/memory/dream.h and engine/memory/contracts.h.
 * Owns the command's registration, the parsing of the command line and the finish
 * (metrics, a rebuild after a repair); the effective config and the telemetry handle are
 * lcm_conf.c's. The command bodies are engine/lcm/admin.h, shared with the `lcm` CLI;
 * never writes the session.
 */
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "admin_migrate.h"
#include "config.h"
#include "contracts.h"
#include "dream.h"
#include "lcm.h"
#include "ledger.h"
#include "llm_http.h"
#include "metrics.h"
#include "util.h"

#define LCM_CMD_VERSION "0.1.0"

/* ---- the engine's inputs and the finish -------------------------------------------------- */

/* The request as last sent (after the projection) when the glue has one; else the raw
 * estimate of the last context call, or of the branch at session start. */
static size_t lcm_cmd_occupancy(lc_plugin *p)
{
    lcm_glue_view v;
    lcm_glue_view_get(p, &v);
    if (v.last_tokens > 0) return (size_t)v.last_tokens;
    return p->context_calls ? p->last_est_tokens : p->branch.occupancy;
}

static admin_env lcm_cmd_env(lc_plugin *p, const lcm_config *cfg)
{
    admin_env env = {.cmd = "/lcm", .home = p->agent_home, .session_id = p->session_id,
                     .st = p->lcm ? p->lcm->st : NULL, .cfg = cfg, .model = p->model,
                     .window = p->window > 0 ? p->window : 0, .window_effective = plugin_window(p),
                     .occupancy = lcm_cmd_occupancy(p)};
    env.no_store_why = p->lcm && p->lcm->open_error ? p->lcm->open_error : "no session";
    env.offline = p->lcm ? &p->lcm->off : NULL;
    return env;
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

/* The one finish: the text to show, and a maintenance metric when the work was done. */
static char *lcm_cmd_finish(lc_plugin *p, int rc, admin_result *r, const char *action, const char *field)
{
    char *text = rc == LC_OK || rc == LC_NOTFOUND ? r->text : NULL;
    if (text && action && r->status == 0)
        lcm_conf_metric_kv(p, METRIC_MAINT, "action", action, field, (double)r->metric);
    r->text = NULL;
    admin_result_free(r);
    return text;
}

/* ---- the verbs ------------------------------------------------------------------------------ */

static char *lcm_cmd_status(lc_plugin *p, const admin_env *env)
{
    admin_result r = {0};
    sbuf b = {0};
    char w[32], bw[32];
    if (admin_status(env, &r, NULL) != LC_OK) return NULL;
    sb_puts(&b, r.text);
    admin_result_free(&r);
    lcm_summ_status(p, &b);
    long left = p->lcm ? projstate_catchup_left(p->lcm->proj) : 0;
    if (left > 0)
        sb_printf(&b, "catch-up: %ld message(s) of this session are still being stored in the background; "
                  "requests carry the newest messages that fit until then\n", left);
    admin_tokens(w, sizeof w, (double)env->window);
    if (p->window_corr.corrected > 0 && p->window == p->window_corr.corrected) {
        admin_tokens(bw, sizeof bw, (double)p->window_believed);
        sb_printf(&b, "window: the host believes %s, corrected to %s (%s)", bw, w, p->window_corr.source);
    } else {
        sb_printf(&b, "window: %s (%s)", env->window > 0 ? w : "unknown",
                  env->window > 0 ? "host" : "default 128.0k");
    }
    /* Which host, and what it runs on (the Pi bridge names Pi and its model layer here). */
    if (p->host && p->host->host_name && *p->host->host_name) sb_printf(&b, "\nhost: %s", p->host->host_name);
    if (!b.oom) return sb_detach(&b);
    sb_free(&b);
    return NULL;
}

static char *lcm_cmd_settings(lc_plugin *p, const admin_env *env, char *rest)
{
    admin_result r = {0};
    char *key = lcm_cmd_word(&rest);
    if (!key) return lcm_cmd_finish(p, admin_settings_page(env, &r, NULL), &r, NULL, NULL);
    lcm_config *ncfg = calloc(1, sizeof *ncfg);
    if (!ncfg) return NULL;
    if (admin_settings_set(env, key, rest, ncfg, &r, NULL) != LC_OK || r.status) {
        lcm_config_free(ncfg);
        free(ncfg);
        return lcm_cmd_finish(p, LC_OK, &r, NULL, NULL);
    }
    /* Applies at once: the rest of the session reads the new config. */
    if (p->lcm->cfg) lcm_config_free(p->lcm->cfg);
    free(p->lcm->cfg);
    p->lcm->cfg = ncfg;
    p->lcm->redact = ncfg->redact_secrets;
    /* The chains and the worker copied the old values (and hold pointers into it). */
    if (p->lcm->summ) lcm_summ_open(p);
    return lcm_cmd_finish(p, LC_OK, &r, "settings", NULL);
}

/* With no store, doctor names a damaged store file; --repair moves it aside (the engine)
 * and builds the store again here from the session file, the source of truth. */
static char *lcm_cmd_doctor(lc_plugin *p, const admin_env *env, char *rest)
{
    admin_result r = {0};
    int repair = 0;
    for (char *w; (w = lcm_cmd_word(&rest));)
        if (!strcmp(w, "--repair")) repair = 1;
        else return lc_asprintf("/lcm doctor: unknown option '%s' (try --repair)", w);
    int rc = admin_doctor(env, repair, &r, NULL);
    if (rc == LC_OK && r.moved_to) {
        char *text;
        if (lcm_glue_attach(p) != LC_OK || !p->lcm->st) {
            text = lc_asprintf("%s; a new store did not open: %s", r.text,
                               p->lcm->open_error ? p->lcm->open_error : "?");
        } else {
            double n = (double)store_message_count(p->lcm->st);
            text = lc_asprintf("%s and rebuilt from the session file: %.0f messages stored; LCM is active", r.text, n);
            lcm_conf_metric_kv(p, METRIC_MAINT, "action", "rebuild", "messages", n);
        }
        admin_result_free(&r);
        return text;
    }
    cJSON *rep = rc == LC_OK && repair ? cJSON_GetObjectItemCaseSensitive(r.json, "repaired") : NULL;
    cJSON *o = rep ? cJSON_Duplicate(rep, 1) : NULL;
    if (o && cJSON_AddStringToObject(o, "action", "repair")) lcm_conf_metric(p, METRIC_MAINT, o);
    cJSON_Delete(o);
    return lcm_cmd_finish(p, rc, &r, NULL, NULL);
}

/* gc, migrate and heal take --apply (heal also --max-nodes N). */
static char *lcm_cmd_apply_verb(lc_plugin *p, const admin_env *penv, const char *verb, char *rest)
{
    admin_result r = {0};
    admin_env env = *penv;
    int apply = 0, heal = !strcmp(verb, "heal"), rc;
    long max_nodes = 0;
    for (char *w, *end; (w = lcm_cmd_word(&rest));) {
        if (!strcmp(w, "--apply")) {
            apply = 1;
        } else if (heal && !strcmp(w, "--max-nodes")) {
            char *n = lcm_cmd_word(&rest);
            max_nodes = n ? strtol(n, &end, 10) : 0;
            if (!n || *end || max_nodes <= 0) return lc_strdup("/lcm heal: --max-nodes takes a positive number");
        } else {
            return heal ? lc_asprintf("/lcm heal: unknown option '%s' (--apply, --max-nodes N)", w)
                        : lc_asprintf("/lcm %s: unknown option '%s' (try --apply)", verb, w);
        }
    }
    if (!heal && !p->agent_home) return lc_asprintf("/lcm %s: the host gave no agent home", verb);
    if (heal) {
        if (!p->lcm || !p->lcm->summ) env.st = NULL;
        if (env.st)
            lcm_conf_metric_kv(p, METRIC_HEAL_START, "mode", apply ? "apply" : "dry-run", "maxNodes",
                              (double)max_nodes);
        rc = admin_heal(&env, p->lcm ? p->lcm->summ : NULL, apply, (int)max_nodes, &r, NULL);
        if (rc == LC_OK && env.st && !cJSON_GetObjectItemCaseSensitive(r.json, "error"))
            lcm_conf_metric_kv(p, METRIC_HEAL_COMPLETE, "mode", apply ? "apply" : "dry-run", "healed",
                              (double)r.metric);
        return lcm_cmd_finish(p, rc, &r, NULL, NULL);
    }
    if (!strcmp(verb, "migrate")) {
        rc = admin_migrate(&env, apply, &r, NULL);
        int tried = apply && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.json, "stores")) > 0;
        return lcm_cmd_finish(p, rc, &r, tried ? "migrate" : NULL, "migrated");
    }
    /* A session lives in the host's sessions folder or beside the current session file. */
    char *sessions = lc_asprintf("%s/sessions", p->agent_home);
    char *sdir = p->session_file ? lc_strdup(p->session_file) : NULL;
    char *slash = sdir ? strrchr(sdir, '/') : NULL;
    if (slash) *slash = '\0';
    else if (sdir) strcpy(sdir, ".");
    const char *dirs[2] = {sessions, sdir};
    rc = admin_gc(&env, dirs, 2, apply, &r, NULL);
    free(sessions);
    free(sdir);
    return lcm_cmd_finish(p, rc, &r, apply && r.metric ? "gc" : NULL, "deleted");
}

static char *lcm_cmd_diagnose(lc_plugin *p, const admin_env *env, char *rest)
{
    admin_result r = {0};
    char *save = NULL;
    int want_save = 0;
    for (char *w; (w = lcm_cmd_word(&rest));) {
        if (!strcmp(w, "--save") || !strncmp(w, "--save=", 7)) {
            want_save = 1;
            save = w[6] ? w + 7 : lcm_cmd_word(&rest);
        } else {
            return lc_asprintf("/lcm diagnose: unknown option '%s' (try --save FILE)", w);
        }
    }
    if (want_save && (!save || !*save))
        return lc_strdup("/lcm diagnose --save: give a file path (the block was not printed)");
    maint_diag_input host = {.plugin_version = LCM_CMD_VERSION, .host_name = "agent host (ABI)",
                             .abi_version = AP_ABI_VERSION, .api_level = AP_API_LEVEL,
                             .mode = p->host && p->host->api_level ? "plugin" : "?",
                             .session_file = p->session_file, .session_format = 3};
    return lcm_cmd_finish(p, admin_diagnose(env, &host, save, &r, NULL), &r, NULL, NULL);
}

/* /lcm dream and /lcm contracts: the bodies `lcm dream` and `lcm contracts` run. */
static char *lcm_cmd_learned(lc_plugin *p, const lcm_config *cfg, const char *sub, const char *rest)
{
    char *out = NULL, *e = NULL;
    int rc;
    if (!p->agent_home) return lc_asprintf("/lcm %s: no agent home", sub);
    if (!strcmp(sub, "dream")) {
        llm_http_routes routes = {cfg->base_urls, cfg->n_base_urls, (cfg->summary_timeout_ms + 999) / 1000};
        dream_opts o = {.home = p->agent_home, .actor = "/lcm dream"};
        ledger *led = NULL;
        ledger_new(p->agent_home, p->session_id, cfg, &led, NULL);
        ledger_model lm = {led, LEDGER_DREAM, llm_http_summarizer, &routes};
        dream_opts_from_config(cfg, ledger_model_fn, &lm, &o);
        rc = dream_command_line(&o, p->cwd, rest, &out, &e);
        ledger_free(led);
    } else {
        rc = contracts_command_line(p->agent_home, rest, "/lcm contracts (agent host)", NULL, &out, &e);
    }
    char *text = rc == LC_OK ? out : lc_asprintf("/lcm %s: %s", sub, e ? e : "failed");
    if (rc != LC_OK) free(out);
    free(e);
    return text;
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
    "/lcm diagnose [--save F] one block for a bug report (<= 8 KB, no bodies, no paths)\n"
    "/lcm dream [--project DIR|--global] [--json]  patterns of past sessions, with lineage\n"
    "/lcm contracts list|show ID|approve ID|reject ID|retract ID --reason R|supersede ID --body B";

int lcm_cmd_run(lc_plugin *p, const char *args, char **out_text, char **err)
{
    char *copy = lc_strdup(args ? args : ""), *rest = copy, *sub, *text = NULL;
    admin_result r = {0};
    if (!copy) return lc_errf(err, AP_NOMEM, "out of memory");
    sub = lcm_cmd_word(&rest);
    /* Maintenance may repair, rebuild or retire what a background pass is working on. */
    if (sub && (!strcmp(sub, "doctor") || !strcmp(sub, "gc") || !strcmp(sub, "migrate") ||
                !strcmp(sub, "heal") || !strcmp(sub, "import")))
        lcm_summ_invalidate(p);
    const lcm_config *cfg = lcm_conf_get(p);
    admin_env env = lcm_cmd_env(p, cfg);
    if (!cfg) text = NULL;
    else if (!sub || !strcmp(sub, "status")) text = lcm_cmd_status(p, &env);
    else if (!strcmp(sub, "settings")) text = lcm_cmd_settings(p, &env, rest);
    else if (!strcmp(sub, "backup")) text = lcm_cmd_finish(p, admin_backup(&env, &r, NULL), &r, "backup", "bytes");
    else if (!strcmp(sub, "export"))
        text = lcm_cmd_finish(p, admin_export(&env, lcm_cmd_word(&rest), &r, NULL), &r, "export", "rows");
    else if (!strcmp(sub, "import"))
        text = lcm_cmd_finish(p, admin_import(&env, lcm_cmd_word(&rest), &r, NULL), &r, "import", "rows");
    else if (!strcmp(sub, "report")) {
        env.session_id = p->session_id ? p->session_id : "-"; /* no session: no rows */
        text = lcm_cmd_finish(p, admin_report(&env, &r, NULL), &r, NULL, NULL);
    }
    else if (!strcmp(sub, "doctor")) text = lcm_cmd_doctor(p, &env, rest);
    else if (!strcmp(sub, "gc") || !strcmp(sub, "migrate") || !strcmp(sub, "heal"))
        text = lcm_cmd_apply_verb(p, &env, sub, rest);
    else if (!strcmp(sub, "diagnose")) text = lcm_cmd_diagnose(p, &env, rest);
    else if (!strcmp(sub, "help")) text = lc_strdup(lcm_cmd_help);
    else if (!strcmp(sub, "dream") || !strcmp(sub, "contracts")) text = lcm_cmd_learned(p, cfg, sub, rest);
    else text = lc_asprintf("/lcm: unknown subcommand '%s'\n%s", sub, lcm_cmd_help);
    free(copy);
    if (!text) return lc_errf(err, AP_NOMEM, "out of memory");
    *out_text = text;
    return AP_OK;
}

static int lcm_cmd_command(void *ud, const char *args, char **out_text, char **err)
{
    lcm_reopen(ud); /* a store busy at start: the user asking is a moment to try again */
    lcm_summ_pump(ud);
    return lcm_cmd_run(ud, args, out_text, err);
}

int lcm_cmd_init(lc_plugin *p, char **err)
{
    return plugin_register_command(p, "lcm", "Lossless context: status and recall store", lcm_cmd_command, err);
}
