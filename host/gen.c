/*
 * gen.c -- the deterministic session generator (see gen.h). Everything derives from the
 * seed: ids are a bijection of a counter (so they never collide), timestamps advance
 * from a fixed epoch, and text comes from small word lists.
 */
#include "gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "session.h"
#include "util.h"

typedef struct gen {
    uint64_t rng;
    uint32_t counter;
    uint32_t id_salt;
    long long clock;
    char last_id[16];
    long messages;
    long tokens;
    long needles;
    sbuf out;
} gen;

static uint64_t next(gen *g)
{
    uint64_t x = g->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    g->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static unsigned pick(gen *g, unsigned n)
{
    return (unsigned)((next(g) >> 33) % n);
}

static const char *const WORDS[] = {
    "parser", "cache", "index", "buffer", "session", "request", "token", "branch", "summary",
    "store", "mirror", "budget", "window", "digest", "entry", "context", "revision", "plugin",
    "schema", "thread", "socket", "config", "limit", "retry", "queue", "stream", "record"};
enum { N_WORDS = sizeof WORDS / sizeof WORDS[0] };

static void words(gen *g, sbuf *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            sb_putc(b, ' ');
        sb_puts(b, WORDS[pick(g, N_WORDS)]);
    }
}

/* Append one entry line: {type, id, parentId, timestamp, ...fields}. */
static void emit(gen *g, const char *type, const char *parent, cJSON *fields)
{
    char id[16], ts[40];
    /* Multiplying by an odd constant is a bijection mod 2^32: ids never repeat. */
    uint32_t v = (g->counter++ * 2654435761u) ^ g->id_salt;
    snprintf(id, sizeof id, "%08x", v);
    g->clock += 1000 + pick(g, 9000);
    session_iso_time(g->clock, ts, sizeof ts);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddStringToObject(e, "id", id);
    cJSON_AddItemToObject(e, "parentId", parent && *parent ? cJSON_CreateString(parent) : cJSON_CreateNull());
    cJSON_AddStringToObject(e, "timestamp", ts);
    cJSON *f = fields ? fields->child : NULL;
    while (f) {
        cJSON *nx = f->next;
        cJSON_AddItemToObject(e, f->string, cJSON_DetachItemViaPointer(fields, f));
        f = nx;
    }
    char *text = cJSON_PrintUnformatted(e);
    if (text) {
        sb_puts(&g->out, text);
        sb_putc(&g->out, '\n');
        g->tokens += (long)(strlen(text) / 4);
    }
    free(text);
    cJSON_Delete(e);
    cJSON_Delete(fields);
    memcpy(g->last_id, id, sizeof id);
}

static cJSON *text_block(const char *type, const char *key, const char *text)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", type);
    cJSON_AddStringToObject(b, key, text);
    return b;
}

static void message(gen *g, const char *parent, cJSON *msg)
{
    cJSON *f = cJSON_CreateObject();
    cJSON_AddNumberToObject(msg, "timestamp", (double)(g->clock + 500));
    cJSON_AddItemToObject(f, "message", msg);
    emit(g, "message", parent, f);
    g->messages++;
}

static cJSON *usage(gen *g)
{
    cJSON *u = cJSON_CreateObject();
    long out = 40 + pick(g, 400);
    /* The recording agent managed its context, so its requests stayed bounded: they grow
     * with the raw history up to 90k tokens, then cycle between 60k and 90k as its
     * compactions would. Raw-sized usage would claim requests no window could hold. */
    long input = g->tokens <= 90000 ? g->tokens : 60000 + g->tokens % 30000;
    cJSON_AddNumberToObject(u, "input", (double)input);
    cJSON_AddNumberToObject(u, "output", (double)out);
    cJSON_AddNumberToObject(u, "cacheRead", 0);
    cJSON_AddNumberToObject(u, "cacheWrite", 0);
    cJSON_AddNumberToObject(u, "totalTokens", (double)(input + out));
    cJSON *c = cJSON_AddObjectToObject(u, "cost");
    cJSON_AddNumberToObject(c, "input", 0);
    cJSON_AddNumberToObject(c, "output", 0);
    cJSON_AddNumberToObject(c, "cacheRead", 0);
    cJSON_AddNumberToObject(c, "cacheWrite", 0);
    cJSON_AddNumberToObject(c, "total", 0);
    return u;
}

