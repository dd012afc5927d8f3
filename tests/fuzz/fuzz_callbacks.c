/*
 * fuzz_callbacks.c -- libFuzzer target for the plugin's whole ABI surface, without
 * dlopen: the plugin objects are linked in and driven through agent_plugin_init with a
 * minimal in-process host (session facts pointing at a temp agent home, a branch the
 * input can set, custom entries appended into memory, commands and tools recorded, no
 * model). Each input is one plugin lifetime: init, session_start, then a script, then
 * session_shutdown and unload, with the agent home emptied afterwards so inputs do not
 * leak state into each other.
 *
 * The script is the input split on 0xFF into chunks; a chunk's first byte picks the
 * action (ACT_* below, modulo their count) and the rest is its payload: an event's JSON,
 * the per-entry message texts of a `context` call (one per line; entry id "e<line>", or
 * none when the line starts with '-'), a branch for get_branch, the arguments JSON given
 * to every registered tool, or the argument text given to every registered command.
 */
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_plugin.h"

enum {
    ACT_SESSION_START, ACT_SESSION_SHUTDOWN, ACT_BEFORE_AGENT_START, ACT_CONTEXT,
    ACT_BEFORE_PROVIDER_REQUEST, ACT_TURN_END, ACT_TOOL_CALL, ACT_TOOL_RESULT,
    ACT_BEFORE_COMPACT, ACT_COMPACT, ACT_TREE, ACT_SET_BRANCH, ACT_TOOLS, ACT_COMMANDS,
    ACT_AGENT_END, ACT_COUNT
};

#define MAX_REG 32
#define MAX_CHUNKS 64
#define MAX_MESSAGES 256

/* A registered tool or command: one of tool/cmd is set. */
typedef struct reg { char *name; ap_tool_fn tool; ap_command_fn cmd; void *ud; } reg;
typedef struct reg_list { reg v[MAX_REG]; size_t n; } reg_list;

static struct {
    char root[64];
    char home[128];
    char info[512];
    char *branch;          /* what get_branch answers; "[]" unless the input set one */
    reg_list tools, cmds;
    char **customs;        /* append_custom's entries, kept until the input ends */
    size_t n_customs;
} H;

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static char *dup_mem(const uint8_t *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) abort();
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static void h_free(void *p) { free(p); }
static void h_log(void *ctx, int level, const char *msg) { (void)ctx; (void)level; (void)msg; }

static int h_session_info(void *ctx, char **out, char **err)
{
    (void)ctx; (void)err;
    *out = dup_str(H.info);
    return *out ? AP_OK : AP_NOMEM;
}

static int h_get_branch(void *ctx, char **out, char **err)
{
    (void)ctx; (void)err;
    *out = dup_str(H.branch ? H.branch : "[]");
    return *out ? AP_OK : AP_NOMEM;
}

/* Level 2: every entry is the branch here; a queued prompt is accepted and dropped (the
 * fuzz host never runs one), which is what a plugin sees from a host that will. */
static int h_get_entries(void *ctx, char **out, char **err)
{
    return h_get_branch(ctx, out, err);
}

static int h_send_user_message(void *ctx, const char *text, char **err)
{
    (void)ctx; (void)err;
    return text && *text ? AP_OK : AP_INVALID;
}

static int h_get_entry(void *ctx, const char *id, char **out, char **err)
{
    (void)ctx; (void)id;
    *out = NULL;
    *err = dup_str("no such entry in the fuzz host");
    return AP_NOTFOUND;
}

static int h_append_custom(void *ctx, const char *type, const char *data, char **out_id,
                           char **err)
{
    (void)ctx; (void)err;
    if (!type || !data) return AP_INVALID;
    char **c = realloc(H.customs, (H.n_customs + 1) * sizeof *c);
    if (!c) return AP_NOMEM;
    H.customs = c;
    size_t n = strlen(type) + strlen(data) + 2;
    if (!(c[H.n_customs] = malloc(n))) return AP_NOMEM;
    snprintf(c[H.n_customs], n, "%s %s", type, data);
    H.n_customs++;
    if (out_id) {
        char id[32];
        snprintf(id, sizeof id, "c%07zu", H.n_customs);
        *out_id = dup_str(id);
    }
    return AP_OK;
}

