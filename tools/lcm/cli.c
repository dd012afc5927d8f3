/*
 * cli.c -- `lcm compact|doctor|export|backup|gc|migrate|heal|report` and `lcm status|
 * sessions --json` (see cli.h). Parses once, opens the stores through the catalog, runs
 * engine/lcm/admin.h per store and prints its text, or one JSON document with --json.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "admin.h"
#include "admin_migrate.h"
#include "catalog.h"
#include "clihelp.h"
#include "cliview.h"
#include "config.h"
#include "contracts.h"
#include "embed.h"
#include "hybrid.h"
#include "ledger.h"
#include "llm_http.h"
#include "progress.h"
#include "store.h"
#include "util.h"

typedef struct cli_opts {
    const char *verb, *home_opt, *session, *out, *after, *to;
    long limit, max_nodes;
    int json, apply, repair, all;
    int embeddings, force, retention;
} cli_opts;

/* Each verb and the options it takes ("" for none beyond --home and --json). */
static const struct cli_verb {
    const char *name;
    const char *opts;
} cli_verbs[] = {
    {"compact", " --session --all --after --limit "},
    {"doctor", " --session --repair --after --limit "},
    {"export", " --session --out "},
    {"backup", " --session --after --limit "},
    {"gc", " --apply --retention "},
    {"migrate", " --apply --to "},
    {"heal", " --session --apply --max-nodes --after --limit "},
    {"report", " --session "},
    {"status", " --session "},
    {"sessions", " --after --limit "},
    {"reindex", " --session --embeddings --force --after --limit "},
};

static const struct cli_verb *cli_find(const char *verb)
{
    for (size_t i = 0; i < sizeof cli_verbs / sizeof cli_verbs[0]; i++)
        if (!strcmp(verb, cli_verbs[i].name)) return &cli_verbs[i];
    return NULL;
}

int cli_owns(const char *verb, int argc, char **argv)
{
    const struct cli_verb *v = cli_find(verb);
    if (!v) return 0;
    if (strcmp(verb, "status") != 0 && strcmp(verb, "sessions") != 0) return 1;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--json")) return 1;
    return 0;
}

static int cli_usage_error(const char *verb, const char *fmt, const char *arg)
{
    fprintf(stderr, "lcm %s: ", verb);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (lcm %s --help)\n", verb);
    return CLI_EXIT_USAGE;
}

static int cli_parse(int argc, char **argv, cli_opts *o)
{
    const struct cli_verb *v = cli_find(argv[1]);
    o->verb = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        char probe[40];
        snprintf(probe, sizeof probe, " %s ", a);
        int common = !strcmp(a, "--home") || !strcmp(a, "--json");
        if (!common && (a[0] != '-' || !strstr(v->opts, probe))) {
            char near[72];
            const char *s = a[0] == '-' ? clihelp_nearest_opt(v->opts, a, near, sizeof near) : NULL;
            if (s) {
                fprintf(stderr, "lcm %s: unknown option %s (did you mean %s?) (lcm %s --help)\n", o->verb, a, s,
                        o->verb);
                return CLI_EXIT_USAGE;
            }
            return cli_usage_error(o->verb, a[0] == '-' ? "unknown option %s" : "unexpected argument %s", a);
        }
        int value = !strcmp(a, "--home") || !strcmp(a, "--session") || !strcmp(a, "--out") ||
                    !strcmp(a, "--after") || !strcmp(a, "--limit") || !strcmp(a, "--max-nodes") ||
                    !strcmp(a, "--to");
        if (value && (i + 1 >= argc || !argv[i + 1][0]))
            return cli_usage_error(o->verb, "%s needs a value", a);
        const char *val = value ? argv[++i] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--home")) o->home_opt = val;
        else if (!strcmp(a, "--session")) o->session = val;
        else if (!strcmp(a, "--out")) o->out = val;
        else if (!strcmp(a, "--after")) o->after = val;
        else if (!strcmp(a, "--to")) o->to = val;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--apply")) o->apply = 1;
        else if (!strcmp(a, "--repair")) o->repair = 1;
        else if (!strcmp(a, "--all")) o->all = 1;
        else if (!strcmp(a, "--embeddings")) o->embeddings = 1;
        else if (!strcmp(a, "--force")) o->force = 1;
        else if (!strcmp(a, "--retention")) o->retention = 1;
        else if (!strcmp(a, "--limit") || !strcmp(a, "--max-nodes")) {
            long n = strtol(val, &end, 10);
            if (*end || n <= 0) return cli_usage_error(o->verb, "%s takes a positive number", a);
            if (a[2] == 'l') o->limit = n;
            else o->max_nodes = n;
        }
    }
    if (o->session && !store_valid_id(o->session))
        return cli_usage_error(o->verb, "--session %s: not a session id", o->session);
    if (!strcmp(o->verb, "compact") && !o->session == !o->all)
        return cli_usage_error(o->verb, "%s", "give --session ID or --all");
    if (!strcmp(o->verb, "export") && !o->session) return cli_usage_error(o->verb, "%s", "give --session ID");
    if (!strcmp(o->verb, "reindex") && !o->embeddings)
        return cli_usage_error(o->verb, "%s", "give --embeddings (the one index it rebuilds)");
    if (o->session && o->after) return cli_usage_error(o->verb, "%s", "--after pages the stores: not with --session");
    return CLI_EXIT_OK;
}

