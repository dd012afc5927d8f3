/*
 * agent.c -- the reference host's agent lifecycle (see agent.h): event dispatch with
 * per-event chaining rules and tracing, the O(1)-on-the-host context request, tools,
 * turn_end, compaction (plugin-supplied or the host's extractive default), tree moves,
 * slash commands and the live prompt loop over llm.h.
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm.h"
#include "message.h"
#include "tools.h"
#include "util.h"

enum { KEEP_RECENT_TOKENS = 20000, SUMMARY_MAX_CHARS = 6000 };

void agent_init(agent *a, host *h)
{
    memset(a, 0, sizeof *a);
    a->h = h;
    a->system_prompt = lc_asprintf(
        "You are a coding agent working in %s. Use the tools read, write, edit and bash to "
        "inspect and change files; answer concisely.",
        h->cwd ? h->cwd : ".");
}

void agent_destroy(agent *a)
{
    free(a->system_prompt);
    free(a->run_prompt);
    a->system_prompt = NULL;
    a->run_prompt = NULL;
    for (size_t i = 0; i < sizeof a->memo / sizeof a->memo[0]; i++) free(a->memo[i].json);
    memset(a->memo, 0, sizeof a->memo);
}

/* ------------------------------------------------------------------ events */

static ap_event_fn event_fn(const ap_plugin *d, const char *name)
{
    static const struct { const char *name; size_t off; } table[] = {
        {"session_start", offsetof(ap_plugin, session_start)},
        {"session_shutdown", offsetof(ap_plugin, session_shutdown)},
        {"before_agent_start", offsetof(ap_plugin, before_agent_start)},
        {"before_provider_request", offsetof(ap_plugin, before_provider_request)},
        {"turn_end", offsetof(ap_plugin, turn_end)},
        {"tool_call", offsetof(ap_plugin, tool_call)},
        {"tool_result", offsetof(ap_plugin, tool_result)},
        {"session_before_compact", offsetof(ap_plugin, session_before_compact)},
        {"session_compact", offsetof(ap_plugin, session_compact)},
        {"session_tree", offsetof(ap_plugin, session_tree)},
        {"agent_end", offsetof(ap_plugin, agent_end)},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].name, name) != 0)
            continue;
        /* The host allocated the descriptor at its full size and zero-filled it, so
         * every slot is readable whatever struct_size the plugin left there. */
        ap_event_fn fn;
        memcpy(&fn, (const char *)d + table[i].off, sizeof fn);
        return fn;
    }
    return NULL;
}

/* One trace line: {event, plugin, handled, input, status, output[, us]}. Texts that are
 * not JSON (a plugin's broken answer) are recorded as strings; us (>= 0) is the time the
 * plugin took in the callback, in microseconds. */
static void trace_us(agent *a, const char *event, const host_plugin *p, int handled,
                     const char *input, int status, const char *output, long us)
{
    FILE *fp = a->h->trace_fp;
    if (!fp)
        return;
    sbuf b = {0};
    cJSON *name = cJSON_CreateString(event), *pname = cJSON_CreateString(p->name);
    char *n1 = cJSON_PrintUnformatted(name), *n2 = cJSON_PrintUnformatted(pname);
    sb_printf(&b, "{\"event\":%s,\"plugin\":%s,\"handled\":%s", n1 ? n1 : "null",
              n2 ? n2 : "null", handled ? "true" : "false");
    free(n1);
    free(n2);
    cJSON_Delete(name);
    cJSON_Delete(pname);
    if (handled) {
        sb_printf(&b, ",\"input\":%s,\"status\":%d,\"output\":", input ? input : "null", status);
        if (!output) {
            sb_puts(&b, "null");
        } else {
            cJSON *parsed = cJSON_Parse(output);
            if (parsed) {
                sb_puts(&b, output);
            } else {
                cJSON *s = cJSON_CreateString(output);
                char *t = cJSON_PrintUnformatted(s);
                sb_puts(&b, t ? t : "null");
                free(t);
                cJSON_Delete(s);
            }
            cJSON_Delete(parsed);
        }
    }
    if (us >= 0)
        sb_printf(&b, ",\"us\":%ld", us);
    sb_puts(&b, "}\n");
    if (!b.oom) {
        fputs(b.p, fp);
        fflush(fp);
    }
    sb_free(&b);
}

static void trace(agent *a, const char *event, const host_plugin *p, int handled,
                  const char *input, int status, const char *output)
{
    trace_us(a, event, p, handled, input, status, output, -1);
}

static int is_true(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static void replace_field(cJSON *obj, const char *key, const cJSON *value)
{
    cJSON *dup = cJSON_Duplicate(value, 1);
    if (!dup)
        return;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, dup);
    else
        cJSON_AddItemToObject(obj, key, dup);
}

/* Fold one plugin's answer into the working event and the merged result. Returns 1
 * when the chain stops here (a block, a cancel, a supplied compaction). */
static int fold_result(const char *name, cJSON *work, cJSON **merged, const cJSON *res)
{
    if (!cJSON_IsObject(res))
        return 0;
    if (strcmp(name, "before_agent_start") == 0 || strcmp(name, "before_provider_request") == 0 ||
        strcmp(name, "tool_result") == 0) {
        static const char *const keys[] = {"systemPrompt", "payload", "content", "details",
                                           "isError", NULL};
        for (size_t i = 0; keys[i]; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, keys[i]);
            if (!v || !cJSON_GetObjectItemCaseSensitive(work, keys[i]))
                continue;
            if (strcmp(keys[i], "systemPrompt") == 0 && !cJSON_IsString(v))
                continue;
            if (strcmp(keys[i], "content") == 0 && !cJSON_IsArray(v) && !cJSON_IsString(v))
                continue;
            replace_field(work, keys[i], v);
            if (!*merged)
                *merged = cJSON_CreateObject();
            if (*merged)
                replace_field(*merged, keys[i], v);
        }
        return 0;
    }
    if (strcmp(name, "tool_call") == 0 && is_true(res, "block")) {
        *merged = cJSON_Duplicate(res, 1);
        return 1;
    }
    if (strcmp(name, "session_before_compact") == 0 &&
        (is_true(res, "cancel") || cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res, "compaction")))) {
        *merged = cJSON_Duplicate(res, 1);
        return 1;
    }
    return 0;
}