static int h_get_model(void *ctx, char **out, char **err)
{
    (void)ctx; (void)err;
    *out = dup_str("{\"provider\":\"fuzz\",\"id\":\"m1\",\"contextWindow\":2000,\"maxTokens\":500}");
    return *out ? AP_OK : AP_NOMEM;
}

static int h_complete(void *ctx, const char *req, char **out, char **err)
{
    (void)ctx; (void)req;
    *out = NULL;
    *err = dup_str("the fuzz host has no model");
    return AP_UNSUPPORTED;
}

/* Register `r` under a copy of its name; a name already in `l` is refused with `taken`. */
static int reg_add(reg_list *l, reg r, const char *taken, char **err)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, r.name)) {
            *err = dup_str(taken);
            return AP_INVALID;
        }
    if (l->n == MAX_REG) return AP_NOMEM;
    r.name = dup_str(r.name);
    l->v[l->n++] = r;
    return AP_OK;
}

static int h_register_command(void *ctx, const char *name, const char *desc, ap_command_fn fn,
                              void *ud, char **err)
{
    (void)ctx; (void)desc;
    return reg_add(&H.cmds, (reg){(char *)name, NULL, fn, ud}, "command name taken", err);
}

static int h_register_tool(void *ctx, const char *name, const char *desc, const char *params,
                           ap_tool_fn fn, void *ud, char **err)
{
    (void)ctx; (void)desc; (void)params;
    return reg_add(&H.tools, (reg){(char *)name, fn, NULL, ud}, "tool name taken", err);
}

static const ap_host_api HOST = {
    .struct_size = sizeof(ap_host_api),
    .abi_version = AP_ABI_VERSION,
    .api_level = AP_API_LEVEL,
    .host_name = "fuzz-host 0",
    .free = h_free,
    .log = h_log,
    .notify = h_log,
    .session_info = h_session_info,
    .get_branch = h_get_branch,
    .get_entry = h_get_entry,
    .append_custom = h_append_custom,
    .get_model = h_get_model,
    .complete = h_complete,
    .register_command = h_register_command,
    .register_tool = h_register_tool,
    .send_user_message = h_send_user_message,
    .get_entries = h_get_entries,
};

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag;
    if (ftw->level > 0) remove(p);
    return 0;
}

static void cleanup(void) { nftw(H.root, rm_entry, 16, FTW_DEPTH | FTW_PHYS), rmdir(H.root); }

static void setup(void)
{
    /* Each input creates a store: on tmpfs its fsyncs cost nothing. */
    struct stat sb;
    const char *base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(H.root, sizeof H.root, "%s/lc-fuzz-cb.XXXXXX", base);
    if (!mkdtemp(H.root)) abort();
    atexit(cleanup);
    snprintf(H.home, sizeof H.home, "%s/home", H.root);
    snprintf(H.info, sizeof H.info,
             "{\"id\":\"fuzz-session\",\"sessionFile\":\"%s/s.jsonl\",\"cwd\":\"%s\","
             "\"agentHome\":\"%s\",\"tmpDir\":\"%s\"}",
             H.root, H.root, H.home, H.root);
}

