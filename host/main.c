/*
 * main.c -- agent-host's command line: parses the options, sets up the host (home,
 * plugins, session, trace/log), and runs one of the modes: replay, gen, --tool,
 * --tool-batch, -p PROMPT, --command, or the interactive prompt. Exit status 0 on
 * success, else 1 with a one-line reason on stderr.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "batch.h"
#include "gen.h"
#include "hostapi.h"
#include "llm.h"
#include "loader.h"
#include "panel.h"
#include "replay.h"
#include "session.h"
#include "util.h"

static const char USAGE[] =
    "usage: agent-host [options] [replay IN.jsonl | gen [--seed N] [--tokens T] [--messages M] [--fanout K] [--needles F] OUT.jsonl]\n"
    "\n"
    "The reference host of the lossless-context plugin ABI (abi/ABI.md). It loads plugins,\n"
    "keeps a session as an append-only JSONL tree, and drives the agent lifecycle.\n"
    "\n"
    "Forms:\n"
    "  agent-host --home D --plugin-dir P --session OUT.jsonl replay IN.jsonl [--window T]\n"
    "      replay IN through the plugins turn by turn (every event, no model) into OUT\n"
    "      (created if missing); ids, parents and timestamps of IN are kept\n"
    "  agent-host --home D --plugin-dir P --session FILE --command \"/lcm status\"\n"
    "      open FILE (session_start resume), run each command, print its text\n"
    "  agent-host --home D --plugin-dir P --session FILE --tool NAME 'ARGS-JSON'\n"
    "      call a tool as the model would (recorded as a toolCall + toolResult); print it\n"
    "  agent-host --home D --plugin-dir P --session FILE --tool-batch < CALLS.jsonl\n"
    "      load the plugins and FILE once, then call one tool per stdin line\n"
    "      {\"name\": NAME, \"args\": {...}, \"id\": ANY} exactly as --tool does, answering each\n"
    "      with one stdout line {\"id\", \"name\", \"is_error\", \"text\", \"error\"}: text is the\n"
    "      tool's result, error the reason when is_error; a malformed line is answered\n"
    "      with is_error and the batch goes on; blank lines are skipped; EOF ends it (exit 0)\n"
    "  agent-host --session FILE --base-url URL --model ID [--window T] -p \"PROMPT\"\n"
    "      one prompt against an OpenAI-compatible endpoint, running tools until it stops\n"
    "  agent-host gen --seed N --tokens T [--messages M] [--fanout K] [--needles F] OUT.jsonl\n"
    "      write a deterministic generated session (tests, demo, benchmarks);\n"
    "      --fanout K writes K/2..K parallel tool calls per assistant round and no large files\n"
    "      (many small messages)\n"
    "      --needles F also writes the planted needles as JSONL (the evaluation's answers)\n"
    "  agent-host [options]\n"
    "      interactive: type a prompt, /command args, /tree ID, /compact, /help, /quit; on a\n"
    "      terminal /clm overview|edits|settings and /lcm settings open a panel steered with keys\n"
    "\n"
    "Options:\n"
    "  --home DIR         agent home reported to plugins (stores, config); default ~/.agent\n"
    "  --plugin-dir DIR   load every plugin folder (plugin.json + .so) in DIR;\n"
    "                     default DIR = HOME/plugins when it exists\n"
    "  --plugin PATH      load one plugin .so directly (repeatable)\n"
    "  --session FILE     the session JSONL; default a new file under HOME/sessions\n"
    "  --window TOKENS    the model's context window (default 128000)\n"
    "  --max-tokens N     max output tokens per request (default 8192)\n"
    "  --max-turns N      model turns one prompt may take before it stops\n"
    "                     (default 0 = unlimited, as Pi; Ctrl-C stops a turn)\n"
    "  --base-url URL     OpenAI-compatible endpoint (\"/chat/completions\" is appended)\n"
    "  --model ID         model id; the API key comes from OPENAI_API_KEY or AGENT_API_KEY\n"
    "  --cwd DIR          working directory of the session and the tools (default: .)\n"
    "  --command \"/x a\"   run a slash command after load or replay (repeatable)\n"
    "  --tool NAME ARGS   call a tool with a JSON object of arguments\n"
    "  --tool-batch       call tools read from stdin, one JSON object a line (see above)\n"
    "  -p PROMPT          one non-interactive prompt (needs --base-url and --model)\n"
    "  --trace FILE       append one JSON line per plugin callback:\n"
    "                     {event, plugin, handled, input, status, output}; a context\n"
    "                     call adds us, the plugin's time in it (microseconds)\n"
    "  --verbose          log to stderr;  --log FILE  log to FILE\n"
    "  -h, --help         this text\n"
    "\n"
    "A prompt a plugin queues (send_user_message, API level 2, e.g. /clm-compact) runs as\n"
    "the next prompt once the agent is idle: after the command, -p prompt or --tool call\n"
    "that queued it, in every mode that has a model (--base-url and --model); its answer\n"
    "is printed like a -p answer. Replay has no model: the slot answers AP_UNSUPPORTED.\n"
    "AGENT_HOST_API_LEVEL=1 makes the host a level-1 host (no send_user_message,\n"
    "get_entries or agent_end), to test a plugin's fallbacks.\n";

typedef struct options {
    const char *home, *plugin_dir, *session, *base_url, *model, *cwd, *trace, *log;
    const char **plugins;
    size_t n_plugins;
    const char **commands;
    size_t n_commands;
    const char *tool, *tool_args, *prompt;
    const char *mode, *mode_arg;
    const char *gen_needles;
    long window, max_tokens, max_turns, gen_tokens, gen_messages, gen_fanout;
    unsigned long long seed;
    int verbose, tool_batch;
} options;

static int fail(const char *fmt, const char *a)
{
    fprintf(stderr, "agent-host: ");
    fprintf(stderr, fmt, a ? a : "");
    fputc('\n', stderr);
    return 1;
}

static int parse_long(const char *s, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !end || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

static int push(const char ***list, size_t *n, const char *v)
{
    const char **p = realloc(*list, (*n + 1) * sizeof *p);
    if (!p)
        return -1;
    p[(*n)++] = v;
    *list = p;
    return 0;
}

/* 0 = parsed, 1 = error (reported), 2 = help printed. */
static int parse_args(int argc, char **argv, options *o)
{
    /* The options of one value: a text kept as given, or a non-negative number. */
    const struct {
        const char *name;
        const char **text;
        long *num;
    } valued[] = {
        {"--home", &o->home, NULL}, {"--plugin-dir", &o->plugin_dir, NULL},
        {"--session", &o->session, NULL}, {"--needles", &o->gen_needles, NULL},
        {"--base-url", &o->base_url, NULL}, {"--model", &o->model, NULL},
        {"--cwd", &o->cwd, NULL}, {"--trace", &o->trace, NULL}, {"--log", &o->log, NULL},
        {"-p", &o->prompt, NULL}, {"--prompt", &o->prompt, NULL},
        {"--window", NULL, &o->window}, {"--max-tokens", NULL, &o->max_tokens},
        {"--max-turns", NULL, &o->max_turns}, {"--tokens", NULL, &o->gen_tokens},
        {"--messages", NULL, &o->gen_messages}, {"--fanout", NULL, &o->gen_fanout},
    };
    const size_t n_valued = sizeof valued / sizeof valued[0];
    o->window = LC_WINDOW_DEFAULT;
    o->max_tokens = 8192;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t k = 0;
        while (k < n_valued && strcmp(a, valued[k].name))
            k++;
#define NEED()                                                   \
    do {                                                         \
        if (!v)                                                  \
            return fail("%s needs a value (see --help)", a);     \
        i++;                                                     \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            return 2;
        } else if (k < n_valued) {
            NEED();
            if (valued[k].text)
                *valued[k].text = v;
            else if (parse_long(v, valued[k].num))
                return fail("%s needs a non-negative number", a);
        } else if (!strcmp(a, "--plugin")) {
            NEED();
            if (push(&o->plugins, &o->n_plugins, v))
                return fail("out of memory%s", NULL);
        } else if (!strcmp(a, "--seed")) {
            NEED();
            o->seed = strtoull(v, NULL, 10);
        } else if (!strcmp(a, "--verbose")) {
            o->verbose = 1;
        } else if (!strcmp(a, "--tool-batch")) {
            o->tool_batch = 1;
        } else if (!strcmp(a, "--command")) {
            NEED();
            if (push(&o->commands, &o->n_commands, v))
                return fail("out of memory%s", NULL);
        } else if (!strcmp(a, "--tool")) {
            if (i + 2 >= argc)
                return fail("--tool needs NAME and 'ARGS-JSON'%s", NULL);
            o->tool = argv[++i];
            o->tool_args = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return fail("unknown option %s (see --help)", a);
        } else if (!o->mode) {
            if (strcmp(a, "replay") != 0 && strcmp(a, "gen") != 0)
                return fail("unknown mode '%s' (replay or gen; see --help)", a);
            o->mode = a;
        } else if (!o->mode_arg) {
            o->mode_arg = a;
        } else {
            return fail("unexpected argument %s", a);
        }
#undef NEED
    }
    if (o->mode && !o->mode_arg)
        return fail("%s needs a file argument (see --help)", o->mode);
    if (o->mode && !strcmp(o->mode, "replay") && !o->session)
        return fail("replay needs --session OUT.jsonl%s", NULL);
    if (o->window < 1024)
        return fail("--window must be at least 1024 tokens%s", NULL);
    /* stdout carries only the answers of a batch, and stdin only its calls. */
    if (o->tool_batch && (o->mode || o->tool || o->prompt || o->n_commands))
        return fail("--tool-batch cannot be combined with a mode, --tool, -p or --command%s", NULL);
    return 0;
}