int agent_fire(agent *a, const char *name, const cJSON *event, cJSON **result)
{
    host *h = a->h;
    cJSON *work = NULL, *merged = NULL;
    char *text = NULL;
    int rc = LC_OK;
    if (result)
        *result = NULL;
    work = cJSON_Duplicate(event, 1);
    if (!work) {
        rc = LC_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < h->n_plugins; i++) {
        host_plugin *p = h->plugins[i];
        ap_event_fn fn = p->active ? event_fn(&p->desc, name) : NULL;
        if (!fn) {
            trace(a, name, p, 0, NULL, 0, NULL);
            continue;
        }
        free(text);
        text = cJSON_PrintUnformatted(work);
        if (!text) {
            rc = LC_NOMEM;
            goto done;
        }
        char *out = NULL, *err = NULL;
        h->current = p;
        int st = fn(p->desc.state, text, &out, &err);
        h->current = NULL;
        trace(a, name, p, 1, text, st, out);
        int stop = 0;
        if (st != AP_OK) {
            host_notify(h, AP_LEVEL_WARNING, "plugin '%s' failed in %s (status %d): %s", p->name,
                        name, st, err ? err : "no reason given");
        } else if (out) {
            cJSON *res = cJSON_Parse(out);
            if (!res)
                host_notify(h, AP_LEVEL_WARNING, "plugin '%s' returned malformed JSON from %s; ignored",
                            p->name, name);
            else
                stop = fold_result(name, work, &merged, res);
            cJSON_Delete(res);
        }
        if (out)
            p->desc.release(p->desc.state, out);
        if (err)
            p->desc.release(p->desc.state, err);
        if (stop)
            break;
    }
done:
    free(text);
    cJSON_Delete(work);
    if (result)
        *result = merged;
    else
        cJSON_Delete(merged);
    return rc;
}

void agent_before_agent_start(agent *a, const char *prompt)
{
    cJSON *ev = cJSON_CreateObject(), *res = NULL;
    cJSON_AddStringToObject(ev, "prompt", prompt ? prompt : "");
    cJSON_AddStringToObject(ev, "systemPrompt", a->system_prompt ? a->system_prompt : "");
    agent_fire(a, "before_agent_start", ev, &res);
    const cJSON *rsp = res ? cJSON_GetObjectItemCaseSensitive(res, "systemPrompt") : NULL;
    free(a->run_prompt);
    a->run_prompt = cJSON_IsString(rsp) ? lc_strdup(rsp->valuestring) : NULL;
    cJSON_Delete(res);
    cJSON_Delete(ev);
}

void agent_session_start(agent *a, const char *reason)
{
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "reason", reason);
    agent_fire(a, "session_start", ev, NULL);
    cJSON_Delete(ev);
}

void agent_agent_end(agent *a, const char *status)
{
    /* A level-1 host (AGENT_HOST_API_LEVEL=1) has no agent_end: it is not fired at all. */
    if (a->h->api.api_level < 2)
        return;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "status", status);
    agent_fire(a, "agent_end", ev, NULL);
    cJSON_Delete(ev);
}

void agent_session_shutdown(agent *a)
{
    /* First, so a plugin that joins its worker in session_shutdown does not wait out a
     * summary the model is still writing. */
    hostapi_begin_shutdown(a->h);
    cJSON *ev = cJSON_CreateObject();
    agent_fire(a, "session_shutdown", ev, NULL);
    cJSON_Delete(ev);
}

/* ------------------------------------------------------------------ context */

void agent_context_release(agent *a, agent_context *c)
{
    (void)a;
    for (size_t i = 0; i < c->n_held; i++) {
        host_plugin *p = c->held[i].p;
        if (p->desc.release_context)
            p->desc.release_context(p->desc.state, c->held[i].r);
    }
    LC_FREE(c->held, c->bufs[0], c->bufs[1], c->tok_bufs[0], c->tok_bufs[1]);
    memset(c, 0, sizeof *c);
}

/* A new message a plugin returned: 1 when it is a JSON object, with its token estimate.
 * Messages seen in the last few results are answered from the memo. */
static int item_measure(agent *a, const char *json, size_t *tokens)
{
    size_t len = json ? strlen(json) : 0;
    for (size_t i = 0; json && i < sizeof a->memo / sizeof a->memo[0]; i++)
        if (a->memo[i].json && a->memo[i].len == len && memcmp(a->memo[i].json, json, len) == 0) {
            *tokens = a->memo[i].tokens;
            return 1;
        }
    cJSON *m = json ? cJSON_Parse(json) : NULL;
    int ok = cJSON_IsObject(m);
    *tokens = ok ? msg_estimate_tokens(m) : 0;
    cJSON_Delete(m);
    struct agent_memo *slot = &a->memo[a->memo_next++ % (sizeof a->memo / sizeof a->memo[0])];
    char *copy = ok ? malloc(len + 1) : NULL;
    if (copy) {
        memcpy(copy, json, len + 1);
        free(slot->json);
        *slot = (struct agent_memo){copy, len, *tokens};
    }
    return ok;
}

/* A result is usable when every index is in range and every new message is JSON. */
static int result_valid(agent *a, const ap_context_result *r, size_t n_in, char **why)
{
    if (r->n_items && !r->items)
        return lc_errf(why, LC_INVALID, "result has %zu items but no array", r->n_items) == LC_OK;
    for (size_t i = 0; i < r->n_items; i++) {
        const ap_context_item *it = &r->items[i];
        if (it->input_index >= 0) {
            if ((uint64_t)it->input_index >= n_in) {
                lc_errf(why, LC_INVALID, "item %zu refers to input %lld of %zu", i,
                        (long long)it->input_index, n_in);
                return 0;
            }
            continue;
        }
        size_t tokens;
        if (!item_measure(a, it->json, &tokens)) {
            lc_errf(why, LC_INVALID, "item %zu is a new message that is not a JSON object", i);
            return 0;
        }
    }
    return 1;
}