static void reset_host(void)
{
    for (size_t i = 0; i < H.tools.n; i++) free(H.tools.v[i].name);
    for (size_t i = 0; i < H.cmds.n; i++) free(H.cmds.v[i].name);
    for (size_t i = 0; i < H.n_customs; i++) free(H.customs[i]);
    free(H.customs);
    free(H.branch);
    H.customs = NULL;
    H.branch = NULL;
    H.tools.n = H.cmds.n = H.n_customs = 0;
    /* The next input starts from an empty agent home. */
    nftw(H.root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    mkdir(H.home, 0700);
}

static void call_event(const ap_plugin *pl, ap_event_fn fn, const char *json)
{
    char *out = NULL, *err = NULL;
    if (!fn) return;
    fn(pl->state, json, &out, &err);
    pl->release(pl->state, out);
    pl->release(pl->state, err);
}

static void call_context(const ap_plugin *pl, char *payload)
{
    ap_message_in msgs[MAX_MESSAGES];
    char ids[MAX_MESSAGES][16];
    size_t n = 0;
    for (char *line = payload; line && n < MAX_MESSAGES;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        if (*line == '-') {
            msgs[n].entry_id = NULL;
            line++;
        } else {
            snprintf(ids[n], sizeof ids[n], "e%zu", n);
            msgs[n].entry_id = ids[n];
        }
        msgs[n].json = line;
        msgs[n].json_len = strlen(line);
        n++;
        line = nl ? nl + 1 : NULL;
    }
    ap_context_event ev = {.struct_size = sizeof ev, .n_messages = n, .messages = msgs,
                           .system_prompt = "You are a fuzz target."};
    ap_context_result *res = NULL;
    char *err = NULL;
    if (pl->context(pl->state, &ev, &res, &err) == AP_OK && res) {
        for (size_t i = 0; i < res->n_items; i++)
            if (res->items[i].input_index >= (int64_t)n ||
                (res->items[i].input_index < 0 && !res->items[i].json))
                abort(); /* a result must refer to a real input or carry a message */
    }
    pl->release_context(pl->state, res);
    pl->release(pl->state, err);
}

static void call_tools(const ap_plugin *pl, const char *payload)
{
    size_t n = strlen(payload) + 64;
    char *wrapped = malloc(n);
    if (!wrapped) abort();
    snprintf(wrapped, n, "{\"toolCallId\":\"fz\",\"arguments\":%s}", payload);
    for (size_t i = 0; i < H.tools.n; i++) {
        const char *calls[2] = {payload, wrapped};
        for (int k = 0; k < 2; k++) {
            char *out = NULL, *err = NULL;
            H.tools.v[i].tool(H.tools.v[i].ud, calls[k], &out, &err);
            pl->release(pl->state, out);
            pl->release(pl->state, err);
        }
    }
    free(wrapped);
}

static void call_commands(const ap_plugin *pl, const char *payload)
{
    for (size_t i = 0; i < H.cmds.n; i++) {
        char *out = NULL, *err = NULL;
        H.cmds.v[i].cmd(H.cmds.v[i].ud, payload, &out, &err);
        pl->release(pl->state, out);
        pl->release(pl->state, err);
    }
}

static void run_chunk(const ap_plugin *pl, int act, char *payload)
{
    switch (act) {
    case ACT_SESSION_START: call_event(pl, pl->session_start, payload); break;
    case ACT_SESSION_SHUTDOWN: call_event(pl, pl->session_shutdown, payload); break;
    case ACT_BEFORE_AGENT_START: call_event(pl, pl->before_agent_start, payload); break;
    case ACT_CONTEXT: if (pl->context) call_context(pl, payload); break;
    case ACT_BEFORE_PROVIDER_REQUEST: call_event(pl, pl->before_provider_request, payload); break;
    case ACT_TURN_END: call_event(pl, pl->turn_end, payload); break;
    case ACT_TOOL_CALL: call_event(pl, pl->tool_call, payload); break;
    case ACT_TOOL_RESULT: call_event(pl, pl->tool_result, payload); break;
    case ACT_BEFORE_COMPACT: call_event(pl, pl->session_before_compact, payload); break;
    case ACT_COMPACT: call_event(pl, pl->session_compact, payload); break;
    case ACT_TREE: call_event(pl, pl->session_tree, payload); break;
    case ACT_AGENT_END: call_event(pl, pl->agent_end, payload); break;
    case ACT_SET_BRANCH:
        free(H.branch);
        H.branch = dup_str(payload);
        break;
    case ACT_TOOLS: call_tools(pl, payload); break;
    case ACT_COMMANDS: call_commands(pl, payload); break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!H.root[0]) setup();
    reset_host();
    ap_plugin pl;
    memset(&pl, 0, sizeof pl);
    pl.struct_size = sizeof pl;
    char errbuf[512];
    if (agent_plugin_init(&HOST, &pl, errbuf, sizeof errbuf) != AP_OK) abort();
    call_event(&pl, pl.session_start, "{\"reason\":\"startup\"}");

    size_t start = 0, chunks = 0;
    while (start < size && chunks < MAX_CHUNKS) {
        const uint8_t *sep = memchr(data + start, 0xFF, size - start);
        size_t end = sep ? (size_t)(sep - data) : size;
        if (end > start) {
            char *payload = dup_mem(data + start + 1, end - start - 1);
            run_chunk(&pl, data[start] % ACT_COUNT, payload);
            free(payload);
        }
        chunks++;
        start = end + 1;
    }

    call_event(&pl, pl.session_shutdown, "{}");
    pl.unload(pl.state);
    return 0;
}
