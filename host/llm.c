/*
 * llm.c -- the reference host's model client (see llm.h): maps AgentMessages onto an
 * OpenAI-compatible chat-completions payload, POSTs it with libcurl, and maps the answer
 * back into an assistant AgentMessage with usage. Owns the one-time curl global init;
 * every call uses its own easy handle, so calls may run on several threads at once.
 */
#include "llm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "util.h"

/* A provider answer larger than this is refused rather than buffered without bound. */
#define LLM_MAX_RESPONSE_BYTES (64u * 1024u * 1024u)
#define LLM_DEFAULT_TIMEOUT_S 600L
#define LLM_CONNECT_TIMEOUT_S 30L

/* Pi's wording, so a model sees summaries the way the reference agent shows them. */
#define LLM_COMPACTION_PREFIX \
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
#define LLM_COMPACTION_SUFFIX "\n</summary>"
#define LLM_BRANCH_PREFIX \
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
#define LLM_BRANCH_SUFFIX "\n</summary>"

static pthread_once_t llm_curl_once = PTHREAD_ONCE_INIT;
static CURLcode llm_curl_init_rc = CURLE_OK;

static void llm_curl_global_init(void) { llm_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ------------------------------------------------------------------------------------
 * AgentMessage -> provider message
 * ---------------------------------------------------------------------------------- */

static const char *llm_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An image block {type:"image", data, mimeType} as an image_url part with a data URI. */
static cJSON *llm_image_part(const cJSON *block)
{
    const char *data = llm_str(block, "data");
    const char *mime = llm_str(block, "mimeType");
    if (!data) return NULL;
    char *url = lc_asprintf("data:%s;base64,%s", mime ? mime : "image/png", data);
    if (!url) return NULL;
    cJSON *part = cJSON_CreateObject();
    cJSON *iu = cJSON_AddObjectToObject(part, "image_url");
    cJSON_AddStringToObject(part, "type", "image_url");
    if (iu) cJSON_AddStringToObject(iu, "url", url);
    free(url);
    return part;
}

/* Whether a content block is of `type`. */
static int llm_block_is(const cJSON *blk, const char *type)
{
    const char *t = llm_str(blk, "type");
    return t && strcmp(t, type) == 0;
}

/* The text of a text block; NULL for any other block and for a text block without one. */
static const char *llm_block_text(const cJSON *blk)
{
    return llm_block_is(blk, "text") ? llm_str(blk, "text") : NULL;
}

/* Joined text of the text blocks of `content` (a string or a block array). *n_images
 * counts image blocks so the caller knows whether a parts array is needed. */
static char *llm_join_text(const cJSON *content, const char *sep, int *n_images)
{
    sbuf b = {0};
    int images = 0, first = 1;
    if (cJSON_IsString(content)) {
        sb_puts(&b, content->valuestring);
    } else if (cJSON_IsArray(content)) {
        const cJSON *blk;
        cJSON_ArrayForEach(blk, content) {
            const char *text = llm_block_text(blk);
            if (text) {
                if (!first) sb_puts(&b, sep);
                sb_puts(&b, text);
                first = 0;
            } else if (llm_block_is(blk, "image")) {
                images++;
            }
        }
    }
    if (n_images) *n_images = images;
    return sb_detach(&b);
}

/* User-role content from a string or blocks: a plain string when there are no images
 * (the form every compatible server accepts), else an array of text/image_url parts. */
static cJSON *llm_user_content(const cJSON *content)
{
    int images = 0;
    char *text = llm_join_text(content, "\n", &images);
    cJSON *out = NULL;
    if (!text) return NULL;
    if (images == 0) {
        out = cJSON_CreateString(text);
        goto done;
    }
    out = cJSON_CreateArray();
    const cJSON *blk;
    cJSON_ArrayForEach(blk, content) {
        const char *t = llm_block_text(blk);
        if (t) {
            cJSON *part = cJSON_CreateObject();
            cJSON_AddStringToObject(part, "type", "text");
            cJSON_AddStringToObject(part, "text", t);
            cJSON_AddItemToArray(out, part);
        } else if (llm_block_is(blk, "image")) {
            cJSON *part = llm_image_part(blk);
            if (part) cJSON_AddItemToArray(out, part);
        }
    }
done:
    free(text);
    return out;
}

static void llm_add_user_text(cJSON *messages, const char *text)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddStringToObject(m, "content", text);
    cJSON_AddItemToArray(messages, m);
}

/* State carried across messages: tool calls still waiting for their results, and the
 * images of tool results (a tool message cannot carry images; they follow as one user
 * message once the group of tool messages is complete). */
typedef struct llm_conv {
    cJSON *messages;
    cJSON *pending_ids;    /* array of {id, name} for unanswered tool calls */
    cJSON *pending_images; /* array of image_url parts */
} llm_conv;