int agent_context_build(agent *a, agent_context *c, char **err)
{
    host *h = a->h;
    int which = 0;
    memset(c, 0, sizeof *c);
    c->msgs = session_context(h->sess, &c->n);
    const size_t *tok = NULL; /* NULL: the session's own counts, by index */
    for (size_t i = 0; i < h->n_plugins; i++) {
        host_plugin *p = h->plugins[i];
        if (!p->active || !p->desc.context) {
            trace(a, "context", p, 0, NULL, 0, NULL);
            continue;
        }
        ap_context_event ev = {.struct_size = (uint32_t)sizeof ev,
                               .n_messages = c->n,
                               .messages = c->msgs,
                               .system_prompt = a->run_prompt ? a->run_prompt
                                                              : a->system_prompt};
        ap_context_result *r = NULL;
        char *perr = NULL, *why = NULL, in[64], outbuf[128];
        h->current = p;
        double t0 = lc_now_ms();
        int st = p->desc.context(p->desc.state, &ev, &r, &perr);
        long us = (long)((lc_now_ms() - t0) * 1000.0);
        h->current = NULL;
        snprintf(in, sizeof in, "{\"n_messages\":%zu}", c->n);
        if (st == AP_OK && r) {
            size_t reused = 0;
            for (size_t k = 0; r->items && k < r->n_items; k++)
                reused += r->items[k].input_index >= 0;
            snprintf(outbuf, sizeof outbuf, "{\"n_items\":%zu,\"reused\":%zu,\"new\":%zu}",
                     r->n_items, reused, r->n_items - reused);
        }
        trace_us(a, "context", p, 1, in, st, st == AP_OK && r ? outbuf : NULL, us);
        if (st != AP_OK) {
            host_notify(h, AP_LEVEL_WARNING, "plugin '%s' failed in context (status %d): %s; "
                        "its input is sent unchanged", p->name, st, perr ? perr : "no reason given");
            if (perr)
                p->desc.release(p->desc.state, perr);
            if (r && p->desc.release_context)
                p->desc.release_context(p->desc.state, r);
            continue;
        }
        if (perr)
            p->desc.release(p->desc.state, perr);
        if (!r)
            continue;
        if (!result_valid(a, r, c->n, &why)) {
            host_notify(h, AP_LEVEL_WARNING, "plugin '%s' returned an invalid context (%s); its "
                        "input is sent unchanged", p->name, why ? why : "invalid");
            free(why);
            if (p->desc.release_context)
                p->desc.release_context(p->desc.state, r);
            continue;
        }
        struct agent_held *held = realloc(c->held, (c->n_held + 1) * sizeof *held);
        if (held)
            c->held = held;
        if (held && r->n_items > c->cap[which]) {
            ap_message_in *buf = realloc(c->bufs[which], r->n_items * sizeof *buf);
            if (buf) c->bufs[which] = buf;
            size_t *tb = buf ? realloc(c->tok_bufs[which], r->n_items * sizeof *tb) : NULL;
            if (tb) {
                c->tok_bufs[which] = tb;
                c->cap[which] = r->n_items;
            } else {
                held = NULL;
            }
        }
        if (!held) {
            if (p->desc.release_context)
                p->desc.release_context(p->desc.state, r);
            agent_context_release(a, c);
            return lc_errf(err, LC_NOMEM, "out of memory applying a context result");
        }
        c->held[c->n_held].p = p;
        c->held[c->n_held].r = r;
        c->n_held++;
        ap_message_in *out = c->bufs[which];
        size_t *out_tok = c->tok_bufs[which];
        for (size_t k = 0; k < r->n_items; k++) {
            const ap_context_item *it = &r->items[k];
            if (it->input_index >= 0) {
                size_t i = (size_t)it->input_index;
                out[k] = c->msgs[i];
                out_tok[k] = tok ? tok[i] : session_context_message_tokens(h->sess, i);
            } else {
                out[k].entry_id = NULL;
                out[k].json = it->json;
                out[k].json_len = strlen(it->json);
                item_measure(a, it->json, &out_tok[k]);
            }
        }
        c->msgs = out;
        tok = out_tok;
        c->n = r->n_items;
        which ^= 1;
    }
    /* O(items): a reused message carries the count the session keeps for it; only the
     * messages the plugins made are measured. */
    h->sent_raw_tokens = session_context_tokens(h->sess, 0);
    h->sent_tokens = h->sent_raw_tokens;
    if (c->n_held > 0) {
        h->sent_tokens = 0;
        for (size_t k = 0; k < c->n; k++) h->sent_tokens += tok[k];
    }
    h->sent_valid = 1;
    a->requests++;
    return LC_OK;
}

int agent_request_hooks(agent *a, char **err)
{
    agent_context c;
    int rc = agent_context_build(a, &c, err);
    if (rc)
        return rc;
    /* No model in replay: the payload describes the request instead of carrying it, so
     * a request costs O(1) here however long the history is. */
    cJSON *ev = cJSON_CreateObject(), *payload = cJSON_AddObjectToObject(ev, "payload");
    cJSON_AddStringToObject(payload, "model", a->h->model ? a->h->model : "replay");
    cJSON_AddNumberToObject(payload, "max_tokens", (double)a->h->max_tokens);
    cJSON_AddNumberToObject(payload, "messageCount", (double)c.n);
    cJSON_AddBoolToObject(payload, "replay", 1);
    agent_context_release(a, &c);
    rc = agent_fire(a, "before_provider_request", ev, NULL);
    cJSON_Delete(ev);
    return rc;
}

/* ------------------------------------------------------------------ tools */