/* ---- what a verb runs with ---------------------------------------------------------------- */

typedef struct cli_run_ctx {
    cli_opts o;
    char *home;
    lcm_config cfg;
    llm_http_routes routes;
    summ_ctx *sc;
    ledger *led;    /* the chain's cost ledger (ledger.h) */
    cJSON *doc;     /* --json: the document (one store's object, or {"stores":[...]}) */
    sbuf text;
    int status;     /* the worst admin_result status */
} cli_run_ctx;

static void cli_load_config(cli_run_ctx *c)
{
    char *path = admin_config_path(c->home), *e = NULL;
    if (!path || lcm_config_load(path, &c->cfg, &e) != LC_OK) {
        fprintf(stderr, "lcm: lcm.json: %s; defaults apply\n", e ? e : "unreadable");
        memset(&c->cfg, 0, sizeof c->cfg);
        lcm_config_defaults(&c->cfg);
    }
    for (size_t i = 0; i < c->cfg.n_problems; i++) fprintf(stderr, "lcm: lcm.json: %s\n", c->cfg.problems[i]);
    free(path);
    free(e);
}

/* The chain lcm.json names: provider/id entries through the summarizer's own HTTP clients
 * (baseUrls routes them); `auto` has no session model here and falls through to
 * extractive, the default. */
static int cli_summarizer(cli_run_ctx *c, const char *kind, char **err)
{
    if (c->sc) return LC_OK;
    if (!c->led && ledger_new(c->home, NULL, &c->cfg, &c->led, err) != LC_OK) return LC_NOMEM;
    c->routes = (llm_http_routes){c->cfg.base_urls, c->cfg.n_base_urls, (c->cfg.summary_timeout_ms + 999) / 1000};
    summ_config sc = {.chain = (const char *const *)c->cfg.summarizer, .n_chain = c->cfg.n_summarizer,
                      .tokens_per_call = c->cfg.summarizer_tokens_per_call,
                      .tokens_per_pass = c->cfg.summarizer_tokens_per_pass,
                      .model_fn = llm_http_summarizer, .ud = &c->routes,
                      .send_unmasked = !c->cfg.redact_secrets, .ledger = c->led, .ledger_kind = kind};
    return summ_create(&sc, &c->sc, err);
}

static admin_env cli_env(cli_run_ctx *c, const char *session, store *st)
{
    admin_env env = {.cmd = "lcm", .home = c->home, .session_id = session, .st = st, .cfg = &c->cfg,
                     .window_effective = LC_WINDOW_DEFAULT};
    return env;
}

/* Keep one result: its text for the terminal, its object for --json. */
static void cli_keep(cli_run_ctx *c, admin_result *r, int many)
{
    if (r->status > c->status) c->status = r->status;
    if (r->text) sb_printf(&c->text, "%s%s\n", c->text.len && many ? "\n" : "", r->text);
    if (many) {
        cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->doc, "stores");
        if (r->json) cJSON_AddItemToArray(arr, r->json);
    } else {
        cJSON_Delete(c->doc);
        c->doc = r->json;
    }
    r->json = NULL;
    admin_result_free(r);
}

