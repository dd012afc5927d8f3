/*
 * import.c -- transcripts of Pi, Claude Code and Codex into a lossless store.
 *
 * Every format is first turned into the same thing: entries (id, parent, kind) in file
 * order, some of which carry an AgentMessage. The tree is then replayed the way the plugin
 * sees it through the reference host: each new message is ingested right after the message
 * that ends its branch's model context (so its ordinal is that one's + 1), a compaction's
 * context starts with the compaction summary followed by the entries it keeps, and at the
 * end everything off the final branch (leaf = last entry) is marked removed. Consecutive
 * messages of one branch go to store_ingest in one batch, which the writer thread
 * (import_writer.h) stores while the next is read. What a Pi entry contributes, the id
 * index and the batches are the engine's ingest (ingest.h), the code the plugin stores
 * live sessions with.
 */
#include "import.h"
#include "import_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "ingest.h"
#include "jsonl.h"
#include "jsonw.h"
#include "store.h"
#include "util.h"

#define IMP_BATCH 1024
#define IMP_PROGRESS_LINES 512
#define IMP_DETECT_LINES 25
#define IMP_TAIL_STEP_MS 50

enum { IMP_OTHER = 0, IMP_MESSAGE, IMP_COMPACTION };

typedef struct imp_entry {
    const char *id;  /* borrowed from imp.ids */
    long parent;     /* index, -1 for a root */
    int kind;
    long ctxlast;    /* the entry whose message ends the context at this entry, -1 none */
    char *msg;       /* compaction: its summary message (ingested when nothing is kept) */
} imp_entry;

typedef struct imp {
    const char *home;
    imp_entry *v;
    size_t n, cap;
    ingest_idset ids; /* id -> index: ids.ids[i] is v[i].id */
    store *st;
    char session_id[256];
    char *cwd;
    ingest_batch batch;
    long *batch_idx;    /* the entry of each queued message */
    import_stats *stats;
    long prev_linear;   /* Codex: the previous entry (its transcript is a line) */
    /* The session's own time (ms): its header's timestamp, else its earliest entry's;
     * 0 unknown. The store is dated by it, not by the import (meta "created"). */
    long long header_ts, first_ts;
    /* Claude Code / Codex: tool names by call id, so a result names its tool */
    cJSON *tool_names;
    ingest_idset tool_ids;   /* its call ids, indexed (an object lookup is a linear scan) */
    const char **tool_namev; /* tool_ids.ids[i]'s name, borrowed from tool_names */
    size_t tool_cap;
    import_writer *w;   /* stores the batches; the store is its own while it runs */
    int whole;          /* the whole file is read: the final branch's marks follow (imp_mark) */
    int fresh;          /* whole, and the store held no message when opened: every row is this import's */
} imp;

