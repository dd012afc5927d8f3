/*
 * import_claude.c -- Claude Code transcripts and their sub-agents into the import's entry
 * table (import_claude.h).
 */
#include "import_claude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- sub-agents ------------------------------------------------------------------------- */

static int imp_agent_new(imp *m)
{
    if (m->nagents == m->agents_cap) {
        size_t cap = m->agents_cap ? m->agents_cap * 2 : 8;
        imp_agent *v = realloc(m->agents, cap * sizeof *v);
        if (!v) return -1;
        m->agents = v;
        m->agents_cap = cap;
    }
    memset(&m->agents[m->nagents], 0, sizeof m->agents[0]);
    return (int)m->nagents++;
}

static void imp_agent_fill(char **field, const char *value)
{
    if (value && *value && !*field) *field = lc_strdup(value);
}

/* The sub-agent named by id or started by call (either may be NULL), made when new; what
 * is given fills what it lacked. -1 on OOM or when neither is given. */
static int imp_agent_note(imp *m, const char *id, const char *type, const char *call, const char *prompt)
{
    int a = -1;
    if (!id && !call) return -1;
    for (size_t i = m->nagents; i-- > 0 && a < 0;) {
        const imp_agent *g = &m->agents[i];
        if ((id && g->id && !strcmp(g->id, id)) || (call && g->call && !strcmp(g->call, call))) a = (int)i;
    }
    if (a < 0 && (a = imp_agent_new(m)) < 0) return -1;
    imp_agent *g = &m->agents[a];
    imp_agent_fill(&g->id, id);
    imp_agent_fill(&g->type, type);
    imp_agent_fill(&g->call, call);
    imp_agent_fill(&g->prompt, prompt);
    return a;
}

/* The agent a sub-agent's first line belongs to when the line names none (Claude Code
 * 1.0.x wrote sub-agents inline): the Task call whose prompt it is. */
static int imp_agent_by_prompt(imp *m, const char *text)
{
    for (size_t i = m->nagents; text && i-- > 0;)
        if (m->agents[i].prompt && !m->agents[i].id && !strcmp(m->agents[i].prompt, text)) {
            imp_agent_fill(&m->agents[i].id, m->agents[i].call);
            return (int)i;
        }
    return -1;
}

/* "aside_question-ac9e..." names its kind before the last '-'; a bare hex id names none. */
static char *imp_agent_type_of(const char *id)
{
    const char *dash = id ? strrchr(id, '-') : NULL;
    return dash && dash > id ? lc_strndup(id, (size_t)(dash - id)) : NULL;
}

/* ---- Claude Code transcripts ------------------------------------------------------------ */

static const char *claude_stop(const char *s)
{
    if (!s) return NULL;
    if (!strcmp(s, "end_turn") || !strcmp(s, "stop_sequence")) return "stop";
    if (!strcmp(s, "tool_use")) return "toolUse";
    if (!strcmp(s, "max_tokens")) return "length";
    return s;
}

/* text / image / thinking / tool_use blocks in AgentMessage shapes; any other block (a
 * tool_reference, a server tool's call or result, a type newer than this reader) verbatim,
 * counted as not understood, so nothing a transcript holds is dropped. */
