/*
 * main.c -- the `lcm` command. Owns the command table (lcm_cmds: each verb's handler,
 * one-line summary, usage and the options it takes), which dispatch, `lcm help`, `lcm VERB
 * --help`, the usage and "did you mean" all read; and the handlers of the read verbs (grep,
 * sessions, status, describe, expand, handoff, tui), import, mcp, hooks and hook. The
 * maintenance verbs are cli.c's (over engine/lcm/admin.h), dream and contracts dreamcli.c's;
 * the CLI's own words (ids by prefix, titles, sizes) cliview.c's; did-you-mean clihelp.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "clihelp.h"
#include "cliview.h"
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
/* `lcm grep`'s hits without --limit or --full: a screen's worth (two lines a hit at a
 * terminal of unknown height), and a page's when the output is not a terminal. */
#define LCM_GREP_SCREEN 8
#define LCM_GREP_PAGE 10

typedef struct lcm_cmd lcm_cmd;
typedef int (*lcm_handler)(const lcm_cmd *cmd, int argc, char **argv);

/* One verb. `usage` is its synopsis line (after "lcm ") and the lines that explain it;
 * `opts` the options it takes (clihelp.h's list), NULL when its handler reads its own
 * (hook: a hook never fails its agent over an argument). `home`: it reads an agent home
 * that must exist. */
struct lcm_cmd {
    const char *name;
    lcm_handler run;
    const char *summary;
    const char *usage;
    const char *opts;
    int home;
};

static int lcm_read(const lcm_cmd *cmd, int argc, char **argv);
static int lcm_hook(const lcm_cmd *cmd, int argc, char **argv);
static int lcm_hooks(const lcm_cmd *cmd, int argc, char **argv);
static int lcm_maint(const lcm_cmd *cmd, int argc, char **argv);
static int lcm_dream(const lcm_cmd *cmd, int argc, char **argv);
static int lcm_help(const lcm_cmd *cmd, int argc, char **argv);
static int lcm_version(const lcm_cmd *cmd, int argc, char **argv);

#define LCM_READ_OPTS " --home= --json "
#define LCM_MAINT_OPTS NULL /* cli.c checks them, with the same did-you-mean */