static int llm_pending_find(const llm_conv *cv, const char *id)
{
    int i = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cv->pending_ids) {
        const char *pid = llm_str(p, "id");
        if (pid && id && strcmp(pid, id) == 0) return i;
        i++;
    }
    return -1;
}

/* Close the current tool group before a non-tool message: providers reject an assistant
 * tool call without an answer, so unanswered calls get a placeholder result (the
 * context may have been cut or rewritten by a plugin). Then the collected images. */
static void llm_close_tool_group(llm_conv *cv)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cv->pending_ids) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "tool");
        cJSON_AddStringToObject(m, "tool_call_id", llm_str(p, "id") ? llm_str(p, "id") : "");
        cJSON_AddStringToObject(m, "content", "No result provided");
        cJSON_AddItemToArray(cv->messages, m);
    }
    cJSON_Delete(cv->pending_ids);
    cv->pending_ids = cJSON_CreateArray();
    if (cJSON_GetArraySize(cv->pending_images) > 0) {
        cJSON *m = cJSON_CreateObject();
        cJSON *parts = cJSON_CreateArray();
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "type", "text");
        cJSON_AddStringToObject(t, "text", "Attached image(s) from tool result:");
        cJSON_AddItemToArray(parts, t);
        cJSON *img;
        while ((img = cJSON_DetachItemFromArray(cv->pending_images, 0)) != NULL)
            cJSON_AddItemToArray(parts, img);
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddItemToObject(m, "content", parts);
        cJSON_AddItemToArray(cv->messages, m);
    }
}

static void llm_map_assistant(llm_conv *cv, const cJSON *msg)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    sbuf text = {0};
    cJSON *calls = cJSON_CreateArray();
    int any_text = 0;
    if (cJSON_IsString(content)) {
        sb_puts(&text, content->valuestring);
        any_text = content->valuestring[0] != '\0';
    } else if (cJSON_IsArray(content)) {
        const cJSON *blk;
        cJSON_ArrayForEach(blk, content) {
            const char *t = llm_block_text(blk);
            if (t) {
                if (text.len) sb_puts(&text, "\n");
                sb_puts(&text, t);
                any_text = text.len > 0;
            } else if (llm_block_is(blk, "toolCall")) {
                const char *id = llm_str(blk, "id");
                const char *name = llm_str(blk, "name");
                const cJSON *args = cJSON_GetObjectItemCaseSensitive(blk, "arguments");
                char *args_text = args ? cJSON_PrintUnformatted(args) : lc_strdup("{}");
                cJSON *call = cJSON_CreateObject();
                cJSON *fn = cJSON_CreateObject();
                cJSON_AddStringToObject(call, "id", id ? id : "");
                cJSON_AddStringToObject(call, "type", "function");
                cJSON_AddStringToObject(fn, "name", name ? name : "");
                cJSON_AddStringToObject(fn, "arguments", args_text ? args_text : "{}");
                cJSON_AddItemToObject(call, "function", fn);
                cJSON_AddItemToArray(calls, call);
                free(args_text);
                cJSON *pend = cJSON_CreateObject();
                cJSON_AddStringToObject(pend, "id", id ? id : "");
                cJSON_AddItemToArray(cv->pending_ids, pend);
            }
            /* thinking blocks are the model's own scratchpad: not sent back */
        }
    }
    /* An assistant turn with neither text nor calls (thinking only, aborted) is an
     * empty message that providers reject; it carries nothing for the model. */
    if (!any_text && cJSON_GetArraySize(calls) == 0) {
        cJSON_Delete(calls);
        goto done;
    }
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "assistant");
    if (any_text)
        cJSON_AddStringToObject(m, "content", text.p);
    else
        cJSON_AddNullToObject(m, "content");
    if (cJSON_GetArraySize(calls) > 0)
        cJSON_AddItemToObject(m, "tool_calls", calls);
    else
        cJSON_Delete(calls);
    cJSON_AddItemToArray(cv->messages, m);
done:
    sb_free(&text);
}

static void llm_map_tool_result(llm_conv *cv, const cJSON *msg)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    const char *id = llm_str(msg, "toolCallId");
    const char *name = llm_str(msg, "toolName");
    int images = 0;
    char *text = llm_join_text(content, "\n", &images);
    if (!text) return;
    int idx = llm_pending_find(cv, id);
    if (idx < 0) {
        /* A result whose call is not in this request (cut away, or a rewritten context)
         * would be refused as a tool message; the model still gets to read it. */
        llm_close_tool_group(cv);
        char *t = lc_asprintf("Result of tool %s (call %s):\n%s", name ? name : "?",
                              id ? id : "?", text);
        if (t) llm_add_user_text(cv->messages, t);
        free(t);
        free(text);
        return;
    }
    cJSON_DeleteItemFromArray(cv->pending_ids, idx);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "tool");
    cJSON_AddStringToObject(m, "tool_call_id", id);
    cJSON_AddStringToObject(m, "content", text[0] ? text : (images ? "(see attached image)" : "(no output)"));
    cJSON_AddItemToArray(cv->messages, m);
    if (images && cJSON_IsArray(content)) {
        const cJSON *blk;
        cJSON_ArrayForEach(blk, content) {
            if (llm_block_is(blk, "image")) {
                cJSON *part = llm_image_part(blk);
                if (part) cJSON_AddItemToArray(cv->pending_images, part);
            }
        }
    }
    free(text);
}