static cJSON *claude_block(imp *m, cJSON *b)
{
    const char *t = imp_jstr(b, "type");
    cJSON *o = NULL;
    if (!cJSON_IsObject(b)) return NULL;
    if (t && !strcmp(t, "text") && imp_jstr(b, "text")) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "text");
        cJSON_AddItemToObject(o, "text", cJSON_DetachItemFromObjectCaseSensitive(b, "text"));
    } else if (t && !strcmp(t, "thinking") && imp_jstr(b, "thinking")) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "thinking");
        cJSON_AddItemToObject(o, "thinking", cJSON_DetachItemFromObjectCaseSensitive(b, "thinking"));
    } else if (t && !strcmp(t, "tool_use")) {
        cJSON *in = cJSON_DetachItemFromObjectCaseSensitive(b, "input");
        const char *id = imp_jstr(b, "id"), *name = imp_jstr(b, "name");
        /* A sub-agent's start: its prompt names its inline lines (1.0.x), its id its file. */
        if (id && name && (!strcmp(name, "Task") || !strcmp(name, "Agent")))
            imp_agent_note(m->reader ? m->reader : m, NULL, imp_jstr(in, "subagent_type"), id, imp_jstr(in, "prompt"));
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "toolCall");
        cJSON_AddStringToObject(o, "id", id ? id : "");
        cJSON_AddStringToObject(o, "name", name ? name : "");
        cJSON_AddItemToObject(o, "arguments", in ? in : cJSON_CreateObject());
        if (id && name) imp_tool_put(m, id, name);
    } else if (t && !strcmp(t, "image")) {
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(b, "source");
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "image");
        cJSON_AddStringToObject(o, "data", imp_jstr(src, "data") ? imp_jstr(src, "data") : "");
        cJSON_AddStringToObject(o, "mimeType", imp_jstr(src, "media_type") ? imp_jstr(src, "media_type") : "image/png");
    } else {
        char kind[64];
        snprintf(kind, sizeof kind, "block %s", t ? t : "(no type)");
        imp_count(m, IMPORT_UNDERSTOOD_NOT, kind);
        o = cJSON_Duplicate(b, 1);
    }
    return o;
}

/* Content (a string or blocks) as an AgentMessage content array. */
static cJSON *claude_content(imp *m, cJSON *c)
{
    cJSON *arr = cJSON_CreateArray();
    if (cJSON_IsString(c)) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "text");
        cJSON_AddStringToObject(o, "text", c->valuestring);
        cJSON_AddItemToArray(arr, o);
    } else if (cJSON_IsArray(c)) {
        cJSON *b;
        cJSON_ArrayForEach(b, c)
        {
            cJSON *o = claude_block(m, b);
            if (o) cJSON_AddItemToArray(arr, o);
        }
    }
    return arr;
}

/* A compaction's boundary line starts a new chain in the file (parentUuid null) but names
 * the message it follows in logicalParentUuid: the conversation goes on, so what came
 * before the compaction stays on the branch instead of being marked removed. */
const char *claude_parent(const cJSON *root)
{
    const char *p = imp_jstr(root, "parentUuid");
    return p ? p : imp_jstr(root, "logicalParentUuid");
}

/* A sub-agent's message says whose it is. t: the import it goes to. */
static void claude_label(const imp *t, cJSON *o)
{
    const imp *m = t->reader ? t->reader : t;
    if (t->cur.agent < 0 || !o) return;
    const imp_agent *g = &m->agents[t->cur.agent];
    cJSON *l = cJSON_AddObjectToObject(o, "subagent");
    if (!l) return;
    cJSON_AddStringToObject(l, "id", g->id ? g->id : "");
    if (g->type) cJSON_AddStringToObject(l, "type", g->type);
}

/* The text a user line starts with (a sub-agent's prompt), borrowed; NULL when none. */
static const char *claude_first_text(const cJSON *msg)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content"), *b;
    if (cJSON_IsString(c)) return c->valuestring;
    cJSON_ArrayForEach(b, c)
    {
        const char *t = imp_jstr(b, "type");
        if (t && !strcmp(t, "text")) return imp_jstr(b, "text");
    }
    return NULL;
}

/* Which sub-agent a line is of (m->cur.side, m->cur.agent): its agentId, else its parent's
 * agent, else (a sub-agent's first line, 1.0.x) the Task call whose prompt it is. A main
 * line whose result tells which agent a call started (toolUseResult) records that. */
