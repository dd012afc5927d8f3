/*
 * import_codex.c -- Codex rollouts into the import's entry table (import_codex.h).
 */
#include "import_codex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static char *codex_text(const cJSON *content)
{
    sbuf b = {0};
    const cJSON *c;
    if (cJSON_IsString(content)) return lc_strdup(content->valuestring);
    cJSON_ArrayForEach(c, content)
    {
        const char *t = imp_jstr(c, "text");
        if (!t) continue;
        if (b.len) sb_puts(&b, "\n");
        sb_puts(&b, t);
    }
    return sb_detach(&b);
}

/* Whether `items` is a non-empty array of content items that each hold a text. */
static int codex_all_text(const cJSON *items)
{
    const cJSON *c;
    if (!cJSON_IsArray(items) || !cJSON_GetArraySize(items)) return 0;
    cJSON_ArrayForEach(c, items)
    {
        if (!imp_jstr(c, "text")) return 0;
    }
    return 1;
}

/* A Codex entry's id: its line ("codex-line-12"), and its place when a line holds more. */
static void codex_id(const imp *m, char *id, size_t size, size_t lineno)
{
    if (m->part) snprintf(id, size, "codex-line-%zu.%d", lineno, m->part + 1);
    else snprintf(id, size, "codex-line-%zu", lineno);
}

/* The text of a reasoning item a person can read: its summary, then its reasoning text
 * (newer rollouts carry it in "content"); NULL when it holds only encrypted content. */
static char *codex_reasoning(const cJSON *p)
{
    sbuf b = {0};
    const char *const members[] = {"summary", "content"};
    for (size_t k = 0; k < 2; k++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(p, members[k]), *c;
        cJSON_ArrayForEach(c, arr)
        {
            const char *t = cJSON_IsString(c) ? c->valuestring : imp_jstr(c, "text");
            if (!t || !*t) continue;
            if (b.len) sb_puts(&b, "\n\n");
            sb_puts(&b, t);
        }
    }
    return b.len ? sb_detach(&b) : (sb_free(&b), NULL);
}

/* The assistant's call of NAME with ARGS (taken), remembered by its id for its result. */
static cJSON *codex_call(imp *m, const char *cid, const char *name, cJSON *args)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "content"), *blk = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "role", "assistant");
    cJSON_AddStringToObject(blk, "type", "toolCall");
    cJSON_AddStringToObject(blk, "id", cid ? cid : "");
    cJSON_AddStringToObject(blk, "name", name);
    cJSON_AddItemToObject(blk, "arguments", args);
    cJSON_AddItemToArray(arr, blk);
    cJSON_AddStringToObject(o, "stopReason", "toolUse");
    if (cid) imp_tool_put(m, cid, name);
    return o;
}

/* The result of call CID (of tool NAME): its TEXT as one text block. */
static cJSON *codex_result(const char *cid, const char *name, const char *text)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "role", "toolResult");
    cJSON_AddStringToObject(o, "toolCallId", cid ? cid : "");
    cJSON_AddStringToObject(o, "toolName", name ? name : "");
    cJSON *arr = cJSON_AddArrayToObject(o, "content"), *blk = cJSON_CreateObject();
    cJSON_AddStringToObject(blk, "type", "text");
    cJSON_AddStringToObject(blk, "text", text ? text : "");
    cJSON_AddItemToArray(arr, blk);
    cJSON_AddBoolToObject(o, "isError", 0);
    return o;
}