static cJSON *error_result(const char *text)
{
    return msg_tool_result(text, NULL, 1);
}

static const char *call_str(const cJSON *call, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(call, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* toolCall arguments as an object (some producers store them as a JSON string). */
static cJSON *call_args(const cJSON *call)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(call, "arguments");
    if (cJSON_IsString(v)) {
        cJSON *p = cJSON_Parse(v->valuestring);
        if (p)
            return p;
    }
    return v ? cJSON_Duplicate(v, 1) : cJSON_CreateObject();
}

int agent_tool_call_event(agent *a, const cJSON *call, char **blocked_reason)
{
    *blocked_reason = NULL;
    cJSON *ev = cJSON_CreateObject(), *res = NULL;
    cJSON_AddStringToObject(ev, "toolCallId", call_str(call, "id"));
    cJSON_AddStringToObject(ev, "toolName", call_str(call, "name"));
    cJSON_AddItemToObject(ev, "input", call_args(call));
    int rc = agent_fire(a, "tool_call", ev, &res);
    if (res && is_true(res, "block")) {
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(res, "reason");
        *blocked_reason = lc_strdup(cJSON_IsString(reason) ? reason->valuestring
                                                           : "blocked by a plugin");
    }
    cJSON_Delete(res);
    cJSON_Delete(ev);
    return rc;
}

void agent_tool_result_event(agent *a, const cJSON *call, cJSON *result)
{
    cJSON *ev = cJSON_CreateObject(), *res = NULL;
    cJSON_AddStringToObject(ev, "toolCallId", call_str(call, "id"));
    cJSON_AddStringToObject(ev, "toolName", call_str(call, "name"));
    cJSON_AddItemToObject(ev, "input", call_args(call));
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
    const cJSON *details = cJSON_GetObjectItemCaseSensitive(result, "details");
    cJSON_AddItemToObject(ev, "content", content ? cJSON_Duplicate(content, 1) : cJSON_CreateArray());
    cJSON_AddItemToObject(ev, "details", details ? cJSON_Duplicate(details, 1) : cJSON_CreateNull());
    cJSON_AddBoolToObject(ev, "isError", is_true(result, "isError"));
    agent_fire(a, "tool_result", ev, &res);
    if (res) {
        const char *keys[] = {"content", "details", "isError"};
        for (size_t i = 0; i < 3; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, keys[i]);
            if (v)
                replace_field(result, keys[i], v);
        }
    }
    cJSON_Delete(res);
    cJSON_Delete(ev);
}

cJSON *agent_run_tool(agent *a, const cJSON *call)
{
    host *h = a->h;
    const char *name = call_str(call, "name");
    cJSON *args = call_args(call), *result = NULL;
    char *call_json = NULL, *out = NULL, *err = NULL, *msg = NULL;
    if (tools_is_builtin(name)) {
        result = tools_run(name, args, h->cwd);
        goto done;
    }
    host_tool *t = hostapi_find_tool(h, name);
    if (!t) {
        msg = lc_asprintf("Tool %s not found", name);
        result = error_result(msg ? msg : "tool not found");
        goto done;
    }
    cJSON *cj = cJSON_CreateObject();
    cJSON_AddStringToObject(cj, "toolCallId", call_str(call, "id"));
    cJSON_AddItemReferenceToObject(cj, "arguments", args);
    call_json = cJSON_PrintUnformatted(cj);
    cJSON_Delete(cj);
    host_plugin *owner = t->owner;
    h->current = owner;
    int st = call_json ? t->handler(t->userdata, call_json, &out, &err) : AP_NOMEM;
    h->current = NULL;
    if (st != AP_OK) {
        msg = lc_asprintf("Tool %s failed (status %d): %s", name, st, err ? err : "no reason given");
        result = error_result(msg ? msg : "tool failed");
    } else {
        result = out ? cJSON_Parse(out) : NULL;
        if (!cJSON_IsObject(result)) {
            cJSON_Delete(result);
            result = error_result("the tool returned a result that is not a JSON object");
        } else if (!cJSON_GetObjectItemCaseSensitive(result, "content")) {
            cJSON_AddItemToObject(result, "content", cJSON_CreateArray());
        }
    }
    if (owner && out)
        owner->desc.release(owner->desc.state, out);
    if (owner && err)
        owner->desc.release(owner->desc.state, err);
done:
    free(msg);
    free(call_json);
    cJSON_Delete(args);
    return result;
}

static cJSON *tool_result_message(const cJSON *call, const cJSON *result)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "toolResult");
    cJSON_AddStringToObject(m, "toolCallId", call_str(call, "id"));
    cJSON_AddStringToObject(m, "toolName", call_str(call, "name"));
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
    const cJSON *details = cJSON_GetObjectItemCaseSensitive(result, "details");
    cJSON_AddItemToObject(m, "content", content ? cJSON_Duplicate(content, 1) : cJSON_CreateArray());
    if (details && !cJSON_IsNull(details))
        cJSON_AddItemToObject(m, "details", cJSON_Duplicate(details, 1));
    cJSON_AddBoolToObject(m, "isError", is_true(result, "isError"));
    cJSON_AddNumberToObject(m, "timestamp", (double)lc_epoch_ms());
    return m;
}

void agent_turn_end(agent *a, const cJSON *assistant, const cJSON *tool_results)
{
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddNumberToObject(ev, "turnIndex", (double)a->turn_index);
    cJSON_AddItemReferenceToObject(ev, "message", (cJSON *)assistant);
    cJSON_AddItemReferenceToObject(ev, "toolResults", (cJSON *)tool_results);
    agent_fire(a, "turn_end", ev, NULL);
    cJSON_Delete(ev);
    a->turn_index++;
}

static int append_message(agent *a, const cJSON *msg, sess_entry **out, char **err)
{
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddStringToObject(entry, "type", "message");
    cJSON_AddItemToObject(entry, "message", cJSON_Duplicate(msg, 1));
    int rc = session_append(a->h->sess, entry, 1, out, err);
    cJSON_Delete(entry);
    return rc;
}