static void warn_cb(void *ud, const char *msg)
{
    host_notify(ud, AP_LEVEL_WARNING, "%s", msg);
}

static int print_command(agent *a, const char *cmd)
{
    char *out = NULL, *err = NULL;
    int rc = agent_command(a, cmd, &out, &err);
    if (rc) {
        fprintf(stderr, "agent-host: %s\n", err ? err : "command failed");
    } else if (out) {
        fputs(out, stdout);
        if (*out && out[strlen(out) - 1] != '\n')
            fputc('\n', stdout);
        fflush(stdout);
    }
    free(out);
    free(err);
    return rc;
}

/* Run the user prompts plugins queued with send_user_message, oldest first, now that the
 * agent is idle: right after the command or prompt that queued them. A prompt's agent_end
 * may queue the next one; MAX_DELIVERIES in a row stops a plugin that always does. */
enum { MAX_DELIVERIES = 16 };

typedef int (*run_prompt_fn)(agent *a, const char *prompt, void *ud);

static int deliver_queued(agent *a, run_prompt_fn run, void *ud)
{
    int status = 0;
    for (int i = 0;; i++) {
        host_plugin *owner = NULL;
        char *text = hostapi_take_queued(a->h, &owner);
        if (!text)
            break;
        if (i >= MAX_DELIVERIES) {
            host_notify(a->h, AP_LEVEL_WARNING, "plugin '%s' queued more than %d prompts in a "
                        "row; the rest are dropped", owner ? owner->name : "?", MAX_DELIVERIES);
            free(text);
            hostapi_drop_queued(a->h, NULL);
            break;
        }
        host_notify(a->h, AP_LEVEL_INFO, "plugin '%s' sends a prompt (%zu characters)",
                    owner ? owner->name : "?", strlen(text));
        if (run(a, text, ud))
            status = 1;
        free(text);
    }
    return status;
}

