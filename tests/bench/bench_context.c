/*
 * bench_context.c -- the cost of the plugin's `context` hook as the history grows, with the
 * JSON parse and serialization inside it shown separately.
 *
 *   bench_context SO [HISTORY...]      (default histories: 1000 10000 100000 messages)
 *
 * A host of its own, as a host would be: it dlopens the real lossless-context.so, hands it
 * a host table (session facts, an in-memory branch, custom entries, the model, command
 * registration) and calls the ABI callbacks. The reference host is not used because its
 * replay runs the whole turn (provider request, turn_end, compaction passes) around each
 * hook call and could not time the hook alone.
 *
 * For each history size and for two configurations (live context and LCM, the default;
 * LCM alone after `/clm off`), one child process: a new session, a first `context` call
 * that carries the whole history (it ingests and renders everything once), then 200, 50
 * or 10 calls (below 10k, below 100k, from 100k messages) that each carry one new message
 * more -- the steady state of a session (from 2,000 messages up, the first call hands the
 * history to the worker's catch-up: the calls start once it is stored, and the wait is
 * printed beside the first call). Messages average ~450 bytes of JSON (a prompt, a
 * read and its result, a command and its output, an answer), so 100k of them fit the
 * suite's time budget; the input size is printed beside every group. The model
 * reports a 1e9-token window, so no cut or overflow guard applies: the hook is handed and
 * returns the whole raw history, and with live context on it renders the mirror of all of
 * it (the mirror render runs because the model is not the replay model).
 *
 * How JSON is measured: this executable exports its own cJSON_Parse*, cJSON_Print* and
 * cJSON_Delete (linked with --export-dynamic-symbol), which the .so's calls bind to ahead
 * of libcjson; they forward to libcjson and, while the hook runs on this thread, add the
 * outermost call's time, count and bytes up. So "JSON parse in the hook" is the time the
 * plugin spent in cJSON parsing during the call, not an estimate. Beside it, outside the
 * hook and labelled "reference": parsing every input message once (what a plugin that
 * parsed its whole input per call would pay) and printing every output message once.
 * Peak RSS is read before the reference loops run, so it is the hook's process alone
 * (the host's own copy of the messages included, and printed). A summary table closes the
 * output, one row per child.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "agent_plugin.h"
#include "util.h"

/* ---- cJSON interposition ------------------------------------------------------------- */

typedef struct jcost {
    double ms;
    unsigned long calls;
    size_t bytes;
} jcost;

static struct {
    int on;
    pthread_t thread;
    jcost parse, print, del;
} meas;

/* Nested calls (libcjson calling its own exported functions through the PLT) are counted
 * once, by the outermost. */
static _Thread_local int json_depth;

static cJSON *(*real_parse)(const char *);
static cJSON *(*real_parse_len)(const char *, size_t);
static cJSON *(*real_parse_opts)(const char *, const char **, cJSON_bool);
static cJSON *(*real_parse_len_opts)(const char *, size_t, const char **, cJSON_bool);
static char *(*real_print)(const cJSON *);
static char *(*real_print_unf)(const cJSON *);
static char *(*real_print_buf)(const cJSON *, int, cJSON_bool);
static cJSON_bool (*real_print_pre)(cJSON *, char *, const int, const cJSON_bool);
static void (*real_delete)(cJSON *);

static void json_bind(void **slot, const char *name)
{
    *slot = dlsym(RTLD_NEXT, name);
    if (!*slot) {
        fprintf(stderr, "bench_context: libcjson has no %s\n", name);
        exit(2);
    }
}

static void json_bind_all(void)
{
    json_bind((void **)&real_parse, "cJSON_Parse");
    json_bind((void **)&real_parse_len, "cJSON_ParseWithLength");
    json_bind((void **)&real_parse_opts, "cJSON_ParseWithOpts");
    json_bind((void **)&real_parse_len_opts, "cJSON_ParseWithLengthOpts");
    json_bind((void **)&real_print, "cJSON_Print");
    json_bind((void **)&real_print_unf, "cJSON_PrintUnformatted");
    json_bind((void **)&real_print_buf, "cJSON_PrintBuffered");
    json_bind((void **)&real_print_pre, "cJSON_PrintPreallocated");
    json_bind((void **)&real_delete, "cJSON_Delete");
}

static int json_enter(double *t0)
{
    int top = json_depth++ == 0 && meas.on && pthread_equal(pthread_self(), meas.thread);
    *t0 = top ? lc_now_ms() : 0;
    return top;
}