static const lcm_cmd lcm_cmds[] = {
    {"grep", lcm_read, "search every stored message: plain words, a question, or --regex",
     "grep [options] QUERY\n"
     "Search every stored message (verbatim, also what compaction removed). One list, ranked across\n"
     "every session of the scope; each hit shows its date and time (UTC), session and entry id.\n"
     "At a terminal the answer fits the screen (two lines a hit, cut to its width; --full: all of it).\n"
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
     "  --limit N                   at most N hits (default: a screen at a terminal, 10 piped, 20 --json)\n"
     "  --full                      whole hit lines, 20 hits a page (with --limit: N)\n"
     "  --offset N                  the next page (the output says where it continues)\n"
     "  --scope all_sessions|sessions|fleet|ID   where (default: the sessions of --session, else all;\n"
     "                              fleet: every session of a shared store, when lcm.json sets fleetRecall)\n"
     "  --session ID  --cwd DIR     one session (a unique prefix of its id will do); the project\n"
     "                              folder for --scope sessions\n"
     "  --since T  --until T        only messages in [since, until): 2026-03-01, 2026-03-01T14:30,\n"
     "                              90m, 2h, 3d, 2w, today, yesterday, this week, last week (UTC;\n"
     "                              a day given as --until counts whole)\n"
     "  --sort relevance|newest|oldest   the order (default relevance)\n"
     "  --role user|assistant|tool|thinking   only those messages (several: user,assistant)\n"
     "  --resume sessions:N         continue a search that stopped at its time bound\n"
     "  --include-removed           also abandoned branches, labelled [removed]\n"
     "  --regex                     QUERY is a PCRE2 pattern (case-insensitive; --case-sensitive)\n"
     "  --hybrid                    words and meaning fused (lcm.json embeddings)\n"
     "  --json                      {\"tool\",\"text\",\"isError\"}\n"
     "examples:\n"
     "  lcm grep \"why did the grays look identical in the terminal?\"\n"
     "  lcm grep --since yesterday --role user \"opk-gui entry point\"\n"
     "  lcm grep --sort oldest --scope sessions --cwd ~/proj \"vibelife\"\n"
     "  lcm expand 1fb5e404 c0ffee    read a hit: the session and entry ids (unique prefixes)\n",
     LCM_READ_OPTS "--scope= --session= --cwd= --offset= --limit= --full --include-removed --since= --until= "
                   "--sort= --role= --resume= --case-sensitive --regex --hybrid ",
     1},
    {"sessions", lcm_read, "the stored sessions, newest first: short id, date, messages, folder, first request",
     "sessions [--cwd DIR] [--offset N] [--limit N]\n"
     "One line a session: its short id (any unique prefix of an id is taken wherever one is asked),\n"
     "date, messages, folder and title (its first request); sub-agents under their session.\n"
     "  --cwd DIR                   only the sessions of that project folder (with --scope sessions)\n"
     "  --scope sessions|all_sessions|fleet   which (default all_sessions)\n"
     "  --json                      one document: every store's session, key, path, counts;\n"
     "                              page with --after KEY --limit N\n",
     LCM_READ_OPTS "--cwd= --scope= --offset= --limit= --after= ", 1},
    {"status", lcm_read, "where the stores are and what they hold",
     "status [--session ID] [--json]\n"
     "The agent home, its store, how many sessions, messages and summaries, their size, the newest.\n"
     "  --session ID --json         one store's status (a unique prefix of its id will do)\n",
     LCM_READ_OPTS "--session= ", 1},
    {"expand", lcm_read, "read a message verbatim (or a summary's originals)",
     "expand SESSION ENTRY|#N\n"
     "The stored message ENTRY of SESSION, verbatim, in windows; #N: the originals summary N covers.\n"
     "SESSION and ENTRY may be unique prefixes (lcm grep and lcm sessions print them).\n"
     "  --json                      {\"tool\",\"text\",\"isError\"}\n",
     LCM_READ_OPTS, 1},
    {"describe", lcm_read, "what a summary (#12) or a file handle is",
     "describe SESSION ID\n"
     "A summary (#12: its depth, span, what it covers) or a file handle; SESSION by a unique prefix.\n"
     "  --json                      {\"tool\",\"text\",\"isError\"}\n",
     LCM_READ_OPTS, 1},
    {"import", lcm_read, "read Pi, Claude Code or Codex transcripts into the stores",
     "import FILE...\n"
     "Read Pi session files, Claude Code or Codex JSONL transcripts into stores under HOME/lcm/\n"
     "(again: only what is new). A progress bar on stderr when it is a terminal.\n"
     "examples:\n"
     "  lcm import ~/.claude/projects/*/*.jsonl\n"
     "  lcm import ~/.codex/sessions/*/*/*/rollout-*.jsonl\n"
     "  lcm import ~/.pi/agent/sessions/*/*.jsonl\n",
     " --home= ", 0},
    {"handoff", lcm_read, "a session's handoff note (--generate builds it)",
     "handoff [--generate] [--session ID] [--cwd DIR]\n"
     "A session's handoff (default: the folder's newest session); --generate builds and stores it\n"
     "for the next session's bundle.\n",
     " --home= --generate --session= --cwd= ", 1},
    {"tui", lcm_read, "browse the stores in the terminal",
     "tui\n"
     "Browse the stores in the terminal: sessions, search, summaries by depth, stats (read-only;\n"
     "? lists the keys).\n",
     " --home= ", 1},
    {"mcp", lcm_read, "serve the stores to an agent over MCP (stdin/stdout)",
     "mcp\n"
     "Serve the stores over MCP (JSON-RPC on stdin/stdout), read-only: lcm_grep, lcm_expand,\n"
     "lcm_describe, lcm_sessions, lcm_status, lcm_handoff, lcm_contracts. `lcm hooks install`\n"
     "registers it with Claude Code or Codex.\n",
     " --home= --cwd= ", 0},
    {"hooks", lcm_hooks, "wire lcm into Claude Code or Codex (install, uninstall, doctor)",
     "hooks install|uninstall|doctor --agent claude-code|codex [--scope user|project] [--dry-run]\n"
     "                  [--prompt-hook]\n"
     "Wire `lcm hook` and `lcm mcp` into Claude Code / Codex: they run this lcm by its absolute path,\n"
     "so run the installed one (make install PREFIX=~/.local: ~/.local/bin/lcm hooks install).\n",
     " --home= --agent= --scope= --dry-run --prompt-hook ", 0},
    {"hook", lcm_hook, "what those hooks run (JSON on stdin)",
     "hook EVENT [--budget N]\n"
     "Run by the hooks: session-start, stop, subagent-stop, session-end, user-prompt-submit,\n"
     "precompact (the agent's JSON on stdin). Always exit 0: a hook never fails its agent.\n",
     NULL, 0},
    {"compact", lcm_maint, "build the summary DAG over stored sessions",
     "compact --session ID|--all\n"
     "Build the summary DAG over stored sessions (extractive, or the lcm.json summarizer chain's\n"
     "provider/id models).\n",
     LCM_MAINT_OPTS, 1},
    {"doctor", lcm_maint, "check the stores (--repair fixes)",
     "doctor [--repair] [--session ID]\n"
     "Store checks (every store, or --session ID); --repair fixes.\n",
     LCM_MAINT_OPTS, 1},
    {"export", lcm_maint, "a whole store as JSONL, verbatim",
     "export --session ID [--out FILE]\n"
     "The whole store as JSONL, verbatim (secrets included).\n",
     LCM_MAINT_OPTS, 1},
    {"backup", lcm_maint, "timestamped online copies beside the stores",
     "backup [--session ID]\n"
     "Timestamped online copies beside the stores.\n",
     LCM_MAINT_OPTS, 1},
    {"gc", lcm_maint, "retired stores, or what retention lets go (--apply archives / exports, then deletes)",
     "gc [--apply]\n"
     "       gc --retention [--apply]\n"
     "Retired stores; --apply exports then DELETES them. With --retention: lcm.json retention's\n"
     "sessions past days / over maxGB, oldest first, never a live one; --apply archives them\n"
     "(lcm-archive-<ts>.jsonl.gz, restorable with lcm import) then DELETES them.\n",
     LCM_MAINT_OPTS, 1},
    {"migrate", lcm_maint, "upgrade older-schema stores, or copy them to another store",
     "migrate [--apply]\n"
     "       migrate --to URL [--apply]\n"
     "Older-schema stores; --apply upgrades them in place. With --to: copy this home's stores into\n"
     "the store URL names (postgresql://..., or file:///path/to/home: another agent home); a dry run\n"
     "counts the rows per store; --apply copies what the target lacks (idempotent).\n",
     LCM_MAINT_OPTS, 1},
    {"heal", lcm_maint, "re-derive truncated summaries with a model",
     "heal [--apply] [--max-nodes N] [--session ID]\n"
     "Truncated summaries; --apply re-derives them with a model.\n",
     LCM_MAINT_OPTS, 1},
    {"report", lcm_maint, "the metrics summary",
     "report [--session ID]\n"
     "The metrics summary (every session without --session).\n",
     LCM_MAINT_OPTS, 1},
    {"reindex", lcm_maint, "embed the rows for --hybrid search",
     "reindex --embeddings [--force] [--session ID]\n"
     "Embed the rows without a vector of the lcm.json embeddings model; --force also re-embeds\n"
     "rows of another model.\n",
     LCM_MAINT_OPTS, 1},
    {"dream", lcm_dream, "find patterns since the last dream; propose contracts",
     "dream [--project DIR | --global] [--json]\n"
     "Patterns (corrections, preferences, anti-patterns, conventions, decisions) since the last\n"
     "dream, with lineage; a report under HOME/lcm-home/reports/; proposes Pending contracts.\n",
     " --home= --cwd= --project= --global --json ", 0},
    {"contracts", lcm_dream, "behavior contracts: list, show, approve, reject, retract, supersede",
     "contracts list|show ID|approve ID|reject ID|retract ID --reason R|supersede ID --body B\n"
     "Behavior contracts (Active ones ride in the session-start bundle).\n",
     " --home= --cwd= --reason= --body= --state= ", 0},
    {"help", lcm_help, "this list, or one verb's usage (lcm help VERB)",
     "help [VERB]\n"
     "Every verb with one line, or one verb's usage (the same as lcm VERB --help).\n",
     "", 0},
    {"version", lcm_version, "lcm's version (also --version)",
     "version\n"
     "The version of lcm (the same as lcm --version).\n",
     "", 0},
};
#define LCM_NCMDS (sizeof lcm_cmds / sizeof *lcm_cmds)