static int codex_item(imp *m, const cJSON *p, long long ts, size_t lineno, char **err)
{
    const char *t = imp_jstr(p, "type");
    char id[48], previd[48];
    cJSON *o = NULL;
    codex_id(m, id, sizeof id, lineno);
    if (m->prev_linear >= 0) snprintf(previd, sizeof previd, "%s", m->v[m->prev_linear].id);
    const char *parent = m->prev_linear >= 0 ? previd : NULL;
    if (!t) {
        imp_count(m, IMPORT_SKIPPED, "item without type");
        return LC_OK;
    }
    if (!strcmp(t, "message")) {
        const char *role = imp_jstr(p, "role");
        if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0)) {
            /* developer / system messages: the CLI's own instructions, not the conversation */
            char what[64];
            snprintf(what, sizeof what, "%s message", role ? role : "roleless");
            imp_count(m, IMPORT_SKIPPED, what);
            return LC_OK;
        }
        char *text = codex_text(cJSON_GetObjectItemCaseSensitive(p, "content"));
        o = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(o, "content"), *blk = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", role);
        cJSON_AddStringToObject(blk, "type", "text");
        cJSON_AddStringToObject(blk, "text", text ? text : "");
        cJSON_AddItemToArray(arr, blk);
        free(text);
    } else if (!strcmp(t, "function_call") || !strcmp(t, "custom_tool_call") || !strcmp(t, "local_shell_call")) {
        const char *name = imp_jstr(p, "name") ? imp_jstr(p, "name") : !strcmp(t, "local_shell_call") ? "local_shell" : "";
        const char *cid = imp_jstr(p, "call_id") ? imp_jstr(p, "call_id") : imp_jstr(p, "id");
        const char *args = imp_jstr(p, "arguments") ? imp_jstr(p, "arguments") : imp_jstr(p, "input");
        cJSON *parsed = args ? cJSON_Parse(args) : NULL;
        if (!parsed && !args) parsed = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p, "action"), 1);
        if (!cJSON_IsObject(parsed)) {
            cJSON_Delete(parsed);
            parsed = cJSON_CreateObject();
            if (args) cJSON_AddStringToObject(parsed, "input", args);
        }
        o = codex_call(m, cid, name, parsed);
    } else if (!strcmp(t, "function_call_output") || !strcmp(t, "custom_tool_call_output")) {
        const char *cid = imp_jstr(p, "call_id");
        const char *name = imp_tool_name(m, cid);
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(p, "output");
        char *text = NULL;
        if (cJSON_IsString(out)) {
            /* Older rollouts wrap the output as {"output": "...", "metadata": {...}}. */
            cJSON *inner = cJSON_Parse(out->valuestring);
            text = lc_strdup(inner && imp_jstr(inner, "output") ? imp_jstr(inner, "output") : out->valuestring);
            cJSON_Delete(inner);
        } else if (cJSON_IsObject(out) && imp_jstr(out, "content")) {
            text = lc_strdup(imp_jstr(out, "content"));
        } else if (codex_all_text(out)) {
            /* an MCP tool's result (0.171 on): its content items, text only, as the model read it */
            text = codex_text(out);
        } else if (out) {
            text = cJSON_PrintUnformatted(out);
        }
        o = codex_result(cid, name, text);
        free(text);
    } else if (!strcmp(t, "reasoning")) {
        /* Its summary is what a person reads of the model's reasoning: a thinking block. */
        char *text = codex_reasoning(p);
        if (!text) {
            imp_count(m, IMPORT_SKIPPED, "reasoning item (encrypted only)");
            return LC_OK;
        }
        o = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(o, "content"), *blk = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", "assistant");
        cJSON_AddStringToObject(blk, "type", "thinking");
        cJSON_AddStringToObject(blk, "thinking", text);
        cJSON_AddItemToArray(arr, blk);
        free(text);
        m->cur.kind = "reasoning";
    } else if (!strcmp(t, "tool_search_call") || !strcmp(t, "web_search_call")) {
        /* The CLI's own tools: a call like any other, its arguments (or action) kept. */
        const char *cid = imp_jstr(p, "call_id") ? imp_jstr(p, "call_id") : imp_jstr(p, "id");
        const char *name = !strcmp(t, "tool_search_call") ? "tool_search" : "web_search";
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(p, "arguments");
        if (!args) args = cJSON_GetObjectItemCaseSensitive(p, "action");
        cJSON *a = cJSON_IsObject(args) ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
        if (cJSON_IsString(args)) {
            cJSON *parsed = cJSON_Parse(args->valuestring);
            if (cJSON_IsObject(parsed)) {
                cJSON_Delete(a);
                a = parsed;
            } else {
                cJSON_Delete(parsed);
                cJSON_AddStringToObject(a, "input", args->valuestring);
            }
        }
        o = codex_call(m, cid, name, a);
        m->cur.kind = t;
    } else if (!strcmp(t, "tool_search_output")) {
        /* The tools the search found, as the model got them: a tool result. */
        const char *cid = imp_jstr(p, "call_id");
        const cJSON *tools = cJSON_GetObjectItemCaseSensitive(p, "tools");
        char *text = tools ? cJSON_PrintUnformatted(tools) : NULL;
        o = codex_result(cid, "tool_search", text);
        free(text);
        m->cur.kind = t;
    } else {
        /* An item this reader does not know: kept verbatim as an assistant block of its own
         * type (its words searchable like any unknown block's), and counted. */
        char what[64];
        snprintf(what, sizeof what, "item %s", t);
        imp_count(m, IMPORT_UNDERSTOOD_NOT, what);
        o = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(o, "content");
        cJSON_AddStringToObject(o, "role", "assistant");
        cJSON_AddItemToArray(arr, cJSON_Duplicate(p, 1));
        m->cur.kind = what;
        cJSON_AddNumberToObject(o, "timestamp", (double)ts);
        int rc = imp_add_built(m, id, parent, o, err);
        m->cur.kind = NULL;
        return rc;
    }
    if (m->cur.answers < 0 && imp_jstr(o, "toolCallId")) m->cur.answers = imp_tool_entry(m, imp_jstr(o, "toolCallId"));
    cJSON_AddNumberToObject(o, "timestamp", (double)ts);
    return imp_add_built(m, id, parent, o, err);
}