static void claude_agent(imp *m, const cJSON *root, const char *parent)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "toolUseResult");
    m->cur.side = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "isSidechain"));
    m->cur.agent = -1;
    if (!m->cur.side) {
        if (cJSON_IsObject(res) && imp_jstr(res, "agentId")) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "message"), "content");
            const cJSON *b = cJSON_IsArray(c) ? cJSON_GetArrayItem(c, 0) : NULL;
            imp_agent_note(m, imp_jstr(res, "agentId"), imp_jstr(res, "agentType"), imp_jstr(b, "tool_use_id"), NULL);
        }
        return;
    }
    const char *aid = imp_jstr(root, "agentId");
    if (aid) {
        char *type = imp_agent_type_of(aid);
        m->cur.agent = imp_agent_note(m, aid, type, NULL, NULL);
        free(type);
        return;
    }
    long p = parent ? ingest_idset_find(&m->side_ids, parent) : -1;
    if (p >= 0) {
        m->cur.agent = m->side_agent[p];
        return;
    }
    m->cur.agent = imp_agent_by_prompt(m, claude_first_text(cJSON_GetObjectItemCaseSensitive(root, "message")));
    if (m->cur.agent < 0) {
        /* a sub-agent nothing names: known by its first line */
        char *id = lc_asprintf("sidechain-%s", imp_jstr(root, "uuid") ? imp_jstr(root, "uuid") : "?");
        m->cur.agent = id ? imp_agent_note(m, id, NULL, NULL, NULL) : -1;
        free(id);
    }
}


/* The import into agent a's own store (made with its first line): a sub-agent's
 * conversation never was in its session's context, so it is a session of its own,
 * "<session>--agent-<id>", linked to its parent (imp_seal_sub). NULL on OOM. */
static imp *claude_sub(imp *m, int a)
{
    imp_agent *g = &m->agents[a];
    if (g->sub) return g->sub;
    imp *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (imp_init(t, m->home, m->stats, m->whole) != LC_OK) {
        free(t);
        return NULL;
    }
    t->reader = m;
    t->path = m->path;
    char *sid = lc_asprintf("%s--agent-%s", m->session_id, g->id ? g->id : "?");
    /* a store id is a file name: no '/', at most 200 bytes */
    for (char *c = sid; c && *c; c++)
        if (*c == '/' || *c == '\\' || (unsigned char)*c < 0x20) *c = '_';
    if (sid) snprintf(t->session_id, sizeof t->session_id, "%.200s", sid);
    free(sid);
    if (m->cwd) t->cwd = lc_strdup(m->cwd);
    g->sub = t;
    return t;
}

/* A sub-agent whose lines stopped (another's or the session's came): what it queued stored
 * and its store closed, so that a session of many sub-agents (1.0.x wrote each Task's lines
 * in turn) keeps one writer thread and one store of theirs open at a time, not one each;
 * imp_finish_subs opens it again to seal it. */
static int claude_park(imp *t, char **err)
{
    int rc;
    if (!t->st) return LC_OK; /* nothing written yet: its batch waits in memory */
    if ((rc = imp_flush(t, err)) != LC_OK || (rc = imp_finish(t, err)) != LC_OK) return rc;
    store_close(t->st);
    t->st = NULL;
    return LC_OK;
}

/* Remember which sub-agent entry `id` is of (the reader's map), so its children follow it. */
static int claude_side_put(imp *m, const char *id, int agent)
{
    if (ingest_idset_find(&m->side_ids, id) >= 0) return LC_OK;
    if (m->side_ids.n == m->side_cap) {
        size_t cap = m->side_cap ? m->side_cap * 2 : 64;
        int *v = realloc(m->side_agent, cap * sizeof *v);
        if (!v) return LC_NOMEM;
        m->side_agent = v;
        m->side_cap = cap;
    }
    if (ingest_idset_add(&m->side_ids, id) != LC_OK) return LC_NOMEM;
    m->side_agent[m->side_ids.n - 1] = agent;
    return LC_OK;
}

/* Whether an entry id is read already, in the session or in one of its sub-agents. */
static int claude_known(const imp *m, const char *id)
{
    return imp_find(m, id) >= 0 || ingest_idset_find(&m->side_ids, id) >= 0;
}

/* The entry an assistant line's response began with (same message.id), -1 for the first;
 * this line (the entry m->n) becomes the response's latest. */