/* ---- one store ----------------------------------------------------------------------------- */

/* `lcm reindex --embeddings`: bounded passes until every row has a vector of the model
 * (with --force, also rows of another model); rows of another model are named, never
 * re-embedded silently. */
static int cli_reindex(cli_run_ctx *c, const char *session, store *st, admin_result *r, char **err)
{
    const lcm_embeddings *e = &c->cfg.embeddings;
    hybrid_embed_stats es;
    size_t total = 0;
    int rc;
    do {
        if ((rc = hybrid_embed_pass(st, e, 0, c->o.force, &es, err)) != LC_OK) return rc;
        total += es.embedded;
    } while (es.more && es.embedded);
    store_vec_coverage cov;
    if ((rc = store_vec_coverage_get(st, e->model, &cov, err)) != LC_OK) return rc;
    char *line = hybrid_coverage_line(st, e);
    r->text = lc_asprintf("lcm reindex: session %s: embedded %zu row(s)%s; %s", session, total,
                          c->o.force ? " (--force: rows of another model included)" : "", line ? line : "");
    r->json = cJSON_CreateObject();
    cJSON_AddStringToObject(r->json, "session", session);
    cJSON_AddStringToObject(r->json, "model", e->model);
    cJSON_AddNumberToObject(r->json, "embedded", (double)total);
    cJSON_AddNumberToObject(r->json, "messages", (double)cov.messages);
    cJSON_AddNumberToObject(r->json, "messagesEmbedded", (double)cov.messages_embedded);
    cJSON_AddNumberToObject(r->json, "summaries", (double)cov.summaries);
    cJSON_AddNumberToObject(r->json, "summariesEmbedded", (double)cov.summaries_embedded);
    cJSON_AddNumberToObject(r->json, "otherModelRows", (double)(cov.messages_other + cov.summaries_other));
    if (cov.other_model) cJSON_AddStringToObject(r->json, "otherModel", cov.other_model);
    /* Something left to do (rows of another model without --force) is exit 1, like a dry run. */
    r->status = cov.messages_other + cov.summaries_other > 0 ? 1 : 0;
    store_vec_coverage_free(&cov);
    free(line);
    return r->text ? LC_OK : lc_errf(err, LC_NOMEM, "out of memory");
}

static int cli_writes(const cli_opts *o)
{
    return !strcmp(o->verb, "compact") || !strcmp(o->verb, "reindex") || (!strcmp(o->verb, "heal") && o->apply) ||
           (!strcmp(o->verb, "doctor") && o->repair);
}

static int cli_one(cli_run_ctx *c, const char *session, int many, char **err)
{
    store *st = NULL;
    char *e = NULL;
    admin_result r = {0};
    progress bar;
    int rc = catalog_open(c->home, session, cli_writes(&c->o) ? CATALOG_WRITE : CATALOG_READ, &st, NULL, &e);
    admin_env env = cli_env(c, session, st);
    env.no_store_why = e;
    if (rc != LC_OK && strcmp(c->o.verb, "doctor") != 0) {
        /* Not a failure of the command: this store is reported and the others go on. */
        r.text = lc_asprintf("lcm %s: session %s: %s", c->o.verb, session,
                             rc == LC_NOTFOUND ? "no store" : e ? e : "the store did not open");
        r.json = cJSON_CreateObject();
        cJSON_AddStringToObject(r.json, "session", session);
        cJSON_AddStringToObject(r.json, "error", r.text);
        r.status = 1;
        free(e);
        cli_keep(c, &r, many);
        return LC_OK;
    }
    progress_begin(&bar, session, PROGRESS_ITEMS, "messages", 0);
    env.progress = progress_update;
    env.progress_ud = &bar;
    const char *v = c->o.verb;
    if (!strcmp(v, "doctor")) {
        rc = admin_doctor(&env, c->o.repair, &r, err);
        if (rc == LC_NOTFOUND) rc = LC_OK;
        if (rc == LC_OK && r.moved_to) {
            char *t = lc_asprintf("%s; `lcm import` its transcript again to build it anew", r.text);
            if (t) free(r.text), r.text = t;
        }
    } else if (!strcmp(v, "compact")) {
        rc = cli_summarizer(c, LEDGER_SUMMARY, err);
        if (rc == LC_OK) rc = admin_compact(&env, c->sc, 0, &r, err);
    } else if (!strcmp(v, "heal")) {
        /* A dry run makes no model call (dag_heal): the chain is only looked at. */
        rc = cli_summarizer(c, LEDGER_HEAL, err);
        if (rc == LC_OK) rc = admin_heal(&env, c->sc, c->o.apply, (int)c->o.max_nodes, &r, err);
    } else if (!strcmp(v, "export")) {
        rc = admin_export(&env, c->o.out, &r, err);
    } else if (!strcmp(v, "backup")) {
        rc = admin_backup(&env, &r, err);
    } else if (!strcmp(v, "reindex")) {
        rc = cli_reindex(c, session, st, &r, err);
    } else {
        rc = admin_status(&env, &r, err);
    }
    progress_end(&bar);
    if (rc == LC_OK) {
        if (!cJSON_GetObjectItemCaseSensitive(r.json, "session"))
            cJSON_AddStringToObject(r.json, "session", session);
        cli_keep(c, &r, many);
    }
    admin_result_free(&r);
    store_close(st);
    free(e);
    return rc;
}