/* Run every toolCall of an assistant message: events, execution, recorded results. */
static int run_tool_calls(agent *a, const cJSON *assistant, cJSON *results, int *n_calls,
                          char **err)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(assistant, "content"), *block;
    *n_calls = 0;
    cJSON_ArrayForEach(block, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(block, "type");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "toolCall") != 0)
            continue;
        (*n_calls)++;
        char *blocked = NULL;
        agent_tool_call_event(a, block, &blocked);
        cJSON *result;
        if (blocked) {
            char *msg = lc_asprintf("Tool call blocked: %s", blocked);
            result = error_result(msg ? msg : blocked);
            free(msg);
            free(blocked);
        } else {
            result = agent_run_tool(a, block);
        }
        if (!result)
            return lc_errf(err, LC_NOMEM, "out of memory running a tool");
        agent_tool_result_event(a, block, result);
        cJSON *m = tool_result_message(block, result);
        cJSON_Delete(result);
        int rc = append_message(a, m, NULL, err);
        if (rc) {
            cJSON_Delete(m);
            return rc;
        }
        cJSON_AddItemToArray(results, m);
    }
    return LC_OK;
}

/* ------------------------------------------------------------------ compaction */

static char *extractive_summary(sess_entry *const *entries, size_t from, size_t to,
                                const char *previous)
{
    sbuf b = {0};
    size_t n_msgs = 0;
    for (size_t i = from; i < to; i++)
        n_msgs += entries[i]->msg != NULL;
    sb_printf(&b, "Summary of %zu earlier messages (extractive: the first line of each).\n",
              n_msgs);
    if (previous && *previous) {
        size_t plen = strlen(previous);
        sb_puts(&b, "Earlier summary: ");
        sb_append(&b, previous, plen > 1500 ? 1500 : plen);
        sb_puts(&b, plen > 1500 ? " [...]\n" : "\n");
    }
    size_t done = 0;
    for (size_t i = from; i < to && b.len < SUMMARY_MAX_CHARS; i++) {
        sess_entry *e = entries[i];
        if (!e->msg)
            continue;
        cJSON *m = cJSON_Parse(e->msg);
        char *text = m ? msg_derive_text(m, NULL) : NULL;
        const char *t = text ? text : "";
        while (*t == ' ' || *t == '\n' || *t == '\t')
            t++;
        size_t len = strcspn(t, "\n");
        if (len > 160)
            len = 160;
        sb_printf(&b, "- %s: ", msg_role_name((msg_role)e->role));
        sb_append(&b, t, len);
        sb_putc(&b, '\n');
        done++;
        free(text);
        cJSON_Delete(m);
    }
    if (done < n_msgs)
        sb_printf(&b, "- ... %zu more messages not listed (summary bounded to %d characters)\n",
                  n_msgs - done, SUMMARY_MAX_CHARS);
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    return sb_detach(&b);
}