/* A prompt's answer printed to `out`, its failure to stderr. */
static int run_prompt_into(agent *a, const char *prompt, FILE *out)
{
    char *text = NULL, *err = NULL;
    int rc = agent_prompt(a, prompt, &text, &err);
    if (rc)
        fprintf(stderr, "agent-host: %s\n", err ? err : "prompt failed");
    else if (text)
        fprintf(out, "%s\n", text);
    fflush(out);
    free(text);
    free(err);
    return rc;
}

static int run_prompt_plain(agent *a, const char *prompt, void *ud)
{
    (void)ud;
    return run_prompt_into(a, prompt, stdout);
}

/* Ctrl-C: the streaming transfer polls this and stops the turn; at the prompt, a
 * second one in a row leaves. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct stream_state {
    int printed;      /* answer text went to stdout this turn */
    int in_thinking;
} stream_state;

static void print_delta(void *ud, const char *kind, const char *text, size_t len)
{
    stream_state *st = ud;
    int thinking = strcmp(kind, "thinking") == 0;
    /* Thinking is shown dim on a terminal, and only there. */
    if (thinking && !isatty(1))
        return;
    if (thinking != st->in_thinking)
        fputs(thinking ? "\033[2m" : "\033[0m\n", stdout);
    st->in_thinking = thinking;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    if (!thinking)
        st->printed = 1;
}

/* In a batch, stdout is the answers' channel: a queued prompt's answer goes to stderr. */
static int run_prompt_to_stderr(agent *a, const char *prompt, void *ud)
{
    (void)ud;
    return run_prompt_into(a, prompt, stderr);
}

static void batch_deliver(agent *a, void *ud)
{
    (void)ud;
    deliver_queued(a, run_prompt_to_stderr, NULL);
}

