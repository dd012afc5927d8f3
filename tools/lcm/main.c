/*
 * main.c -- the `lcm` command: `lcm mcp` (the MCP stdio server), `lcm import` (other
 * agents' transcripts into stores) and plain `grep`, `status`, `sessions`, `describe`,
 * `expand` verbs over the same read-only tool functions the server runs, the maintenance
 * verbs (cli.c over engine/admin.h: compact, doctor, export, backup, gc, migrate, heal,
 * report), `hooks` / `hook` (hooks.c, hook.c: Claude Code and Codex wiring and
 * runtime) and `tui` (tui.c: the terminal browser). Owns the dispatch and the parsing of
 * the read verbs; everything else is cli.c / mcp.c / import.c / progress.c / the engine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "dreamcli.h"
#include "bundle.h"
#include "catalog.h"
#include "hook.h"
#include "hooks.h"
#include "admin.h"
#include "import.h"
#include "maint.h"
#include "jsonl.h"
#include "mcp.h"
#include "progress.h"
#include "recall.h"
#include "store.h"
#include "termsafe.h"
#include "tui.h"
#include "util.h"

/* A file below this imports too fast to need a bar. */
#define LCM_BAR_MIN_BYTES (1024 * 1024)

static const char usage[] =
    "usage: lcm <verb> [--home DIR] ...\n"
    "  mcp                         serve the stores over MCP (JSON-RPC on stdin/stdout)\n"
    "  import FILE...              read Pi session files, Claude Code or Codex JSONL transcripts\n"
    "  grep [opts] QUERY           search: plain words or a question, ranked (lcm grep --help;\n"
    "                              --regex: QUERY is a PCRE2 pattern; --hybrid: words and meaning)\n"
    "       --scope all_sessions|sessions|fleet|ID  --session ID  --cwd DIR  --offset N  --include-removed\n"
    "       --since T  --until T  --sort relevance|newest|oldest  --role user|assistant|tool|thinking\n"
    "       (fleet: every session of a shared store; refused unless lcm.json sets fleetRecall)\n"
    "  sessions [--cwd DIR]        list stored sessions, newest first\n"
    "  status                      where the stores are and what they hold\n"
    "  describe SESSION ID         a summary (#12) or a file handle\n"
    "  expand SESSION ID|#N        verbatim windows of a message or a summary's originals\n"
    "  hooks install|uninstall|doctor --agent claude-code|codex [--scope user|project]\n"
    "       [--dry-run] [--prompt-hook]  wire lcm hook + lcm mcp into Claude Code / Codex\n"
    "  handoff [--generate] [--session ID] [--cwd DIR]\n"
    "                              a session's handoff (default: the folder's newest session);\n"
    "                              --generate builds and stores it for the next session's bundle\n"
    "  tui                         browse the stores in the terminal: sessions, search, summaries\n"
    "                              by depth, stats (read-only; ? lists the keys)\n"
    "  hook EVENT [--budget N]     run by those hooks: session-start, stop, subagent-stop,\n"
    "                              session-end, user-prompt-submit, precompact (JSON on stdin)\n";

static const char usage_notes[] =
    "  --home DIR: the agent home (stores in DIR/lcm/); default ~/.agent, Pi users: ~/.pi/agent\n"
    "  --json on grep, describe, expand: {\"tool\",\"text\",\"isError\"}\n"
    "  import, compact, export, gc, migrate: a progress bar on stderr when it is a terminal\n";

/* The read verbs, the maintenance verbs (cli.c), then what holds for all of them. */
static void lcm_print_usage(FILE *f)
{
    fputs(usage, f);
    fputs(cli_usage, f);
    fputs(dreamcli_usage, f);
    fputs(usage_notes, f);
}

