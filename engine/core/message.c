/*
 * message.c -- the AgentMessage model (see message.h): role names, the text the engine
 * indexes and shows for a message, and the token estimate. Every accessor tolerates any
 * JSON: a field of the wrong type is treated as absent, never as an error.
 */
#include "message.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Same figure as the reference host: an image costs as much as 4,800 characters. */
#define MSG_IMAGE_TOKENS 1200

static const char *const msg_role_names[] = {
    [MSG_ROLE_UNKNOWN] = "unknown",
    [MSG_ROLE_USER] = "user",
    [MSG_ROLE_ASSISTANT] = "assistant",
    [MSG_ROLE_TOOL_RESULT] = "toolResult",
    [MSG_ROLE_CUSTOM] = "custom",
    [MSG_ROLE_COMPACTION_SUMMARY] = "compactionSummary",
    [MSG_ROLE_BRANCH_SUMMARY] = "branchSummary",
    [MSG_ROLE_BASH_EXECUTION] = "bashExecution",
};

#define MSG_N_ROLES (sizeof msg_role_names / sizeof msg_role_names[0])

const char *msg_role_name(msg_role role)
{
    if ((size_t)role >= MSG_N_ROLES) return msg_role_names[MSG_ROLE_UNKNOWN];
    return msg_role_names[role];
}

msg_role msg_role_parse(const char *name)
{
    if (!name) return MSG_ROLE_UNKNOWN;
    for (size_t i = 1; i < MSG_N_ROLES; i++) {
        if (strcmp(name, msg_role_names[i]) == 0) return (msg_role)i;
    }
    return MSG_ROLE_UNKNOWN;
}

/* A member that is a string, else NULL (absent and wrong-typed look the same). */
static const char *msg_str(const cJSON *obj, const char *key)
{
    if (!cJSON_IsObject(obj)) return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A member that is present with a value that carries information (not null/false). */
static int msg_has_meaningful(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return v && !cJSON_IsNull(v) && !cJSON_IsFalse(v);
}

msg_role msg_role_of(const cJSON *message) { return msg_role_parse(msg_str(message, "role")); }

/* Length as JavaScript counts it (UTF-16 code units), so estimates agree with the
 * reference host: one per code point, two for code points outside the BMP (4-byte
 * UTF-8 sequences). Continuation bytes count nothing. */
static size_t msg_js_length(const char *s)
{
    if (!s) return 0;
    size_t len = strlen(s), n = 0, i = 0;
    /* Eight bytes at a time (every message's text is counted on ingest): a byte counts
     * unless it is a continuation (top bits 10), twice when it leads four (top bits 1111). */
    const uint64_t top = 0x8080808080808080ull;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (!(w & top)) {
            n += 8;
            continue;
        }
        uint64_t cont = w & ~(w << 1) & top;
        uint64_t four = w & (w << 1) & (w << 2) & (w << 3) & top;
        n += 8 - (size_t)__builtin_popcountll(cont) + (size_t)__builtin_popcountll(four);
    }
    for (const unsigned char *p = (const unsigned char *)s + i; *p; p++) {
        if ((*p & 0xC0) == 0x80) continue;
        n += (*p >= 0xF0) ? 2 : 1;
    }
    return n;
}

/* Separator-aware append: parts of a derived text are joined by one newline. */
static void msg_part(sbuf *b, const char *s, size_t n)
{
    if (b->len > 0) sb_putc(b, '\n');
    sb_append(b, s, n);
}

/* The string values inside an unknown block, each after a space: its "type" aside, and the
 * members that hold encoded bytes (base64 data, signatures), which no one reads or searches. */
static void msg_block_strings(const cJSON *v, sbuf *b)
{
    static const char *const skip[] = {"type", "data", "signature", "encrypted_content"};
    const cJSON *c;
    if (cJSON_IsString(v)) {
        sb_putc(b, ' ');
        sb_puts(b, v->valuestring);
        return;
    }
    cJSON_ArrayForEach(c, v)
    {
        int skipped = 0;
        for (size_t i = 0; c->string && i < sizeof skip / sizeof *skip && !skipped; i++)
            skipped = !strcmp(c->string, skip[i]);
        if (!skipped) msg_block_strings(c, b);
    }
}