/* Every store by name after --after, at most --limit of them; "next" names the last one
 * taken when more are left. */
static int cli_each(cli_run_ctx *c, int sessions_only, char **err)
{
    catalog_list l = {0};
    catalog_filter f = {.counts = sessions_only};
    int rc = catalog_list_stores(c->home, &f, &l, err);
    if (rc != LC_OK) return rc;
    c->doc = cJSON_CreateObject();
    cJSON_AddStringToObject(c->doc, "home", c->home);
    cJSON *arr = cJSON_AddArrayToObject(c->doc, sessions_only ? "sessions" : "stores");
    size_t taken = 0, i = 0;
    const char *last = NULL;
    for (; i < l.n && rc == LC_OK; i++) {
        const catalog_entry *e = &l.v[i];
        if (c->o.after && strcmp(e->name, c->o.after) <= 0) continue;
        if (c->o.limit > 0 && taken == (size_t)c->o.limit) break;
        taken++;
        last = e->name;
        if (!sessions_only) {
            rc = cli_one(c, e->name, 1, err);
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "session", e->session_id);
        cJSON_AddStringToObject(o, "key", e->name);
        cJSON_AddStringToObject(o, "path", e->path);
        if (e->cwd) cJSON_AddStringToObject(o, "cwd", e->cwd);
        else cJSON_AddNullToObject(o, "cwd");
        cJSON_AddNumberToObject(o, "created", (double)e->created);
        cJSON_AddNumberToObject(o, "schema", e->schema_version);
        cJSON_AddNumberToObject(o, "messages", (double)e->messages);
        cJSON_AddNumberToObject(o, "summaries", (double)e->summaries);
        cJSON_AddNumberToObject(o, "bytes", (double)e->bytes);
        cJSON_AddBoolToObject(o, "damaged", e->damaged != NULL);
        /* a sub-agent's store: its session, and which sub-agent it is */
        if (e->parent_session) cJSON_AddStringToObject(o, "parent", e->parent_session);
        cJSON *sa = e->subagent ? cJSON_Parse(e->subagent) : NULL;
        if (cJSON_IsObject(sa)) cJSON_AddItemToObject(o, "subagent", sa);
        else cJSON_Delete(sa);
        cJSON_AddItemToArray(arr, o);
        sb_printf(&c->text, "%s  %lld messages, %lld summaries, %lld KB%s\n", e->session_id,
                  (long long)e->messages, (long long)e->summaries, (long long)(e->bytes / 1024),
                  e->damaged ? " (damaged)" : "");
    }
    int more = 0;
    for (; i < l.n; i++)
        if (!c->o.after || strcmp(l.v[i].name, c->o.after) > 0) more = 1;
    if (more && last) cJSON_AddStringToObject(c->doc, "next", last);
    else cJSON_AddNullToObject(c->doc, "next");
    if (!taken && !c->text.len) sb_puts(&c->text, "no stores\n");
    catalog_list_free(&l);
    return rc;
}