static const char lcm_notes[] =
    "every verb:\n"
    "  --home DIR   the agent home: stores in DIR/lcm/ (default ~/.agent, for import, hooks and mcp alike)\n"
    "  --help, -h   the verb's usage\n"
    "  every id     a session or an entry is taken by any unique prefix (lcm sessions shows short ids)\n"
    "  --json on grep, describe, expand: {\"tool\",\"text\",\"isError\"}; on status, sessions and the\n"
    "  maintenance verbs one JSON document; over several stores {\"stores\":[...],\"next\":KEY|null}:\n"
    "  page with --after KEY --limit N\n"
    "  exit codes: 0 ok, 1 a check failed or there is something to do (a dry run that would\n"
    "  change something, faults found, an error), 2 usage\n";

static const lcm_cmd *lcm_find(const char *name)
{
    for (size_t i = 0; i < LCM_NCMDS; i++)
        if (!strcmp(lcm_cmds[i].name, name)) return &lcm_cmds[i];
    return NULL;
}

/* `lcm help`: every verb with its one line, then what holds for all of them. */
static void lcm_usage(FILE *f)
{
    fprintf(f, "usage: lcm VERB [options]   (lcm help VERB, or lcm VERB --help: one verb's usage)\n\nverbs:\n");
    for (size_t i = 0; i < LCM_NCMDS; i++) fprintf(f, "  %-10s %s\n", lcm_cmds[i].name, lcm_cmds[i].summary);
    fprintf(f, "\n%s", lcm_notes);
}

