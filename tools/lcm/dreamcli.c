/*
 * dreamcli.c -- the `lcm dream` and `lcm contracts` verbs (see dreamcli.h): parse --home,
 * load lcm.json, hand the rest of the arguments to the engine body.
 */
#include "dreamcli.h"

#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "cliview.h"
#include "config.h"
#include "contracts.h"
#include "dream.h"
#include "ledger.h"
#include "llm_http.h"
#include "util.h"

int dreamcli_owns(const char *verb) { return !strcmp(verb, "dream") || !strcmp(verb, "contracts"); }

int dreamcli_run(int argc, char **argv)
{
    const char *verb = argv[1], *home_opt = NULL, *project = NULL;
    const char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int n = 0, code = 1;
    char *home = NULL, *cwd = NULL, *cfg_path = NULL, *out = NULL, *err = NULL, *actor = NULL;
    lcm_config cfg;
    int have_cfg = 0;
    if (!rest) return 1;
    char *abs_project = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--home") && i + 1 < argc) home_opt = argv[++i];
        else if (!strcmp(argv[i], "--cwd") && i + 1 < argc) project = argv[++i];
        else if (!strcmp(argv[i], "--project") && i + 1 < argc && !abs_project) {
            /* Stores record the folder as an absolute path: `--project .` means this one. */
            rest[n++] = argv[i++];
            abs_project = realpath(argv[i], NULL);
            rest[n++] = abs_project ? abs_project : argv[i];
        } else rest[n++] = argv[i];
    }
    home = cliview_home(home_opt);
    cwd = getcwd(NULL, 0);
    cfg_path = home ? admin_config_path(home) : NULL;
    const char *user = getenv("USER");
    actor = lc_asprintf("lcm %s (user %s)", verb, user && *user ? user : "?");
    if (!home || !cwd || !cfg_path || !actor) {
        fprintf(stderr, "lcm %s: out of memory\n", verb);
        goto done;
    }
    if (lcm_config_load(cfg_path, &cfg, &err) != LC_OK) {
        fprintf(stderr, "lcm: lcm.json: %s; defaults apply\n", err ? err : "unreadable");
        free(err);
        err = NULL;
        lcm_config_defaults(&cfg);
    }
    have_cfg = 1;
    int rc;
    if (!strcmp(verb, "dream")) {
        llm_http_routes routes = {cfg.base_urls, cfg.n_base_urls, (cfg.summary_timeout_ms + 999) / 1000};
        dream_opts o = {.home = home, .actor = actor};
        ledger *led = NULL;
        ledger_new(home, NULL, &cfg, &led, NULL);
        ledger_model lm = {led, LEDGER_DREAM, llm_http_summarizer, &routes};
        dream_opts_from_config(&cfg, ledger_model_fn, &lm, &o);
        rc = dream_command(&o, project ? project : cwd, n, rest, &out, &err);
        ledger_free(led);
    } else {
        rc = contracts_command(home, n, rest, actor, project, &out, &err);
    }
    if (rc == LC_OK) {
        fputs(out, stdout);
        if (*out && out[strlen(out) - 1] != '\n') fputc('\n', stdout);
        code = 0;
    } else {
        fprintf(stderr, "lcm %s: %s\n", verb, err ? err : "failed");
        code = 1;
    }
done:
    if (have_cfg) lcm_config_free(&cfg);
    free(rest);
    free(abs_project);
    free(home);
    free(cwd);
    free(cfg_path);
    free(out);
    free(err);
    free(actor);
    return code;
}