const char *import_format_name(import_format f)
{
    switch (f) {
    case IMPORT_PI: return "pi";
    case IMPORT_CLAUDE: return "claude-code";
    case IMPORT_CODEX: return "codex";
    default: return "unknown";
    }
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ISO-8601 UTC to epoch milliseconds, as the reference host reads entry timestamps
 * (0 when unparsable, like the host). */
static long long imp_iso_ms(const char *iso)
{
    long long t = lc_iso_ms(iso);
    return t < 0 ? 0 : t;
}

/* An entry's time, toward the session's date when the header gives none. */
static void imp_saw_ts(imp *m, long long ts)
{
    if (ts > 0 && (!m->first_ts || ts < m->first_ts)) m->first_ts = ts;
}

/* Remember a call's tool name (the first one named wins). */
static int imp_tool_put(imp *m, const char *id, const char *name)
{
    if (!m->tool_names || ingest_idset_find(&m->tool_ids, id) >= 0) return LC_OK;
    if (m->tool_ids.n == m->tool_cap) {
        size_t cap = m->tool_cap ? m->tool_cap * 2 : 256;
        const char **v = realloc(m->tool_namev, cap * sizeof *v);
        if (!v) return LC_NOMEM;
        m->tool_namev = v;
        m->tool_cap = cap;
    }
    cJSON *item = cJSON_AddStringToObject(m->tool_names, id, name);
    if (!item || ingest_idset_add(&m->tool_ids, id) != LC_OK) return LC_NOMEM;
    m->tool_namev[m->tool_ids.n - 1] = item->valuestring;
    return LC_OK;
}

static const char *imp_tool_name(const imp *m, const char *id)
{
    long i = id ? ingest_idset_find(&m->tool_ids, id) : -1;
    return i >= 0 ? m->tool_namev[i] : NULL;
}

/* Index the names a resumed import starts with. */
static int imp_tools_index(imp *m)
{
    cJSON *names = m->tool_names, *t;
    if (!names) return LC_OK;
    m->tool_names = cJSON_CreateObject();
    if (!m->tool_names) {
        m->tool_names = names;
        return LC_NOMEM;
    }
    int rc = LC_OK;
    cJSON_ArrayForEach(t, names)
    {
        if (rc == LC_OK && t->string && cJSON_IsString(t)) rc = imp_tool_put(m, t->string, t->valuestring);
    }
    cJSON_Delete(names);
    return rc;
}

static long imp_find(const imp *m, const char *id)
{
    return ingest_idset_find(&m->ids, id);
}

static int imp_grow(imp *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    imp_entry *v = realloc(m->v, cap * sizeof *v);
    if (!v) return LC_NOMEM;
    m->v = v;
    m->cap = cap;
    return LC_OK;
}

/* ---- the store side ------------------------------------------------------------------- */

static int imp_open_store(imp *m, char **err)
{
    if (m->st) return LC_OK;
    if (!m->session_id[0]) return lc_errf(err, LC_INVALID, "the transcript names no session id before its first message");
    int rc = store_open(m->home, m->session_id, m->cwd ? m->cwd : "", &m->st, err);
    if (rc != LC_OK) return rc;
    /* Only a whole read marks the branch; a hook's import of a few new lines skips the count. */
    m->fresh = m->whole && store_message_count(m->st) == 0;
    /* The file-handle settings of the home's lcm.json, as the plugin applies them. */
    lcm_config cfg;
    char *path = lc_asprintf("%s/lcm.json", m->home);
    lcm_config_defaults(&cfg);
    if (path) lcm_config_load(path, &cfg, NULL);
    store_options o = {(size_t)cfg.large_file_chars, cfg.externalize_files};
    store_set_options(m->st, &o);
    lcm_config_free(&cfg);
    free(path);
    return LC_OK;
}

/* Date the store by the session's own time (the header's, else the earliest entry's), not
 * by the import that opened it: meta "created" only ever moves earlier, so a store the
 * plugin began live keeps its start, and one an older import dated "now" is corrected. */
static int imp_date(imp *m, char **err)
{
    long long ts = m->header_ts > 0 ? m->header_ts : m->first_ts;
    if (ts <= 0 || !m->st) return LC_OK;
    char *had = store_meta_get(m->st, "created");
    long long was = had && *had ? atoll(had) : 0;
    free(had);
    if (was > 0 && was <= ts) return LC_OK;
    char v[32];
    snprintf(v, sizeof v, "%lld", ts);
    return store_meta_put(m->st, "created", v, err);
}

/* The queued batch to the writer (started with the first one). */
static int imp_flush(imp *m, char **err)
{
    int rc;
    if (m->batch.n == 0) return LC_OK;
    if ((rc = imp_open_store(m, err)) != LC_OK || (!m->w && (rc = import_writer_start(m->st, &m->w, err)) != LC_OK)) {
        ingest_batch_free(&m->batch);
        return rc;
    }
    return import_writer_put(m->w, &m->batch, err);
}

/* Everything queued stored and committed; the store is this thread's again. */
static int imp_finish(imp *m, char **err)
{
    size_t inserted = 0;
    int rc = import_writer_finish(m->w, &inserted, err);
    m->w = NULL;
    m->stats->inserted += inserted;
    return rc;
}

/* A message not queued after all: its text and its parse. */
static void imp_drop(char *json, cJSON *tree)
{
    free(json);
    cJSON_Delete(tree);
}

/* Queue one message (json and tree owned by the batch from here; json NULL for an entry
 * known to be stored; tree, the parse the store reads instead of json, may be NULL). */
static int imp_queue(imp *m, long idx, char *json, cJSON *tree, char **err)
{
    int rc;
    if (m->batch.n == IMP_BATCH && (rc = imp_flush(m, err)) != LC_OK) {
        imp_drop(json, tree);
        return rc;
    }
    m->batch_idx[m->batch.n] = idx;
    if (ingest_batch_add_tree(&m->batch, m->v[idx].id, json, tree) != LC_OK)
        return lc_errf(err, LC_NOMEM, "out of memory");
    return LC_OK;
}

/* A new message entry: ingest it after the message that ends its parent's context. */
static int imp_ingest(imp *m, long self, char *json, cJSON *tree, char **err)
{
    long prev = m->v[self].parent >= 0 ? m->v[m->v[self].parent].ctxlast : -1;
    int rc;
    m->stats->messages++;
    if (!(m->batch.n > 0 && m->batch_idx[m->batch.n - 1] == prev)) {
        if ((rc = imp_flush(m, err)) != LC_OK) {
            imp_drop(json, tree);
            return rc;
        }
        /* The predecessor is stored already unless it is a compaction summary that
         * nothing kept after; then it goes in first, as the plugin would see it. */
        if (prev >= 0) {
            char *pj = m->v[prev].kind == IMP_COMPACTION && m->v[prev].msg ? lc_strdup(m->v[prev].msg) : NULL;
            if (m->v[prev].kind == IMP_COMPACTION && !pj) {
                imp_drop(json, tree);
                return lc_errf(err, LC_NOMEM, "out of memory");
            }
            if ((rc = imp_queue(m, prev, pj, NULL, err)) != LC_OK) {
                imp_drop(json, tree);
                return rc;
            }
        }
    }
    return imp_queue(m, self, json, tree, err);
}

/* Add an entry in file order. `json` (owned) is its message for IMP_MESSAGE, the summary
 * message for IMP_COMPACTION; `tree` (owned, may be NULL) a message's parse for the store
 * (store_msg.msg); first_kept only for compactions. */
static int imp_add(imp *m, const char *id, const char *parent_id, int kind, char *json, cJSON *tree,
                   const char *first_kept, char **err)
{
    if (kind != IMP_MESSAGE) {
        cJSON_Delete(tree);
        tree = NULL;
    }
    if (!id || !*id || imp_find(m, id) >= 0) {
        m->stats->bad_lines++;
        imp_drop(json, tree);
        return LC_OK;
    }
    if (m->n == m->cap && imp_grow(m) != LC_OK) {
        imp_drop(json, tree);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    long self = (long)m->n;
    imp_entry *e = &m->v[m->n];
    memset(e, 0, sizeof *e);
    e->parent = imp_find(m, parent_id);
    if (ingest_idset_add(&m->ids, id) != LC_OK) {
        imp_drop(json, tree);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    e->id = m->ids.ids[self];
    e->kind = kind;
    m->n++;
    m->prev_linear = self;
    if (kind == IMP_MESSAGE) {
        e->ctxlast = self;
        return imp_ingest(m, self, json, tree, err);
    }
    if (kind == IMP_COMPACTION) {
        /* The kept entries run from firstKeptEntryId up to the compaction; the last
         * message among them ends the context, else the summary alone does. */
        e->msg = json;
        e->ctxlast = self;
        long nearest = -1;
        for (long x = e->parent; x >= 0 && first_kept; x = m->v[x].parent) {
            if (nearest < 0 && m->v[x].kind == IMP_MESSAGE) nearest = x;
            if (strcmp(m->v[x].id, first_kept) == 0) {
                if (nearest >= 0) e->ctxlast = nearest;
                break;
            }
        }
        return LC_OK;
    }
    free(json);
    e->ctxlast = e->parent >= 0 ? m->v[e->parent].ctxlast : -1;
    return LC_OK;
}

/* A message the import built (o, owned): stored as its printed text, and the store reads
 * the tree itself rather than parsing the print again. */
static int imp_add_built(imp *m, const char *id, const char *parent_id, cJSON *o, char **err)
{
    char *json = o ? jsonw_print(o) : NULL;
    if (!json) {
        cJSON_Delete(o);
        o = NULL;
    }
    return imp_add(m, id, parent_id, IMP_MESSAGE, json, o, NULL, err);
}

/* ---- Pi session files ----------------------------------------------------------------- */

/* One Pi entry; `line` is its text, so a message entry is stored byte for byte. */
static int pi_line(imp *m, cJSON *root, const char *line, size_t len, size_t lineno,
                   char **err)
{
    const char *type = jstr(root, "type");
    if (!type) {
        m->stats->bad_lines++;
        return LC_OK;
    }
    if (strcmp(type, "session") == 0) {
        const char *id = jstr(root, "id"), *cwd = jstr(root, "cwd");
        if (id && !m->session_id[0]) snprintf(m->session_id, sizeof m->session_id, "%s", id);
        if (cwd && !m->cwd) m->cwd = lc_strdup(cwd);
        if (!m->header_ts) m->header_ts = imp_iso_ms(jstr(root, "timestamp"));
        return LC_OK;
    }
    /* Version-1 files had no ids: the entries form one line, in file order. */
    char synth[32];
    const char *id = jstr(root, "id"), *parent = jstr(root, "parentId");
    if (!id) {
        snprintf(synth, sizeof synth, "line-%zu", lineno);
        id = synth;
        if (m->n) parent = m->v[m->n - 1].id;
    }
    long long ts = imp_iso_ms(jstr(root, "timestamp"));
    imp_saw_ts(m, ts);
    char *json = ingest_context_message(root, line, len, ts);
    int kind = !json ? IMP_OTHER : strcmp(type, "compaction") == 0 ? IMP_COMPACTION : IMP_MESSAGE;
    /* A message entry's text is its "message" member as the line holds it, so the line's
     * parse of that member is the store's parse too (unless an escaped NUL, which the
     * store reads differently, is in it). */
    cJSON *tree = NULL;
    if (kind == IMP_MESSAGE && strcmp(type, "message") == 0 && !memmem(json, strlen(json), "\\u0000", 6))
        tree = cJSON_DetachItemFromObjectCaseSensitive(root, "message");
    return imp_add(m, id, parent, kind, json, tree, jstr(root, "firstKeptEntryId"), err);
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

/* text / image / thinking / tool_use blocks in AgentMessage shapes. */
static cJSON *claude_block(imp *m, cJSON *b)
{
    const char *t = jstr(b, "type");
    cJSON *o = NULL;
    if (!t) return NULL;
    if (!strcmp(t, "text") && jstr(b, "text")) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "text");
        cJSON_AddItemToObject(o, "text", cJSON_DetachItemFromObjectCaseSensitive(b, "text"));
    } else if (!strcmp(t, "thinking") && jstr(b, "thinking")) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "thinking");
        cJSON_AddItemToObject(o, "thinking", cJSON_DetachItemFromObjectCaseSensitive(b, "thinking"));
    } else if (!strcmp(t, "tool_use")) {
        cJSON *in = cJSON_DetachItemFromObjectCaseSensitive(b, "input");
        const char *id = jstr(b, "id"), *name = jstr(b, "name");
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "toolCall");
        cJSON_AddStringToObject(o, "id", id ? id : "");
        cJSON_AddStringToObject(o, "name", name ? name : "");
        cJSON_AddItemToObject(o, "arguments", in ? in : cJSON_CreateObject());
        if (id && name) imp_tool_put(m, id, name);
    } else if (!strcmp(t, "image")) {
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(b, "source");
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "image");
        cJSON_AddStringToObject(o, "data", jstr(src, "data") ? jstr(src, "data") : "");
        cJSON_AddStringToObject(o, "mimeType", jstr(src, "media_type") ? jstr(src, "media_type") : "image/png");
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
static const char *claude_parent(const cJSON *root)
{
    const char *p = jstr(root, "parentUuid");
    return p ? p : jstr(root, "logicalParentUuid");
}