static const char grep_help[] =
    "usage: lcm grep [opts] QUERY\n"
    "Search every stored message (verbatim, also what compaction removed). One list, ranked across\n"
    "every session of the scope; each hit shows its date and time (UTC), session and entry id.\n"
    "\n"
    "QUERY (any text is a query; punctuation never fails):\n"
    "  plain words or a question   any word may match; more of them, rarer ones, rank first;\n"
    "                              words like what/the/did weigh nothing\n"
    "  opk-gui config.toml a/b.c   a hyphenated, dotted or slashed name is a phrase\n"
    "  \"an exact phrase\"           the words in this order\n"
    "  prefix*                     words that start so\n"
    "  -word  -\"a phrase\"          exclude\n"
    "  a AND b   a OR b            in capitals only (OR is what plain words do anyway)\n"
    "  fts5:QUERY                  FTS5's own syntax, passed as it is (may be refused)\n"
    "  the first 32 words are searched; a longer query says what it left out\n"
    "\n"
    "options:\n"
    "  --scope all_sessions|sessions|fleet|ID   where (default: the sessions of --session, else all)\n"
    "  --session ID  --cwd DIR     one session; the project folder for --scope sessions\n"
    "  --since T  --until T        only messages in [since, until): 2026-03-01, 2026-03-01T14:30,\n"
    "                              90m, 2h, 3d, 2w, today, yesterday, this week, last week (UTC;\n"
    "                              a day given as --until counts whole)\n"
    "  --sort relevance|newest|oldest   the order (default relevance)\n"
    "  --role user|assistant|tool|thinking   only those messages (several: user,assistant)\n"
    "  --offset N                  the next page (the output says where it continues)\n"
    "  --resume sessions:N         continue a search that stopped at its time bound\n"
    "  --include-removed           also abandoned branches, labelled [removed]\n"
    "  --regex                     QUERY is a PCRE2 pattern (case-insensitive; --case-sensitive)\n"
    "  --hybrid                    words and meaning fused (lcm.json embeddings)\n"
    "  --json                      {\"tool\",\"text\",\"isError\"}\n"
    "  --home DIR                  the agent home (default ~/.agent)\n"
    "examples:\n"
    "  lcm grep \"why did the grays look identical in the terminal?\"\n"
    "  lcm grep --since yesterday --role user \"opk-gui entry point\"\n"
    "  lcm grep --sort oldest --scope sessions --cwd ~/proj \"vibelife\"\n";

/* `lcm VERB --help`: the verb's lines of the usage (a verb line and the lines indented under
 * it), then what holds for every verb; the whole usage for a verb it does not list. */
static void lcm_verb_help(const char *verb)
{
    const char *texts[] = {usage, cli_usage, dreamcli_usage};
    size_t vl = strlen(verb);
    int found = 0;
    if (!strcmp(verb, "grep")) {
        fputs(grep_help, stdout);
        return;
    }
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        int in = 0;
        for (const char *line = texts[t]; *line;) {
            const char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
            int verb_line = line[0] == ' ' && line[1] == ' ' && line[2] != ' ';
            if (verb_line) in = !strncmp(line + 2, verb, vl) && (line[2 + vl] == ' ' || line[2 + vl] == '\n');
            if (in) {
                if (!found++) printf("usage: lcm <verb> [--home DIR] ...\n");
                fwrite(line, 1, len, stdout);
            }
            line += len;
        }
    }
    if (!found) {
        lcm_print_usage(stdout);
        return;
    }
    fputs(usage_notes, stdout);
}