/* One verb's usage: its synopsis and explanation, then --home and --help. */
static void lcm_verb_usage(const lcm_cmd *c, FILE *f)
{
    fprintf(f, "usage: lcm %s", c->usage);
    if (c->run == lcm_maint)
        fprintf(f, "  --json                      one JSON document; over several stores {\"stores\":[...],\"next\":KEY}:\n"
                   "                              page with --after KEY --limit N\n"
                   "  exit codes: 0 ok, 1 a check failed or there is something to do, 2 usage\n");
    if (c->run != lcm_help && c->run != lcm_version)
        fprintf(f, "  --home DIR                  the agent home (default ~/.agent)\n");
}

/* `lcm gerp`: the verb nearest to it, and where the list is. */
static int lcm_unknown_verb(const char *verb)
{
    const char *names[LCM_NCMDS];
    for (size_t i = 0; i < LCM_NCMDS; i++) names[i] = lcm_cmds[i].name;
    const char *near = clihelp_nearest(verb, names, LCM_NCMDS);
    fprintf(stderr, "lcm: unknown verb %s", verb);
    if (near) fprintf(stderr, " (did you mean lcm %s?)", near);
    fprintf(stderr, "\nlcm help lists the verbs\n");
    return 2;
}

static int lcm_help(const lcm_cmd *cmd, int argc, char **argv)
{
    (void)cmd;
    if (argc < 3) {
        lcm_usage(stdout);
        return 0;
    }
    const lcm_cmd *c = lcm_find(argv[2]);
    if (!c) return lcm_unknown_verb(argv[2]);
    lcm_verb_usage(c, stdout);
    return 0;
}

static int lcm_version(const lcm_cmd *cmd, int argc, char **argv)
{
    (void)cmd, (void)argc, (void)argv;
    printf("lcm %s\n", LCM_VERSION);
    return 0;
}

/* A home that does not exist is said so, never listed as empty: a mistyped --home would
 * otherwise read as "no history". A store URL (LCM_STORE_URL) needs no folder. */