static int claude_line(imp *m, cJSON *root, char **err)
{
    const char *type = jstr(root, "type"), *uuid = jstr(root, "uuid"), *parent = claude_parent(root);
    const char *sid = jstr(root, "sessionId"), *cwd = jstr(root, "cwd");
    int rc = LC_OK;
    if (sid && !m->session_id[0]) snprintf(m->session_id, sizeof m->session_id, "claude-%s", sid);
    if (cwd && !m->cwd) m->cwd = lc_strdup(cwd);
    /* Sub-agent conversations (sidechains) are not the session's own history. */
    if (!uuid || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "isSidechain"))) return LC_OK;
    cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "message");
    long long ts = imp_iso_ms(jstr(root, "timestamp"));
    imp_saw_ts(m, ts);
    if (!type || !cJSON_IsObject(msg) || (strcmp(type, "user") != 0 && strcmp(type, "assistant") != 0))
        return imp_add(m, uuid, parent, IMP_OTHER, NULL, NULL, NULL, err);
    cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (strcmp(type, "assistant") == 0) {
        cJSON *o = cJSON_CreateObject(), *usage = cJSON_CreateObject();
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(msg, "usage");
        cJSON_AddStringToObject(o, "role", "assistant");
        cJSON_AddItemToObject(o, "content", claude_content(m, content));
        if (jstr(msg, "model")) cJSON_AddStringToObject(o, "model", jstr(msg, "model"));
        const char *stop = claude_stop(jstr(msg, "stop_reason"));
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
        return imp_add_built(m, uuid, parent, o, err);
    }
    /* A user line: tool results (each its own toolResult message) and/or the user's text.
     * The line's uuid names the last message so that children find their parent. */
    cJSON *parts = cJSON_CreateArray(), *user = NULL;
    if (cJSON_IsArray(content)) {
        cJSON *b;
        cJSON_ArrayForEach(b, content)
        {
            const char *bt = jstr(b, "type");
            if (bt && strcmp(bt, "tool_result") == 0) {
                const char *cid = jstr(b, "tool_use_id");
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
            rc = imp_add_built(m, id, prev, part, err);
        }
        free(prev);
        prev = id;
    }
    free(prev);
    cJSON_Delete(parts);
    return rc;
}

