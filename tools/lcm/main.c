/*
 * main.c -- the `lcm` command: `lcm mcp` (the MCP stdio server), `lcm import` (other
 * agents' transcripts into stores) and plain `grep`, `status`, `sessions`, `describe`,
 * `expand` verbs over the same read-only tool functions the server runs. Owns argument
 * parsing and the terminal progress bar; everything else is mcp.c / import.c / the engine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "import.h"
#include "mcp.h"
#include "util.h"

#define LCM_BAR_WIDTH 30
#define LCM_BAR_MIN_BYTES (1024 * 1024)

static const char usage[] =
    "usage: lcm <verb> [--home DIR] ...\n"
    "  mcp                         serve the stores over MCP (JSON-RPC on stdin/stdout)\n"
    "  import FILE...              read Pi session files, Claude Code or Codex JSONL transcripts\n"
    "  grep [opts] QUERY           full-text search (--regex: QUERY is a PCRE2 pattern)\n"
    "       --scope all_sessions|sessions|ID  --session ID  --cwd DIR  --offset N  --include-removed\n"
    "  sessions [--cwd DIR]        list stored sessions, newest first\n"
    "  status                      where the stores are and what they hold\n"
    "  describe SESSION ID         a summary (#12) or a file handle\n"
    "  expand SESSION ID|#N        verbatim windows of a message or a summary's originals\n"
    "  --home DIR: the agent home (stores in DIR/lcm/); default ~/.agent, Pi users: ~/.pi/agent\n";

typedef struct lcm_bar {
    const char *name;
    int shown;
} lcm_bar;

static void lcm_progress(void *ud, long long done, long long total)
{
    lcm_bar *b = ud;
    if (total < LCM_BAR_MIN_BYTES) return;
    int pct = (int)(done * 100 / total), fill = (int)(done * LCM_BAR_WIDTH / total);
    char bar[LCM_BAR_WIDTH + 1];
    for (int i = 0; i < LCM_BAR_WIDTH; i++) bar[i] = i < fill ? '#' : '.';
    bar[LCM_BAR_WIDTH] = 0;
    fprintf(stderr, "\r[%s] %3d%% %s", bar, pct, b->name);
    b->shown = 1;
}

static int lcm_import(const char *home, char **files, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        import_stats st;
        char *err = NULL;
        lcm_bar bar = {files[i], 0};
        int tty = isatty(STDERR_FILENO);
        int rc = import_file(home, files[i], tty ? lcm_progress : NULL, &bar, &st, &err);
        if (bar.shown) fputc('\n', stderr);
        if (rc != LC_OK) {
            fprintf(stderr, "lcm import: %s\n", err ? err : files[i]);
            free(err);
            failed = 1;
            continue;
        }
        printf("imported %s (%s): session %s, %zu messages, %zu new, %zu marked removed, %zu lines skipped\n",
               files[i], import_format_name(st.format), st.session_id, st.messages, st.inserted, st.removed,
               st.bad_lines);
        if (st.torn_tail)
            printf("  note: the last line of %s was still incomplete after %d s (a host still "
                   "writing it?): left out; import again to take it\n", files[i], IMP_TAIL_WAIT_MS / 1000);
    }
    return failed;
}

/* Run one tool and print what it says; exit status 1 when it failed. */
static int lcm_run_tool(const mcp_ctx *c, const char *name, cJSON *args)
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
    fprintf(is_error ? stderr : stdout, "%s\n", text);
    free(text);
    return is_error;
}

int main(int argc, char **argv)
{
    const char *home_opt = NULL, *scope = NULL, *session = NULL, *cwd_opt = NULL;
    long offset = 0;
    int regex = 0, include_removed = 0, rc = 2, npos = 0;
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    char *home = NULL, *cwd = NULL;
    if (!pos) return 1;
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        free(pos);
        return argc < 2 ? 2 : 0;
    }
    const char *verb = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--home") && more) home_opt = argv[++i];
        else if (!strcmp(a, "--scope") && more) scope = argv[++i];
        else if (!strcmp(a, "--session") && more) session = argv[++i];
        else if (!strcmp(a, "--cwd") && more) cwd_opt = argv[++i];
        else if (!strcmp(a, "--offset") && more) offset = atol(argv[++i]);
        else if (!strcmp(a, "--regex")) regex = 1;
        else if (!strcmp(a, "--include-removed")) include_removed = 1;
        else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "lcm: unknown option %s\n%s", a, usage);
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
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, regex ? "pattern" : "query", pos[0]);
        if (scope) cJSON_AddStringToObject(a, "scope", scope);
        if (session) cJSON_AddStringToObject(a, "session", session);
        if (cwd_opt) cJSON_AddStringToObject(a, "cwd", cwd_opt);
        if (offset > 0) cJSON_AddNumberToObject(a, "offset", (double)offset);
        if (include_removed) cJSON_AddBoolToObject(a, "include_removed", 1);
        rc = lcm_run_tool(&c, "lcm_grep", a);
    } else if (!strcmp(verb, "sessions")) {
        cJSON *a = cJSON_CreateObject();
        if (cwd_opt) cJSON_AddStringToObject(a, "cwd", cwd_opt);
        if (offset > 0) cJSON_AddNumberToObject(a, "offset", (double)offset);
        rc = lcm_run_tool(&c, "lcm_sessions", a);
    } else if (!strcmp(verb, "status")) {
        rc = lcm_run_tool(&c, "lcm_status", NULL);
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
        rc = lcm_run_tool(&c, verb[0] == 'd' ? "lcm_describe" : "lcm_expand", a);
    } else {
        fprintf(stderr, "lcm: unknown verb %s\n%s", verb, usage);
    }
done:
    free(home);
    free(cwd);
    free(pos);
    return rc;
}