static long claude_same_response(imp *m, const char *api_id)
{
    if (!api_id) return -1;
    long i = ingest_idset_find(&m->api_ids, api_id), was = i >= 0 ? m->api_last[i] : -1;
    if (i < 0) {
        if (m->api_ids.n == m->api_cap) {
            size_t cap = m->api_cap ? m->api_cap * 2 : 256;
            long *v = realloc(m->api_last, cap * sizeof *v);
            if (!v) return -1;
            m->api_last = v;
            m->api_cap = cap;
        }
        if (ingest_idset_add(&m->api_ids, api_id) != LC_OK) return -1;
        i = (long)m->api_ids.n - 1;
    }
    m->api_last[i] = (long)m->n;
    return was;
}

static int claude_msg(imp *m, cJSON *root, const char *uuid, const char *parent, char **err);

/* One line, read in tree order: whose it is (the session's, or a sub-agent's: then it goes
 * to that sub-agent's import), then its messages. */
static int claude_line(imp *m, cJSON *root, char **err)
{
    const char *type = imp_jstr(root, "type"), *uuid = imp_jstr(root, "uuid"), *parent = claude_parent(root);
    char what[64];
    if (!uuid) {
        snprintf(what, sizeof what, "%s line", type ? type : "untyped");
        imp_count(m, IMPORT_SKIPPED, what);
        return LC_OK;
    }
    claude_agent(m, root, parent);
    imp *t = !m->cur.side || m->cur.agent < 0 ? m : claude_sub(m, m->cur.agent);
    int rc;
    if (!t) return lc_errf(err, LC_NOMEM, "out of memory");
    if (m->open_sub && m->open_sub != t && (rc = claude_park(m->open_sub, err)) != LC_OK) return rc;
    m->open_sub = t != m ? t : NULL;
    if (t == m) return claude_msg(m, root, uuid, parent, err);
    if (claude_side_put(m, uuid, m->cur.agent) != LC_OK) return lc_errf(err, LC_NOMEM, "out of memory");
    t->cur = m->cur;
    rc = claude_msg(t, root, uuid, parent, err);
    m->cur.orphan = 0;
    return rc;
}