/* ---- Codex rollouts ------------------------------------------------------------------- */

static char *codex_text(const cJSON *content)
{
    sbuf b = {0};
    const cJSON *c;
    if (cJSON_IsString(content)) return lc_strdup(content->valuestring);
    cJSON_ArrayForEach(c, content)
    {
        const char *t = jstr(c, "text");
        if (!t) continue;
        if (b.len) sb_puts(&b, "\n");
        sb_puts(&b, t);
    }
    return sb_detach(&b);
}

static int codex_item(imp *m, const cJSON *p, long long ts, size_t lineno, char **err)
{
    const char *t = jstr(p, "type");
    char id[48], previd[48];
    cJSON *o = NULL;
    snprintf(id, sizeof id, "codex-line-%zu", lineno);
    if (m->prev_linear >= 0) snprintf(previd, sizeof previd, "%s", m->v[m->prev_linear].id);
    const char *parent = m->prev_linear >= 0 ? previd : NULL;
    if (!t) return LC_OK;
    if (!strcmp(t, "message")) {
        const char *role = jstr(p, "role");
        if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0)) return LC_OK;
        char *text = codex_text(cJSON_GetObjectItemCaseSensitive(p, "content"));
        o = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(o, "content"), *blk = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", role);
        cJSON_AddStringToObject(blk, "type", "text");
        cJSON_AddStringToObject(blk, "text", text ? text : "");
        cJSON_AddItemToArray(arr, blk);
        free(text);
    } else if (!strcmp(t, "function_call") || !strcmp(t, "custom_tool_call") || !strcmp(t, "local_shell_call")) {
        const char *name = jstr(p, "name") ? jstr(p, "name") : !strcmp(t, "local_shell_call") ? "local_shell" : "";
        const char *cid = jstr(p, "call_id") ? jstr(p, "call_id") : jstr(p, "id");
        const char *args = jstr(p, "arguments") ? jstr(p, "arguments") : jstr(p, "input");
        cJSON *parsed = args ? cJSON_Parse(args) : NULL;
        if (!parsed && !args) parsed = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p, "action"), 1);
        if (!cJSON_IsObject(parsed)) {
            cJSON_Delete(parsed);
            parsed = cJSON_CreateObject();
            if (args) cJSON_AddStringToObject(parsed, "input", args);
        }
        o = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(o, "content"), *blk = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", "assistant");
        cJSON_AddStringToObject(blk, "type", "toolCall");
        cJSON_AddStringToObject(blk, "id", cid ? cid : "");
        cJSON_AddStringToObject(blk, "name", name);
        cJSON_AddItemToObject(blk, "arguments", parsed);
        cJSON_AddItemToArray(arr, blk);
        cJSON_AddStringToObject(o, "stopReason", "toolUse");
        if (cid) imp_tool_put(m, cid, name);
    } else if (!strcmp(t, "function_call_output") || !strcmp(t, "custom_tool_call_output")) {
        const char *cid = jstr(p, "call_id");
        const char *name = imp_tool_name(m, cid);
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(p, "output");
        char *text = NULL;
        if (cJSON_IsString(out)) {
            /* Older rollouts wrap the output as {"output": "...", "metadata": {...}}. */
            cJSON *inner = cJSON_Parse(out->valuestring);
            text = lc_strdup(inner && jstr(inner, "output") ? jstr(inner, "output") : out->valuestring);
            cJSON_Delete(inner);
        } else if (cJSON_IsObject(out) && jstr(out, "content")) {
            text = lc_strdup(jstr(out, "content"));
        } else if (out) {
            text = cJSON_PrintUnformatted(out);
        }
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", "toolResult");
        cJSON_AddStringToObject(o, "toolCallId", cid ? cid : "");
        cJSON_AddStringToObject(o, "toolName", name ? name : "");
        cJSON *arr = cJSON_AddArrayToObject(o, "content"), *blk = cJSON_CreateObject();
        cJSON_AddStringToObject(blk, "type", "text");
        cJSON_AddStringToObject(blk, "text", text ? text : "");
        cJSON_AddItemToArray(arr, blk);
        cJSON_AddBoolToObject(o, "isError", 0);
        free(text);
    } else {
        return LC_OK; /* reasoning (mostly encrypted), web search calls, ... */
    }
    cJSON_AddNumberToObject(o, "timestamp", (double)ts);
    return imp_add_built(m, id, parent, o, err);
}