static void json_leave(int top, jcost *c, double t0)
{
    json_depth--;
    if (!top) return;
    c->ms += lc_now_ms() - t0;
    c->calls++;
}

/* The body of one interposed call: `call` runs between json_enter and json_leave and is
 * charged to meas.SLOT; when it is the outermost call and `counted` holds, `nbytes` bytes
 * of JSON are added to the slot. */
#define JSON_TIMED(type, slot, call, counted, nbytes)                                         \
    double t0;                                                                               \
    int top = json_enter(&t0);                                                               \
    type r = call;                                                                           \
    json_leave(top, &meas.slot, t0);                                                         \
    if (top && (counted)) meas.slot.bytes += (nbytes);                                       \
    return r

/* These must be global (not static): the .so's cJSON calls bind to them by name. */
cJSON *cJSON_Parse(const char *value)
{
    JSON_TIMED(cJSON *, parse, real_parse(value), value, strlen(value));
}

cJSON *cJSON_ParseWithLength(const char *value, size_t buffer_length)
{
    JSON_TIMED(cJSON *, parse, real_parse_len(value, buffer_length), 1, buffer_length);
}

cJSON *cJSON_ParseWithOpts(const char *value, const char **return_parse_end,
                           cJSON_bool require_null_terminated)
{
    JSON_TIMED(cJSON *, parse, real_parse_opts(value, return_parse_end, require_null_terminated),
               value, strlen(value));
}

cJSON *cJSON_ParseWithLengthOpts(const char *value, size_t buffer_length,
                                 const char **return_parse_end, cJSON_bool require_null_terminated)
{
    JSON_TIMED(cJSON *, parse,
               real_parse_len_opts(value, buffer_length, return_parse_end, require_null_terminated),
               1, buffer_length);
}

char *cJSON_Print(const cJSON *item)
{
    JSON_TIMED(char *, print, real_print(item), r, strlen(r));
}

char *cJSON_PrintUnformatted(const cJSON *item)
{
    JSON_TIMED(char *, print, real_print_unf(item), r, strlen(r));
}

char *cJSON_PrintBuffered(const cJSON *item, int prebuffer, cJSON_bool fmt)
{
    JSON_TIMED(char *, print, real_print_buf(item, prebuffer, fmt), r, strlen(r));
}

cJSON_bool cJSON_PrintPreallocated(cJSON *item, char *buffer, const int length, const cJSON_bool format)
{
    JSON_TIMED(cJSON_bool, print, real_print_pre(item, buffer, length, format), r, strlen(buffer));
}

void cJSON_Delete(cJSON *item)
{
    double t0;
    int top = json_enter(&t0);
    real_delete(item);
    json_leave(top, &meas.del, t0);
}

/* ---- the generated history ------------------------------------------------------------- */

static unsigned long long bench_rng = 0x9E3779B97F4A7C15ULL;

static unsigned bench_next(void)
{
    bench_rng ^= bench_rng << 13;
    bench_rng ^= bench_rng >> 7;
    bench_rng ^= bench_rng << 17;
    return (unsigned)(bench_rng >> 11);
}

static const char *const bench_words[] = {
    "the", "build", "test", "passes", "after", "we", "changed", "parser", "cache", "store",
    "index", "summary", "node", "window", "request", "error", "output", "file", "function",
    "returns", "value", "because", "reads", "writes", "again", "model", "context", "tokens",
};

/* Prose of about `chars` characters, JSON-escaped (line breaks as \n). */
static void bench_prose(sbuf *b, size_t chars)
{
    size_t end = b->len + chars;
    size_t nw = sizeof bench_words / sizeof bench_words[0];
    while (b->len < end) {
        unsigned r = bench_next();
        sb_puts(b, bench_words[r % nw]);
        if (r % 97 == 0) sb_printf(b, " src/mod%u/file%u.c:%u", r % 40, r % 100, r % 900);
        sb_puts(b, r % 23 == 0 ? ".\\n" : " ");
    }
}

/* The result of call_<call> to `tool`: about `chars` characters of prose. */
static void bench_tool_result(sbuf *b, size_t call, const char *tool, size_t chars, long long ts)
{
    sb_printf(b, "{\"role\":\"toolResult\",\"toolCallId\":\"call_%zu\",\"toolName\":\"%s\","
                 "\"content\":[{\"type\":\"text\",\"text\":\"",
              call, tool);
    bench_prose(b, chars);
    sb_printf(b, "\"}],\"isError\":false,\"timestamp\":%lld}", ts);
}

/* One message of a tool-using session: a turn is a prompt, a read and its result, a
 * command and its output, and an answer. Sizes are modest so that 100k messages fit the
 * benchmark's time budget (about 450 bytes of JSON a message on average). */