/* A line's messages into import m (the session's or a sub-agent's). */
static int claude_msg(imp *m, cJSON *root, const char *uuid, const char *parent, char **err)
{
    const char *type = imp_jstr(root, "type");
    int rc = LC_OK;
    char what[64];
    cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "message");
    long long ts = imp_iso_ms(imp_jstr(root, "timestamp"));
    imp_saw_ts(m, ts);
    if (!type || !cJSON_IsObject(msg) || (strcmp(type, "user") != 0 && strcmp(type, "assistant") != 0)) {
        snprintf(what, sizeof what, "%s line", type ? type : "untyped");
        imp_count(m, IMPORT_SKIPPED, what);
        return imp_add(m, uuid, parent, IMP_OTHER, NULL, NULL, NULL, err);
    }
    if (imp_find(m, uuid) >= 0) /* a repeated line: imp_add counts it, and it must not name calls */
        return imp_add(m, uuid, parent, IMP_OTHER, NULL, NULL, NULL, err);
    cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (strcmp(type, "assistant") == 0) {
        cJSON *o = cJSON_CreateObject(), *usage = cJSON_CreateObject();
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(msg, "usage");
        cJSON_AddStringToObject(o, "role", "assistant");
        cJSON_AddItemToObject(o, "content", claude_content(m, content));
        if (imp_jstr(msg, "model")) cJSON_AddStringToObject(o, "model", imp_jstr(msg, "model"));
        const char *stop = claude_stop(imp_jstr(msg, "stop_reason"));
        if (stop) cJSON_AddStringToObject(o, "stopReason", stop);
        if (cJSON_IsObject(u)) {
            static const char *const keys[][2] = {{"input_tokens", "input"}, {"output_tokens", "output"},
                                                  {"cache_read_input_tokens", "cacheRead"},
                                                  {"cache_creation_input_tokens", "cacheWrite"}};
            double total = 0;
            for (size_t i = 0; i < 4; i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(u, keys[i][0]);
                double x = cJSON_IsNumber(v) ? v->valuedouble : 0;
                total += x;
                cJSON_AddNumberToObject(usage, keys[i][1], x);
            }
            cJSON_AddNumberToObject(usage, "totalTokens", total);
            cJSON_AddItemToObject(o, "usage", usage);
        } else {
            cJSON_Delete(usage);
        }
        cJSON_AddNumberToObject(o, "timestamp", (double)ts);
        claude_label(m, o);
        m->cur.same_as = claude_same_response(m, imp_jstr(msg, "id"));
        rc = imp_add_built(m, uuid, parent, o, err);
        m->cur.same_as = -1;
        return rc;
    }
    /* A user line: tool results (each its own toolResult message) and/or the user's text.
     * The line's uuid names the last message so that children find their parent. */
    cJSON *parts = cJSON_CreateArray(), *user = NULL;
    if (cJSON_IsArray(content)) {
        cJSON *b;
        cJSON_ArrayForEach(b, content)
        {
            const char *bt = imp_jstr(b, "type");
            if (bt && strcmp(bt, "tool_result") == 0) {
                const char *cid = imp_jstr(b, "tool_use_id");
                const char *name = imp_tool_name(m, cid);
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "role", "toolResult");
                cJSON_AddStringToObject(o, "toolCallId", cid ? cid : "");
                cJSON_AddStringToObject(o, "toolName", name ? name : "");
                cJSON_AddItemToObject(o, "content", claude_content(m, cJSON_GetObjectItemCaseSensitive(b, "content")));
                cJSON_AddBoolToObject(o, "isError", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "is_error")));
                cJSON_AddNumberToObject(o, "timestamp", (double)ts);
                cJSON_AddItemToArray(parts, o);
            } else {
                cJSON *o = claude_block(m, b);
                if (o) {
                    if (!user) user = cJSON_CreateArray();
                    cJSON_AddItemToArray(user, o);
                }
            }
        }
    } else if (cJSON_IsString(content)) {
        user = claude_content(m, content);
    }
    if (user) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", "user");
        cJSON_AddItemToObject(o, "content", user);
        cJSON_AddNumberToObject(o, "timestamp", (double)ts);
        cJSON_AddItemToArray(parts, o);
    }
    int n = cJSON_GetArraySize(parts);
    if (n == 0) {
        cJSON_Delete(parts);
        imp_count(m, IMPORT_SKIPPED, "user line without content");
        return imp_add(m, uuid, parent, IMP_OTHER, NULL, NULL, NULL, err);
    }
    char *prev = parent ? lc_strdup(parent) : NULL;
    for (int i = 0; i < n && rc == LC_OK; i++) {
        char *id = i == n - 1 ? lc_strdup(uuid) : lc_asprintf("%s:%d", uuid, i);
        cJSON *part = cJSON_DetachItemFromArray(parts, 0);
        if (!id) {
            cJSON_Delete(part);
            rc = lc_errf(err, LC_NOMEM, "out of memory");
        } else {
            m->cur.answers = imp_tool_entry(m, imp_jstr(part, "toolCallId"));
            claude_label(m, part);
            rc = imp_add_built(m, id, prev, part, err);
            m->cur.answers = -1;
            m->cur.orphan = 0; /* only the line's first part names the missing parent */
        }
        free(prev);
        prev = id;
    }
    free(prev);
    cJSON_Delete(parts);
    return rc;
}

/* ---- Claude Code: the file's tree whatever the order of its lines ------------------------- */

/* Keep a line until `parent` is read. Takes root. */
static int claude_wait(imp *m, cJSON *root, const char *parent, char **err)
{
    if (m->nwait == m->wait_cap) {
        size_t cap = m->wait_cap ? m->wait_cap * 2 : 16;
        imp_wait *v = realloc(m->waitv, cap * sizeof *v);
        if (!v) goto oom;
        m->waitv = v;
        m->wait_cap = cap;
    }
    long w = ingest_idset_find(&m->waits, parent);
    if (w < 0) {
        if (m->waits.n == m->waits_cap) {
            size_t cap = m->waits_cap ? m->waits_cap * 2 : 16;
            long *h = realloc(m->wait_head, cap * sizeof *h), *t = h ? realloc(m->wait_tail, cap * sizeof *t) : NULL;
            if (h) m->wait_head = h;
            if (!h || !t) goto oom;
            m->wait_tail = t;
            m->waits_cap = cap;
        }
        if (ingest_idset_add(&m->waits, parent) != LC_OK) goto oom;
        w = (long)m->waits.n - 1;
        m->wait_head[w] = m->wait_tail[w] = -1;
    }
    long k = (long)m->nwait++;
    m->waitv[k] = (imp_wait){root, m->cur.seq, -1};
    if (m->wait_tail[w] >= 0) m->waitv[m->wait_tail[w]].next = k;
    else m->wait_head[w] = k;
    m->wait_tail[w] = k;
    return LC_OK;
oom:
    cJSON_Delete(root);
    return lc_errf(err, LC_NOMEM, "out of memory");
}