static char *llm_bash_text(const cJSON *msg)
{
    const char *cmd = llm_str(msg, "command");
    const char *output = llm_str(msg, "output");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(msg, "exitCode");
    const cJSON *cancelled = cJSON_GetObjectItemCaseSensitive(msg, "cancelled");
    const cJSON *truncated = cJSON_GetObjectItemCaseSensitive(msg, "truncated");
    const char *full = llm_str(msg, "fullOutputPath");
    sbuf b = {0};
    sb_printf(&b, "Ran `%s`\n", cmd ? cmd : "");
    if (output && output[0])
        sb_printf(&b, "```\n%s\n```", output);
    else
        sb_puts(&b, "(no output)");
    if (cJSON_IsTrue(cancelled))
        sb_puts(&b, "\n\n(command cancelled)");
    else if (cJSON_IsNumber(code) && code->valuedouble != 0)
        sb_printf(&b, "\n\nCommand exited with code %d", (int)code->valuedouble);
    if (cJSON_IsTrue(truncated) && full)
        sb_printf(&b, "\n\n[Output truncated. Full output: %s]", full);
    return sb_detach(&b);
}

static void llm_map_message(llm_conv *cv, const cJSON *msg)
{
    const char *role = llm_str(msg, "role");
    if (!role) return;
    if (strcmp(role, "toolResult") == 0) {
        llm_map_tool_result(cv, msg);
        return;
    }
    if (strcmp(role, "user") == 0 || strcmp(role, "custom") == 0) {
        cJSON *content = llm_user_content(cJSON_GetObjectItemCaseSensitive(msg, "content"));
        if (!content) return;
        llm_close_tool_group(cv);
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddItemToObject(m, "content", content);
        cJSON_AddItemToArray(cv->messages, m);
    } else if (strcmp(role, "assistant") == 0) {
        llm_close_tool_group(cv);
        llm_map_assistant(cv, msg);
    } else if (strcmp(role, "compactionSummary") == 0 || strcmp(role, "branchSummary") == 0) {
        int compaction = role[0] == 'c';
        const char *summary = llm_str(msg, "summary");
        char *t = lc_asprintf("%s%s%s", compaction ? LLM_COMPACTION_PREFIX : LLM_BRANCH_PREFIX,
                              summary ? summary : "",
                              compaction ? LLM_COMPACTION_SUFFIX : LLM_BRANCH_SUFFIX);
        llm_close_tool_group(cv);
        if (t) llm_add_user_text(cv->messages, t);
        free(t);
    } else if (strcmp(role, "bashExecution") == 0) {
        /* "!!cmd" runs are the user's private business: kept out of the context. */
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "excludeFromContext"))) return;
        char *t = llm_bash_text(msg);
        llm_close_tool_group(cv);
        if (t) llm_add_user_text(cv->messages, t);
        free(t);
    }
    /* unknown roles are not the model's business */
}

cJSON *llm_build_payload(const llm_config *cfg, const char *system_prompt,
                         const char *const *message_jsons, size_t n_messages,
                         const cJSON *tools, long max_tokens)
{
    cJSON *payload = cJSON_CreateObject();
    llm_conv cv = {0};
    if (!payload) return NULL;
    cJSON_AddStringToObject(payload, "model", cfg && cfg->model ? cfg->model : "");
    cv.messages = cJSON_AddArrayToObject(payload, "messages");
    cv.pending_ids = cJSON_CreateArray();
    cv.pending_images = cJSON_CreateArray();
    if (!cv.messages || !cv.pending_ids || !cv.pending_images) {
        cJSON_Delete(payload);
        payload = NULL;
        goto done;
    }
    if (system_prompt && system_prompt[0]) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "system");
        cJSON_AddStringToObject(m, "content", system_prompt);
        cJSON_AddItemToArray(cv.messages, m);
    }
    for (size_t i = 0; i < n_messages; i++) {
        if (!message_jsons[i]) continue;
        cJSON *msg = cJSON_Parse(message_jsons[i]);
        if (cJSON_IsObject(msg)) llm_map_message(&cv, msg);
        cJSON_Delete(msg);
    }
    llm_close_tool_group(&cv);
    if (tools && cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0) {
        cJSON *out = cJSON_AddArrayToObject(payload, "tools");
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            const char *name = llm_str(t, "name");
            if (!name) continue;
            const cJSON *params = cJSON_GetObjectItemCaseSensitive(t, "parameters");
            cJSON *fn = cJSON_CreateObject();
            cJSON_AddStringToObject(fn, "name", name);
            cJSON_AddStringToObject(fn, "description",
                                    llm_str(t, "description") ? llm_str(t, "description") : "");
            if (cJSON_IsObject(params))
                cJSON_AddItemToObject(fn, "parameters", cJSON_Duplicate(params, 1));
            else
                cJSON_AddItemToObject(fn, "parameters",
                                      cJSON_Parse("{\"type\":\"object\",\"properties\":{}}"));
            cJSON *entry = cJSON_CreateObject();
            cJSON_AddStringToObject(entry, "type", "function");
            cJSON_AddItemToObject(entry, "function", fn);
            cJSON_AddItemToArray(out, entry);
        }
    }
    if (max_tokens > 0) cJSON_AddNumberToObject(payload, "max_tokens", (double)max_tokens);
    cJSON_AddBoolToObject(payload, "stream", 0);