int agent_compact(agent *a, const char *reason, const char *instructions, int *did, char **err)
{
    host *h = a->h;
    session *s = h->sess;
    int rc = LC_OK;
    cJSON *ev = NULL, *res = NULL, *entry = NULL, *prev_root = NULL;
    char *summary = NULL;
    *did = 0;
    long reserve = h->window >= 65536 ? 16384 : h->window / 4;
    long threshold = h->window - reserve;
    size_t tokens = session_context_tokens(s, !h->replay);
    if (h->replay && h->sent_valid && tokens >= h->sent_raw_tokens)
        tokens = h->sent_tokens + (tokens - h->sent_raw_tokens);
    if (strcmp(reason, "threshold") == 0 && (long)tokens <= threshold)
        return LC_OK;
    size_t keep = KEEP_RECENT_TOKENS;
    if ((long)keep > threshold / 2)
        keep = (size_t)(threshold / 2);
    size_t nb;
    sess_entry *const *br = session_branch(s, &nb);
    size_t start = 0;
    const char *previous = NULL;
    for (size_t i = nb; i-- > 0;)
        if (strcmp(br[i]->type, "compaction") == 0) {
            start = i + 1;
            prev_root = cJSON_Parse(br[i]->line);
            const cJSON *ps = cJSON_GetObjectItemCaseSensitive(prev_root, "summary");
            previous = cJSON_IsString(ps) ? ps->valuestring : NULL;
            break;
        }
    /* Walk back until `keep` tokens are kept, then cut at a user-message boundary. */
    size_t acc = 0, cut = 0;
    int found = 0;
    for (size_t i = nb; i-- > start;) {
        if (!br[i]->msg)
            continue;
        acc += br[i]->tokens;
        if (acc < keep)
            continue;
        for (size_t j = i; j < nb && !found; j++)
            if (br[j]->msg && br[j]->role == MSG_ROLE_USER)
                cut = j, found = 1;
        for (size_t j = i; j-- > start && !found;)
            if (br[j]->msg && br[j]->role == MSG_ROLE_USER)
                cut = j, found = 1;
        break;
    }
    size_t n_summarized = 0;
    for (size_t i = start; found && i < cut; i++)
        n_summarized += br[i]->msg != NULL;
    if (!found || cut <= start || n_summarized == 0) {
        host_log(h, AP_LEVEL_INFO, "compaction (%s): nothing to summarize before the last %zu tokens",
                 reason, keep);
        /* The request the provider refused was built by the plugins' context hooks, not only
         * from the transcript (a live-context revision can be far larger): they are told of
         * the overflow even when the host has nothing to cut, so the retry can fit. The
         * event has no firstKeptEntryId and an empty messagesToSummarize; its answer is
         * ignored, since there is nothing to replace. */
        if (strcmp(reason, "overflow") == 0) {
            ev = cJSON_CreateObject();
            cJSON *prep = cJSON_AddObjectToObject(ev, "preparation");
            cJSON_AddNumberToObject(prep, "tokensBefore", (double)tokens);
            cJSON_AddArrayToObject(prep, "messagesToSummarize");
            cJSON_AddBoolToObject(prep, "isSplitTurn", 0);
            cJSON_AddStringToObject(ev, "reason", reason);
            if (a->overflow_error)
                cJSON_AddStringToObject(ev, "error", a->overflow_error);
            rc = agent_fire(a, "session_before_compact", ev, &res);
        }
        goto done;
    }
    ev = cJSON_CreateObject();
    cJSON *prep = cJSON_AddObjectToObject(ev, "preparation");
    cJSON_AddStringToObject(prep, "firstKeptEntryId", br[cut]->id);
    cJSON_AddNumberToObject(prep, "tokensBefore", (double)tokens);
    cJSON *msgs = cJSON_AddArrayToObject(prep, "messagesToSummarize");
    for (size_t i = start; i < cut; i++)
        if (br[i]->msg)
            cJSON_AddItemToArray(msgs, cJSON_CreateRaw(br[i]->msg));
    if (previous)
        cJSON_AddStringToObject(prep, "previousSummary", previous);
    cJSON_AddBoolToObject(prep, "isSplitTurn", 0);
    cJSON_AddStringToObject(ev, "reason", reason);
    if (strcmp(reason, "overflow") == 0 && a->overflow_error)
        cJSON_AddStringToObject(ev, "error", a->overflow_error);
    if (instructions && *instructions)
        cJSON_AddStringToObject(ev, "customInstructions", instructions);
    if ((rc = agent_fire(a, "session_before_compact", ev, &res)))
        goto done;
    if (res && is_true(res, "cancel")) {
        host_log(h, AP_LEVEL_INFO, "compaction (%s) cancelled by a plugin", reason);
        goto done;
    }
    entry = cJSON_CreateObject();
    cJSON_AddStringToObject(entry, "type", "compaction");
    const cJSON *pc = res ? cJSON_GetObjectItemCaseSensitive(res, "compaction") : NULL;
    const cJSON *psum = cJSON_GetObjectItemCaseSensitive(pc, "summary");
    const cJSON *pkept = cJSON_GetObjectItemCaseSensitive(pc, "firstKeptEntryId");
    int from_ext = cJSON_IsString(psum) && cJSON_IsString(pkept) &&
                   session_find(s, pkept->valuestring) != NULL;
    if (pc && !from_ext)
        host_notify(h, AP_LEVEL_WARNING, "a plugin supplied a compaction without a summary or "
                    "with an unknown firstKeptEntryId; the host compacts itself");
    if (from_ext) {
        const cJSON *tb = cJSON_GetObjectItemCaseSensitive(pc, "tokensBefore");
        const cJSON *details = cJSON_GetObjectItemCaseSensitive(pc, "details");
        cJSON_AddStringToObject(entry, "summary", psum->valuestring);
        cJSON_AddStringToObject(entry, "firstKeptEntryId", pkept->valuestring);
        cJSON_AddNumberToObject(entry, "tokensBefore",
                                cJSON_IsNumber(tb) ? tb->valuedouble : (double)tokens);
        if (details)
            cJSON_AddItemToObject(entry, "details", cJSON_Duplicate(details, 1));
    } else {
        summary = extractive_summary(br, start, cut, previous);
        if (!summary) {
            rc = lc_errf(err, LC_NOMEM, "out of memory summarizing");
            goto done;
        }
        cJSON_AddStringToObject(entry, "summary", summary);
        cJSON_AddStringToObject(entry, "firstKeptEntryId", br[cut]->id);
        cJSON_AddNumberToObject(entry, "tokensBefore", (double)tokens);
    }
    cJSON_AddBoolToObject(entry, "fromHook", from_ext);
    sess_entry *ce = NULL;
    if ((rc = session_append(s, entry, 1, &ce, err)))
        goto done;
    *did = 1;
    h->sent_valid = 0; /* the raw context was rebuilt; the next request measures anew */
    a->compactions++;
    cJSON_Delete(ev);
    ev = cJSON_CreateObject();
    cJSON_AddItemToObject(ev, "compactionEntry", cJSON_CreateRaw(ce->line));
    cJSON_AddBoolToObject(ev, "fromExtension", from_ext);
    rc = agent_fire(a, "session_compact", ev, NULL);
    host_log(h, AP_LEVEL_INFO, "compaction (%s): %zu tokens before, kept from %s", reason, tokens,
             ce->id);
done:
    free(summary);
    cJSON_Delete(ev);
    cJSON_Delete(res);
    cJSON_Delete(entry);
    cJSON_Delete(prev_root);
    return rc;
}

/* ------------------------------------------------------------------ tree, commands */

int agent_move_leaf(agent *a, const char *id, char **err)
{
    sess_entry *leaf = session_leaf(a->h->sess);
    char *old = leaf ? lc_strdup(leaf->id) : NULL;
    int rc = session_move_leaf(a->h->sess, id, err);
    if (rc == LC_OK) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddItemToObject(ev, "newLeafId", id ? cJSON_CreateString(id) : cJSON_CreateNull());
        cJSON_AddItemToObject(ev, "oldLeafId", old ? cJSON_CreateString(old) : cJSON_CreateNull());
        a->tree_moves++;
        rc = agent_fire(a, "session_tree", ev, NULL);
        cJSON_Delete(ev);
    }
    free(old);
    return rc;
}

static char *help_text(host *h)
{
    sbuf b = {0};
    sb_puts(&b, "/compact [instructions]  summarize older history now\n"
                "/tree ID                 move the session leaf to entry ID\n"
                "/help                    this list\n"
                "/quit                    leave (interactive mode)\n");
    for (size_t i = 0; i < h->n_cmds; i++)
        sb_printf(&b, "/%-23s %s\n", h->cmds[i].name, h->cmds[i].description);
    return sb_detach(&b);
}