/* A tool call's arguments as a person reads them: each value on its own line after its
 * key, "key: value", decoded (a file's content as its lines, a command as typed), where
 * the JSON text escapes every newline and quote into the words around it. An array's items
 * each carry the array's key; nulls are left out. */
static void msg_arg_values(const cJSON *v, const char *key, sbuf *b)
{
    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        const cJSON *c;
        cJSON_ArrayForEach(c, v) msg_arg_values(c, cJSON_IsObject(v) ? c->string : key, b);
        return;
    }
    char num[32];
    const char *val = cJSON_IsString(v) ? v->valuestring : cJSON_IsTrue(v) ? "true" : cJSON_IsFalse(v) ? "false" : NULL;
    if (cJSON_IsNumber(v)) {
        snprintf(num, sizeof num, "%.17g", v->valuedouble);
        val = num;
    }
    if (!val) return;
    if (b->len > 0) sb_putc(b, '\n');
    if (key) sb_printf(b, "%s: ", key);
    sb_puts(b, val);
}

/* A call's line in the index text: "[toolCall NAME]" and its arguments' values. Arguments
 * some producers keep as a JSON string are read as the JSON they hold. */
static void msg_call_words(sbuf *calls, const char *name, const cJSON *args)
{
    if (calls->len > 0) sb_putc(calls, '\n');
    sb_printf(calls, "[toolCall %s]", name ? name : "?");
    cJSON *parsed = cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : NULL;
    msg_arg_values(parsed && (cJSON_IsObject(parsed) || cJSON_IsArray(parsed)) ? parsed : args, NULL, calls);
    cJSON_Delete(parsed);
}

/* One walk over a message's content: the derived text, with tool calls collected in
 * `calls` so that the assistant's text lists them after its prose -- as their arguments'
 * JSON (the stored text, which the bundle and the summarizer read back) or, with `words`,
 * as their values (the index) -- and on the way what the token estimate counts and the
 * index keeps apart. */
typedef struct msg_walk {
    sbuf b, calls;
    int complete;   /* the blocks can be rebuilt from the text */
    int words;      /* tool calls as their values (the index's body) */
    int ncalls;     /* tool call blocks seen */
    sbuf *thinking; /* where the thinking blocks' text goes (NULL: nowhere) */
    size_t chars, images; /* msg_estimate_tokens's counts */
} msg_walk;

static void msg_content_text(const cJSON *content, msg_walk *w)
{
    if (cJSON_IsString(content)) {
        msg_part(&w->b, content->valuestring, strlen(content->valuestring));
        w->chars += msg_js_length(content->valuestring);
        return;
    }
    if (!cJSON_IsArray(content)) return;
    int n_text = 0;
    const cJSON *block;
    cJSON_ArrayForEach(block, content)
    {
        const char *type = msg_str(block, "type");
        if (type && strcmp(type, "text") == 0) {
            const char *text = msg_str(block, "text");
            if (text) msg_part(&w->b, text, strlen(text));
            w->chars += msg_js_length(text);
            /* The signature must travel back to the provider verbatim. */
            if (msg_has_meaningful(block, "textSignature")) w->complete = 0;
            n_text++;
        } else if (type && strcmp(type, "image") == 0) {
            const char *mime = msg_str(block, "mimeType");
            char *marker = lc_asprintf("[image %s]", mime ? mime : "unknown");
            if (marker) msg_part(&w->b, marker, strlen(marker));
            else w->b.oom = 1;
            free(marker);
            w->images++;
            w->complete = 0;
        } else if (type && strcmp(type, "toolCall") == 0) {
            const char *name = msg_str(block, "name");
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(block, "arguments");
            w->ncalls++;
            /* The call id pairs it with its result and is not in the text. */
            w->complete = 0;
            w->chars += msg_js_length(name);
            if (w->words) {
                msg_call_words(&w->calls, name, args);
                continue;
            }
            char *args_json = args ? cJSON_PrintUnformatted(args) : NULL;
            w->chars += msg_js_length(args_json);
            if (w->calls.len > 0) sb_putc(&w->calls, '\n');
            sb_printf(&w->calls, "[toolCall %s] %s", name ? name : "?", args_json ? args_json : "{}");
            free(args_json);
        } else if (type && strcmp(type, "thinking") != 0) {
            /* A block of a type this engine does not know (stored verbatim by an import):
             * its words are searchable all the same, "[TYPE] values". */
            sbuf u = {0};
            sb_printf(&u, "[%s]", type);
            msg_block_strings(block, &u);
            if (u.oom) {
                w->b.oom = 1;
            } else {
                msg_part(&w->b, u.p, u.len);
                w->chars += msg_js_length(u.p);
            }
            sb_free(&u);
            w->complete = 0;
        } else {
            /* thinking: kept out of the text on purpose, indexed in its own column. */
            if (type && strcmp(type, "thinking") == 0) {
                const char *t = msg_str(block, "thinking");
                w->chars += msg_js_length(t);
                if (w->thinking && t && *t) msg_part(w->thinking, t, strlen(t));
            }
            w->complete = 0;
        }
    }
    /* Several text blocks joined by newlines cannot be split back exactly. */
    if (n_text > 1) w->complete = 0;
}