done:
    cJSON_Delete(cv.pending_ids);
    cJSON_Delete(cv.pending_images);
    return payload;
}

/* ------------------------------------------------------------------------------------
 * HTTP
 * ---------------------------------------------------------------------------------- */

typedef struct llm_body {
    sbuf buf;
    int too_big;
} llm_body;

/* ---- server-sent events ----------------------------------------------------------- */

#define LLM_MAX_TOOL_CALLS 128
#define LLM_SSE_RAW_BYTES 65536

typedef struct llm_sse_call {
    sbuf id, name, args;
} llm_sse_call;

/* What the chunks said so far; at the end it is turned into the one-shot response shape
 * so that one converter serves both modes. */
typedef struct llm_sse {
    const llm_stream *st;
    sbuf line;          /* the current, unfinished line */
    sbuf raw;           /* the first bytes as received: an error answer is a JSON body */
    sbuf text, thinking, finish, model;
    llm_sse_call calls[LLM_MAX_TOOL_CALLS];
    int n_calls;
    cJSON *usage;       /* from the final chunk */
    cJSON *error;       /* an error object sent in the stream */
    int done;
} llm_sse;

static void llm_sse_free(llm_sse *s)
{
    sb_free(&s->line);
    sb_free(&s->raw);
    sb_free(&s->text);
    sb_free(&s->thinking);
    sb_free(&s->finish);
    sb_free(&s->model);
    for (int i = 0; i < s->n_calls; i++) {
        sb_free(&s->calls[i].id);
        sb_free(&s->calls[i].name);
        sb_free(&s->calls[i].args);
    }
    cJSON_Delete(s->usage);
    cJSON_Delete(s->error);
}

static void llm_sse_piece(llm_sse *s, sbuf *into, const char *kind, const cJSON *v)
{
    if (!cJSON_IsString(v) || !v->valuestring[0]) return;
    size_t n = strlen(v->valuestring);
    sb_append(into, v->valuestring, n);
    if (s->st && s->st->on_delta) s->st->on_delta(s->st->ud, kind, v->valuestring, n);
}

static void llm_sse_event(llm_sse *s, const char *data)
{
    if (strcmp(data, "[DONE]") == 0) {
        s->done = 1;
        return;
    }
    cJSON *c = cJSON_Parse(data);
    if (!cJSON_IsObject(c)) {
        cJSON_Delete(c);
        return;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(c, "error");
    if (e && !s->error) s->error = cJSON_Duplicate(e, 1);
    const char *m = llm_str(c, "model");
    if (m && !s->model.len) sb_puts(&s->model, m);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(c, "usage");
    if (cJSON_IsObject(u)) {
        cJSON_Delete(s->usage);
        s->usage = cJSON_Duplicate(u, 1);
    }
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(c, "choices");
    const cJSON *ch = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(ch, "delta");
    const char *fin = llm_str(ch, "finish_reason");
    if (fin) {
        s->finish.len = 0;
        sb_puts(&s->finish, fin);
    }
    if (cJSON_IsObject(d)) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(d, "reasoning_content");
        if (!r) r = cJSON_GetObjectItemCaseSensitive(d, "reasoning");
        llm_sse_piece(s, &s->thinking, "thinking", r);
        llm_sse_piece(s, &s->text, "text", cJSON_GetObjectItemCaseSensitive(d, "content"));
        const cJSON *tc;
        cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(d, "tool_calls"))
        {
            const cJSON *ix = cJSON_GetObjectItemCaseSensitive(tc, "index");
            int k = cJSON_IsNumber(ix) ? ix->valueint : s->n_calls - 1;
            if (k < 0 || k >= LLM_MAX_TOOL_CALLS) continue;
            while (s->n_calls <= k) memset(&s->calls[s->n_calls++], 0, sizeof s->calls[0]);
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
            const char *id = llm_str(tc, "id"), *name = llm_str(fn, "name"), *args = llm_str(fn, "arguments");
            if (id && !s->calls[k].id.len) sb_puts(&s->calls[k].id, id);
            if (name) sb_puts(&s->calls[k].name, name);
            if (args) sb_puts(&s->calls[k].args, args);
        }
    }
    cJSON_Delete(c);
}