int agent_command(agent *a, const char *line, char **out_text, char **err)
{
    host *h = a->h;
    *out_text = NULL;
    while (*line == ' ')
        line++;
    if (*line != '/')
        return lc_errf(err, LC_INVALID, "a command starts with '/': %s", line);
    line++;
    size_t nlen = strcspn(line, " \t");
    char *name = lc_strndup(line, nlen);
    const char *args = line + nlen;
    while (*args == ' ' || *args == '\t')
        args++;
    int rc = LC_OK;
    if (!name)
        return lc_errf(err, LC_NOMEM, "out of memory");
    if (strcmp(name, "help") == 0) {
        *out_text = help_text(h);
    } else if (strcmp(name, "compact") == 0) {
        int did = 0;
        rc = agent_compact(a, "manual", args, &did, err);
        if (!rc) {
            sess_entry *c = session_latest_compaction(h->sess);
            *out_text = did && c ? lc_asprintf("compacted: context now %zu tokens (estimated); "
                                               "compaction entry %s",
                                               session_context_tokens(h->sess, 0), c->id)
                                 : lc_strdup("nothing to compact (or a plugin cancelled it)");
        }
    } else if (strcmp(name, "tree") == 0) {
        if (!*args)
            rc = lc_errf(err, LC_INVALID, "usage: /tree ENTRY_ID");
        else if (!(rc = agent_move_leaf(a, args, err)))
            *out_text = lc_asprintf("leaf moved to %s", args);
    } else {
        host_command *c = hostapi_find_command(h, name);
        if (!c) {
            rc = lc_errf(err, LC_NOTFOUND, "unknown command /%s (try /help)", name);
        } else {
            char *text = NULL, *perr = NULL;
            host_plugin *owner = c->owner;
            h->current = owner;
            int st = c->handler(c->userdata, args, &text, &perr);
            h->current = NULL;
            if (st != AP_OK)
                rc = lc_errf(err, LC_ERR, "/%s failed (status %d): %s", name, st,
                             perr ? perr : "no reason given");
            else if (text)
                *out_text = lc_strdup(text);
            if (owner && text)
                owner->desc.release(owner->desc.state, text);
            if (owner && perr)
                owner->desc.release(owner->desc.state, perr);
        }
    }
    free(name);
    return rc;
}

static char *result_text(const cJSON *result)
{
    sbuf b = {0};
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content"), *blk;
    if (cJSON_IsString(content))
        sb_puts(&b, content->valuestring);
    const cJSON *list = cJSON_IsArray(content) ? content : NULL;
    cJSON_ArrayForEach(blk, list) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(blk, "text");
        if (cJSON_IsString(t)) {
            if (b.len)
                sb_putc(&b, '\n');
            sb_puts(&b, t->valuestring);
        }
    }
    if (!b.p)
        sb_puts(&b, "");
    return sb_detach(&b);
}

int agent_call_tool(agent *a, const char *name, const char *args_json, char **out_text,
                    char **err)
{
    int rc = LC_OK;
    *out_text = NULL;
    cJSON *args = cJSON_Parse(args_json ? args_json : "{}");
    cJSON *msg = NULL, *results = cJSON_CreateArray();
    if (!cJSON_IsObject(args)) {
        rc = lc_errf(err, LC_INVALID, "tool arguments are not a JSON object: %s", args_json);
        goto done;
    }
    if (!tools_is_builtin(name) && !hostapi_find_tool(a->h, name)) {
        rc = lc_errf(err, LC_NOTFOUND, "no tool named %s (built-in or registered by a plugin)", name);
        goto done;
    }
    /* Calls of one process (a --tool-batch) can fall in one millisecond; each id is its own. */
    static long long last_id_ms;
    long long id_ms = lc_epoch_ms();
    if (id_ms <= last_id_ms)
        id_ms = last_id_ms + 1;
    last_id_ms = id_ms;
    char id[48];
    snprintf(id, sizeof id, "call_host_%lld", id_ms);
    msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "role", "assistant");
    cJSON *content = cJSON_AddArrayToObject(msg, "content");
    cJSON *call = cJSON_CreateObject();
    cJSON_AddStringToObject(call, "type", "toolCall");
    cJSON_AddStringToObject(call, "id", id);
    cJSON_AddStringToObject(call, "name", name);
    cJSON_AddItemToObject(call, "arguments", args);
    args = NULL;
    cJSON_AddItemToArray(content, call);
    cJSON_AddStringToObject(msg, "api", "none");
    cJSON_AddStringToObject(msg, "provider", "agent-host");
    cJSON_AddStringToObject(msg, "model", "command-line");
    cJSON_AddItemToObject(msg, "usage", llm_usage_json(0, 0, 0, 0));
    cJSON_AddStringToObject(msg, "stopReason", "toolUse");
    cJSON_AddNumberToObject(msg, "timestamp", (double)lc_epoch_ms());
    if ((rc = append_message(a, msg, NULL, err)))
        goto done;
    int n_calls = 0;
    if ((rc = run_tool_calls(a, msg, results, &n_calls, err)))
        goto done;
    agent_turn_end(a, msg, results);
    cJSON *last = cJSON_GetArrayItem(results, 0);
    *out_text = result_text(last);
    if (is_true(last, "isError"))
        rc = lc_errf(err, LC_ERR, "tool %s reported an error: %s", name, *out_text ? *out_text : "");
done:
    cJSON_Delete(args);
    cJSON_Delete(msg);
    cJSON_Delete(results);
    return rc;
}

/* ------------------------------------------------------------------ live prompt */

static cJSON *tool_definitions(host *h)
{
    cJSON *defs = tools_builtin_definitions();
    if (!defs)
        defs = cJSON_CreateArray();
    for (size_t i = 0; i < h->n_tools; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "name", h->tools[i].name);
        cJSON_AddStringToObject(d, "description", h->tools[i].description);
        cJSON *params = cJSON_Parse(h->tools[i].parameters_json);
        cJSON_AddItemToObject(d, "parameters", params ? params : cJSON_CreateObject());
        cJSON_AddItemToArray(defs, d);
    }
    return defs;
}

