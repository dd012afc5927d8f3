/*
 * fuzz_config.c -- libFuzzer target for `lcm.json`: arbitrary bytes through the strict
 * JSON check and lcm_config_parse, then every reader of the parsed config (per-model
 * zones, heal budget, base URLs, the effective-config JSON). A parse must never fail on
 * content, only on OOM, so a non-OK return is itself reported as a crash; likewise the
 * effective config must load cleanly and be a fixed point of parse + to_json.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *err = NULL;
    lcm_config cfg;
    memset(&cfg, 0, sizeof cfg);
    (void)lcm_json_strict_check((const char *)data, size, &err);
    free(err);
    err = NULL;
    if (lcm_config_parse((const char *)data, size, &cfg, &err) != LC_OK) abort();
    (void)lcm_config_zones_for(&cfg, NULL);
    for (size_t i = 0; i < cfg.n_model_zones; i++)
        (void)lcm_config_zones_for(&cfg, cfg.model_zones[i].model);
    (void)lcm_config_heal_source_tokens(&cfg);
    for (size_t i = 0; i < cfg.n_base_urls; i++)
        (void)lcm_config_base_url(&cfg, cfg.base_urls[i].provider);
    (void)lcm_config_base_url(&cfg, "openrouter");
    cJSON *j = lcm_config_to_json(&cfg);
    char *s = cJSON_PrintUnformatted(j);
    /* The effective config is itself a valid config: it must parse cleanly. */
    if (s) {
        lcm_config again;
        memset(&again, 0, sizeof again);
        char *e2 = NULL;
        if (lcm_config_parse(s, strlen(s), &again, &e2) != LC_OK) abort();
        if (again.file_state != LCM_CONFIG_LOADED) abort();
        /* ... and a fixed point: reading it back changes nothing. */
        cJSON *j2 = lcm_config_to_json(&again);
        char *s2 = cJSON_PrintUnformatted(j2);
        if (s2 && strcmp(s, s2) != 0) abort();
        free(s2);
        cJSON_Delete(j2);
        lcm_config_free(&again);
        free(e2);
    }
    free(s);
    cJSON_Delete(j);
    lcm_config_free(&cfg);
    free(err);
    return 0;
}