static size_t llm_sse_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    llm_sse *s = userdata;
    size_t n = size * nmemb;
    if (s->raw.len < LLM_SSE_RAW_BYTES) sb_append(&s->raw, ptr, n < LLM_SSE_RAW_BYTES ? n : LLM_SSE_RAW_BYTES);
    for (size_t i = 0; i < n; i++) {
        if (ptr[i] != '\n') {
            if (s->line.len >= LLM_MAX_RESPONSE_BYTES || sb_putc(&s->line, ptr[i]) != LC_OK) return 0;
            continue;
        }
        char *l = s->line.p ? s->line.p : "";
        size_t len = s->line.len;
        if (len && l[len - 1] == '\r') l[--len] = 0;
        if (strncmp(l, "data:", 5) == 0) llm_sse_event(s, l + 5 + (l[5] == ' '));
        s->line.len = 0;
        if (s->line.p) s->line.p[0] = 0;
    }
    return n;
}

/* The answer as the one-shot response shape (malloc'd JSON). `partial`: a cancelled
 * answer, whose unfinished tool calls are dropped. */
static char *llm_sse_response(const llm_sse *s, int partial)
{
    cJSON *r = cJSON_CreateObject(), *choices = cJSON_AddArrayToObject(r, "choices");
    cJSON *ch = cJSON_CreateObject(), *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "role", "assistant");
    cJSON_AddStringToObject(msg, "content", s->text.p ? s->text.p : "");
    if (s->thinking.len) cJSON_AddStringToObject(msg, "reasoning_content", s->thinking.p);
    if (!partial && s->n_calls) {
        cJSON *calls = cJSON_AddArrayToObject(msg, "tool_calls");
        for (int i = 0; i < s->n_calls; i++) {
            cJSON *c = cJSON_CreateObject(), *fn = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "id", s->calls[i].id.p ? s->calls[i].id.p : "");
            cJSON_AddStringToObject(c, "type", "function");
            cJSON_AddStringToObject(fn, "name", s->calls[i].name.p ? s->calls[i].name.p : "");
            cJSON_AddStringToObject(fn, "arguments", s->calls[i].args.p ? s->calls[i].args.p : "");
            cJSON_AddItemToObject(c, "function", fn);
            cJSON_AddItemToArray(calls, c);
        }
    }
    cJSON_AddItemToObject(ch, "message", msg);
    if (s->finish.len) cJSON_AddStringToObject(ch, "finish_reason", s->finish.p);
    cJSON_AddItemToArray(choices, ch);
    if (s->model.len) cJSON_AddStringToObject(r, "model", s->model.p);
    if (s->usage) cJSON_AddItemToObject(r, "usage", cJSON_Duplicate(s->usage, 1));
    char *out = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return out;
}

/* What the transfer's progress callback polls: the interactive Ctrl-C flag (streams) and
 * the host's shutdown flag (any call). Which one stopped it decides the error. */
typedef struct llm_xfer {
    const llm_stream *st;
    const atomic_int *abort_flag;
    int shut;  /* set by the callback when abort_flag stopped the transfer */
} llm_xfer;

static int llm_progress_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                           curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    llm_xfer *x = ud;
    if (x->abort_flag && atomic_load(x->abort_flag)) {
        x->shut = 1;
        return 1;
    }
    return x->st && x->st->cancel && *x->st->cancel ? 1 : 0;
}

/* The payload with streaming asked for (malloc'd). */
static char *llm_stream_payload(const char *payload_json)
{
    cJSON *p = cJSON_Parse(payload_json);
    char *out = NULL;
    if (!cJSON_IsObject(p)) {
        cJSON_Delete(p);
        return lc_strdup(payload_json);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(p, "stream");
    cJSON_DeleteItemFromObjectCaseSensitive(p, "stream_options");
    cJSON_AddBoolToObject(p, "stream", 1);
    cJSON *so = cJSON_AddObjectToObject(p, "stream_options");
    cJSON_AddBoolToObject(so, "include_usage", 1);
    out = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    return out;
}

static _Thread_local const llm_stream *llm_thread_stream;

void llm_set_default_stream(const llm_stream *stream) { llm_thread_stream = stream; }

const llm_stream *llm_default_stream(void) { return llm_thread_stream; }

static size_t llm_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    llm_body *body = userdata;
    size_t n = size * nmemb;
    if (body->buf.len + n > LLM_MAX_RESPONSE_BYTES) {
        body->too_big = 1;
        return 0; /* aborts the transfer */
    }
    if (sb_append(&body->buf, ptr, n) != LC_OK) return 0;
    return n;
}