/* Read one line (root taken), then every line that waited for it, and theirs, in file
 * order. */
static int claude_take(imp *m, cJSON *root, long seq, char **err)
{
    long *stack = NULL;
    size_t n = 0, cap = 0;
    int rc = LC_OK;
    for (;;) {
        m->cur.seq = seq;
        rc = claude_line(m, root, err);
        m->cur.orphan = 0;
        m->cur.split = 0;
        const char *uuid = rc == LC_OK ? imp_jstr(root, "uuid") : NULL;
        long w = uuid && m->waits.n ? ingest_idset_find(&m->waits, uuid) : -1;
        if (w >= 0 && m->wait_head[w] >= 0) {
            size_t k = 0;
            for (long x = m->wait_head[w]; x >= 0; x = m->waitv[x].next) k++;
            if (n + k > cap) {
                size_t nc = (n + k) * 2;
                long *v = realloc(stack, nc * sizeof *v);
                if (!v) rc = lc_errf(err, LC_NOMEM, "out of memory");
                else {
                    stack = v;
                    cap = nc;
                }
            }
            if (rc == LC_OK) {
                /* pushed last first, so that they come off in file order */
                size_t at = n + k;
                for (long x = m->wait_head[w]; x >= 0; x = m->waitv[x].next) stack[--at] = x;
                n += k;
                m->wait_head[w] = m->wait_tail[w] = -1;
            }
        }
        cJSON_Delete(root);
        root = NULL;
        if (rc != LC_OK) break;
        while (n > 0 && !root) {
            imp_wait *x = &m->waitv[stack[--n]];
            root = x->root;
            seq = x->seq;
            x->root = NULL;
        }
        if (!root) break;
        m->cur.split = 1;
    }
    /* after a failure, what is still on the stack is freed with the waiting lines */
    free(stack);
    return rc;
}

/* One object of a Claude Code transcript: read now, or kept until the line it names as
 * parent is read. */
int claude_obj(imp *m, cJSON **rootp, char **err)
{
    cJSON *root = *rootp;
    const char *sid = imp_jstr(root, "sessionId"), *cwd = imp_jstr(root, "cwd");
    const char *uuid = imp_jstr(root, "uuid"), *parent = claude_parent(root);
    if (sid && !m->session_id[0]) snprintf(m->session_id, sizeof m->session_id, "claude-%s", sid);
    if (cwd && !m->cwd) m->cwd = lc_strdup(cwd);
    *rootp = NULL;
    if (uuid && parent && !claude_known(m, parent) && !claude_known(m, uuid)) return claude_wait(m, root, parent, err);
    return claude_take(m, root, m->cur.seq, err);
}

/* At the end of what was read: the lines whose parent never came are stored all the same,
 * as roots (orphans: no conversation ends on one), with what waited for them. 1 in *left
 * when there were any (a hook's next call reads the file again: the parent may come). */
int claude_orphans(imp *m, int *left, char **err)
{
    int rc = LC_OK;
    *left = 0;
    for (size_t i = 0; i < m->nwait && rc == LC_OK; i++) {
        if (!m->waitv[i].root) continue;
        cJSON *root = m->waitv[i].root;
        m->waitv[i].root = NULL;
        *left = 1;
        m->cur.orphan = 1;
        m->cur.split = 1;
        rc = claude_take(m, root, m->waitv[i].seq, err);
    }
    m->cur.orphan = 0;
    return rc;
}