static int lcm_import(const char *home, char **files, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        import_stats st;
        char *err = NULL;
        progress bar;
        if (maint_is_export(files[i])) {
            /* An export or a retention archive: its stores come back row for row. */
            admin_env env = {.cmd = "lcm", .home = home};
            admin_result r = {0};
            if (admin_restore(&env, files[i], &r, &err) != LC_OK || r.status) {
                fprintf(stderr, "lcm import: %s\n", r.text ? r.text : err ? err : files[i]);
                failed = 1;
            } else {
                printf("%s\n", r.text);
            }
            admin_result_free(&r);
            free(err);
            continue;
        }
        progress_begin(&bar, files[i], PROGRESS_BYTES, NULL, LCM_BAR_MIN_BYTES);
        int rc = import_file(home, files[i], bar.on ? progress_update : NULL, &bar, &st, &err);
        progress_end(&bar);
        if (rc == LC_EXCLUDED) {
            printf("skipped %s: %s\n", files[i], err ? err : "its folder is excluded (lcm.json exclude)");
            free(err);
            continue;
        }
        if (rc != LC_OK) {
            fprintf(stderr, "lcm import: %s\n", err ? err : files[i]);
            free(err);
            failed = 1;
            continue;
        }
        printf("imported %s (%s): session %s, %zu messages, %zu new, %zu marked removed, %zu lines skipped\n",
               files[i], import_format_name(st.format), st.session_id, st.messages, st.inserted, st.removed,
               st.bad_lines);
        if (st.long_lines)
            printf("  note: %zu line(s) of %s longer than %u MiB skipped (read through, not kept)\n", st.long_lines,
                   files[i], JSONL_LINE_MAX >> 20);
        /* What it met, by kind: nothing a transcript holds goes without a word. */
        static const char *const heads[] = {"stored", "skipped", "not understood (stored verbatim)"};
        for (int k = 0; k < 3; k++) {
            char *t = import_kinds_text(&st, k);
            if (t && *t) printf("  %s: %s\n", heads[k], t);
            free(t);
        }
        if (st.subagent_messages)
            printf("  sub-agents: %zu of the messages, each sub-agent in a store of its own: %s\n",
                   st.subagent_messages, st.subagents);
        if (st.torn_tail)
            printf("  note: the last line of %s was still incomplete after %d s (a host still "
                   "writing it?): left out; import again to take it\n", files[i], IMP_TAIL_WAIT_MS / 1000);
    }
    return failed;
}

/* Run one tool and print what it says (--json: as one object); exit status 1 when it
 * failed. */
static int lcm_run_tool(const mcp_ctx *c, const char *name, cJSON *args, int json)
{
    char *text = NULL;
    int is_error = 0;
    int rc = mcp_tool_call(c, name, args, &text, &is_error);
    cJSON_Delete(args);
    if (rc != LC_OK || !text) {
        fprintf(stderr, "lcm: out of memory\n");
        free(text);
        return 1;
    }
    cJSON *o = json ? cJSON_CreateObject() : NULL;
    char *doc = NULL;
    if (o) {
        cJSON_AddStringToObject(o, "tool", name);
        cJSON_AddStringToObject(o, "text", text);
        cJSON_AddBoolToObject(o, "isError", is_error);
        doc = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    }
    /* Stored text is shown, never obeyed: escape sequences a tool once printed are inert
     * (JSON escapes them itself). */
    char *shown = doc ? NULL : termsafe_text(text);
    if (doc) printf("%s\n", doc);
    else fprintf(is_error ? stderr : stdout, "%s\n", shown ? shown : "lcm: out of memory");
    free(shown);
    cJSON_free(doc);
    free(text);
    return is_error;
}

/* A scope the policy refuses (fleet without "fleetRecall": true) is a usage refusal, not a
 * failed search: the sentence naming the setting, and exit status 2 (rc stays 2). */
static int lcm_scope_refused(const char *home, const char *scope)
{
    recall_scope sc;
    char *err = NULL;
    if (!scope || recall_scope_parse(scope, &sc, NULL) != LC_OK || recall_scope_check(home, sc, &err) == LC_OK)
        return 0;
    fprintf(stderr, "lcm: %s\n", err ? err : "scope refused");
    free(err);
    return 1;
}

/* The home as an absolute path (the hooks run from any folder). */
static char *lcm_abs_home(const char *opt)
{
    const char *env_home = getenv("HOME");
    char *h = opt ? lc_strdup(opt) : lc_asprintf("%s/.agent", env_home ? env_home : ".");
    if (!h || h[0] == '/') return h;
    char *cwd = getcwd(NULL, 0), *abs = cwd ? lc_asprintf("%s/%s", cwd, h) : NULL;
    free(cwd);
    free(h);
    return abs;
}

/* `lcm hook EVENT [--home DIR] [--budget N]`: always exit 0 (a hook never fails its agent). */
static int lcm_hook(int argc, char **argv)
{
    const char *home_opt = NULL;
    long budget = 0;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--home") && i + 1 < argc) home_opt = argv[++i];
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc) budget = atol(argv[++i]);
    }
    char *home = lcm_abs_home(home_opt);
    if (!home) return 0;
    hook_opts o = {home, budget};
    if (argc < 3 || !hook_known(argv[2])) {
        fprintf(stderr, "lcm hook: unknown event %s (nothing done)\n", argc < 3 ? "(none)" : argv[2]);
        free(home);
        return 0;
    }
    hook_run(argv[2], &o, stdin, stdout);
    free(home);
    return 0;
}