/* The provider's own explanation from an error body: {"error":{"message"}},
 * {"error":"..."}, {"message":"..."}, or the raw text (bounded). */
static char *llm_error_message(const char *body)
{
    cJSON *j = body ? cJSON_Parse(body) : NULL;
    char *out = NULL;
    if (j) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        const char *m = NULL;
        if (cJSON_IsString(e)) m = e->valuestring;
        else if (cJSON_IsObject(e)) m = llm_str(e, "message");
        if (!m) m = llm_str(j, "message");
        if (!m) m = llm_str(j, "detail");
        if (m) out = lc_strdup(m);
    }
    if (!out && body && body[0]) out = lc_strndup(body, strlen(body) > 500 ? 500 : strlen(body));
    if (!out) out = lc_strdup("(empty response body)");
    cJSON_Delete(j);
    return out;
}

/* ------------------------------------------------------------------------------------
 * response -> assistant AgentMessage
 * ---------------------------------------------------------------------------------- */

static double llm_num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

/* Arguments as the model wrote them: an object when they parse as one, otherwise kept
 * verbatim under "_raw" so a malformed call is visible rather than lost. */
static cJSON *llm_parse_arguments(const cJSON *fn)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
    if (cJSON_IsObject(a)) return cJSON_Duplicate(a, 1);
    if (!cJSON_IsString(a) || a->valuestring[0] == '\0') return cJSON_CreateObject();
    cJSON *parsed = cJSON_Parse(a->valuestring);
    if (cJSON_IsObject(parsed)) return parsed;
    cJSON_Delete(parsed);
    cJSON *raw = cJSON_CreateObject();
    cJSON_AddStringToObject(raw, "_raw", a->valuestring);
    return raw;
}

cJSON *llm_usage_json(double input, double output, double cache_read, double total)
{
    cJSON *usage = cJSON_CreateObject();
    cJSON_AddNumberToObject(usage, "input", input);
    cJSON_AddNumberToObject(usage, "output", output);
    cJSON_AddNumberToObject(usage, "cacheRead", cache_read);
    cJSON_AddNumberToObject(usage, "cacheWrite", 0);
    cJSON_AddNumberToObject(usage, "totalTokens", total);
    cJSON *cost = cJSON_AddObjectToObject(usage, "cost");
    const char *const ck[] = {"input", "output", "cacheRead", "cacheWrite", "total"};
    for (size_t i = 0; i < 5; i++)
        cJSON_AddNumberToObject(cost, ck[i], 0);
    return usage;
}

static cJSON *llm_usage(const cJSON *u)
{
    double prompt = llm_num(u, "prompt_tokens");
    double completion = llm_num(u, "completion_tokens");
    double cached = llm_num(cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens_details"),
                            "cached_tokens");
    double total = llm_num(u, "total_tokens");
    double input = prompt - cached;
    if (input < 0) input = 0;
    if (total <= 0) total = input + completion + cached;
    return llm_usage_json(input, completion, cached, total);
}

