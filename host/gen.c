/*
 * gen.c -- the deterministic session generator (see gen.h). Everything derives from the
 * seed: ids are a bijection of a counter (so they never collide), timestamps advance
 * from a fixed epoch, and text comes from small word lists. It also owns the answer key
 * of the evaluation: every needle it plants is recorded with the entry that carries it.
 *
 * Phrasing is part of the contract: only needles in user prompts on the live path read
 * "Remember N..=..", so a script taking the first such line gets an early needle that
 * stays in context and reads back within one reader window.
 */
#include "gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "llm.h"
#include "session.h"
#include "util.h"

enum { GEN_MAX_PENDING = 8, GEN_LARGE_MIN = 32000, GEN_LARGE_SPAN = 48000, GEN_MAX_FANOUT = 32 };

typedef struct gen_needle {
    char key[24];
    long seq;
    unsigned value;
    const char *part;   /* user | assistant | tool | large-tool */
} gen_needle;

typedef struct gen {
    uint64_t rng;
    uint32_t counter;
    uint32_t id_salt;
    long long clock;
    char last_id[16];
    long messages;
    long tokens;
    long needles;
    int abandoned;      /* the turn being written will be left by a /tree move */
    int fanout;         /* gen_options.fanout, clamped; 0 = the default mix */
    gen_needle pend[GEN_MAX_PENDING];
    int n_pend;         /* needles in the message being built, bound to its id by emit */
    sbuf out;
    sbuf nout;          /* the needles JSONL */
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

static const char *word(gen *g)
{
    return WORDS[pick(g, N_WORDS)];
}

static void words(gen *g, sbuf *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            sb_putc(b, ' ');
        sb_puts(b, word(g));
    }
}

/* Plant the next needle as `key=value` in b; emit binds it to the message's entry id.
 * Keys are N00..N99 and then N100, N101, ...: distinct strings, and none is a substring
 * of another once followed by '=', so a grep for `key=value` finds exactly one needle. */
static void needle(gen *g, sbuf *b, const char *part)
{
    unsigned value = 1000 + pick(g, 9000);
    long seq = g->needles++;
    if (g->n_pend < GEN_MAX_PENDING) {
        gen_needle *n = &g->pend[g->n_pend++];
        snprintf(n->key, sizeof n->key, "N%02ld", seq);
        n->seq = seq;
        n->value = value;
        n->part = part;
    }
    sb_printf(b, "N%02ld=%u", seq, value);
}