static int codex_line(imp *m, const cJSON *root, size_t lineno, char **err)
{
    const char *type = jstr(root, "type");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "payload");
    long long ts = imp_iso_ms(jstr(root, "timestamp"));
    if (type && !strcmp(type, "session_meta") && cJSON_IsObject(p)) {
        const char *id = jstr(p, "id"), *cwd = jstr(p, "cwd");
        if (id && !m->session_id[0]) snprintf(m->session_id, sizeof m->session_id, "codex-%s", id);
        if (cwd && !m->cwd) m->cwd = lc_strdup(cwd);
        if (!m->header_ts) m->header_ts = jstr(p, "timestamp") ? imp_iso_ms(jstr(p, "timestamp")) : ts;
        return LC_OK;
    }
    if (!type && jstr(root, "id") && !m->header_ts && !cJSON_GetObjectItemCaseSensitive(root, "record_type"))
        m->header_ts = ts; /* the first rollout format's bare header */
    imp_saw_ts(m, ts);
    if (type && !strcmp(type, "response_item") && cJSON_IsObject(p)) return codex_item(m, p, ts, lineno, err);
    if (type && !strcmp(type, "compacted") && cJSON_IsObject(p) && jstr(p, "message")) {
        char id[48], previd[48];
        snprintf(id, sizeof id, "codex-line-%zu", lineno);
        if (m->prev_linear >= 0) snprintf(previd, sizeof previd, "%s", m->v[m->prev_linear].id);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", "compactionSummary");
        cJSON_AddStringToObject(o, "summary", jstr(p, "message"));
        cJSON_AddNumberToObject(o, "timestamp", (double)ts);
        return imp_add_built(m, id, m->prev_linear >= 0 ? previd : NULL, o, err);
    }
    if (type && (!strcmp(type, "event_msg") || !strcmp(type, "turn_context"))) return LC_OK;
    /* The first rollout format: a bare header, then bare items. */
    if (!type && jstr(root, "id") && !cJSON_GetObjectItemCaseSensitive(root, "record_type")) {
        if (!m->session_id[0]) snprintf(m->session_id, sizeof m->session_id, "codex-%s", jstr(root, "id"));
        return LC_OK;
    }
    if (type && !cJSON_GetObjectItemCaseSensitive(root, "record_type")) return codex_item(m, root, ts, lineno, err);
    return LC_OK;
}

/* ---- detection and the driver ------------------------------------------------------------ */

static import_format imp_shape(const cJSON *root)
{
    const char *type = jstr(root, "type");
    if (!cJSON_IsObject(root)) return IMPORT_UNKNOWN;
    if (type && !strcmp(type, "session") && jstr(root, "id")) return IMPORT_PI;
    if (type && (!strcmp(type, "session_meta") || !strcmp(type, "response_item") || !strcmp(type, "turn_context")))
        return IMPORT_CODEX;
    if (jstr(root, "sessionId") && (jstr(root, "uuid") || cJSON_GetObjectItemCaseSensitive(root, "parentUuid")))
        return IMPORT_CLAUDE;
    if (type && !strcmp(type, "summary") && jstr(root, "leafUuid")) return IMPORT_CLAUDE;
    if (!type && jstr(root, "id") && cJSON_GetObjectItemCaseSensitive(root, "instructions")) return IMPORT_CODEX;
    return IMPORT_UNKNOWN;
}

int import_detect(const char *path, import_format *out, char **err)
{
    jsonl_reader *r = NULL;
    const char *line;
    size_t len;
    int rc = jsonl_open(path, &r, err);
    *out = IMPORT_UNKNOWN;
    if (rc != LC_OK) return rc;
    for (int i = 0; i < IMP_DETECT_LINES && *out == IMPORT_UNKNOWN; i++) {
        if ((rc = jsonl_next(r, &line, &len, NULL)) != LC_OK) break;
        cJSON *root = jsonl_clipped(r) ? NULL : cJSON_ParseWithLength(line, len);
        *out = imp_shape(root);
        cJSON_Delete(root);
    }
    jsonl_close(r);
    if (*out == IMPORT_UNKNOWN)
        return lc_errf(err, LC_INVALID, "%s: not a Pi session file, a Claude Code transcript or a Codex rollout", path);
    return LC_OK;
}

/* The final branch is the last entry up to its root; every other row is marked removed.
 * In a store this import alone wrote, the rows are its entries, all unmarked: the entries
 * off the branch, which it knows, are the ones to mark (none for a session that never
 * branched), where the store's branch move compares every row with the whole branch. */