static int llm_convert_response(const char *model, const char *body, char **out, char **err)
{
    int rc = LC_ERR;
    cJSON *resp = cJSON_Parse(body);
    cJSON *msg = NULL;
    if (!cJSON_IsObject(resp)) {
        rc = lc_errf(err, LC_INVALID, "model response is not JSON: %.200s", body);
        goto done;
    }
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(resp, "choices");
    const cJSON *choice = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    const cJSON *pm = cJSON_GetObjectItemCaseSensitive(choice, "message");
    if (!cJSON_IsObject(pm)) {
        if (cJSON_GetObjectItemCaseSensitive(resp, "error")) {
            char *m = llm_error_message(body);
            rc = lc_errf(err, LC_ERR, "model error: %s", m ? m : "?");
            free(m);
        } else {
            rc = lc_errf(err, LC_INVALID, "model response has no choices[0].message");
        }
        goto done;
    }
    msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "role", "assistant");
    cJSON *content = cJSON_AddArrayToObject(msg, "content");
    const char *reasoning = llm_str(pm, "reasoning_content");
    if (!reasoning) reasoning = llm_str(pm, "reasoning");
    if (reasoning && reasoning[0]) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "type", "thinking");
        cJSON_AddStringToObject(b, "thinking", reasoning);
        cJSON_AddItemToArray(content, b);
    }
    const char *text = llm_str(pm, "content");
    if (text && text[0]) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "type", "text");
        cJSON_AddStringToObject(b, "text", text);
        cJSON_AddItemToArray(content, b);
    }
    int n_calls = 0;
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(pm, "tool_calls");
    const cJSON *call;
    cJSON_ArrayForEach(call, calls) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        const char *name = llm_str(fn, "name");
        const char *id = llm_str(call, "id");
        char idbuf[48];
        if (!name) continue;
        if (!id || !id[0]) {
            /* Some servers omit ids; a tool result must still be able to refer to it. */
            snprintf(idbuf, sizeof idbuf, "call_%lld_%d", lc_epoch_ms(), n_calls);
            id = idbuf;
        }
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "type", "toolCall");
        cJSON_AddStringToObject(b, "id", id);
        cJSON_AddStringToObject(b, "name", name);
        cJSON_AddItemToObject(b, "arguments", llm_parse_arguments(fn));
        cJSON_AddItemToArray(content, b);
        n_calls++;
    }
    cJSON_AddStringToObject(msg, "api", "openai-completions");
    cJSON_AddStringToObject(msg, "provider", "openai-compatible");
    const char *rmodel = llm_str(resp, "model");
    cJSON_AddStringToObject(msg, "model", model && model[0] ? model : (rmodel ? rmodel : ""));
    cJSON_AddItemToObject(msg, "usage", llm_usage(cJSON_GetObjectItemCaseSensitive(resp, "usage")));
    const char *finish = llm_str(choice, "finish_reason");
    const char *stop = "stop";
    if (finish && strcmp(finish, "length") == 0) stop = "length";
    else if (finish && (strcmp(finish, "tool_calls") == 0 || strcmp(finish, "function_call") == 0))
        stop = "toolUse";
    else if (finish && strcmp(finish, "content_filter") == 0) stop = "error";
    /* Servers differ on finish_reason with calls; the calls themselves decide. */
    if (n_calls > 0 && strcmp(stop, "stop") == 0) stop = "toolUse";
    cJSON_AddStringToObject(msg, "stopReason", stop);
    if (strcmp(stop, "error") == 0)
        cJSON_AddStringToObject(msg, "errorMessage", "the provider filtered the response");
    cJSON_AddNumberToObject(msg, "timestamp", (double)lc_epoch_ms());
    *out = cJSON_PrintUnformatted(msg);
    if (!*out) {
        rc = lc_errf(err, LC_NOMEM, "out of memory printing the assistant message");
        goto done;
    }
    rc = LC_OK;
done:
    cJSON_Delete(msg);
    cJSON_Delete(resp);
    return rc;
}

/* The model id the payload names (a plugin may have replaced the payload). */
static char *llm_payload_model(const llm_config *cfg, const char *payload_json)
{
    cJSON *p = cJSON_Parse(payload_json);
    const char *m = llm_str(p, "model");
    char *out = lc_strdup(m ? m : (cfg->model ? cfg->model : ""));
    cJSON_Delete(p);
    return out;
}

int llm_complete(const llm_config *cfg, const char *payload_json, char **out_message_json,
                 char **err)
{
    return llm_complete_stream(cfg, payload_json, NULL, out_message_json, err);
}