static int lcm_home_missing(const char *verb, const char *home)
{
    struct stat st;
    const char *url = getenv("LCM_STORE_URL");
    if ((url && *url) || stat(home, &st) == 0) return 0;
    fprintf(stderr,
            "lcm %s: no agent home at %s (nothing was stored there: `lcm import` or the hooks create one;\n"
            "the default is ~/.agent, --home DIR names another)\n",
            verb, home);
    return 1;
}

/* The --home of argv, else NULL; *bare = 1 when a --home has no value after it. */
static const char *lcm_home_opt(int argc, char **argv, int *bare)
{
    const char *h = NULL;
    *bare = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (strcmp(argv[i], "--home") != 0) continue;
        if (i + 1 >= argc || !argv[i + 1][0]) *bare = 1;
        else h = argv[++i];
    }
    return h;
}

static int lcm_maint(const lcm_cmd *cmd, int argc, char **argv)
{
    (void)cmd;
    return cli_run(argc, argv);
}

static int lcm_dream(const lcm_cmd *cmd, int argc, char **argv)
{
    (void)cmd;
    return dreamcli_run(argc, argv);
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
    if (!doc && c->cli) {
        /* the short ids of the sessions a screen's hits name */
        catalog_list l = {0};
        catalog_filter f = {0};
        int listed = c->width > 0 && !strcmp(name, "lcm_grep") && catalog_list_stores(c->home, &f, &l, NULL) == LC_OK;
        text = cliview_words(text, c->width, listed ? &l : NULL);
        catalog_list_free(&l);
    }
    char *shown = doc || !text ? NULL : termsafe_text(text);
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

/* `lcm hook EVENT [--home DIR] [--budget N]`: always exit 0 (a hook never fails its agent). */
static int lcm_hook(const lcm_cmd *cmd, int argc, char **argv)
{
    (void)cmd;
    const char *home_opt = NULL;
    long budget = 0;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--home") && i + 1 < argc) home_opt = argv[++i];
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc) budget = atol(argv[++i]);
    }
    char *home = cliview_home(home_opt);
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

/* The hooks and the MCP entry run this binary by its path: one inside a source tree's build
 * folder breaks when the clone moves or is rebuilt elsewhere. Say so, and how to get a stable one. */
static void lcm_build_tree_note(const char *self)
{
    char *dir = lc_strdup(self), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = 0;
    slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = 0;
    char *mk = dir ? lc_asprintf("%s/Makefile", dir) : NULL, *src = dir ? lc_asprintf("%s/tools/lcm/main.c", dir) : NULL;
    if (mk && src && access(mk, F_OK) == 0 && access(src, F_OK) == 0)
        printf("note: %s is in the source tree's build folder; the hooks will run it from there.\n"
               "  For a copy that outlives the clone: make install PREFIX=~/.local, then\n"
               "  ~/.local/bin/lcm hooks install (the same arguments).\n", self);
    free(mk);
    free(src);
    free(dir);
}