static int imp_mark(imp *m, char **err)
{
    size_t n = 0, marked = 0;
    int rc = LC_OK;
    if (!m->st || !m->n) return LC_OK;
    const char **ids = malloc(m->n * sizeof *ids);
    unsigned char *on = m->fresh ? calloc(m->n, 1) : NULL;
    if (!ids || (m->fresh && !on)) {
        free(ids);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    for (long x = (long)m->n - 1; x >= 0 && n < m->n; x = m->v[x].parent) {
        if (on) on[x] = 1;
        ids[n++] = m->v[x].id;
    }
    if (on) {
        n = 0;
        for (size_t i = 0; i < m->n; i++)
            if (!on[i]) ids[n++] = m->v[i].id;
        rc = n ? store_set_removed(m->st, ids, n, 1, &marked, err) : LC_OK;
    } else {
        rc = store_mark_branch(m->st, ids, n, &marked, NULL, err);
    }
    m->stats->removed = marked;
    free(on);
    free(ids);
    return rc;
}

/* Everything an import holds, the store included. */
static void imp_free(imp *m)
{
    imp_finish(m, NULL);
    for (size_t i = 0; i < m->n; i++) free(m->v[i].msg);
    free(m->v);
    ingest_idset_free(&m->ids);
    ingest_batch_free(&m->batch);
    free(m->batch_idx);
    free(m->cwd);
    cJSON_Delete(m->tool_names);
    ingest_idset_free(&m->tool_ids);
    free(m->tool_namev);
    store_close(m->st);
}

/* One parsed line of the transcript, by its format. */
static int imp_line(imp *m, cJSON *root, const char *line, size_t len, size_t lineno, char **err)
{
    m->stats->lines++;
    if (!cJSON_IsObject(root)) {
        m->stats->bad_lines++;
        return LC_OK;
    }
    switch (m->stats->format) {
    case IMPORT_PI: return pi_line(m, root, line, len, lineno, err);
    case IMPORT_CLAUDE: return claude_line(m, root, err);
    default: return codex_line(m, root, lineno, err);
    }
}

/* After a whole read: the removed marks of the branch the file ends on, the transcript as
 * the store's session file (gc keeps the store while it exists), the session's own date. */
static int imp_seal(imp *m, const char *path, char **err)
{
    int rc;
    if ((rc = imp_mark(m, err)) != LC_OK) return rc;
    char *rp = realpath(path, NULL);
    if (rp) rc = store_meta_put(m->st, "session_file", rp, err);
    free(rp);
    if (rc != LC_OK) return rc;
    return imp_date(m, err);
}

int import_file(const char *home, const char *path, import_progress_fn progress, void *ud,
                import_stats *st, char **err)
{
    imp m = {0};
    jsonl_reader *r = NULL;
    const char *line;
    size_t len, lineno = 0;
    struct stat sb;
    int rc;
    memset(st, 0, sizeof *st);
    m.home = home;
    m.stats = st;
    m.prev_linear = -1;
    m.whole = 1;
    if ((rc = import_detect(path, &st->format, err)) != LC_OK) return rc;
    long long total = stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
    m.batch_idx = malloc(IMP_BATCH * sizeof *m.batch_idx);
    m.tool_names = cJSON_CreateObject();
    if (!m.batch_idx || !m.tool_names) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if ((rc = jsonl_open(path, &r, err)) != LC_OK) goto done;
    long long at = 0;
    size_t base_lineno = 0;
    int waited = 0;
    while ((rc = jsonl_next(r, &line, &len, &lineno)) == LC_OK) {
        /* A line past the reader's bound is no entry (its cut is no JSON) and no line being
         * written: skipped, whatever follows it. */
        int clipped = jsonl_clipped(r);
        cJSON *root = clipped ? NULL : cJSON_ParseWithLength(line, len);
        st->long_lines += (size_t)clipped;
        if (!cJSON_IsObject(root) && !jsonl_last_complete(r) && !clipped) {
            /* A last line with no newline that is not JSON yet is a line a writer (a live
             * host) is still appending: wait for it a little, then leave it for the next
             * import rather than read half a line as an entry. */
            cJSON_Delete(root);
            long long end = jsonl_offset(r);
            while (waited < IMP_TAIL_WAIT_MS && stat(path, &sb) == 0 && (long long)sb.st_size <= end) {
                nanosleep(&(struct timespec){0, IMP_TAIL_STEP_MS * 1000000L}, NULL);
                waited += IMP_TAIL_STEP_MS;
            }
            if (stat(path, &sb) != 0 || (long long)sb.st_size <= end) {
                st->torn_tail = 1;
                break;
            }
            /* It grew: read on from that line's start. */
            size_t at_line = base_lineno + lineno - 1;
            jsonl_close(r);
            r = NULL;
            if ((rc = jsonl_open_at(path, at, &r, err)) != LC_OK) goto done;
            base_lineno = at_line;
            continue;
        }
        lineno += base_lineno;
        at = jsonl_offset(r);
        rc = imp_line(&m, root, line, len, lineno, err);
        cJSON_Delete(root);
        if (rc != LC_OK) goto done;
        if (progress && st->lines % IMP_PROGRESS_LINES == 0) progress(ud, jsonl_offset(r), total);
    }
    if (rc != LC_NOTFOUND && !st->torn_tail) {
        rc = lc_errf(err, LC_ERR, "%s: %s", path, jsonl_error(r) ? jsonl_error(r) : "read failed");
        goto done;
    }
    if ((rc = imp_flush(&m, err)) != LC_OK || (rc = imp_finish(&m, err)) != LC_OK) goto done;
    /* A transcript with no message still gets its (empty) store, so it is listed. */
    if ((rc = imp_open_store(&m, err)) != LC_OK) goto done;
    if ((rc = imp_seal(&m, path, err)) != LC_OK) goto done;
    snprintf(st->session_id, sizeof st->session_id, "%s", m.session_id);
    if (progress) progress(ud, total, total);
done:
    imp_free(&m);
    jsonl_close(r);
    return rc;
}

/* ---- incremental import (import_file_resume) -------------------------------------------- */

#define IMP_RESUME_TOOLS 256 /* call ids remembered between calls */

void import_resume_free(import_resume *rs)
{
    if (!rs) return;
    LC_FREE(rs->cwd, rs->last_id, rs->last_ctx);
    cJSON_Delete(rs->tool_names);
    memset(rs, 0, sizeof *rs);
}

/* An entry known from the previous call (stored already): the table needs it so that a
 * new entry naming it as parent is ingested right after its context's last message. */
static int imp_seed(imp *m, const char *id, long ctxlast, int kind)
{
    if (m->n == m->cap && imp_grow(m) != LC_OK) return LC_NOMEM;
    imp_entry *e = &m->v[m->n];
    memset(e, 0, sizeof *e);
    if (ingest_idset_add(&m->ids, id) != LC_OK) return LC_NOMEM;
    e->id = m->ids.ids[m->n];
    e->parent = -1;
    e->kind = kind;
    e->ctxlast = ctxlast < 0 ? (long)m->n : ctxlast;
    m->n++;
    m->prev_linear = (long)m->n - 1;
    return LC_OK;
}

/* Whether the lines after rs->offset only extend the branch the last call ended on: the
 * chain from the newest entry walks back to rs->last_id, and every new message is on it.
 * Codex rollouts are one line by construction. Reads the new bytes once more (they are
 * small: one turn); 1 = extends, 0 = read again from the start. */
static int imp_extends(const char *path, const import_resume *rs)
{
    jsonl_reader *r = NULL;
    const char *line;
    size_t len, n = 0, cap = 0;
    char **ids = NULL, **parents = NULL;
    unsigned char *msg = NULL, *on = NULL;
    int ok = 0;
    if (rs->format == IMPORT_CODEX) return 1;
    if (!rs->last_id || jsonl_open_at(path, rs->offset, &r, NULL) != LC_OK) return 0;
    while (jsonl_next(r, &line, &len, NULL) == LC_OK && jsonl_last_complete(r)) {
        cJSON *root = cJSON_ParseWithLength(line, len);
        const char *type = jstr(root, "type"), *id = NULL, *parent = NULL;
        int is_msg = 0;
        if (rs->format == IMPORT_CLAUDE) {
            id = jstr(root, "uuid");
            parent = claude_parent(root);
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "isSidechain"))) id = NULL;
            is_msg = type && (!strcmp(type, "user") || !strcmp(type, "assistant"));
        } else if (type && strcmp(type, "session") != 0) {
            id = jstr(root, "id");
            parent = jstr(root, "parentId");
            if (!id) { /* version 1: no ids, one line */
                cJSON_Delete(root);
                ok = 1;
                goto done;
            }
            is_msg = strcmp(type, "message") == 0 || strcmp(type, "custom_message") == 0 ||
                     strcmp(type, "branch_summary") == 0 || strcmp(type, "compaction") == 0;
        }
        if (id && n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            char **ni = realloc(ids, nc * sizeof *ni), **np = ni ? realloc(parents, nc * sizeof *np) : NULL;
            unsigned char *nm = np ? realloc(msg, nc) : NULL;
            if (ni) ids = ni;
            if (np) parents = np;
            if (nm) msg = nm;
            if (!ni || !np || !nm) {
                cJSON_Delete(root);
                goto done;
            }
            cap = nc;
        }
        if (id) {
            ids[n] = lc_strdup(id);
            parents[n] = parent ? lc_strdup(parent) : NULL;
            msg[n] = (unsigned char)is_msg;
            n++;
        }
        cJSON_Delete(root);
    }
    if (n == 0) {
        ok = 1;
        goto done;
    }
    if (!(on = calloc(n, 1))) goto done;
    for (size_t x = n - 1;;) {
        on[x] = 1;
        if (!parents[x]) goto done; /* a new root: the old branch ends (marks change) */
        size_t j = x;
        while (j-- > 0 && strcmp(ids[j], parents[x]) != 0) {}
        if (j != (size_t)-1) {
            x = j;
            continue;
        }
        if (strcmp(parents[x], rs->last_id) != 0) goto done; /* a fork into older entries */
        break;
    }
    ok = 1;
    for (size_t i = 0; i < n; i++)
        if (msg[i] && !on[i]) ok = 0; /* a new message off the final branch */