int llm_complete_stream(const llm_config *cfg, const char *payload_json, const llm_stream *stream,
                        char **out_message_json, char **err)
{
    int rc = LC_ERR;
    CURL *curl = NULL;
    struct curl_slist *headers = NULL;
    llm_body body = {0};
    llm_sse sse = {0};
    llm_xfer xfer = {.st = stream, .abort_flag = cfg ? cfg->abort_flag : NULL};
    char *url = NULL, *auth = NULL, *model = NULL, *noproxy = NULL, *spayload = NULL, *assembled = NULL;
    char errbuf[CURL_ERROR_SIZE] = "";

    if (out_message_json) *out_message_json = NULL;
    if (!cfg || !cfg->base_url || !payload_json || !out_message_json) {
        rc = lc_errf(err, LC_INVALID, "llm_complete: missing base URL, payload or output");
        goto done;
    }
    /* A call that starts after the host began shutting down is not sent at all. */
    if (cfg->abort_flag && atomic_load(cfg->abort_flag)) {
        rc = lc_errf(err, LLM_SHUTDOWN, "the host is shutting down");
        goto done;
    }
    pthread_once(&llm_curl_once, llm_curl_global_init);
    if (llm_curl_init_rc != CURLE_OK) {
        rc = lc_errf(err, LC_ERR, "curl_global_init failed: %s", curl_easy_strerror(llm_curl_init_rc));
        goto done;
    }
    size_t blen = strlen(cfg->base_url);
    while (blen > 0 && cfg->base_url[blen - 1] == '/') blen--;
    url = lc_asprintf("%.*s/chat/completions", (int)blen, cfg->base_url);
    model = llm_payload_model(cfg, payload_json);
    curl = curl_easy_init();
    if (stream && !(spayload = llm_stream_payload(payload_json))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory preparing the model request");
        goto done;
    }
    if (spayload) payload_json = spayload;
    sse.st = stream;
    if (!url || !model || !curl) {
        rc = lc_errf(err, LC_NOMEM, "out of memory preparing the model request");
        goto done;
    }
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, stream ? "Accept: text/event-stream" : "Accept: application/json");
    if (cfg->api_key && cfg->api_key[0]) {
        auth = lc_asprintf("Authorization: Bearer %s", cfg->api_key);
        if (auth) headers = curl_slist_append(headers, auth);
    }
    long timeout = cfg->timeout_seconds > 0 ? cfg->timeout_seconds : LLM_DEFAULT_TIMEOUT_S;
    /* timeout_ms wins over seconds; the connect phase gets no more than the whole call. */
    long timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : timeout * 1000L;
    long connect_ms = LLM_CONNECT_TIMEOUT_S * 1000L;
    if (connect_ms > timeout_ms) connect_ms = timeout_ms;
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload_json);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(payload_json));
    if (stream) {
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, llm_sse_write_cb);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sse);
    } else {
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, llm_write_cb);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    }
    if (stream || xfer.abort_flag) {
        /* libcurl calls this often while data moves and about once a second while the
         * model thinks: a shutdown stops a silent call within about a second. */
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, llm_progress_cb);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, (void *)&xfer);
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    }
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    /* Signals cannot be used for timeouts in a multi-threaded host. */
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "agent-host/0.1");
    /* A loopback model (a local server, the test fake) is never behind the proxy; keep
     * the user's own no_proxy list beside it (setting the option replaces the env's). */
    const char *env_np = getenv("no_proxy");
    if (!env_np) env_np = getenv("NO_PROXY");
    noproxy = lc_asprintf("localhost,127.0.0.1,::1%s%s", env_np && env_np[0] ? "," : "",
                          env_np ? env_np : "");
    if (noproxy) curl_easy_setopt(curl, CURLOPT_NOPROXY, noproxy);

    CURLcode cc = curl_easy_perform(curl);
    if (cc == CURLE_ABORTED_BY_CALLBACK && xfer.shut) {
        /* Nothing of a half answer is kept: the session it was for is closing. */
        rc = lc_errf(err, LLM_SHUTDOWN, "the host is shutting down");
        goto done;
    }
    if (cc == CURLE_OPERATION_TIMEDOUT && cfg->timeout_ms > 0) {
        rc = lc_errf(err, LLM_TIMEDOUT, "POST %s: timed out after %ld ms", url, cfg->timeout_ms);
        goto done;
    }
    if (stream && cc == CURLE_ABORTED_BY_CALLBACK) {
        /* Ctrl-C: what was already said is kept as an aborted answer. */
        if (!sse.text.len && !sse.thinking.len) {
            rc = lc_errf(err, LLM_CANCELLED, "interrupted");
            goto done;
        }
        sb_free(&sse.finish);
        if (!(assembled = llm_sse_response(&sse, 1))) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        cJSON *m = NULL;
        if ((rc = llm_convert_response(model, assembled, out_message_json, err)) == LC_OK &&
            (m = cJSON_Parse(*out_message_json))) {
            cJSON_ReplaceItemInObjectCaseSensitive(m, "stopReason", cJSON_CreateString("aborted"));
            char *t = cJSON_PrintUnformatted(m);
            if (t) {
                free(*out_message_json);
                *out_message_json = t;
            }
        }
        cJSON_Delete(m);
        goto done;
    }
    if (cc != CURLE_OK) {
        if (body.too_big)
            rc = lc_errf(err, LC_ERR, "POST %s: response larger than %u bytes", url,
                         LLM_MAX_RESPONSE_BYTES);
        else
            rc = lc_errf(err, LC_ERR, "POST %s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(cc));
        goto done;
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (body.buf.oom) {
        rc = lc_errf(err, LC_NOMEM, "out of memory reading the model response");
        goto done;
    }
    if (stream && status >= 200 && status < 300) {
        if (sse.error) {
            char *et = cJSON_PrintUnformatted(sse.error);
            char *wrapped = et ? lc_asprintf("{\"error\":%s}", et) : NULL;
            char *m = wrapped ? llm_error_message(wrapped) : NULL;
            rc = lc_errf(err, LC_ERR, "model error: %s", m ? m : "?");
            free(m);
            free(wrapped);
            free(et);
            goto done;
        }
        if (!(assembled = llm_sse_response(&sse, 0))) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        rc = llm_convert_response(model, assembled, out_message_json, err);
        goto done;
    }
    if (stream && sse.raw.len) sb_append(&body.buf, sse.raw.p, sse.raw.len);
    if (status < 200 || status >= 300) {
        char *m = llm_error_message(body.buf.p);
        rc = lc_errf(err, LC_ERR, "HTTP %ld from %s: %s", status, url, m ? m : "?");
        free(m);
        goto done;
    }
    rc = llm_convert_response(model, body.buf.p ? body.buf.p : "", out_message_json, err);
done:
    if (curl) curl_easy_cleanup(curl);
    curl_slist_free_all(headers);
    sb_free(&body.buf);
    llm_sse_free(&sse);
    free(spayload);
    free(assembled);
    free(url);
    free(auth);
    free(model);
    free(noproxy);
    return rc;
}