static int is_overflow_error(const char *e)
{
    return e && (strstr(e, "context length") || strstr(e, "context_length") ||
                 strstr(e, "too many tokens") || strstr(e, "maximum context"));
}

/* One model request: context -> payload -> before_provider_request -> model. */
static int model_request(agent *a, const char *system_prompt, const cJSON *tools,
                         char **out_msg, char **err)
{
    host *h = a->h;
    agent_context c;
    cJSON *payload = NULL, *ev = NULL, *res = NULL;
    char *text = NULL;
    const char **ptrs = NULL;
    int rc = agent_context_build(a, &c, err);
    if (rc)
        return rc;
    ptrs = malloc((c.n ? c.n : 1) * sizeof *ptrs);
    if (!ptrs) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < c.n; i++)
        ptrs[i] = c.msgs[i].json;
    llm_config cfg = {.base_url = h->base_url, .model = h->model, .api_key = h->api_key};
    payload = llm_build_payload(&cfg, system_prompt, ptrs, c.n, tools, h->max_tokens);
    if (!payload) {
        rc = lc_errf(err, LC_NOMEM, "cannot build the request payload");
        goto done;
    }
    ev = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(ev, "payload", payload);
    if ((rc = agent_fire(a, "before_provider_request", ev, &res)))
        goto done;
    const cJSON *replaced = res ? cJSON_GetObjectItemCaseSensitive(res, "payload") : NULL;
    text = cJSON_PrintUnformatted(replaced ? replaced : payload);
    if (!text) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    char *lerr = NULL;
    /* The interactive loop streams its answers (and can cancel them); elsewhere NULL. */
    if (llm_complete_stream(&cfg, text, llm_default_stream(), out_msg, &lerr)) {
        rc = lc_errf(err, LC_ERR, "model request failed: %s", lerr ? lerr : "unknown error");
        free(lerr);
    }
done:
    agent_context_release(a, &c);
    free(ptrs);
    free(text);
    cJSON_Delete(ev);
    cJSON_Delete(res);
    cJSON_Delete(payload);
    return rc;
}

int agent_prompt(agent *a, const char *prompt, char **final_text, char **err)
{
    host *h = a->h;
    int rc = LC_OK;
    cJSON *ev = NULL, *res = NULL, *tools = NULL, *user = NULL, *msg = NULL, *results = NULL;
    char *sp = NULL;
    *final_text = NULL;
    if (!h->base_url || !h->model)
        return lc_errf(err, LC_INVALID, "a prompt needs a model: pass --base-url URL --model ID");
    agent_before_agent_start(a, prompt);
    sp = lc_strdup(a->run_prompt ? a->run_prompt : a->system_prompt);
    user = msg_text_message("user", prompt, (double)lc_epoch_ms());
    if (!sp || (rc = append_message(a, user, NULL, err)))
        goto done;
    tools = tool_definitions(h);
    int did = 0, retried = 0;
    if ((rc = agent_compact(a, "threshold", NULL, &did, err)))
        goto done;
    /* No cap unless --max-turns gives one (as Pi); Ctrl-C stops the loop between turns
     * too, not only inside a model request's transfer. */
    long max_turns = h->max_turns > 0 ? h->max_turns : 0;
    const llm_stream *cs = llm_default_stream();
    for (long turn = 0; max_turns == 0 || turn < max_turns; turn++) {
        char *out = NULL;
        char *rerr = NULL;
        if (cs && cs->cancel && *cs->cancel) {
            rc = lc_errf(err, LC_ERR, "interrupted");
            goto done;
        }
        rc = model_request(a, sp, tools, &out, &rerr);
        if (rc && !retried && is_overflow_error(rerr)) {
            /* The provider says the context is too long: compact once and retry. */
            retried = 1;
            a->overflow_error = rerr; /* the provider's words reach session_before_compact */
            rc = agent_compact(a, "overflow", NULL, &did, err);
            a->overflow_error = NULL;
            free(rerr);
            rerr = NULL;
            if (rc)
                goto done;
            turn--;
            continue;
        }
        if (rc) {
            if (err) {
                free(*err);
                *err = rerr;
            } else {
                free(rerr);
            }
            goto done;
        }
        cJSON_Delete(msg);
        msg = cJSON_Parse(out);
        free(out);
        if (!cJSON_IsObject(msg)) {
            rc = lc_errf(err, LC_ERR, "the model client returned a malformed message");
            goto done;
        }
        if ((rc = append_message(a, msg, NULL, err)))
            goto done;
        cJSON_Delete(results);
        results = cJSON_CreateArray();
        int n_calls = 0;
        if ((rc = run_tool_calls(a, msg, results, &n_calls, err)))
            goto done;
        agent_turn_end(a, msg, results);
        if ((rc = agent_compact(a, "threshold", NULL, &did, err)))
            goto done;
        const cJSON *stop = cJSON_GetObjectItemCaseSensitive(msg, "stopReason");
        if (cJSON_IsString(stop) && strcmp(stop->valuestring, "error") == 0) {
            char *t = result_text(msg);
            rc = lc_errf(err, LC_ERR, "the model answered with an error: %s", t ? t : "");
            free(t);
            goto done;
        }
        if (n_calls == 0) {
            *final_text = result_text(msg);
            goto done;
        }
    }
    rc = lc_errf(err, LC_ERR, "stopped after %ld model turns without a final answer", max_turns);
done:
    /* The loop of this prompt is over, whatever ended it: plugins may act on idle now. */
    const llm_stream *ls = llm_default_stream();
    int cancelled = ls && ls->cancel && *ls->cancel;
    agent_agent_end(a, rc == LC_OK ? "done" : cancelled ? "interrupted" : "error");
    free(sp);
    cJSON_Delete(ev);
    cJSON_Delete(res);
    cJSON_Delete(tools);
    cJSON_Delete(user);
    cJSON_Delete(msg);
    cJSON_Delete(results);
    return rc;
}