/* `lcm hooks install|uninstall|doctor ...` */
static int lcm_hooks(const lcm_cmd *cmd, int argc, char **argv)
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
            fprintf(stderr, "lcm hooks: unexpected %s (lcm hooks --help)\n", argv[i]);
            return 2;
        }
    }
    int doctor = !strcmp(sub, "doctor");
    if (!doctor && strcmp(sub, "install") != 0 && strcmp(sub, "uninstall") != 0) {
        fprintf(stderr, "lcm hooks: install, uninstall or doctor\n");
        lcm_verb_usage(cmd, stderr);
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
    home = cliview_home(home_opt);
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
    if (sub[0] == 'i') lcm_build_tree_note(self);
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

/* How many grep hits fill the screen: two lines each, below the header and above the
 * footer (8 at 24 rows, LCM_GREP_SCREEN when the rows are not known). */
static long lcm_screen_hits(void)
{
    int rows = cliview_rows();
    if (rows <= 0) return LCM_GREP_SCREEN;
    return rows > 13 ? (rows - 7) / 2 : 3;
}

/* A session id a person typed (a unique prefix) as the whole id; NULL after saying why. */
static char *lcm_session_arg(const char *verb, const char *home, const char *arg)
{
    char *full = NULL, *err = NULL;
    if (cliview_session(home, arg, &full, &err) != LC_OK) {
        fprintf(stderr, "lcm %s: %s\n", verb, err ? err : "out of memory");
        free(err);
        return NULL;
    }
    return full;
}

/* The read verbs (their options are checked before): parse, then one tool or one view. */
static int lcm_read(const lcm_cmd *cmd, int argc, char **argv)
{
    const char *verb = cmd->name;
    const char *home_opt = NULL, *scope = NULL, *session_arg = NULL, *cwd_opt = NULL;
    const char *since = NULL, *until = NULL, *sort = NULL, *role = NULL, *resume = NULL;
    int case_sensitive = 0, dashdash = 0, full = 0;
    long offset = 0, limit = 0;
    int regex = 0, include_removed = 0, json = 0, generate = 0, rc = 2, npos = 0, hybrid = 0;
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    char *home = NULL, *cwd = NULL, *session = NULL, *entry = NULL;
    if (!pos) return 1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        char *end = NULL;
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
        else if (!strcmp(a, "--session") && more) session_arg = argv[++i];
        else if (!strcmp(a, "--cwd") && more) cwd_opt = argv[++i];
        else if ((!strcmp(a, "--offset") || !strcmp(a, "--limit")) && more) {
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 0 || (n == 0 && a[2] == 'l')) {
                fprintf(stderr, "lcm %s: %s takes a %s number, not %s\n", verb, a, a[2] == 'l' ? "positive" : "whole",
                        argv[i]);
                goto done;
            }
            if (a[2] == 'l') limit = n;
            else offset = n;
        } else if (!strcmp(a, "--full")) full = 1;
        else if (!strcmp(a, "--regex")) regex = 1;
        else if (!strcmp(a, "--hybrid")) hybrid = 1;
        else if (!strcmp(a, "--include-removed")) include_removed = 1;
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--generate")) generate = 1;
        else pos[npos++] = argv[i];
    }
    home = cliview_home(home_opt);
    cwd = getcwd(NULL, 0);
    mcp_ctx c = {home, cwd_opt ? cwd_opt : cwd, 1, 0};
    if (!home) {
        rc = 1;
        goto done;
    }
    if (session_arg && !(session = lcm_session_arg(verb, home, session_arg))) {
        rc = 1;
        goto done;
    }
    if (!strcmp(verb, "mcp")) {
        char *err = NULL;
        c.cli = 0; /* the tools speak to an agent here */
        /* The protocol owns stdout: nothing else may be written there. */
        rc = mcp_serve(&c, stdin, stdout, &err) == LC_OK ? 0 : 1;
        if (err) fprintf(stderr, "%s\n", err);
        free(err);
    } else if (!strcmp(verb, "import")) {
        if (npos == 0) {
            fprintf(stderr, "lcm import: name at least one transcript file (lcm import --help)\n");
            goto done;
        }
        rc = lcm_import(home, pos, npos);
    } else if (!strcmp(verb, "grep")) {
        if (npos != 1) {
            fprintf(stderr, "lcm grep: one QUERY%s (quote a question: lcm grep \"why did ...\"; lcm grep --help)\n",
                    npos ? ", in quotes when it has spaces" : "");
            goto done;
        }
        char *scope_full = NULL;
        /* a session id given as the scope is one a person typed too */
        if (scope && strcmp(scope, "all_sessions") && strcmp(scope, "sessions") && strcmp(scope, "fleet") &&
            strcmp(scope, "session") && !(scope_full = lcm_session_arg(verb, home, scope))) {
            rc = 1;
            goto done;
        }
        if (lcm_scope_refused(home, scope)) {
            free(scope_full);
            goto done;
        }
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, regex ? "pattern" : "query", pos[0]);
        if (scope) cJSON_AddStringToObject(a, "scope", scope_full ? scope_full : scope);
        free(scope_full);
        if (session) cJSON_AddStringToObject(a, "session", session);
        if (cwd_opt) cJSON_AddStringToObject(a, "cwd", cwd_opt);
        if (offset > 0) cJSON_AddNumberToObject(a, "offset", (double)offset);
        /* A person at a terminal gets a screen; --full and --json their page. */
        c.width = full ? 0 : cliview_columns();
        if (!limit && !full && !json) limit = c.width > 0 ? lcm_screen_hits() : LCM_GREP_PAGE;
        if (limit > 0) cJSON_AddNumberToObject(a, "limit", (double)limit);
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
        c.width = cliview_columns();
        /* a terminal's rows, less the header and the prompt */
        if (!limit && cliview_rows() > 0) limit = cliview_rows() > 8 ? cliview_rows() - 3 : 5;
        if (limit > 0) cJSON_AddNumberToObject(a, "limit", (double)limit);
        rc = lcm_run_tool(&c, "lcm_sessions", a, json);
    } else if (!strcmp(verb, "status")) {
        rc = lcm_run_tool(&c, "lcm_status", NULL, json);
    } else if (!strcmp(verb, "tui")) {
        rc = tui_run(home);
    } else if (!strcmp(verb, "handoff")) {
        rc = lcm_handoff(home, session, cwd_opt ? cwd_opt : cwd, generate);
    } else if (!strcmp(verb, "describe") || !strcmp(verb, "expand")) {
        if (npos != 2) {
            fprintf(stderr, "lcm %s: give SESSION and %s (lcm %s --help)\n", verb, verb[0] == 'd' ? "ID" : "ENTRY",
                    verb);
            goto done;
        }
        char *err = NULL;
        if (!(session = lcm_session_arg(verb, home, pos[0]))) {
            rc = 1;
            goto done;
        }
        /* #N is a summary; describe's ID may be a path or a content id too, which go on as given */
        if (pos[1][0] != '#' && !strchr(pos[1], '/') && cliview_entry(home, session, pos[1], &entry, &err) != LC_OK) {
            fprintf(stderr, "lcm %s: %s\n", verb, err ? err : "out of memory");
            free(err);
            rc = 1;
            goto done;
        }
        const char *id = entry ? entry : pos[1];
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "session", session);
        if (verb[0] == 'd') cJSON_AddStringToObject(a, "id", id);
        else if (id[0] == '#') cJSON_AddStringToObject(a, "summary_id", id);
        else cJSON_AddStringToObject(a, "entry_id", id);
        rc = lcm_run_tool(&c, verb[0] == 'd' ? "lcm_describe" : "lcm_expand", a, json);
    }