static int run_prompt_streamed(agent *a, const char *prompt, void *ud)
{
    stream_state *st = ud;
    char *text = NULL, *err = NULL;
    memset(st, 0, sizeof *st);
    interrupted = 0;
    int prc = agent_prompt(a, prompt, &text, &err);
    if (st->in_thinking)
        fputs("\033[0m", stdout);
    if (st->printed)
        fputc('\n', stdout);
    if (interrupted)
        /* What was appended before the interrupt stays in the session. */
        fputs("[interrupted: the turn stopped; the session keeps what was said]\n", stdout);
    else if (prc)
        fprintf(stderr, "agent-host: %s\n", err ? err : "prompt failed");
    else if (text && !st->printed)
        printf("%s\n", text);
    fflush(stdout);
    free(text);
    free(err);
    return prc;
}

static int interactive(agent *a)
{
    char *line = NULL;
    size_t cap = 0;
    int tty = isatty(0), prompt_interrupts = 0;
    ssize_t n;
    stream_state st = {0};
    llm_stream stream = {print_delta, &st, &interrupted};
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: Ctrl-C at the prompt must end the blocked read. */
    sigaction(SIGINT, &sa, &old);
    llm_set_default_stream(&stream);
    for (;;) {
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        interrupted = 0;
        errno = 0;
        if ((n = getline(&line, &cap, stdin)) < 0) {
            if (errno == EINTR && interrupted) {
                clearerr(stdin);
                if (++prompt_interrupts >= 2)
                    break;
                fputs("\n(Ctrl-C again to quit, or /quit)\n", stdout);
                continue;
            }
            break;
        }
        prompt_interrupts = 0;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        if (!strcmp(line, "/quit") || !strcmp(line, "/exit"))
            break;
        if (line[0] == '/' && tty && isatty(1) && panel_wants(line)) {
            /* A page on a terminal is a panel steered with keys (panel.h). */
            char *perr = NULL;
            if (panel_run(a, line, &perr)) {
                fprintf(stderr, "agent-host: panel: %s; the page as text:\n", perr ? perr : "failed");
                print_command(a, line);
            }
            free(perr);
        } else if (line[0] == '/')
            print_command(a, line);
        else
            run_prompt_streamed(a, line, &st);
        if (interrupted && a->h->n_queued) {
            /* Ctrl-C stops what runs next too: a plugin's queued prompt is not started. */
            hostapi_drop_queued(a->h, NULL);
            fputs("[interrupted: a prompt a plugin queued was dropped]\n", stdout);
        }
        deliver_queued(a, run_prompt_streamed, &st);
    }
    llm_set_default_stream(NULL);
    sigaction(SIGINT, &old, NULL);
    free(line);
    return 0;
}