/* `lcm hooks install|uninstall|doctor ...` */
static int lcm_hooks(int argc, char **argv)
{
    const char *home_opt = NULL, *agent = NULL, *scope = "user";
    int dry = 0, prompt = 0, rc = 2;
    char *home = NULL, *self = NULL, *cwd = NULL, *err = NULL;
    const char *sub = argc > 2 ? argv[2] : "";
    for (int i = 3; i < argc; i++) {
        int more = i + 1 < argc;
        if (!strcmp(argv[i], "--home") && more) home_opt = argv[++i];
        else if (!strcmp(argv[i], "--agent") && more) agent = argv[++i];
        else if (!strcmp(argv[i], "--scope") && more) scope = argv[++i];
        else if (!strcmp(argv[i], "--dry-run")) dry = 1;
        else if (!strcmp(argv[i], "--prompt-hook")) prompt = 1;
        else {
            fprintf(stderr, "lcm hooks: unknown option %s\n%s", argv[i], usage);
            return 2;
        }
    }
    int doctor = !strcmp(sub, "doctor");
    if (!doctor && strcmp(sub, "install") != 0 && strcmp(sub, "uninstall") != 0) {
        fprintf(stderr, "lcm hooks: install, uninstall or doctor\n%s", usage);
        return 2;
    }
    if ((!agent && !doctor) || (agent && strcmp(agent, "claude-code") != 0 && strcmp(agent, "codex") != 0)) {
        fprintf(stderr, "lcm hooks %s: --agent claude-code or --agent codex\n", sub);
        return 2;
    }
    if (strcmp(scope, "user") != 0 && strcmp(scope, "project") != 0) {
        fprintf(stderr, "lcm hooks: --scope user or --scope project\n");
        return 2;
    }
    home = lcm_abs_home(home_opt);
    self = realpath("/proc/self/exe", NULL);
    cwd = getcwd(NULL, 0);
    const char *user_home = getenv("HOME");
    if (!home || !self || !cwd || !user_home) {
        fprintf(stderr, "lcm hooks: cannot tell %s\n", !self ? "where this lcm is" : !user_home ? "HOME" : "the folders");
        rc = 1;
        goto done;
    }
    hooks_opts o = {0, !strcmp(scope, "project"), home, self, user_home, cwd, dry, prompt};
    if (doctor) {
        int bad = 0, want_claude = 0, want_codex = 0;
        /* Without --agent: each agent that has our hooks; Claude Code when neither has. */
        if (agent) {
            want_claude = !strcmp(agent, "claude-code");
            want_codex = !want_claude;
        } else {
            o.agent = HOOKS_CLAUDE;
            want_claude = hooks_present(&o);
            o.agent = HOOKS_CODEX;
            want_codex = hooks_present(&o);
            if (!want_claude && !want_codex) want_claude = 1;
        }
        if (want_claude) {
            o.agent = HOOKS_CLAUDE;
            printf("claude-code:\n");
            bad += hooks_doctor(&o, stdout);
        }
        if (want_codex) {
            o.agent = HOOKS_CODEX;
            printf("codex:\n");
            bad += hooks_doctor(&o, stdout);
        }
        printf("%d check%s failed\n", bad, bad == 1 ? "" : "s");
        rc = bad ? 1 : 0;
        goto done;
    }
    o.agent = !strcmp(agent, "codex") ? HOOKS_CODEX : HOOKS_CLAUDE;
    int r = sub[0] == 'i' ? hooks_install(&o, stdout, &err) : hooks_uninstall(&o, stdout, &err);
    if (r != LC_OK) fprintf(stderr, "lcm hooks %s: %s\n", sub, err ? err : "failed");
    rc = r == LC_OK ? 0 : 1;
done:
    free(home);
    free(self);
    free(cwd);
    free(err);
    return rc;
}

/* `lcm handoff`: print a session's stored handoff; --generate builds it from the session's
 * messages and stores it (the next session's bundle carries it first). Exit 1 when there is
 * nothing to show. */