done:
    for (size_t i = 0; i < n; i++) {
        free(ids[i]);
        free(parents[i]);
    }
    free(ids);
    free(parents);
    free(msg);
    free(on);
    jsonl_close(r);
    return ok;
}

/* The state the next call resumes from: the leaf, its context's last message, recent
 * tool names (the newest IMP_RESUME_TOOLS). */
static int imp_keep_state(imp *m, import_resume *rs, long long offset, long long lines)
{
    char *last = m->n ? lc_strdup(m->v[m->n - 1].id) : NULL;
    long cl = m->n ? m->v[m->n - 1].ctxlast : -1;
    char *ctx = cl >= 0 ? lc_strdup(m->v[cl].id) : NULL;
    cJSON *tools = cJSON_CreateObject();
    if ((m->n && !last) || (cl >= 0 && !ctx) || !tools) {
        free(last);
        free(ctx);
        cJSON_Delete(tools);
        return LC_NOMEM;
    }
    int total = cJSON_GetArraySize(m->tool_names), i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, m->tool_names)
    {
        if (i++ >= total - IMP_RESUME_TOOLS && cJSON_IsString(t))
            cJSON_AddStringToObject(tools, t->string, t->valuestring);
    }
    if (m->n) {
        free(rs->last_id);
        free(rs->last_ctx);
        rs->last_id = last;
        rs->last_ctx = ctx;
    }
    cJSON_Delete(rs->tool_names);
    rs->tool_names = tools;
    rs->offset = offset;
    rs->lines = lines;
    snprintf(rs->session_id, sizeof rs->session_id, "%s", m->session_id);
    if (m->cwd && (!rs->cwd || strcmp(rs->cwd, m->cwd) != 0)) {
        free(rs->cwd);
        rs->cwd = lc_strdup(m->cwd);
    }
    return LC_OK;
}