/* A message's "content" (NULL when it is not an object or has none). */
static const cJSON *msg_content(const cJSON *message)
{
    return cJSON_IsObject(message) ? cJSON_GetObjectItemCaseSensitive(message, "content") : NULL;
}

int msg_typed_by_person(const char *text)
{
    static const char compacted[] = "This session is being continued from a previous conversation";
    while (*text == ' ' || *text == '\n') text++;
    return *text && *text != '<' && strncmp(text, "Caveat:", 7) != 0 &&
           strncmp(text, compacted, sizeof compacted - 1) != 0;
}

/* The derived text (or with w->words the index's body); *tokens (when not NULL) the
 * token estimate, as msg_estimate_tokens counts it. NULL on OOM. */
static char *msg_derive(const cJSON *message, msg_walk *w, size_t *tokens)
{
    const cJSON *content = msg_content(message);
    int counted = 1;
    w->complete = 1;
    switch (msg_role_of(message)) {
    case MSG_ROLE_USER:
    case MSG_ROLE_ASSISTANT:
        msg_content_text(content, w);
        break;
    case MSG_ROLE_TOOL_RESULT:
        msg_content_text(content, w);
        if (msg_has_meaningful(message, "details") || msg_has_meaningful(message, "isError"))
            w->complete = 0;
        break;
    case MSG_ROLE_CUSTOM: /* customType and display decide how the host shows it; keep the original. */
        msg_content_text(content, w);
        w->complete = 0;
        break;
    case MSG_ROLE_UNKNOWN:
        msg_content_text(content, w);
        w->complete = 0;
        counted = 0;
        break;
    case MSG_ROLE_COMPACTION_SUMMARY:
    case MSG_ROLE_BRANCH_SUMMARY: {
        const char *summary = msg_str(message, "summary");
        if (summary) sb_puts(&w->b, summary);
        w->chars = msg_js_length(summary);
        break;
    }
    case MSG_ROLE_BASH_EXECUTION: {
        const char *command = msg_str(message, "command");
        const char *output = msg_str(message, "output");
        sb_printf(&w->b, "$ %s\n%s", command ? command : "", output ? output : "");
        w->chars = msg_js_length(command) + msg_js_length(output);
        /* exit code, cancellation and truncation are not in the text. */
        w->complete = 0;
        break;
    }
    }
    if (w->calls.len > 0) msg_part(&w->b, w->calls.p, w->calls.len);
    if (w->calls.oom) w->b.oom = 1;
    sb_free(&w->calls);
    if (tokens) *tokens = counted ? (w->chars + 3) / 4 + w->images * MSG_IMAGE_TOKENS : 0;
    return sb_detach(&w->b);
}