static int lcm_handoff(const char *home, const char *session, const char *cwd, int generate)
{
    char *err = NULL, *sid = NULL, *text = NULL;
    store *s = NULL;
    int rc = 1, schema = -1;
    if (!session) {
        if (bundle_latest_session(home, cwd, NULL, &sid, &err) != LC_OK || !sid) {
            fprintf(stderr, "lcm handoff: %s\n", err ? err : "no stored session of this folder (give --session)");
            goto done;
        }
        session = sid;
    }
    /* Read-only first: an unknown session is an error, never a new empty store. */
    if (catalog_open(home, session, CATALOG_READ, &s, &schema, &err) != LC_OK ||
        (generate && (store_close(s), s = NULL,
                      catalog_open(home, session, CATALOG_WRITE, &s, &schema, &err) != LC_OK))) {
        fprintf(stderr, "lcm handoff: %s\n", err ? err : "no such session");
        goto done;
    }
    if (generate) {
        if (bundle_handoff_make(s, session, &text, &err) != LC_OK ||
            store_meta_put(s, BUNDLE_HANDOFF_KEY, text, &err) != LC_OK) {
            fprintf(stderr, "lcm handoff: %s\n", err ? err : "failed");
            goto done;
        }
    } else if (!(text = store_meta_get(s, BUNDLE_HANDOFF_KEY)) || !*text) {
        fprintf(stderr, "lcm handoff: session %s has no handoff yet (lcm handoff --generate --session %s)\n",
                session, session);
        goto done;
    }
    fputs(text, stdout);
    rc = 0;
done:
    store_close(s);
    free(text);
    free(sid);
    free(err);
    return rc;
}