static cJSON *assistant(gen *g, cJSON *content, const char *stop)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "assistant");
    cJSON_AddItemToObject(m, "content", content);
    cJSON_AddStringToObject(m, "api", "openai-completions");
    cJSON_AddStringToObject(m, "provider", "generated");
    cJSON_AddStringToObject(m, "model", "gen-1");
    cJSON_AddItemToObject(m, "usage", usage(g));
    cJSON_AddStringToObject(m, "stopReason", stop);
    return m;
}

/* A tool result body of one of a few shapes. */
static char *tool_output(gen *g, const char *tool, int *is_error)
{
    sbuf b = {0};
    *is_error = 0;
    unsigned shape = pick(g, 10);
    if (shape == 0) {
        *is_error = 1;
        sb_printf(&b, "Error: %s failed: no such file or directory", tool);
    } else if (strcmp(tool, "read") == 0) {
        int lines = 10 + (int)pick(g, 60);
        for (int i = 1; i <= lines; i++) {
            sb_printf(&b, "%d\tstatic int ", i);
            words(g, &b, 1);
            sb_puts(&b, "_");
            words(g, &b, 1);
            sb_printf(&b, "(int x) { return x * %u; }\n", pick(g, 100));
        }
    } else {
        int lines = 3 + (int)pick(g, 30);
        for (int i = 0; i < lines; i++) {
            sb_printf(&b, "[%u] ", pick(g, 1000));
            words(g, &b, 4 + (int)pick(g, 8));
            sb_putc(&b, '\n');
        }
        sb_printf(&b, "exit code %u", pick(g, 3) == 0 ? 1u : 0u);
    }
    return sb_detach(&b);
}

static void turn(gen *g, const char *parent)
{
    sbuf b = {0};
    sb_puts(&b, "Please look at the ");
    words(g, &b, 2);
    sb_printf(&b, " code in src/mod%u.c and ", pick(g, 40));
    words(g, &b, 3);
    sb_puts(&b, ".");
    if (pick(g, 4) == 0) {
        /* A needle a later recall test can look for. */
        sb_printf(&b, " Remember N%02ld=%u.", g->needles++ % 100, 1000 + pick(g, 9000));
    }
    cJSON *u = cJSON_CreateObject();
    cJSON_AddStringToObject(u, "role", "user");
    cJSON *uc = cJSON_AddArrayToObject(u, "content");
    cJSON_AddItemToArray(uc, text_block("text", "text", b.p ? b.p : ""));
    sb_free(&b);
    message(g, parent, u);

    int rounds = 1 + (int)pick(g, 3);
    for (int r = 0; r < rounds; r++) {
        cJSON *content = cJSON_CreateArray();
        sbuf t = {0};
        sb_puts(&t, "I should check the ");
        words(g, &t, 3);
        cJSON *th = text_block("thinking", "thinking", t.p);
        cJSON_AddItemToArray(content, th);
        sb_free(&t);
        sb_puts(&t, "Checking the ");
        words(g, &t, 2);
        sb_puts(&t, " first.");
        cJSON_AddItemToArray(content, text_block("text", "text", t.p));
        sb_free(&t);
        int calls = 1 + (int)pick(g, 3);
        char ids[3][32];
        const char *names[3];
        for (int c = 0; c < calls; c++) {
            static const char *const tools[] = {"read", "bash", "edit"};
            names[c] = tools[pick(g, 3)];
            snprintf(ids[c], sizeof ids[c], "call_%u_%d", g->counter, c);
            cJSON *call = cJSON_CreateObject();
            cJSON_AddStringToObject(call, "type", "toolCall");
            cJSON_AddStringToObject(call, "id", ids[c]);
            cJSON_AddStringToObject(call, "name", names[c]);
            cJSON *args = cJSON_AddObjectToObject(call, "arguments");
            char path[64];
            snprintf(path, sizeof path, "src/mod%u.c", pick(g, 40));
            if (strcmp(names[c], "bash") == 0) {
                cJSON_AddStringToObject(args, "command", "make test 2>&1 | tail -20");
            } else {
                cJSON_AddStringToObject(args, "path", path);
                if (strcmp(names[c], "edit") == 0) {
                    cJSON_AddStringToObject(args, "oldText", "return x;");
                    cJSON_AddStringToObject(args, "newText", "return x + 1;");
                }
            }
            cJSON_AddItemToArray(content, call);
        }
        message(g, g->last_id, assistant(g, content, "toolUse"));
        for (int c = 0; c < calls; c++) {
            int is_error = 0;
            char *out = tool_output(g, names[c], &is_error);
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "role", "toolResult");
            cJSON_AddStringToObject(m, "toolCallId", ids[c]);
            cJSON_AddStringToObject(m, "toolName", names[c]);
            cJSON *mc = cJSON_AddArrayToObject(m, "content");
            cJSON_AddItemToArray(mc, text_block("text", "text", out ? out : ""));
            cJSON_AddBoolToObject(m, "isError", is_error);
            free(out);
            message(g, g->last_id, m);
        }
    }
    sbuf t = {0};
    sb_puts(&t, "Done: the ");
    words(g, &t, 3);
    sb_puts(&t, " now works.");
    cJSON *content = cJSON_CreateArray();
    cJSON_AddItemToArray(content, text_block("text", "text", t.p));
    sb_free(&t);
    message(g, g->last_id, assistant(g, content, "stop"));
}