char *msg_derive_text(const cJSON *message, int *complete)
{
    msg_walk w = {0};
    char *text = msg_derive(message, &w, NULL);
    if (complete) *complete = w.complete;
    return text;
}

char *msg_derive_all(const cJSON *message, int *complete, size_t *tokens, char **body, char **thinking)
{
    sbuf th = {0};
    msg_walk w = {.thinking = &th};
    char *text = msg_derive(message, &w, tokens);
    *body = *thinking = NULL;
    if (complete) *complete = w.complete;
    /* The index's body differs from the text only in its tool calls. */
    if (text && w.ncalls) {
        msg_walk words = {.words = 1};
        if (!(*body = msg_derive(message, &words, NULL))) goto oom;
    }
    if (!text || th.oom) goto oom;
    if (th.len) *thinking = sb_detach(&th);
    sb_free(&th);
    return text;
oom:
    free(text);
    free(*body);
    *body = NULL;
    sb_free(&th);
    return NULL;
}

int msg_index_text(const cJSON *message, char **body, char **thinking)
{
    char *text = msg_derive_all(message, NULL, NULL, body, thinking);
    if (!text) return LC_NOMEM;
    free(text);
    return LC_OK;
}

/* Characters and images of a content value, counted as the reference estimator does. */
static void msg_content_size(const cJSON *content, size_t *chars, size_t *images)
{
    if (cJSON_IsString(content)) {
        *chars += msg_js_length(content->valuestring);
        return;
    }
    if (!cJSON_IsArray(content)) return;
    const cJSON *block;
    cJSON_ArrayForEach(block, content)
    {
        const char *type = msg_str(block, "type");
        if (!type) continue;
        if (strcmp(type, "text") == 0) {
            *chars += msg_js_length(msg_str(block, "text"));
        } else if (strcmp(type, "thinking") == 0) {
            *chars += msg_js_length(msg_str(block, "thinking"));
        } else if (strcmp(type, "image") == 0) {
            (*images)++;
        } else if (strcmp(type, "toolCall") == 0) {
            *chars += msg_js_length(msg_str(block, "name"));
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(block, "arguments");
            if (args) {
                char *json = cJSON_PrintUnformatted(args);
                *chars += msg_js_length(json);
                free(json);
            }
        }
    }
}

size_t msg_estimate_tokens(const cJSON *message)
{
    size_t chars = 0;
    size_t images = 0;
    const cJSON *content = msg_content(message);
    switch (msg_role_of(message)) {
    case MSG_ROLE_USER:
    case MSG_ROLE_ASSISTANT:
    case MSG_ROLE_TOOL_RESULT:
    case MSG_ROLE_CUSTOM:
        msg_content_size(content, &chars, &images);
        break;
    case MSG_ROLE_COMPACTION_SUMMARY:
    case MSG_ROLE_BRANCH_SUMMARY:
        chars = msg_js_length(msg_str(message, "summary"));
        break;
    case MSG_ROLE_BASH_EXECUTION:
        chars = msg_js_length(msg_str(message, "command")) +
                msg_js_length(msg_str(message, "output"));
        break;
    case MSG_ROLE_UNKNOWN:
        return 0;
    }
    return (chars + 3) / 4 + images * MSG_IMAGE_TOKENS;
}

size_t msg_estimate_tokens_json(const char *json)
{
    if (!json) return 0;
    cJSON *m = cJSON_Parse(json);
    if (!m) return 0;
    size_t n = msg_estimate_tokens(m);
    cJSON_Delete(m);
    return n;
}

const char *msg_tool_call_id(const cJSON *message)
{
    return msg_role_of(message) == MSG_ROLE_TOOL_RESULT ? msg_str(message, "toolCallId") : NULL;
}

const char *msg_tool_name(const cJSON *message)
{
    return msg_role_of(message) == MSG_ROLE_TOOL_RESULT ? msg_str(message, "toolName") : NULL;
}