/* `lcm VERB --help` (or -h as the verb's first argument) for every verb. */
static int lcm_wants_help(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[2], "-h")) return 1;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--")) return 0;
        if (!strcmp(argv[i], "--help")) return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && argv[1][0] != '-' && lcm_wants_help(argc, argv)) {
        lcm_verb_help(argv[1]);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "hook")) return lcm_hook(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "hooks")) return lcm_hooks(argc, argv);
    if (argc >= 2 && cli_owns(argv[1], argc, argv)) return cli_run(argc, argv);
    /* dream and contracts (dreamcli.c over engine/dream.h, engine/contracts.h) */
    if (argc >= 2 && dreamcli_owns(argv[1])) return dreamcli_run(argc, argv);
    const char *home_opt = NULL, *scope = NULL, *session = NULL, *cwd_opt = NULL;
    const char *since = NULL, *until = NULL, *sort = NULL, *role = NULL, *resume = NULL;
    int case_sensitive = 0, dashdash = 0;
    long offset = 0;
    int regex = 0, include_removed = 0, json = 0, generate = 0, rc = 2, npos = 0, hybrid = 0;
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    char *home = NULL, *cwd = NULL;
    if (!pos) return 1;
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        lcm_print_usage(argc < 2 ? stderr : stdout);
        free(pos);
        return argc < 2 ? 2 : 0;
    }
    const char *verb = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (dashdash) pos[npos++] = argv[i];
        else if (!strcmp(a, "--")) dashdash = 1;
        else if (!strcmp(a, "--home") && more) home_opt = argv[++i];
        else if (!strcmp(a, "--since") && more) since = argv[++i];
        else if (!strcmp(a, "--until") && more) until = argv[++i];
        else if (!strcmp(a, "--sort") && more) sort = argv[++i];
        else if (!strcmp(a, "--role") && more) role = argv[++i];
        else if (!strcmp(a, "--resume") && more) resume = argv[++i];
        else if (!strcmp(a, "--case-sensitive")) case_sensitive = 1;
        else if (!strcmp(a, "--scope") && more) scope = argv[++i];
        else if (!strcmp(a, "--session") && more) session = argv[++i];
        else if (!strcmp(a, "--cwd") && more) cwd_opt = argv[++i];
        else if (!strcmp(a, "--offset") && more) offset = atol(argv[++i]);
        else if (!strcmp(a, "--regex")) regex = 1;
        else if (!strcmp(a, "--hybrid")) hybrid = 1;
        else if (!strcmp(a, "--include-removed")) include_removed = 1;
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--generate")) generate = 1;
        else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "lcm: unknown option %s (see lcm --help)\n", a);
            goto done;
        } else pos[npos++] = argv[i];
    }
    const char *env_home = getenv("HOME");
    home = home_opt ? lc_strdup(home_opt) : lc_asprintf("%s/.agent", env_home ? env_home : ".");
    cwd = getcwd(NULL, 0);
    mcp_ctx c = {home, cwd_opt ? cwd_opt : cwd};
    if (!home) {
        rc = 1;
        goto done;
    }
    if (!strcmp(verb, "mcp")) {
        char *err = NULL;
        /* The protocol owns stdout: nothing else may be written there. */
        rc = mcp_serve(&c, stdin, stdout, &err) == LC_OK ? 0 : 1;
        if (err) fprintf(stderr, "%s\n", err);
        free(err);
    } else if (!strcmp(verb, "import")) {
        if (npos == 0) {
            fprintf(stderr, "lcm import: name at least one transcript file\n");
            goto done;
        }
        rc = lcm_import(home, pos, npos);
    } else if (!strcmp(verb, "grep")) {
        if (npos != 1) {
            fprintf(stderr, "lcm grep: one QUERY\n%s", usage);
            goto done;
        }
        if (lcm_scope_refused(home, scope)) goto done;
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, regex ? "pattern" : "query", pos[0]);
        if (scope) cJSON_AddStringToObject(a, "scope", scope);
        if (session) cJSON_AddStringToObject(a, "session", session);
        if (cwd_opt) cJSON_AddStringToObject(a, "cwd", cwd_opt);
        if (offset > 0) cJSON_AddNumberToObject(a, "offset", (double)offset);
        if (include_removed) cJSON_AddBoolToObject(a, "include_removed", 1);
        if (hybrid) cJSON_AddStringToObject(a, "mode", "hybrid");
        if (since) cJSON_AddStringToObject(a, "since", since);
        if (until) cJSON_AddStringToObject(a, "until", until);
        if (sort) cJSON_AddStringToObject(a, "sort", sort);
        if (role) cJSON_AddStringToObject(a, "role", role);
        if (resume) cJSON_AddStringToObject(a, "resume", resume);
        if (case_sensitive) cJSON_AddBoolToObject(a, "case_sensitive", 1);
        rc = lcm_run_tool(&c, "lcm_grep", a, json);
    } else if (!strcmp(verb, "sessions")) {
        if (lcm_scope_refused(home, scope)) goto done;
        cJSON *a = cJSON_CreateObject();
        if (cwd_opt) cJSON_AddStringToObject(a, "cwd", cwd_opt);
        if (scope) cJSON_AddStringToObject(a, "scope", scope);
        if (offset > 0) cJSON_AddNumberToObject(a, "offset", (double)offset);
        rc = lcm_run_tool(&c, "lcm_sessions", a, json);
    } else if (!strcmp(verb, "status")) {
        rc = lcm_run_tool(&c, "lcm_status", NULL, json);
    } else if (!strcmp(verb, "tui")) {
        rc = tui_run(home);
    } else if (!strcmp(verb, "handoff")) {
        rc = lcm_handoff(home, session, cwd_opt ? cwd_opt : cwd, generate);
    } else if (!strcmp(verb, "describe") || !strcmp(verb, "expand")) {
        if (npos != 2) {
            fprintf(stderr, "lcm %s: SESSION ID\n%s", verb, usage);
            goto done;
        }
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "session", pos[0]);
        if (verb[0] == 'd') cJSON_AddStringToObject(a, "id", pos[1]);
        else if (pos[1][0] == '#') cJSON_AddStringToObject(a, "summary_id", pos[1]);
        else cJSON_AddStringToObject(a, "entry_id", pos[1]);
        rc = lcm_run_tool(&c, verb[0] == 'd' ? "lcm_describe" : "lcm_expand", a, json);
    } else {
        fprintf(stderr, "lcm: unknown verb %s\n", verb);
        lcm_print_usage(stderr);
    }
done:
    free(home);
    free(cwd);
    free(pos);
    return rc;
}