static char *bench_message(size_t i)
{
    sbuf b = {0};
    unsigned r = bench_next();
    long long ts = 1700000000000LL + (long long)i * 1000;
    switch (i % 6) {
    case 0:
        sb_puts(&b, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"");
        bench_prose(&b, 60 + r % 240);
        sb_printf(&b, "\"}],\"timestamp\":%lld}", ts);
        break;
    case 1:
        sb_puts(&b, "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"");
        bench_prose(&b, 50 + r % 150);
        sb_printf(&b, "\"},{\"type\":\"toolCall\",\"id\":\"call_%zu\",\"name\":\"read\",\"arguments\":"
                      "{\"path\":\"src/mod%u/file%u.c\"}}],\"stopReason\":\"toolUse\",\"timestamp\":%lld}",
                  i, r % 40, r % 100, ts);
        break;
    case 2:
        bench_tool_result(&b, i - 1, "read", 200 + r % 1200, ts);
        break;
    case 3:
        sb_printf(&b, "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"call_%zu\","
                      "\"name\":\"bash\",\"arguments\":{\"command\":\"make test T=%u\"}}],"
                      "\"stopReason\":\"toolUse\",\"timestamp\":%lld}",
                  i, r % 500, ts);
        break;
    case 4:
        bench_tool_result(&b, i - 1, "bash", 100 + r % 500, ts);
        break;
    default:
        sb_puts(&b, "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"");
        bench_prose(&b, 100 + r % 500);
        sb_printf(&b, "\"}],\"stopReason\":\"stop\",\"usage\":{\"input\":%zu,\"output\":%u},"
                      "\"timestamp\":%lld}",
                  1000 + i * 110, 50 + r % 400, ts);
    }
    return b.oom ? NULL : sb_detach(&b);
}

/* ---- the host ------------------------------------------------------------------------- */

typedef struct bench_cmd {
    char *name;
    ap_command_fn fn;
    void *ud;
} bench_cmd;

typedef struct bench_host {
    ap_host_api api;
    char *home, *tmp, *sid;
    char **msgs;       /* the whole generated history (what a host holds) */
    size_t *lens;
    char **ids;
    size_t n_hist;     /* how much of it is on the branch now */
    char **customs;    /* custom entries the plugin appended, as entry JSON */
    char **custom_ids;
    size_t n_customs, cap_customs;
    bench_cmd cmds[16];
    size_t n_cmds;
    unsigned long hook_slot_calls; /* host slots the plugin called while the hook ran */
} bench_host;

static void bench_slot_called(bench_host *h)
{
    if (meas.on) h->hook_slot_calls++;
}

static void bh_free(void *ptr)
{
    free(ptr);
}

static void bh_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (level >= AP_LEVEL_WARNING) fprintf(stderr, "bench_context: plugin log: %s\n", msg);
}

static void bh_notify(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (level >= AP_LEVEL_WARNING) fprintf(stderr, "bench_context: plugin notice: %s\n", msg);
}

static int bh_session_info(void *ctx, char **out, char **err)
{
    bench_host *h = ctx;
    (void)err;
    bench_slot_called(h);
    *out = lc_asprintf("{\"id\":\"%s\",\"sessionFile\":\"%s/session.jsonl\",\"cwd\":\"%s\","
                       "\"agentHome\":\"%s\",\"tmpDir\":\"%s\"}",
                       h->sid, h->home, h->home, h->home, h->tmp);
    return *out ? AP_OK : AP_NOMEM;
}

static char *bh_message_entry(const bench_host *h, size_t i)
{
    return lc_asprintf("{\"type\":\"message\",\"id\":\"%s\",\"parentId\":%s%s%s,\"timestamp\":"
                       "\"2024-01-01T00:00:00.000Z\",\"message\":%s}",
                       h->ids[i], i ? "\"" : "", i ? h->ids[i - 1] : "null", i ? "\"" : "",
                       h->msgs[i]);
}

static int bh_get_branch(void *ctx, char **out, char **err)
{
    bench_host *h = ctx;
    (void)err;
    bench_slot_called(h);
    sbuf b = {0};
    sb_putc(&b, '[');
    for (size_t i = 0; i < h->n_hist; i++) {
        char *e = bh_message_entry(h, i);
        if (i) sb_putc(&b, ',');
        sb_puts(&b, e ? e : "null");
        free(e);
    }
    for (size_t i = 0; i < h->n_customs; i++) {
        if (h->n_hist || i) sb_putc(&b, ',');
        sb_puts(&b, h->customs[i]);
    }
    sb_putc(&b, ']');
    if (b.oom) {
        sb_free(&b);
        return AP_NOMEM;
    }
    *out = sb_detach(&b);
    return AP_OK;
}

static int bh_get_entry(void *ctx, const char *id, char **out, char **err)
{
    bench_host *h = ctx;
    bench_slot_called(h);
    *out = NULL;
    for (size_t i = 0; i < h->n_customs; i++)
        if (strcmp(h->custom_ids[i], id) == 0) return (*out = lc_strdup(h->customs[i])) ? AP_OK : AP_NOMEM;
    if (id[0] == 'm') {
        size_t i = strtoul(id + 1, NULL, 10);
        if (i < h->n_hist && strcmp(h->ids[i], id) == 0)
            return (*out = bh_message_entry(h, i)) ? AP_OK : AP_NOMEM;
    }
    *err = lc_asprintf("no entry %s", id);
    return AP_NOTFOUND;
}

static int bh_append_custom(void *ctx, const char *type, const char *data, char **out_id, char **err)
{
    bench_host *h = ctx;
    (void)err;
    bench_slot_called(h);
    if (h->n_customs == h->cap_customs) {
        size_t cap = h->cap_customs ? h->cap_customs * 2 : 16;
        char **c = realloc(h->customs, cap * sizeof *c), **ci = NULL;
        if (c) h->customs = c;
        if (c) ci = realloc(h->custom_ids, cap * sizeof *ci);
        if (!ci) return AP_NOMEM;
        h->custom_ids = ci;
        h->cap_customs = cap;
    }
    char *id = lc_asprintf("c%07zu", h->n_customs);
    char *e = lc_asprintf("{\"type\":\"custom\",\"customType\":\"%s\",\"data\":%s,\"id\":\"%s\"}", type,
                          data ? data : "null", id ? id : "");
    if (!id || !e) {
        free(id);
        free(e);
        return AP_NOMEM;
    }
    h->customs[h->n_customs] = e;
    h->custom_ids[h->n_customs++] = id;
    if (out_id) *out_id = lc_strdup(id);
    return AP_OK;
}

static int bh_get_model(void *ctx, char **out, char **err)
{
    (void)err;
    bench_slot_called(ctx);
    *out = lc_strdup("{\"provider\":\"bench\",\"id\":\"model\",\"contextWindow\":1000000000,"
                     "\"maxTokens\":8192}");
    return *out ? AP_OK : AP_NOMEM;
}

static int bh_complete(void *ctx, const char *req, char **out, char **err)
{
    (void)ctx, (void)req;
    *out = NULL;
    *err = lc_strdup("the benchmark host has no model");
    return AP_UNSUPPORTED;
}

static int bh_register_command(void *ctx, const char *name, const char *desc, ap_command_fn fn,
                               void *ud, char **err)
{
    bench_host *h = ctx;
    (void)desc, (void)err;
    if (h->n_cmds == sizeof h->cmds / sizeof h->cmds[0]) return AP_NOMEM;
    h->cmds[h->n_cmds++] = (bench_cmd){lc_strdup(name[0] == '/' ? name + 1 : name), fn, ud};
    return AP_OK;
}

static int bh_register_tool(void *ctx, const char *name, const char *desc, const char *params,
                            ap_tool_fn fn, void *ud, char **err)
{
    (void)ctx, (void)name, (void)desc, (void)params, (void)fn, (void)ud, (void)err;
    return AP_OK;
}

/* ---- one measured configuration --------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Of sorted v: p99 is the value below which 99% of the runs fall (the maximum under 100). */
static double p99_of(const double *v, size_t n)
{
    size_t k = (n * 99 + 99) / 100;
    return v[(k ? k : 1) - 1];
}

/* Sorts v (the summary row reads the median and p99 from it afterwards). */
static void stat_line(const char *name, double *v, size_t n, const char *extra)
{
    qsort(v, n, sizeof *v, cmp_d);
    printf("  %s: median %.3f ms, p99 %.3f ms%s%s\n", name, v[n / 2], p99_of(v, n),
           extra && *extra ? " " : "", extra ? extra : "");
}

static double sum_of(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return s;
}

static int bench_fail(const char *what, char *err)
{
    fprintf(stderr, "bench_context: %s: %s\n", what, err ? err : "?");
    return 1;
}

/* The session of the run resumed by a new plugin instance in the same process (a host
 * restarted): every message it brings is stored already, so its first `context` should
 * cost what a request of the running session costs. *start_ms: its session start (the
 * branch read that catches the store up); *first_ms: that first call. */
static int bench_resume(bench_host *h, ap_init_fn init, ap_message_in *in, size_t total, int live,
                        double *start_ms, double *first_ms)
{
    ap_plugin pl;
    memset(&pl, 0, sizeof pl);
    pl.struct_size = sizeof pl;
    char errbuf[512] = "";
    size_t cmds_before = h->n_cmds;
    h->n_hist = total;
    if (init(&h->api, &pl, errbuf, sizeof errbuf) != AP_OK) return bench_fail("resume init", errbuf);
    char *out = NULL, *err = NULL;
    double t0 = lc_now_ms();
    if (pl.session_start(pl.state, "{\"reason\":\"resume\"}", &out, &err) != AP_OK)
        return bench_fail("resume session_start", err);
    *start_ms = lc_now_ms() - t0;
    pl.release(pl.state, out);
    if (!live) {
        bench_cmd *c = NULL;
        for (size_t i = cmds_before; i < h->n_cmds; i++)
            if (strcmp(h->cmds[i].name, "clm") == 0) c = &h->cmds[i];
        if (!c) return bench_fail("/clm off", "the resumed plugin registered no /clm command");
        out = err = NULL;
        if (c->fn(c->ud, "off", &out, &err) != AP_OK) return bench_fail("/clm off", err);
        pl.release(pl.state, out);
    }
    ap_context_event ev = {.struct_size = sizeof ev, .messages = in, .n_messages = total,
                           .system_prompt = "You are a coding agent. Be brief."};
    ap_context_result *res = NULL;
    t0 = lc_now_ms();
    if (pl.context(pl.state, &ev, &res, &err) != AP_OK) return bench_fail("resumed context", err);
    if (res) pl.release_context(pl.state, res);
    *first_ms = lc_now_ms() - t0;
    out = err = NULL;
    if (pl.session_shutdown) pl.session_shutdown(pl.state, "{}", &out, &err);
    pl.release(pl.state, out);
    pl.release(pl.state, err);
    if (pl.unload) pl.unload(pl.state);
    return 0;
}

/* Wait until `/lcm status` no longer reports a background catch-up (a first call that
 * brought thousands of messages the store lacked hands them to the worker): the ms waited,
 * 0 when there was none. */
static double bench_wait_caught_up(bench_host *h, ap_plugin *pl)
{
    bench_cmd *c = NULL;
    double t0 = lc_now_ms(), waited = 0;
    for (size_t i = 0; i < h->n_cmds; i++)
        if (strcmp(h->cmds[i].name, "lcm") == 0) c = &h->cmds[i];
    for (int k = 0; c && k < 600000; k++) {
        char *out = NULL, *err = NULL;
        if (c->fn(c->ud, "status", &out, &err) != AP_OK) {
            pl->release(pl->state, err);
            break;
        }
        int running = out && strstr(out, "\ncatch-up:") != NULL;
        pl->release(pl->state, out);
        if (!running) break;
        waited = lc_now_ms() - t0;
        usleep(5000);
    }
    return waited;
}

static int bench_run(const char *so, size_t hist, int live, size_t calls, size_t refs, int row_fd)
{
    const char *mode = live ? "live context and LCM" : "LCM alone";
    char home[] = "/tmp/lc-bench-ctx-XXXXXX";
    if (!mkdtemp(home)) return bench_fail("mkdtemp", NULL);
    bench_host h;
    memset(&h, 0, sizeof h);
    h.home = home;
    h.tmp = lc_asprintf("%s/tmp", home);
    h.sid = lc_asprintf("bench-%zu-%s", hist, live ? "clm" : "lcm");
    if (!h.tmp || !h.sid || lc_mkdir_p(h.tmp, 0700, NULL) != LC_OK) return bench_fail("mkdir", NULL);
    size_t total = hist + calls;
    h.msgs = calloc(total, sizeof *h.msgs);
    h.lens = calloc(total, sizeof *h.lens);
    h.ids = calloc(total, sizeof *h.ids);
    ap_message_in *in = calloc(total, sizeof *in);
    size_t host_bytes = 0;
    for (size_t i = 0; i < total; i++) {
        h.msgs[i] = bench_message(i);
        h.ids[i] = lc_asprintf("m%07zu", i);
        if (!h.msgs[i] || !h.ids[i]) return bench_fail("out of memory", NULL);
        h.lens[i] = strlen(h.msgs[i]);
        in[i] = (ap_message_in){h.ids[i], h.msgs[i], h.lens[i]};
        host_bytes += h.lens[i];
    }
    /* The bench host's table: what the plugin may call, the rest left NULL. */
    h.api = (ap_host_api){
        .struct_size = sizeof h.api,
        .abi_version = AP_ABI_VERSION,
        .api_level = AP_API_LEVEL,
        .host_ctx = &h,
        .host_name = "bench_context",
        .free = bh_free,
        .log = bh_log,
        .notify = bh_notify,
        .session_info = bh_session_info,
        .get_branch = bh_get_branch,
        .get_entry = bh_get_entry,
        .append_custom = bh_append_custom,
        .get_model = bh_get_model,
        .complete = bh_complete,
        .register_command = bh_register_command,
        .register_tool = bh_register_tool,
    };

    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!dl) return bench_fail("dlopen", (char *)dlerror());
    ap_init_fn init;
    *(void **)&init = dlsym(dl, AP_ENTRY_SYMBOL);
    if (!init) return bench_fail("dlsym", (char *)AP_ENTRY_SYMBOL);
    ap_plugin pl;
    memset(&pl, 0, sizeof pl);
    pl.struct_size = sizeof pl;
    char errbuf[512] = "";
    if (init(&h.api, &pl, errbuf, sizeof errbuf) != AP_OK) return bench_fail("init", errbuf);
    if (!pl.context || !pl.session_start) return bench_fail("init", "the plugin has no context hook");
    char *out = NULL, *err = NULL;
    if (pl.session_start(pl.state, "{\"reason\":\"startup\"}", &out, &err) != AP_OK)
        return bench_fail("session_start", err);
    pl.release(pl.state, out);
    if (!live) {
        bench_cmd *c = NULL;
        for (size_t i = 0; i < h.n_cmds; i++)
            if (strcmp(h.cmds[i].name, "clm") == 0) c = &h.cmds[i];
        if (!c) return bench_fail("/clm off", "the plugin registered no /clm command");
        out = err = NULL;
        if (c->fn(c->ud, "off", &out, &err) != AP_OK) return bench_fail("/clm off", err);
        pl.release(pl.state, out);
    }

    ap_context_event ev = {.struct_size = sizeof ev, .messages = in,
                           .system_prompt = "You are a coding agent. Be brief."};
    ap_context_result *res = NULL;
    /* The first call carries the whole history: everything is new to the plugin once. */
    h.n_hist = hist;
    ev.n_messages = hist;
    double t0 = lc_now_ms();
    if (pl.context(pl.state, &ev, &res, &err) != AP_OK) return bench_fail("context", err);
    if (res) pl.release_context(pl.state, res);
    double first_ms = lc_now_ms() - t0;
    /* The calls below are those of a running session, whose messages are all stored. */
    double caught_ms = bench_wait_caught_up(&h, &pl);

    double *hook = calloc(calls, sizeof *hook), *jp = calloc(calls, sizeof *jp);
    double *jw = calloc(calls, sizeof *jw), *jd = calloc(calls, sizeof *jd);
    double *rest = calloc(calls, sizeof *rest);
    unsigned long parses = 0, prints = 0;
    size_t parse_bytes = 0, print_bytes = 0, out_items = 0, new_texts = 0, new_bytes = 0;
    /* The last call's output, for the serialization reference. */
    const char **last_out = calloc(total + 16, sizeof *last_out);
    char **last_owned = calloc(total + 16, sizeof *last_owned);
    size_t n_last = 0;
    meas.thread = pthread_self();
    for (size_t k = 0; k < calls; k++) {
        h.n_hist = hist + k + 1;
        ev.n_messages = h.n_hist;
        memset(&meas.parse, 0, sizeof meas.parse);
        memset(&meas.print, 0, sizeof meas.print);
        memset(&meas.del, 0, sizeof meas.del);
        res = NULL;
        meas.on = 1;
        t0 = lc_now_ms();
        int rc = pl.context(pl.state, &ev, &res, &err);
        double t1 = lc_now_ms();
        meas.on = 0;
        if (rc != AP_OK) return bench_fail("context", err);
        size_t items = res ? res->n_items : ev.n_messages, fresh = 0, fresh_bytes = 0;
        if (k + 1 == calls) n_last = 0;
        for (size_t i = 0; i < items; i++) {
            const char *js = !res ? in[i].json
                           : res->items[i].input_index >= 0 ? in[res->items[i].input_index].json
                                                            : res->items[i].json;
            if (res && res->items[i].input_index < 0 && js) fresh++, fresh_bytes += strlen(js);
            if (k + 1 == calls && js && n_last < total + 16) {
                if (res && res->items[i].input_index < 0) {
                    last_owned[n_last] = lc_strdup(js);
                    js = last_owned[n_last];
                }
                last_out[n_last++] = js;
            }
        }
        meas.on = 1;
        double t2 = lc_now_ms();
        if (res) pl.release_context(pl.state, res);
        double t3 = lc_now_ms();
        meas.on = 0;
        hook[k] = (t1 - t0) + (t3 - t2);
        jp[k] = meas.parse.ms;
        jw[k] = meas.print.ms;
        jd[k] = meas.del.ms;
        rest[k] = hook[k] - jp[k] - jw[k] - jd[k];
        parses += meas.parse.calls;
        parse_bytes += meas.parse.bytes;
        prints += meas.print.calls;
        print_bytes += meas.print.bytes;
        out_items += items;
        new_texts += fresh;
        new_bytes += fresh_bytes;
    }
    /* The live-context render parses every message it shows: no parse at all means the
     * .so's cJSON calls did not reach this executable's wrappers, and every JSON figure
     * would be a silent zero. */
    if (live && parses == 0)
        return bench_fail("measurement", "no cJSON parse was seen inside the hook: the cJSON "
                          "interposition did not take (link with --export-dynamic-symbol)");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long peak_kb = ru.ru_maxrss;
    double hook_sum = sum_of(hook, calls), parse_sum = sum_of(jp, calls);
    double print_sum = sum_of(jw, calls), del_sum = sum_of(jd, calls);

    /* References over the last call's input and output, outside the hook. */
    size_t n_in = hist + calls;
    double *ref_parse = calloc(refs, sizeof *ref_parse), *ref_print = calloc(refs, sizeof *ref_print);
    for (size_t r = 0; r < refs; r++) {
        double ms = 0;
        for (size_t i = 0; i < n_in; i++) {
            double a0 = lc_now_ms();
            cJSON *j = cJSON_ParseWithLength(in[i].json, in[i].json_len);
            ms += lc_now_ms() - a0;
            if (!j) return bench_fail("reference parse", "a generated message is not JSON");
            cJSON_Delete(j);
        }
        ref_parse[r] = ms;
        ms = 0;
        for (size_t i = 0; i < n_last; i++) {
            cJSON *j = cJSON_Parse(last_out[i]);
            double a0 = lc_now_ms();
            char *s = cJSON_PrintUnformatted(j);
            ms += lc_now_ms() - a0;
            free(s);
            cJSON_Delete(j);
        }
        ref_print[r] = ms;
    }

    char name[160], extra[200];
    printf("context hook at %zu msgs, %s: %zu calls of one new message each; input %.1f MB in %zu "
           "texts, output %zu items a call on average\n",
           hist, mode, calls, (double)host_bytes / 1e6, n_in, out_items / calls);
    snprintf(name, sizeof name, "first call at %zu msgs (%s, all new)", hist, mode);
    printf("  %s: %.1f ms\n", name, first_ms);
    if (caught_ms > 0)
        printf("  background catch-up at %zu msgs (%s): every message stored %.1f ms after the first call "
               "returned\n", hist, mode, caught_ms);
    snprintf(name, sizeof name, "hook at %zu msgs (%s)", hist, mode);
    stat_line(name, hook, calls, NULL);
    snprintf(name, sizeof name, "JSON parse in hook at %zu msgs (%s)", hist, mode);
    snprintf(extra, sizeof extra, "(%.1f cJSON parses, %.1f kB a call; %.0f%% of the hook)",
             (double)parses / (double)calls, (double)parse_bytes / 1e3 / (double)calls,
             hook_sum > 0 ? 100.0 * parse_sum / hook_sum : 0.0);
    stat_line(name, jp, calls, extra);
    snprintf(name, sizeof name, "JSON serialization in hook at %zu msgs (%s)", hist, mode);
    snprintf(extra, sizeof extra, "(%.1f cJSON prints, %zu bytes a call; %.1f new texts returned, "
             "%zu bytes a call; %.1f%% of the hook)",
             (double)prints / (double)calls, print_bytes / calls, (double)new_texts / (double)calls,
             new_bytes / calls,
             hook_sum > 0 ? 100.0 * print_sum / hook_sum : 0.0);
    stat_line(name, jw, calls, extra);
    snprintf(name, sizeof name, "JSON tree free in hook at %zu msgs (%s)", hist, mode);
    snprintf(extra, sizeof extra, "(%.0f%% of the hook)", hook_sum > 0 ? 100.0 * del_sum / hook_sum : 0.0);
    stat_line(name, jd, calls, extra);
    snprintf(name, sizeof name, "hook without JSON at %zu msgs (%s)", hist, mode);
    stat_line(name, rest, calls, live ? "(store ingest, digests, projection, mirror render and write)"
                                      : "(store ingest, projection)");
    snprintf(name, sizeof name, "reference parse of the whole input at %zu msgs (%s)", hist, mode);
    snprintf(extra, sizeof extra, "(every message once with cJSON_ParseWithLength, outside the hook, %zu runs)", refs);
    stat_line(name, ref_parse, refs, extra);
    snprintf(name, sizeof name, "reference serialization of the whole output at %zu msgs (%s)", hist, mode);
    snprintf(extra, sizeof extra, "(every returned message once with cJSON_PrintUnformatted, %zu runs)", refs);
    stat_line(name, ref_print, refs, extra);
    printf("  host slots called inside the hook at %zu msgs (%s): %lu\n", hist, mode, h.hook_slot_calls);
    printf("  peak RSS at %zu msgs (%s): %ld kB (the host's copy of the messages is %.1f MB of it)\n",
           hist, mode, peak_kb, (double)host_bytes / 1e6);
    fflush(stdout);
    dprintf(row_fd, "%-9zu %-8s %-14.1f %-15.3f %-12.3f %-16.3f %-16.3f %-15.3f %-15.3f %-13.3f %-13.3f %ld\n",
            hist, live ? "clm+lcm" : "lcm", first_ms, hook[calls / 2], p99_of(hook, calls),
            jp[calls / 2], jw[calls / 2], jd[calls / 2], rest[calls / 2], ref_parse[refs / 2],
            ref_print[refs / 2], peak_kb);

    out = err = NULL;
    if (pl.session_shutdown) pl.session_shutdown(pl.state, "{}", &out, &err);
    pl.release(pl.state, out);
    pl.release(pl.state, err);
    if (pl.unload) pl.unload(pl.state);
    double start_ms = 0, resumed_ms = 0;
    if (bench_resume(&h, init, in, total, live, &start_ms, &resumed_ms) != 0) return 1;
    snprintf(name, sizeof name, "first call of the resumed session at %zu msgs (%s, all stored)", total, mode);
    printf("  %s: %.1f ms (a request of the running session: median %.3f ms; its session start %.1f ms)\n",
           name, resumed_ms, hook[calls / 2], start_ms);
    fflush(stdout);
    dlclose(dl);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    return system(cmd) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    json_bind_all();
    if (argc < 2) {
        fprintf(stderr, "usage: bench_context SO [HISTORY...]\n");
        return 2;
    }
    size_t defaults[] = {1000, 10000, 100000};
    size_t n_sizes = argc > 2 ? (size_t)(argc - 2) : 3;
    int status = 0, rows[2];
    /* Each child writes its summary row here; the parent prints the table at the end. */
    if (pipe(rows) != 0) return bench_fail("pipe", NULL);
    for (size_t s = 0; s < n_sizes; s++) {
        size_t hist = argc > 2 ? strtoul(argv[2 + s], NULL, 10) : defaults[s];
        /* Fewer calls where each is dearer; p99 of fewer than 100 calls is their maximum. */
        size_t calls = hist >= 100000 ? 10 : hist >= 10000 ? 50 : 200;
        size_t refs = hist >= 100000 ? 3 : 10;
        for (int live = 1; live >= 0; live--) {
            fflush(stdout);
            pid_t pid = fork();
            if (pid < 0) return bench_fail("fork", NULL);
            /* A process per figure group: its peak RSS is its own. */
            if (pid == 0) _exit(bench_run(argv[1], hist, live, calls, refs, rows[1]));
            int st = 0;
            if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                printf("context hook at %zu msgs (%s): FAILED\n", hist, live ? "live context and LCM" : "LCM alone");
                status = 1;
            }
        }
    }
    close(rows[1]);
    printf("\nsummary (ms unless named; medians of the calls, p99 where named; clm+lcm = live "
           "context and LCM, lcm = LCM alone)\n");
    printf("%-9s %-8s %-14s %-15s %-12s %-16s %-16s %-15s %-15s %-13s %-13s %s\n", "messages",
           "config", "first_call_ms", "hook_median_ms", "hook_p99_ms", "json_parse_ms",
           "json_print_ms", "json_free_ms", "hook_rest_ms", "ref_parse_ms", "ref_print_ms",
           "peak_rss_kB");
    fflush(stdout);
    char buf[4096];
    ssize_t got;
    while ((got = read(rows[0], buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)got, stdout);
    close(rows[0]);
    return status;
}