int main(int argc, char **argv)
{
    options o = {0};
    host h = {0};
    agent a = {0};
    int rc = parse_args(argc, argv, &o), status = 0, agent_ready = 0;
    char *err = NULL, *home = NULL, *cwd = NULL, *session_path = NULL, *header = NULL;
    if (rc) {
        status = rc == 2 ? 0 : 1;
        goto out;
    }
    if (o.mode && !strcmp(o.mode, "gen")) {
        gen_options g = {.seed = o.seed, .tokens = o.gen_tokens, .messages = o.gen_messages,
                         .needles_path = o.gen_needles, .fanout = (int)o.gen_fanout};
        if (g.tokens == 0 && g.messages == 0)
            g.tokens = 20000;
        if (gen_session(&g, o.mode_arg, &err)) {
            status = fail("gen: %s", err);
            goto out;
        }
        printf("generated %s (seed %llu)\n", o.mode_arg, o.seed);
        goto out;
    }

    hostapi_init(&h);
    const char *env_home = getenv("HOME");
    home = o.home ? lc_strdup(o.home) : lc_asprintf("%s/.agent", env_home ? env_home : ".");
    cwd = o.cwd ? realpath(o.cwd, NULL) : getcwd(NULL, 0);
    if (!home || !cwd) {
        status = fail("cannot resolve the home or working directory %s", o.cwd);
        goto out;
    }
    if (lc_mkdir_p(home, 0700, &err)) {
        status = fail("%s", err);
        goto out;
    }
    h.home = home;
    h.cwd = cwd;
    h.tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    h.window = o.window;
    h.max_tokens = o.max_tokens;
    h.max_turns = o.max_turns;
    h.base_url = o.base_url;
    h.model = o.model;
    h.api_key = getenv("OPENAI_API_KEY") ? getenv("OPENAI_API_KEY") : getenv("AGENT_API_KEY");
    h.replay = o.mode != NULL;
    h.verbose = o.verbose;
    if (o.log && !(h.log_fp = fopen(o.log, "a"))) {
        status = fail("cannot open the log file %s", o.log);
        goto out;
    }
    if (o.trace && !(h.trace_fp = fopen(o.trace, "a"))) {
        status = fail("cannot open the trace file %s", o.trace);
        goto out;
    }

    /* Plugins load before the session opens so their commands exist for session_start. */
    char *default_dir = NULL;
    const char *pdir = o.plugin_dir;
    struct stat st;
    if (!pdir) {
        default_dir = lc_asprintf("%s/plugins", home);
        if (default_dir && stat(default_dir, &st) == 0 && S_ISDIR(st.st_mode))
            pdir = default_dir;
    }
    if (pdir)
        loader_load_dir(&h, pdir);
    free(default_dir);
    for (size_t i = 0; i < o.n_plugins; i++) {
        char *perr = NULL;
        if (loader_load_file(&h, o.plugins[i], NULL, NULL, &perr))
            host_notify(&h, AP_LEVEL_ERROR, "%s; skipped", perr ? perr : "plugin failed to load");
        free(perr);
    }

    if (o.session) {
        session_path = lc_strdup(o.session);
    } else {
        char *dir = lc_asprintf("%s/sessions", home);
        if (!dir || lc_mkdir_p(dir, 0700, &err)) {
            free(dir);
            status = fail("%s", err ? err : "out of memory");
            goto out;
        }
        char ts[40];
        session_iso_time((long long)time(NULL) * 1000, ts, sizeof ts);
        for (char *p = ts; *p; p++)
            if (*p == ':' || *p == '.')
                *p = '-';
        session_path = lc_asprintf("%s/%s_%d.jsonl", dir, ts, (int)getpid());
        free(dir);
    }
    if (o.mode && replay_read_header(o.mode_arg, &header, &err)) {
        status = fail("%s", err);
        goto out;
    }
    int existed = 0;
    if (!session_path ||
        session_open(session_path, cwd, header, warn_cb, &h, &h.sess, &existed, &err)) {
        status = fail("%s", err ? err : "cannot open the session");
        goto out;
    }
    agent_init(&a, &h);
    agent_ready = 1;
    if (o.mode)
        replay_prepare(h.sess, header);
    agent_session_start(&a, existed ? "resume" : "startup");

    if (o.mode && replay_run(&a, o.mode_arg, &err)) {
        status = fail("replay: %s", err);
        goto shutdown;
    }
    if (o.tool) {
        char *text = NULL;
        int trc = agent_call_tool(&a, o.tool, o.tool_args, &text, &err);
        if (text) {
            fputs(text, stdout);
            fputc('\n', stdout);
        }
        free(text);
        if (trc) {
            status = fail("%s", err);
            goto shutdown;
        }
    }
    if (o.tool_batch && batch_run(&a, stdin, stdout, batch_deliver, NULL, &err)) {
        status = fail("--tool-batch: %s", err);
        goto shutdown;
    }
    if (o.prompt) {
        char *text = NULL;
        if (agent_prompt(&a, o.prompt, &text, &err)) {
            free(text);
            status = fail("%s", err);
            goto shutdown;
        }
        if (text)
            printf("%s\n", text);
        free(text);
    }
    /* Prompts plugins queued meanwhile run once the agent is idle (API level 2). */
    if (deliver_queued(&a, run_prompt_plain, NULL))
        status = 1;
    for (size_t i = 0; i < o.n_commands; i++) {
        if (print_command(&a, o.commands[i]))
            status = 1;
        if (deliver_queued(&a, run_prompt_plain, NULL))
            status = 1;
    }
    if (!o.mode && !o.tool && !o.tool_batch && !o.prompt && o.n_commands == 0)
        interactive(&a);
shutdown:
    fflush(stdout);
    agent_session_shutdown(&a);
out:
    if (agent_ready)
        agent_destroy(&a);
    if (h.api.struct_size) {
        loader_unload_all(&h);
        hostapi_destroy(&h);
    }
    session_close(h.sess);
    if (h.log_fp)
        fclose(h.log_fp);
    if (h.trace_fp)
        fclose(h.trace_fp);
    free(o.plugins);
    free(o.commands);
    free(home);
    free(cwd);
    free(session_path);
    free(header);
    free(err);
    return status;
}