int msg_tool_call_count(const cJSON *message)
{
    if (msg_role_of(message) != MSG_ROLE_ASSISTANT) return 0;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(message, "content");
    if (!cJSON_IsArray(content)) return 0;
    int n = 0;
    const cJSON *block;
    cJSON_ArrayForEach(block, content)
    {
        const char *type = msg_str(block, "type");
        if (type && strcmp(type, "toolCall") == 0) n++;
    }
    return n;
}

/* A usage counter as a non-negative long; anything else counts as absent (0). */
static long msg_count(const cJSON *usage, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0) return 0;
    if (v->valuedouble >= (double)LONG_MAX) return 0;
    return (long)v->valuedouble;
}

long msg_usage_total(const cJSON *message)
{
    if (msg_role_of(message) != MSG_ROLE_ASSISTANT) return 0;
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(message, "usage");
    if (!cJSON_IsObject(usage)) return 0;
    long total = msg_count(usage, "totalTokens");
    if (total > 0) return total;
    return msg_count(usage, "input") + msg_count(usage, "output") +
           msg_count(usage, "cacheRead") + msg_count(usage, "cacheWrite");
}

void msg_count_branch(const cJSON *branch, msg_branch_count *out)
{
    size_t since_usage = 0;
    long usage = 0;
    const cJSON *e;
    *out = (msg_branch_count){0};
    cJSON_ArrayForEach(e, branch)
    {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(e, "type"));
        if (!type || strcmp(type, "message") != 0) continue;
        const cJSON *m = cJSON_GetObjectItem(e, "message");
        size_t t = msg_estimate_tokens(m);
        out->messages++;
        out->tokens += t;
        long u = msg_usage_total(m);
        if (u > 0) {
            usage = u;
            since_usage = 0;
        } else {
            since_usage += t;
        }
    }
    /* Occupancy as the host sees it: the provider's count of the last request plus what
     * arrived after it; the raw estimate only when no request was ever measured. */
    out->occupancy = usage > 0 ? (size_t)usage + since_usage : out->tokens;
}

/* ---- building ---------------------------------------------------------------------------- */

cJSON *msg_add_text(cJSON *content, const char *text)
{
    cJSON *b = cJSON_CreateObject();
    if (!b) return NULL;
    /* a block without its text would be a message cut short, not a failure */
    if (!cJSON_AddStringToObject(b, "type", "text") || !cJSON_AddStringToObject(b, "text", text) ||
        !cJSON_AddItemToArray(content, b)) {
        cJSON_Delete(b);
        return NULL;
    }
    return b;
}

int msg_set_member(cJSON *obj, const char *key, cJSON *item)
{
    assert(cJSON_IsObject(obj) && key);
    if (!item) return 0;
    cJSON *old = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!old) {
        if (cJSON_AddItemToObject(obj, key, item)) return 1;
        cJSON_Delete(item);
        return 0;
    }
    /* cJSON_ReplaceItemInObject links the item in even when the copy of its key failed,
     * leaving a member no lookup finds: the key is set here first, then swapped in. */
    char *k = strdup(key); /* cJSON frees it with its default hooks, which are malloc's */
    if (!k) {
        cJSON_Delete(item);
        return 0;
    }
    if (item->string && !(item->type & cJSON_StringIsConst)) free(item->string);
    item->string = k;
    item->type &= ~cJSON_StringIsConst;
    return cJSON_ReplaceItemViaPointer(obj, old, item) ? 1 : 0;
}

cJSON *msg_text_message(const char *role, const char *text, double timestamp)
{
    cJSON *m = cJSON_CreateObject();
    if (!m) return NULL;
    cJSON_AddStringToObject(m, "role", role);
    msg_add_text(cJSON_AddArrayToObject(m, "content"), text);
    cJSON_AddNumberToObject(m, "timestamp", timestamp);
    return m;
}

cJSON *msg_tool_result(const char *text, cJSON *details, int is_error)
{
    cJSON *r = cJSON_CreateObject();
    if (!r) {
        cJSON_Delete(details);
        return NULL;
    }
    msg_add_text(cJSON_AddArrayToObject(r, "content"), text);
    if (details) cJSON_AddItemToObject(r, "details", details);
    cJSON_AddBoolToObject(r, "isError", is_error);
    return r;
}