int import_file_resume(const char *home, const char *path, import_resume *rs, import_stats *st,
                       char **err)
{
    imp m = {0};
    jsonl_reader *r = NULL;
    const char *line;
    size_t len, lineno = 0;
    long long offset, lines;
    int rc, full, again = 0;
    memset(st, 0, sizeof *st);
    m.home = home;
    m.stats = st;
    m.prev_linear = -1;
    full = rs->offset <= 0 || !rs->session_id[0] || !imp_extends(path, rs);
    if (full) {
        if ((rc = import_detect(path, &st->format, err)) != LC_OK) return rc;
        rs->format = st->format;
        offset = lines = 0;
    } else {
        st->format = rs->format;
        offset = rs->offset;
        lines = rs->lines;
        snprintf(m.session_id, sizeof m.session_id, "%s", rs->session_id);
    }
    rs->full = full;
    m.whole = full;
    m.batch_idx = malloc(IMP_BATCH * sizeof *m.batch_idx);
    m.tool_names = !full && rs->tool_names ? cJSON_Duplicate(rs->tool_names, 1) : cJSON_CreateObject();
    if (m.tool_names && imp_tools_index(&m) != LC_OK) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if (rs->cwd && !(m.cwd = lc_strdup(rs->cwd))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if (!m.batch_idx || !m.tool_names) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if (!full) {
        /* The previous call's leaf must still be stored (a deleted store is rebuilt). */
        store_row row;
        if ((rc = imp_open_store(&m, err)) != LC_OK) goto done;
        if (rs->last_ctx && store_get_message(m.st, rs->last_ctx, &row, NULL) != LC_OK) {
            again = 1;
            goto done;
        }
        if (rs->last_ctx) store_row_free(&row);
        long ctx = -1;
        if (rs->last_ctx && (rc = imp_seed(&m, rs->last_ctx, -1, IMP_MESSAGE)) != LC_OK) goto oom;
        if (rs->last_ctx) ctx = (long)m.n - 1;
        if ((!rs->last_ctx || strcmp(rs->last_ctx, rs->last_id) != 0) &&
            (rc = imp_seed(&m, rs->last_id, ctx, IMP_OTHER)) != LC_OK)
            goto oom;
        if (ctx < 0) m.v[m.n - 1].ctxlast = -1;
    }
    const long long base = lines; /* jsonl counts lines from the offset on */
    if ((rc = jsonl_open_at(path, offset, &r, err)) != LC_OK) goto done;
    while ((rc = jsonl_next(r, &line, &len, &lineno)) == LC_OK) {
        int clipped = jsonl_clipped(r);
        if (!jsonl_last_complete(r) && !clipped) {
            st->torn_tail = 1; /* still being written: the next call takes it */
            rc = LC_NOTFOUND;
            break;
        }
        /* past the reader's bound: no entry, skipped (and not read again next call) */
        cJSON *root = clipped ? NULL : cJSON_ParseWithLength(line, len);
        st->long_lines += (size_t)clipped;
        size_t abs_line = (size_t)base + lineno;
        rc = imp_line(&m, root, line, len, abs_line, err);
        cJSON_Delete(root);
        if (rc != LC_OK) goto done;
        offset = jsonl_offset(r);
        lines = (long long)abs_line;
    }
    if (rc != LC_NOTFOUND) {
        rc = lc_errf(err, LC_ERR, "%s: %s", path, jsonl_error(r) ? jsonl_error(r) : "read failed");
        goto done;
    }
    if ((rc = imp_flush(&m, err)) != LC_OK || (rc = imp_finish(&m, err)) != LC_OK) goto done;
    if ((rc = imp_open_store(&m, err)) != LC_OK) goto done;
    if (full && (rc = imp_seal(&m, path, err)) != LC_OK) goto done;
    if (m.cwd && *m.cwd) {
        /* A store opened before the session's folder was known gets it now. */
        char *had = store_meta_get(m.st, "cwd");
        if (!had || !*had) rc = store_meta_put(m.st, "cwd", m.cwd, err);
        free(had);
        if (rc != LC_OK) goto done;
    }
    snprintf(st->session_id, sizeof st->session_id, "%s", m.session_id);
    if (imp_keep_state(&m, rs, offset, lines) != LC_OK) goto oom;
    goto done;
oom:
    rc = lc_errf(err, LC_NOMEM, "out of memory");
done:
    imp_free(&m);
    jsonl_close(r);
    if (again) {
        rs->offset = 0; /* the store lost what the last call stored: from the start */
        return import_file_resume(home, path, rs, st, err);
    }
    return rc;
}