int codex_line(imp *m, const cJSON *root, size_t lineno, char **err)
{
    const char *type = imp_jstr(root, "type");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "payload");
    long long ts = imp_iso_ms(imp_jstr(root, "timestamp"));
    if (type && !strcmp(type, "session_meta") && cJSON_IsObject(p)) {
        const char *id = imp_jstr(p, "id"), *cwd = imp_jstr(p, "cwd"), *parent = imp_jstr(p, "parent_thread_id");
        /* A sub-agent's thread (Codex writes each its own rollout): its own session, linked
         * to the thread that spawned it. */
        if (parent && id && !m->parent_session && (m->parent_session = lc_asprintf("codex-%s", parent))) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "id", id);
            if (imp_jstr(p, "agent_role")) cJSON_AddStringToObject(o, "type", imp_jstr(p, "agent_role"));
            if (imp_jstr(p, "agent_nickname")) cJSON_AddStringToObject(o, "name", imp_jstr(p, "agent_nickname"));
            m->self_agent = cJSON_PrintUnformatted(o);
            cJSON_Delete(o);
        }
        if (id && !m->session_id[0]) snprintf(m->session_id, sizeof m->session_id, "codex-%s", id);
        if (cwd && !m->cwd) m->cwd = lc_strdup(cwd);
        if (!m->header_ts) m->header_ts = imp_jstr(p, "timestamp") ? imp_iso_ms(imp_jstr(p, "timestamp")) : ts;
        return LC_OK;
    }
    if (!type && imp_jstr(root, "id") && !m->header_ts && !cJSON_GetObjectItemCaseSensitive(root, "record_type"))
        m->header_ts = ts; /* the first rollout format's bare header */
    imp_saw_ts(m, ts);
    if (type && !strcmp(type, "response_item") && cJSON_IsObject(p)) return codex_item(m, p, ts, lineno, err);
    if (type && !strcmp(type, "compacted") && cJSON_IsObject(p) && imp_jstr(p, "message")) {
        char id[48], previd[48];
        codex_id(m, id, sizeof id, lineno);
        if (m->prev_linear >= 0) snprintf(previd, sizeof previd, "%s", m->v[m->prev_linear].id);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", "compactionSummary");
        cJSON_AddStringToObject(o, "summary", imp_jstr(p, "message"));
        cJSON_AddNumberToObject(o, "timestamp", (double)ts);
        return imp_add_built(m, id, m->prev_linear >= 0 ? previd : NULL, o, err);
    }
    if (type && (!strcmp(type, "event_msg") || !strcmp(type, "turn_context") || !strcmp(type, "world_state") ||
                 !strcmp(type, "token_usage_record"))) {
        /* the CLI's events (they repeat the items' text), its per-turn settings and (0.171 on)
         * its state snapshots and token counts: read as messages they would be the session's
         * "last conclusion" in the next bundle and hits of every grep for an id or a date */
        imp_count(m, IMPORT_SKIPPED, type);
        return LC_OK;
    }
    /* The first rollout format: a bare header, then bare items. */
    if (!type && imp_jstr(root, "id") && !cJSON_GetObjectItemCaseSensitive(root, "record_type")) {
        if (!m->session_id[0]) snprintf(m->session_id, sizeof m->session_id, "codex-%s", imp_jstr(root, "id"));
        return LC_OK;
    }
    if (type && !cJSON_GetObjectItemCaseSensitive(root, "record_type")) return codex_item(m, root, ts, lineno, err);
    return LC_OK;
}