/* ---- the verbs over the whole home --------------------------------------------------------- */

static int cli_home_verb(cli_run_ctx *c, char **err)
{
    admin_result r = {0};
    admin_env env = cli_env(c, c->o.session, NULL);
    progress bar;
    int rc;
    progress_begin(&bar, c->o.verb, PROGRESS_ITEMS, "stores", 0);
    env.progress = progress_update;
    env.progress_ud = &bar;
    if (!strcmp(c->o.verb, "gc") && c->o.retention) {
        env.cfg = &c->cfg;
        rc = admin_retention(&env, c->o.apply, &r, err);
    } else if (!strcmp(c->o.verb, "gc")) {
        char *sessions = lc_asprintf("%s/sessions", c->home);
        const char *dirs[1] = {sessions};
        rc = sessions ? admin_gc(&env, dirs, 1, c->o.apply, &r, err) : lc_errf(err, LC_NOMEM, "out of memory");
        free(sessions);
    } else if (!strcmp(c->o.verb, "migrate") && c->o.to) {
        /* The target is the store the URL names: this process's store setting points at
         * it, so the configured backend opens it (file:// names an agent home instead). */
        if (strncmp(c->o.to, "file://", 7) != 0) setenv("LCM_STORE_URL", c->o.to, 1);
        rc = admin_migrate_to(&env, c->o.to, c->o.apply, &r, err);
    } else if (!strcmp(c->o.verb, "migrate")) {
        rc = admin_migrate(&env, c->o.apply, &r, err);
    } else {
        rc = admin_report(&env, &r, err);
    }
    progress_end(&bar);
    if (rc == LC_OK) cli_keep(c, &r, 0);
    return rc;
}

int cli_run(int argc, char **argv)
{
    cli_run_ctx c = {0};
    char *err = NULL;
    int rc = cli_parse(argc, argv, &c.o), code;
    if (rc != CLI_EXIT_OK) return rc;
    c.home = cliview_home(c.o.home_opt);
    if (!c.home) return CLI_EXIT_FOUND;
    /* --session as a person types it: a unique prefix of the id */
    char *session = NULL;
    if (c.o.session && cliview_session(c.home, c.o.session, &session, &err) != LC_OK) {
        fprintf(stderr, "lcm %s: %s\n", c.o.verb, err ? err : "out of memory");
        free(err);
        free(c.home);
        return CLI_EXIT_FOUND;
    }
    if (session) c.o.session = session;
    cli_load_config(&c);
    const char *v = c.o.verb;
    if (!strcmp(v, "reindex") && !c.cfg.embeddings.enabled) rc = lc_errf(&err, LC_INVALID, "%s", embed_not_configured);
    else if (!strcmp(v, "gc") || !strcmp(v, "migrate") || !strcmp(v, "report")) rc = cli_home_verb(&c, &err);
    else if (!strcmp(v, "sessions") || (!strcmp(v, "status") && !c.o.session)) rc = cli_each(&c, 1, &err);
    else if (c.o.session) rc = cli_one(&c, c.o.session, 0, &err);
    else rc = cli_each(&c, 0, &err);
    if (rc != LC_OK) {
        fprintf(stderr, "lcm %s: %s\n", v, err ? err : "out of memory");
        code = CLI_EXIT_FOUND;
    } else {
        if (c.o.json) {
            /* status: the home store's contract counts beside the stores (when there is one) */
            cJSON *learned = !strcmp(v, "status") && cJSON_IsObject(c.doc) ? contracts_status_json(c.home) : NULL;
            if (learned) cJSON_AddItemToObject(c.doc, "contracts", learned);
            char *s = c.doc ? cJSON_PrintUnformatted(c.doc) : NULL;
            printf("%s\n", s ? s : "{}");
            cJSON_free(s);
        } else {
            fputs(c.text.p ? c.text.p : "", stdout);
        }
        code = c.status ? CLI_EXIT_FOUND : CLI_EXIT_OK;
    }
    cJSON_Delete(c.doc);
    sb_free(&c.text);
    summ_free(c.sc);
    ledger_free(c.led);
    lcm_config_free(&c.cfg);
    free(c.home);
    free(session);
    free(err);
    return code;
}