int gen_session(const gen_options *opt, const char *out_path, char **err)
{
    gen g = {.rng = opt->seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL, .clock = 1767225600000LL};
    if (!g.rng)
        g.rng = 1;
    g.id_salt = (uint32_t)next(&g);
    char ts[40], uuid[48];
    session_iso_time(g.clock, ts, sizeof ts);
    uint64_t a = next(&g), b = next(&g);
    snprintf(uuid, sizeof uuid, "%08x-%04x-4%03x-a%03x-%012llx", (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff, (unsigned)(b >> 52) & 0xfff,
             (unsigned long long)(b & 0xffffffffffffULL));
    sb_printf(&g.out, "{\"type\":\"session\",\"version\":3,\"id\":\"%s\",\"timestamp\":\"%s\","
              "\"cwd\":\"/work/generated\"}\n", uuid, ts);
    cJSON *mc = cJSON_CreateObject();
    cJSON_AddStringToObject(mc, "provider", "generated");
    cJSON_AddStringToObject(mc, "modelId", "gen-1");
    emit(&g, "model_change", NULL, mc);
    char user_parents[4][16] = {{0}};
    int n_turns = 0;
    while ((opt->tokens <= 0 || g.tokens < opt->tokens) &&
           (opt->messages <= 0 || g.messages < opt->messages)) {
        char parent[16];
        memcpy(parent, g.last_id, sizeof parent);
        if (n_turns >= 3 && pick(&g, 8) == 0) {
            /* /tree: go back before the previous turn's prompt; that turn is abandoned. */
            memcpy(parent, user_parents[(n_turns - 1) % 4], sizeof parent);
        }
        memcpy(user_parents[n_turns % 4], parent, sizeof parent);
        turn(&g, parent);
        n_turns++;
        if (pick(&g, 6) == 0) {
            cJSON *d = cJSON_CreateObject(), *f = cJSON_CreateObject();
            cJSON_AddNumberToObject(d, "turn", n_turns);
            cJSON_AddStringToObject(f, "customType", "other-extension-state");
            cJSON_AddItemToObject(f, "data", d);
            emit(&g, "custom", g.last_id, f);
        }
    }
    int rc = g.out.oom ? lc_errf(err, LC_NOMEM, "out of memory generating")
                       : lc_write_atomic(out_path, g.out.p, g.out.len, 0644, err);
    sb_free(&g.out);
    return rc;
}