done:
    free(home);
    free(cwd);
    free(pos);
    free(session);
    free(entry);
    return rc;
}

/* `lcm VERB --help` (or -h as the verb's first argument). */
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
    if (argc < 2) {
        lcm_usage(stderr);
        return 2;
    }
    const char *verb = argv[1];
    if (!strcmp(verb, "-h") || !strcmp(verb, "--help")) verb = "help";
    else if (!strcmp(verb, "--version") || !strcmp(verb, "-V")) verb = "version";
    const lcm_cmd *cmd = lcm_find(verb);
    if (!cmd) return lcm_unknown_verb(verb);
    if (lcm_wants_help(argc, argv)) {
        lcm_verb_usage(cmd, stdout);
        return 0;
    }
    if (cmd->opts && clihelp_check(cmd->name, cmd->opts, argc, argv, 2)) return 2;
    if (cmd->home) {
        int bare = 0;
        const char *opt = lcm_home_opt(argc, argv, &bare);
        if (bare) {
            fprintf(stderr, "lcm %s: --home needs a value (lcm %s --help)\n", cmd->name, cmd->name);
            return 2;
        }
        char *home = cliview_home(opt);
        int missing = !home || lcm_home_missing(cmd->name, home);
        free(home);
        if (missing) return 1;
    }
    /* status and sessions as one JSON document are cli.c's (keyset paging over the stores) */
    if (cmd->run == lcm_read && cli_owns(cmd->name, argc, argv)) return cli_run(argc, argv);
    return cmd->run(cmd, argc, argv);
}