static void emit_needles(gen *g, const char *id)
{
    for (int i = 0; i < g->n_pend; i++) {
        const gen_needle *n = &g->pend[i];
        sb_printf(&g->nout,
                  "{\"key\":\"%s\",\"value\":\"%u\",\"entry_id\":\"%s\",\"where\":\"%s\","
                  "\"part\":\"%s\",\"seq\":%ld}\n",
                  n->key, n->value, id, g->abandoned ? "removed-branch" : n->part, n->part,
                  n->seq);
    }
    g->n_pend = 0;
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
    emit_needles(g, id);
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
    long out = 40 + pick(g, 400);
    /* The recording agent managed its context, so its requests stayed bounded: they grow
     * with the raw history up to 90k tokens, then cycle between 60k and 90k as its
     * compactions would. Raw-sized usage would claim requests no window could hold. */
    long input = g->tokens <= 90000 ? g->tokens : 60000 + g->tokens % 30000;
    return llm_usage_json((double)input, (double)out, 0, (double)(input + out));
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

/* ---- tool result shapes ------------------------------------------------------------- */

typedef enum gen_large_kind { LARGE_C, LARGE_JSON, LARGE_LOG, LARGE_CSV, N_LARGE } gen_large_kind;

static const char *const LARGE_PATHS[N_LARGE] = {"src/engine/core%u.c", "data/records-%u.json",
                                                 "logs/server-%u.log", "reports/latency-%u.csv"};

/* One line of a large file; `plant` puts the needle in it. */
static void large_line(gen *g, sbuf *b, gen_large_kind kind, long i, int plant)
{
    switch (kind) {
    case LARGE_C:
        if (plant) {
            sb_puts(b, "/* pinned by the review: ");
            needle(g, b, "large-tool");
            sb_puts(b, " */\n");
        }
        sb_printf(b, "static int %s_%s_%ld(struct %s *s, int x)\n{\n", word(g), word(g), i, word(g));
        sb_printf(b, "    if (x > %u)\n        return %s_limit(s);\n", pick(g, 1000), word(g));
        sb_printf(b, "    s->%s += x * %u;\n    return s->%s;\n}\n\n", word(g), pick(g, 64), word(g));
        break;
    case LARGE_JSON:
        sb_printf(b, "%s  {\"id\": %ld, \"name\": \"%s %s\", \"status\": \"%s\", \"count\": %u",
                  i ? ",\n" : "", i, word(g), word(g), pick(g, 5) ? "ok" : "failed", pick(g, 5000));
        if (plant) {
            sb_puts(b, ", \"note\": \"");
            needle(g, b, "large-tool");
            sb_putc(b, '"');
        }
        sb_printf(b, ", \"tags\": [\"%s\", \"%s\"]}", word(g), word(g));
        break;
    case LARGE_LOG: {
        static const char *const levels[] = {"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"};
        long ms = i * 137 + pick(g, 100);
        sb_printf(b, "2026-01-01T%02ld:%02ld:%02ld.%03ldZ %-5s [worker-%u] ", (ms / 3600000) % 24,
                  (ms / 60000) % 60, (ms / 1000) % 60, ms % 1000, levels[pick(g, 6)], pick(g, 8));
        if (plant) {
            sb_puts(b, "config reloaded, checkpoint ");
            needle(g, b, "large-tool");
        } else {
            sb_printf(b, "%s %s served in %ums (%u bytes)", word(g), word(g), 1 + pick(g, 400),
                      pick(g, 90000));
        }
        sb_putc(b, '\n');
        break;
    }
    default:
        if (i == 0) sb_puts(b, "run,module,calls,p50_ms,p99_ms,notes\n");
        sb_printf(b, "%ld,%s_%s,%u,%u.%u,%u.%u,", i, word(g), word(g), pick(g, 100000), pick(g, 50),
                  pick(g, 10), 50 + pick(g, 500), pick(g, 10));
        if (plant)
            needle(g, b, "large-tool");
        else
            sb_puts(b, word(g));
        sb_putc(b, '\n');
        break;
    }
}

/* A file above the file-handle line, read from its path; three in four carry a needle. */
static char *large_file(gen *g, gen_large_kind kind)
{
    sbuf b = {0};
    size_t target = GEN_LARGE_MIN + pick(g, GEN_LARGE_SPAN);
    /* The needle's position is drawn as a fraction of the target so it can sit anywhere,
     * including past the first reader window. */
    size_t plant_at = pick(g, 4) ? pick(g, (unsigned)target) : (size_t)-1;
    int planted = 0;
    if (kind == LARGE_JSON) sb_puts(&b, "[\n");
    for (long i = 0; b.len < target && !b.oom; i++) {
        int plant = !planted && b.len >= plant_at;
        large_line(g, &b, kind, i, plant);
        planted |= plant;
    }
    if (kind == LARGE_JSON) sb_puts(&b, "\n]\n");
    return sb_detach(&b);
}

static char *small_output(gen *g, const char *tool, const char *path, int *is_error)
{
    sbuf b = {0};
    *is_error = 0;
    if (pick(g, 10) == 0) {
        *is_error = 1;
        sb_printf(&b, "Error: %s failed: %s: no such file or directory", tool, path);
    } else if (strcmp(tool, "read") == 0) {
        int lines = 10 + (int)pick(g, 60);
        for (int i = 1; i <= lines; i++)
            sb_printf(&b, "%d\tstatic int %s_%s(int x) { return x * %u; }\n", i, word(g), word(g),
                      pick(g, 100));
    } else if (strcmp(tool, "edit") == 0) {
        sb_printf(&b, "Successfully replaced 1 occurrence in %s.", path);
    } else if (strcmp(tool, "grep") == 0) {
        int hits = 1 + (int)pick(g, 12);
        for (int i = 0; i < hits; i++)
            sb_printf(&b, "src/mod%u.c:%u:    %s_%s(s, %u);\n", pick(g, 40), 1 + pick(g, 900),
                      word(g), word(g), pick(g, 16));
    } else {
        unsigned shape = pick(g, 3);
        if (shape == 0) {
            int tests = 3 + (int)pick(g, 20);
            for (int i = 0; i < tests; i++)
                sb_printf(&b, "test_%s_%s ... %s\n", word(g), word(g), pick(g, 8) ? "ok" : "FAILED");
        } else if (shape == 1) {
            int files = 2 + (int)pick(g, 15);
            for (int i = 0; i < files; i++)
                sb_printf(&b, "-rw-r--r-- 1 dev dev %6u Jan  1 10:%02u %s_%s.c\n", pick(g, 90000),
                          pick(g, 60), word(g), word(g));
        } else {
            int lines = 3 + (int)pick(g, 30);
            for (int i = 0; i < lines; i++) {
                sb_printf(&b, "[%u] ", pick(g, 1000));
                words(g, &b, 4 + (int)pick(g, 8));
                sb_putc(&b, '\n');
            }
        }
        if (pick(g, 6) == 0) {
            sb_printf(&b, "[%u] checkpoint ", pick(g, 1000));
            needle(g, &b, "tool");
            sb_puts(&b, " recorded\n");
        }
        sb_printf(&b, "exit code %u", pick(g, 3) == 0 ? 1u : 0u);
    }
    return sb_detach(&b);
}

/* ---- turns -------------------------------------------------------------------------- */

typedef struct gen_call {
    char id[32];
    const char *name;
    char path[64];
    int large;          /* a gen_large_kind + 1, or 0 */
} gen_call;

static cJSON *tool_call(gen *g, gen_call *c, int n)
{
    static const char *const tools[] = {"read", "read", "bash", "bash", "edit", "grep"};
    c->name = tools[pick(g, 6)];
    c->large = 0;
    snprintf(c->id, sizeof c->id, "call_%u_%d", g->counter, n);
    snprintf(c->path, sizeof c->path, "src/mod%u.c", pick(g, 40));
    /* The draw happens in every mode so that the default mix keeps its bytes. */
    if (strcmp(c->name, "read") == 0 && pick(g, 16) == 0 && !g->fanout) {
        gen_large_kind k = (gen_large_kind)pick(g, N_LARGE);
        c->large = (int)k + 1;
        snprintf(c->path, sizeof c->path, LARGE_PATHS[k], pick(g, 100));
    }
    cJSON *call = cJSON_CreateObject();
    cJSON_AddStringToObject(call, "type", "toolCall");
    cJSON_AddStringToObject(call, "id", c->id);
    cJSON_AddStringToObject(call, "name", c->name);
    cJSON *args = cJSON_AddObjectToObject(call, "arguments");
    if (strcmp(c->name, "bash") == 0) {
        static const char *const cmds[] = {"make test 2>&1 | tail -20", "ls -l src", "git log --oneline -5",
                                           "./build/run --check"};
        cJSON_AddStringToObject(args, "command", cmds[pick(g, 4)]);
    } else if (strcmp(c->name, "grep") == 0) {
        char pat[64];
        snprintf(pat, sizeof pat, "%s_%s", word(g), word(g));
        cJSON_AddStringToObject(args, "pattern", pat);
        cJSON_AddStringToObject(args, "path", "src");
    } else {
        cJSON_AddStringToObject(args, "path", c->path);
        if (strcmp(c->name, "edit") == 0) {
            cJSON_AddStringToObject(args, "oldText", "return x;");
            cJSON_AddStringToObject(args, "newText", "return x + 1;");
        }
    }
    return call;
}

static void turn(gen *g, const char *parent)
{
    sbuf b = {0};
    sb_puts(&b, "Please look at the ");
    words(g, &b, 2);
    sb_printf(&b, " code in src/mod%u.c and ", pick(g, 40));
    words(g, &b, 3);
    sb_puts(&b, ".");
    if (pick(g, 3) == 0) {
        sb_puts(&b, g->abandoned ? " Keep in mind " : " Remember ");
        needle(g, &b, "user");
        sb_puts(&b, ".");
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
        cJSON_AddItemToArray(content, text_block("thinking", "thinking", t.p));
        sb_free(&t);
        sb_puts(&t, "Checking the ");
        words(g, &t, 2);
        sb_puts(&t, " first.");
        cJSON_AddItemToArray(content, text_block("text", "text", t.p));
        sb_free(&t);
        int calls = g->fanout ? g->fanout / 2 + (int)pick(g, (unsigned)(g->fanout - g->fanout / 2 + 1))
                              : 1 + (int)pick(g, 3);
        gen_call cs[GEN_MAX_FANOUT];
        for (int c = 0; c < calls; c++)
            cJSON_AddItemToArray(content, tool_call(g, &cs[c], c));
        message(g, g->last_id, assistant(g, content, "toolUse"));
        for (int c = 0; c < calls; c++) {
            int is_error = 0;
            char *out = cs[c].large ? large_file(g, (gen_large_kind)(cs[c].large - 1))
                                    : small_output(g, cs[c].name, cs[c].path, &is_error);
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "role", "toolResult");
            cJSON_AddStringToObject(m, "toolCallId", cs[c].id);
            cJSON_AddStringToObject(m, "toolName", cs[c].name);
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
    if (pick(g, 4) == 0) {
        sb_puts(&t, " Noted ");
        needle(g, &t, "assistant");
        sb_puts(&t, " for later.");
    }
    cJSON *content = cJSON_CreateArray();
    cJSON_AddItemToArray(content, text_block("text", "text", t.p));
    sb_free(&t);
    message(g, g->last_id, assistant(g, content, "stop"));
}

int gen_session(const gen_options *opt, const char *out_path, char **err)
{
    gen g = {.rng = opt->seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL, .clock = 1767225600000LL};
    int rc = LC_OK;
    if (!g.rng)
        g.rng = 1;
    g.fanout = opt->fanout;
    if (g.fanout < 0 || g.fanout == 1)
        g.fanout = 0;
    if (g.fanout > GEN_MAX_FANOUT)
        g.fanout = GEN_MAX_FANOUT;
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
    int n_turns = 0;
    char parent[16];
    memcpy(parent, g.last_id, sizeof parent);
    for (;;) {
        int more = (opt->tokens <= 0 || g.tokens < opt->tokens) &&
                   (opt->messages <= 0 || g.messages < opt->messages);
        /* A turn decided to be abandoned is left by the next one, so the session never
         * ends on it: its needles are in a removed branch only once a move happened. */
        if (!more && !g.abandoned)
            break;
        /* Decided before the turn is written, so its needles know they will be removed;
         * the next turn then starts from this turn's parent (a /tree move). */
        g.abandoned = more && n_turns >= 3 && pick(&g, 8) == 0;
        char this_parent[16];
        memcpy(this_parent, parent, sizeof parent);
        turn(&g, this_parent);
        n_turns++;
        if (pick(&g, 6) == 0) {
            cJSON *d = cJSON_CreateObject(), *f = cJSON_CreateObject();
            cJSON_AddNumberToObject(d, "turn", n_turns);
            cJSON_AddStringToObject(f, "customType", "other-extension-state");
            cJSON_AddItemToObject(f, "data", d);
            emit(&g, "custom", g.last_id, f);
        }
        if (g.abandoned)
            memcpy(parent, this_parent, sizeof parent);
        else
            memcpy(parent, g.last_id, sizeof parent);
    }
    if (g.out.oom || g.nout.oom) {
        rc = lc_errf(err, LC_NOMEM, "out of memory generating");
        goto done;
    }
    if ((rc = lc_write_atomic(out_path, g.out.p, g.out.len, 0644, err)) != LC_OK)
        goto done;
    if (opt->needles_path)
        rc = lc_write_atomic(opt->needles_path, g.nout.p ? g.nout.p : "", g.nout.len, 0644, err);
done:
    sb_free(&g.out);
    sb_free(&g.nout);
    return rc;
}
