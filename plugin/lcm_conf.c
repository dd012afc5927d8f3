/*
 * lcm_conf.c -- the session's effective lcm.json and its telemetry handle (the cfg,
 * cfg_session and metrics fields of struct lcm_glue): loaded or opened at first use, every
 * normalization reported once per session. Below every other LCM file of the plugin: it
 * calls only the host (hostcall.c) and the engine.
 */
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "lcm.h"
#include "metrics.h"
#include "util.h"

void lcm_conf_metric(lc_plugin *p, const char *kind, const cJSON *fields)
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

void lcm_conf_metric_kv(lc_plugin *p, const char *kind, const char *k1, const char *v1,
                              const char *k2, double v2)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return;
    if (k1) cJSON_AddStringToObject(o, k1, v1 ? v1 : "");
    if (k2) cJSON_AddNumberToObject(o, k2, v2);
    lcm_conf_metric(p, kind, o);
    cJSON_Delete(o);
}

const struct lcm_config *lcm_conf_get(lc_plugin *p)
{
    if (!p->lcm) return NULL;
    const char *sid = p->session_id ? p->session_id : "";
    if (p->lcm->cfg && p->lcm->cfg_session && !strcmp(p->lcm->cfg_session, sid)) return p->lcm->cfg;
    lcm_config *cfg = calloc(1, sizeof *cfg);
    char *path = admin_config_path(p->agent_home), *e = NULL;
    if (!cfg || !path) goto fail;
    if (lcm_config_load(path, cfg, &e) != LC_OK) {
        /* An unreadable file is reported like a corrupt one: defaults apply. */
        lcm_config_free(cfg);
        memset(cfg, 0, sizeof *cfg);
        if (lcm_config_defaults(cfg) != LC_OK) goto fail;
        plugin_notify(p, AP_LEVEL_WARNING, "lcm.json: %s; defaults apply", e ? e : "unreadable");
        lcm_conf_metric_kv(p, METRIC_CONFIG_PROBLEM, "detail", e, NULL, 0);
    }
    for (size_t i = 0; i < cfg->n_problems; i++) {
        plugin_notify(p, AP_LEVEL_WARNING, "lcm.json: %s", cfg->problems[i]);
        lcm_conf_metric_kv(p, METRIC_CONFIG_PROBLEM, "detail", cfg->problems[i], NULL, 0);
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

void lcm_conf_free(lc_plugin *p)
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
