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
#include "convtree.h"
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
    long seq;        /* its object's place in the file (the parts of one line share it) */
    long group;      /* -1: the main conversation; else its sub-agent conversation's root */
    long same_as;    /* an earlier entry of the same model response, -1 */
    long answers;    /* the entry whose call it answers, -1 */
    int agent;       /* its sub-agent (imp.agents), -1 */
    unsigned char orphan; /* its parent was never read: stored as a root */
    unsigned char seed;   /* known from the previous call (resume), stored and marked then */
} imp_entry;

/* What the next imp_add records of its entry: set by the format's reader. */
typedef struct imp_cur {
    long seq, same_as, answers;
    int side;        /* a sub-agent's line (Claude Code isSidechain) */
    int agent;
    int orphan;
    const char *kind; /* what a message is, for the summary's counts (its role, else its type) */
    int split;       /* a line read late (its parent came after it): starts a batch of its own */
} imp_cur;

/* A sub-agent: from its own lines (agentId), the call that started it (Task / Agent tool_use),
 * or the result that call got (toolUseResult.agentId). Strings owned. */
struct imp;
typedef struct imp_agent {
    char *id, *type, *call, *prompt;
    size_t messages;  /* its messages this import read */
    struct imp *sub;  /* the import into its own store, made with its first line */
} imp_agent;

/* A Claude Code line whose parent comes later in the file (2.1.97 writes a tool result
 * before the call it answers): kept parsed until that parent is read. */
typedef struct imp_wait {
    cJSON *root;     /* NULL once taken */
    long seq;
    long next;       /* the next line waiting for the same parent, -1 */
} imp_wait;

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
    imp_cur cur;
    long seq;           /* objects read */
    int part;           /* the object's place on its physical line (older Pi writes two on one) */
    long *tool_entryv;  /* tool_ids.ids[i]'s call: the entry making it */
    ingest_idset api_ids; /* Claude Code message.id of assistant lines */
    long *api_last;     /* api_ids.ids[i]'s latest entry */
    size_t api_cap;
    imp_wait *waitv;    /* lines waiting for their parent */
    size_t nwait, wait_cap;
    ingest_idset waits; /* the parent ids waited for */
    long *wait_head, *wait_tail;
    size_t waits_cap;
    imp_agent *agents;
    size_t nagents, agents_cap;
    size_t main_entries, side_entries; /* entries of the main conversation, of sub-agents */
    struct imp *reader; /* a sub-agent's import: the one reading the file (its agents, waits) */
    struct imp *open_sub; /* the reader: the sub-agent whose store is open (claude_park) */
    ingest_idset side_ids; /* the reader: sub-agents' entry ids, */
    int *side_agent;       /* and whose each is */
    size_t side_cap;
    const char *path;   /* the transcript */
    char *parent_session; /* a Codex sub-agent's rollout: its parent thread's session */
    char *self_agent;     /* and what it is: {"id","type","name"} */
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

/* One more of `kind` in the summary's counts (import_kind). */
static void imp_count(imp *m, int which, const char *kind)
{
    import_stats *st = m->stats;
    size_t i = 0;
    while (i < st->nkinds && strcmp(st->kinds[i].name, kind) != 0) i++;
    if (i == st->nkinds) {
        if (st->nkinds < IMPORT_KINDS) {
            snprintf(st->kinds[i].name, sizeof st->kinds[i].name, "%s", kind);
            st->nkinds++;
        } else {
            i = IMPORT_KINDS;
            snprintf(st->kinds[i].name, sizeof st->kinds[i].name, "other");
        }
    }
    st->kinds[i].n[which]++;
}

char *import_kinds_text(const import_stats *st, int which)
{
    sbuf b = {0};
    for (size_t i = 0; i <= IMPORT_KINDS; i++) {
        if (i >= st->nkinds && i < IMPORT_KINDS) continue;
        if (!st->kinds[i].n[which]) continue;
        sb_printf(&b, "%s%s %zu", b.len ? ", " : "", st->kinds[i].name, st->kinds[i].n[which]);
    }
    return b.len ? sb_detach(&b) : lc_strdup("");
}

/* Remember a call's tool name (the first one named wins) and the entry making it: the one
 * the line being read becomes (m->n), -1 for calls a resumed import only knows by name. */
static int imp_tool_put_at(imp *m, const char *id, const char *name, long entry)
{
    if (!m->tool_names || ingest_idset_find(&m->tool_ids, id) >= 0) return LC_OK;
    if (m->tool_ids.n == m->tool_cap) {
        size_t cap = m->tool_cap ? m->tool_cap * 2 : 256;
        const char **v = realloc(m->tool_namev, cap * sizeof *v);
        long *e = v ? realloc(m->tool_entryv, cap * sizeof *e) : NULL;
        if (v) m->tool_namev = v;
        if (!v || !e) return LC_NOMEM;
        m->tool_entryv = e;
        m->tool_cap = cap;
    }
    cJSON *item = cJSON_AddStringToObject(m->tool_names, id, name);
    if (!item || ingest_idset_add(&m->tool_ids, id) != LC_OK) return LC_NOMEM;
    m->tool_namev[m->tool_ids.n - 1] = item->valuestring;
    m->tool_entryv[m->tool_ids.n - 1] = entry;
    return LC_OK;
}

static int imp_tool_put(imp *m, const char *id, const char *name)
{
    return imp_tool_put_at(m, id, name, (long)m->n);
}

/* The entry that made call `id`, -1 when unknown. */
static long imp_tool_entry(const imp *m, const char *id)
{
    long i = id ? ingest_idset_find(&m->tool_ids, id) : -1;
    return i >= 0 ? m->tool_entryv[i] : -1;
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
        if (rc == LC_OK && t->string && cJSON_IsString(t)) rc = imp_tool_put_at(m, t->string, t->valuestring, -1);
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
    store_options o = {(size_t)cfg.large_file_chars, cfg.externalize_files, cfg.redact_at_ingest};
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
    /* A line read late may be stored already (an earlier call of the hook stored it as an
     * orphan) while what it now follows is not: the store's walk back from a batch's end
     * stops at the first stored message, so it must not end a batch its parent is in. */
    if (m->cur.split || !(m->batch.n > 0 && m->batch_idx[m->batch.n - 1] == prev)) {
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
        imp_count(m, IMPORT_SKIPPED, id && *id ? "entry id seen before" : "entry without id");
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
    e->seq = m->cur.seq;
    e->same_as = m->cur.same_as;
    e->answers = m->cur.answers;
    e->agent = m->cur.agent;
    e->orphan = (unsigned char)m->cur.orphan;
    /* A sub-agent's conversation is its own: it ends on its own last entry (convtree). */
    e->group = !m->cur.side ? -1 : e->parent >= 0 && m->v[e->parent].group >= 0 ? m->v[e->parent].group : self;
    if (m->cur.side) m->side_entries++;
    else m->main_entries++;
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
        const char *what = m->cur.kind ? m->cur.kind : tree && jstr(tree, "role") ? jstr(tree, "role") : "message";
        imp_count(m, IMPORT_STORED, what);
        if (m->cur.side) m->stats->subagent_messages++;
        imp *r = m->reader ? m->reader : m;
        if (m->cur.agent >= 0 && (size_t)m->cur.agent < r->nagents) r->agents[m->cur.agent].messages++;
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
        imp_count(m, IMPORT_SKIPPED, "entry without type");
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
        /* a second object on a line (older Pi) gets an id of its own */
        if (m->part) snprintf(synth, sizeof synth, "line-%zu.%d", lineno, m->part + 1);
        else snprintf(synth, sizeof synth, "line-%zu", lineno);
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
    if (kind == IMP_OTHER) {
        char what[64];
        snprintf(what, sizeof what, "%s entry", type);
        imp_count(m, IMPORT_SKIPPED, what);
    }
    m->cur.kind = strcmp(type, "message") != 0 ? type : tree && jstr(tree, "role") ? jstr(tree, "role") : NULL;
    return imp_add(m, id, parent, kind, json, tree, jstr(root, "firstKeptEntryId"), err);
}

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
    const char *t = jstr(b, "type");
    cJSON *o = NULL;
    if (!cJSON_IsObject(b)) return NULL;
    if (t && !strcmp(t, "text") && jstr(b, "text")) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "text");
        cJSON_AddItemToObject(o, "text", cJSON_DetachItemFromObjectCaseSensitive(b, "text"));
    } else if (t && !strcmp(t, "thinking") && jstr(b, "thinking")) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "thinking");
        cJSON_AddItemToObject(o, "thinking", cJSON_DetachItemFromObjectCaseSensitive(b, "thinking"));
    } else if (t && !strcmp(t, "tool_use")) {
        cJSON *in = cJSON_DetachItemFromObjectCaseSensitive(b, "input");
        const char *id = jstr(b, "id"), *name = jstr(b, "name");
        /* A sub-agent's start: its prompt names its inline lines (1.0.x), its id its file. */
        if (id && name && (!strcmp(name, "Task") || !strcmp(name, "Agent")))
            imp_agent_note(m->reader ? m->reader : m, NULL, jstr(in, "subagent_type"), id, jstr(in, "prompt"));
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
        cJSON_AddStringToObject(o, "data", jstr(src, "data") ? jstr(src, "data") : "");
        cJSON_AddStringToObject(o, "mimeType", jstr(src, "media_type") ? jstr(src, "media_type") : "image/png");
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
static const char *claude_parent(const cJSON *root)
{
    const char *p = jstr(root, "parentUuid");
    return p ? p : jstr(root, "logicalParentUuid");
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
        const char *t = jstr(b, "type");
        if (t && !strcmp(t, "text")) return jstr(b, "text");
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
        if (cJSON_IsObject(res) && jstr(res, "agentId")) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "message"), "content");
            const cJSON *b = cJSON_IsArray(c) ? cJSON_GetArrayItem(c, 0) : NULL;
            imp_agent_note(m, jstr(res, "agentId"), jstr(res, "agentType"), jstr(b, "tool_use_id"), NULL);
        }
        return;
    }
    const char *aid = jstr(root, "agentId");
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
        char *id = lc_asprintf("sidechain-%s", jstr(root, "uuid") ? jstr(root, "uuid") : "?");
        m->cur.agent = id ? imp_agent_note(m, id, NULL, NULL, NULL) : -1;
        free(id);
    }
}

static int imp_init(imp *m, const char *home, import_stats *st, int whole);

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
    const char *type = jstr(root, "type"), *uuid = jstr(root, "uuid"), *parent = claude_parent(root);
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
    const char *type = jstr(root, "type");
    int rc = LC_OK;
    char what[64];
    cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "message");
    long long ts = imp_iso_ms(jstr(root, "timestamp"));
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
        claude_label(m, o);
        m->cur.same_as = claude_same_response(m, jstr(msg, "id"));
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
            m->cur.answers = imp_tool_entry(m, jstr(part, "toolCallId"));
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
        const char *uuid = rc == LC_OK ? jstr(root, "uuid") : NULL;
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
static int claude_obj(imp *m, cJSON **rootp, char **err)
{
    cJSON *root = *rootp;
    const char *sid = jstr(root, "sessionId"), *cwd = jstr(root, "cwd");
    const char *uuid = jstr(root, "uuid"), *parent = claude_parent(root);
    if (sid && !m->session_id[0]) snprintf(m->session_id, sizeof m->session_id, "claude-%s", sid);
    if (cwd && !m->cwd) m->cwd = lc_strdup(cwd);
    *rootp = NULL;
    if (uuid && parent && !claude_known(m, parent) && !claude_known(m, uuid)) return claude_wait(m, root, parent, err);
    return claude_take(m, root, m->cur.seq, err);
}

/* At the end of what was read: the lines whose parent never came are stored all the same,
 * as roots (orphans: no conversation ends on one), with what waited for them. 1 in *left
 * when there were any (a hook's next call reads the file again: the parent may come). */
static int claude_orphans(imp *m, int *left, char **err)
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

/* Whether `items` is a non-empty array of content items that each hold a text. */
static int codex_all_text(const cJSON *items)
{
    const cJSON *c;
    if (!cJSON_IsArray(items) || !cJSON_GetArraySize(items)) return 0;
    cJSON_ArrayForEach(c, items)
    {
        if (!jstr(c, "text")) return 0;
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
            const char *t = cJSON_IsString(c) ? c->valuestring : jstr(c, "text");
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
    const char *t = jstr(p, "type");
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
        const char *role = jstr(p, "role");
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
        o = codex_call(m, cid, name, parsed);
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
        const char *cid = jstr(p, "call_id") ? jstr(p, "call_id") : jstr(p, "id");
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
        const char *cid = jstr(p, "call_id");
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
    if (m->cur.answers < 0 && jstr(o, "toolCallId")) m->cur.answers = imp_tool_entry(m, jstr(o, "toolCallId"));
    cJSON_AddNumberToObject(o, "timestamp", (double)ts);
    return imp_add_built(m, id, parent, o, err);
}

static int codex_line(imp *m, const cJSON *root, size_t lineno, char **err)
{
    const char *type = jstr(root, "type");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "payload");
    long long ts = imp_iso_ms(jstr(root, "timestamp"));
    if (type && !strcmp(type, "session_meta") && cJSON_IsObject(p)) {
        const char *id = jstr(p, "id"), *cwd = jstr(p, "cwd"), *parent = jstr(p, "parent_thread_id");
        /* A sub-agent's thread (Codex writes each its own rollout): its own session, linked
         * to the thread that spawned it. */
        if (parent && id && !m->parent_session && (m->parent_session = lc_asprintf("codex-%s", parent))) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "id", id);
            if (jstr(p, "agent_role")) cJSON_AddStringToObject(o, "type", jstr(p, "agent_role"));
            if (jstr(p, "agent_nickname")) cJSON_AddStringToObject(o, "name", jstr(p, "agent_nickname"));
            m->self_agent = cJSON_PrintUnformatted(o);
            cJSON_Delete(o);
        }
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
        codex_id(m, id, sizeof id, lineno);
        if (m->prev_linear >= 0) snprintf(previd, sizeof previd, "%s", m->v[m->prev_linear].id);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", "compactionSummary");
        cJSON_AddStringToObject(o, "summary", jstr(p, "message"));
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

/* The removed marks of what this import read: the conversations the file ends on (convtree:
 * each one's last entry up to its root, a parallel batch whole, each sub-agent's own) are
 * live, the rest abandoned. Only the rows of entries this import read are touched: a file
 * that goes on from a session another file stored (a resumed session, a sub-agent's own
 * file) leaves that file's marks as they are. In a store this import alone wrote every row
 * is its own and unmarked: only the abandoned ones are written. */
static int imp_mark(imp *m, char **err)
{
    size_t n = m->n, noff = 0, non = 0, marked = 0;
    int rc = LC_OK;
    if (!m->st || !n) return LC_OK;
    convtree_node *t = malloc(n * sizeof *t);
    unsigned char *live = malloc(n);
    const char **off = malloc(n * sizeof *off), **on = m->fresh ? NULL : malloc(n * sizeof *on);
    if (!t || !live || !off || (!m->fresh && !on)) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const imp_entry *e = &m->v[i];
        t[i] = (convtree_node){e->parent, e->seq, e->group, e->same_as, e->answers, e->orphan};
    }
    if ((rc = convtree_live(t, n, live, err)) != LC_OK) goto done;
    for (size_t i = 0; i < n; i++) {
        if (m->v[i].seed || m->v[i].kind == IMP_OTHER) continue;
        if (!live[i]) off[noff++] = m->v[i].id;
        else if (on) on[non++] = m->v[i].id;
    }
    if (noff && (rc = store_set_removed(m->st, off, noff, 1, &marked, err)) != LC_OK) goto done;
    if (non && (rc = store_set_removed(m->st, on, non, 0, NULL, err)) != LC_OK) goto done;
    m->stats->removed += marked;
done:
    free(t);
    free(live);
    free(off);
    free(on);
    return rc;
}

/* Record the sub-agents this import met in the session store's meta "subagents" ({id:
 * {type, call, messages, session}}), merged with what other imports recorded: the way from
 * a session to its sub-agents' stores (each store names its parent in parent_session). */
static int imp_agents_meta(imp *m, char **err)
{
    int rc = LC_OK, changed = 0;
    if (!m->nagents) return LC_OK;
    char *had = store_meta_get(m->st, "subagents"), *text = NULL;
    cJSON *all = had ? cJSON_Parse(had) : NULL;
    free(had);
    if (!cJSON_IsObject(all)) {
        cJSON_Delete(all);
        all = cJSON_CreateObject();
    }
    for (size_t i = 0; all && i < m->nagents; i++) {
        const imp_agent *g = &m->agents[i];
        if (!g->id) continue; /* a call whose agent wrote nothing this import saw */
        cJSON *o = cJSON_GetObjectItemCaseSensitive(all, g->id);
        if (!cJSON_IsObject(o)) {
            cJSON_DeleteItemFromObjectCaseSensitive(all, g->id);
            o = cJSON_AddObjectToObject(all, g->id);
            changed = 1;
        }
        const char *const keys[] = {"type", "call", "session"};
        const char *vals[] = {g->type, g->call, g->sub ? g->sub->session_id : NULL};
        for (size_t k = 0; o && k < 3; k++)
            if (vals[k] && !jstr(o, keys[k])) {
                cJSON_DeleteItemFromObjectCaseSensitive(o, keys[k]);
                cJSON_AddStringToObject(o, keys[k], vals[k]);
                changed = 1;
            }
        const cJSON *was = cJSON_GetObjectItemCaseSensitive(o, "messages");
        if (o && g->messages && (!cJSON_IsNumber(was) || was->valuedouble != (double)g->messages)) {
            cJSON_DeleteItemFromObjectCaseSensitive(o, "messages");
            cJSON_AddNumberToObject(o, "messages", (double)g->messages);
            changed = 1;
        }
    }
    if (!all || (changed && !(text = cJSON_PrintUnformatted(all)))) rc = lc_errf(err, LC_NOMEM, "out of memory");
    else if (changed) rc = store_meta_put(m->st, "subagents", text, err);
    free(text);
    cJSON_Delete(all);
    return rc;
}

/* What an import starts with (m zeroed). */
static int imp_init(imp *m, const char *home, import_stats *st, int whole)
{
    m->home = home;
    m->stats = st;
    m->prev_linear = -1;
    m->whole = whole;
    m->batch_idx = malloc(IMP_BATCH * sizeof *m->batch_idx);
    if (!m->tool_names) m->tool_names = cJSON_CreateObject();
    return m->batch_idx && m->tool_names ? LC_OK : LC_NOMEM;
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
    free(m->tool_entryv);
    ingest_idset_free(&m->api_ids);
    free(m->api_last);
    for (size_t i = 0; i < m->nwait; i++) cJSON_Delete(m->waitv[i].root);
    free(m->waitv);
    ingest_idset_free(&m->waits);
    free(m->wait_head);
    free(m->wait_tail);
    for (size_t i = 0; i < m->nagents; i++) {
        if (m->agents[i].sub) imp_free(m->agents[i].sub);
        LC_FREE(m->agents[i].id, m->agents[i].type, m->agents[i].call, m->agents[i].prompt, m->agents[i].sub);
    }
    free(m->agents);
    ingest_idset_free(&m->side_ids);
    free(m->side_agent);
    LC_FREE(m->parent_session, m->self_agent);
    store_close(m->st);
}

/* One parsed object of the transcript (*rootp, which a Claude Code line waiting for its
 * parent takes), by its format; `line`/`len` its text. */
static int imp_obj(imp *m, cJSON **rootp, const char *line, size_t len, size_t lineno, char **err)
{
    cJSON *root = *rootp;
    m->cur = (imp_cur){++m->seq, -1, -1, 0, -1, 0, NULL, 0};
    if (!cJSON_IsObject(root)) {
        m->stats->bad_lines++;
        imp_count(m, IMPORT_SKIPPED, "line that is no JSON object");
        return LC_OK;
    }
    switch (m->stats->format) {
    case IMPORT_PI: return pi_line(m, root, line, len, lineno, err);
    case IMPORT_CLAUDE: return claude_obj(m, rootp, err);
    default: return codex_line(m, root, lineno, err);
    }
}

/* One physical line: its first object (root, parsed up to `end`; taken) and every object
 * after it (older Pi wrote a compaction or a message on the line of the entry before). */
static int imp_line(imp *m, cJSON *root, const char *line, size_t len, const char *end, size_t lineno,
                    char **err)
{
    const char *stop = line + len;
    int rc;
    m->stats->lines++;
    m->part = 0;
    if (!cJSON_IsObject(root) || !end || end < line || end > stop) end = stop;
    rc = imp_obj(m, &root, line, (size_t)(end - line), lineno, err);
    cJSON_Delete(root);
    while (rc == LC_OK) {
        while (end < stop && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')) end++;
        if (end >= stop) break;
        const char *start = end;
        root = cJSON_ParseWithLengthOpts(start, (size_t)(stop - start), &end, 0);
        if (!cJSON_IsObject(root) || !end || end <= start || end > stop) {
            cJSON_Delete(root);
            m->stats->bad_lines++;
            imp_count(m, IMPORT_SKIPPED, "bytes after a line's object that are no JSON object");
            break;
        }
        m->part++;
        rc = imp_obj(m, &root, start, (size_t)(end - start), lineno, err);
        cJSON_Delete(root);
    }
    return rc;
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
    if (rc == LC_OK) rc = imp_agents_meta(m, err);
    if (rc == LC_OK && m->parent_session) rc = store_meta_ensure(m->st, "parent_session", m->parent_session, err);
    if (rc == LC_OK && m->self_agent) rc = store_meta_ensure(m->st, "subagent", m->self_agent, err);
    if (rc != LC_OK) return rc;
    return imp_date(m, err);
}

/* A sub-agent's store after a read (whole or resumed): its marks, its transcript (its own
 * file, or its session's for lines inside it), and what links it to its session (meta
 * parent_session, subagent {id, type, call}), written only where they change. */
static int imp_seal_sub(imp *t, const imp_agent *g, const char *path, const char *parent, char **err)
{
    int rc = imp_mark(t, err);
    char *rp = rc == LC_OK ? realpath(path, NULL) : NULL, *text = NULL;
    if (rp) rc = store_meta_ensure(t->st, "session_file", rp, err);
    free(rp);
    if (rc == LC_OK && parent[0]) rc = store_meta_ensure(t->st, "parent_session", parent, err);
    cJSON *o = rc == LC_OK ? cJSON_CreateObject() : NULL;
    if (o) {
        cJSON_AddStringToObject(o, "id", g->id ? g->id : "");
        if (g->type) cJSON_AddStringToObject(o, "type", g->type);
        if (g->call) cJSON_AddStringToObject(o, "call", g->call);
        text = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        rc = text ? store_meta_ensure(t->st, "subagent", text, err) : lc_errf(err, LC_NOMEM, "out of memory");
        free(text);
    }
    if (rc != LC_OK) return rc;
    return imp_date(t, err);
}

/* The sub-agents' imports to their end: stored, committed, sealed (a whole read) or their
 * new rows marked (a resumed one). */
static int imp_finish_subs(imp *m, const char *path, char **err)
{
    int rc = LC_OK;
    for (size_t i = 0; i < m->nagents && rc == LC_OK; i++) {
        imp *t = m->agents[i].sub;
        if (!t) continue;
        if ((rc = imp_flush(t, err)) != LC_OK || (rc = imp_finish(t, err)) != LC_OK) break;
        if ((rc = imp_open_store(t, err)) != LC_OK) break;
        rc = imp_seal_sub(t, &m->agents[i], path, m->session_id, err);
    }
    return rc;
}

/* The sessions of the sub-agents this import stored, for the summary. */
static void imp_note_subs(const imp *m, import_stats *st)
{
    size_t at = 0;
    st->subagents[0] = 0;
    for (size_t i = 0; i < m->nagents; i++) {
        const imp_agent *g = &m->agents[i];
        if (!g->sub || at >= sizeof st->subagents - 1) continue;
        int w = snprintf(st->subagents + at, sizeof st->subagents - at, "%s%s (%s, %zu messages)", at ? ", " : "",
                         g->sub->session_id, g->type ? g->type : "sub-agent", g->messages);
        if (w > 0) at += (size_t)w;
    }
    if (at >= sizeof st->subagents) snprintf(st->subagents + sizeof st->subagents - 5, 5, "...");
}

/* Only sub-agents' lines (subagents/agent-*.jsonl): the session's own store is not this
 * file's to make or to name. */
static int imp_side_only(const imp *m)
{
    return m->main_entries == 0 && m->side_ids.n > 0;
}

/* A compaction the file ends on (Pi; nothing came after it to carry its summary into a
 * context): its summary is stored all the same, as the plugin's catch-up of a branch's
 * tail stores it at the next session start. */
static int imp_trailing_compaction(imp *m, char **err)
{
    long leaf = -1;
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].group < 0 && !m->v[i].orphan && !m->v[i].seed && (leaf < 0 || m->v[i].seq >= m->v[leaf].seq))
            leaf = (long)i;
    if (leaf < 0 || m->v[leaf].kind != IMP_COMPACTION || !m->v[leaf].msg || m->v[leaf].ctxlast != leaf) return LC_OK;
    char *json = lc_strdup(m->v[leaf].msg);
    int rc;
    if (!json) return lc_errf(err, LC_NOMEM, "out of memory");
    if ((rc = imp_flush(m, err)) != LC_OK) {
        free(json);
        return rc;
    }
    imp_count(m, IMPORT_STORED, "compactionSummary");
    m->stats->messages++;
    return imp_queue(m, leaf, json, NULL, err);
}

/* The end of a read: everything stored and committed, the sub-agents' stores sealed, the
 * session's store made (a transcript with no message still gets its empty store, so it is
 * listed; a file of sub-agents' lines alone makes none) and sealed (a whole read: its
 * marks, its file, its date) or its new rows marked (a resumed read). */
static int imp_end(imp *m, const char *path, int full, char **err)
{
    int rc;
    if ((rc = imp_trailing_compaction(m, err)) != LC_OK) return rc;
    if ((rc = imp_flush(m, err)) != LC_OK || (rc = imp_finish(m, err)) != LC_OK) return rc;
    if ((rc = imp_finish_subs(m, path, err)) != LC_OK) return rc;
    imp_note_subs(m, m->stats);
    if (imp_side_only(m)) {
        for (size_t i = 0; i < m->nagents; i++)
            if (m->agents[i].sub) {
                snprintf(m->stats->session_id, sizeof m->stats->session_id, "%s", m->agents[i].sub->session_id);
                break;
            }
        return LC_OK;
    }
    if ((rc = imp_open_store(m, err)) != LC_OK) return rc;
    snprintf(m->stats->session_id, sizeof m->stats->session_id, "%s", m->session_id);
    return full ? imp_seal(m, path, err) : imp_mark(m, err);
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
    m.path = path;
    if ((rc = import_detect(path, &st->format, err)) != LC_OK) return rc;
    long long total = stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
    if (imp_init(&m, home, st, 1) != LC_OK) {
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
        const char *end = NULL;
        cJSON *root = clipped ? NULL : cJSON_ParseWithLengthOpts(line, len, &end, 0);
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
        rc = imp_line(&m, root, line, len, end, lineno, err);
        if (rc != LC_OK) goto done;
        if (progress && st->lines % IMP_PROGRESS_LINES == 0) progress(ud, jsonl_offset(r), total);
    }
    if (rc != LC_NOTFOUND && !st->torn_tail) {
        rc = lc_errf(err, LC_ERR, "%s: %s", path, jsonl_error(r) ? jsonl_error(r) : "read failed");
        goto done;
    }
    if (st->torn_tail) imp_count(&m, IMPORT_SKIPPED, "incomplete last line (still being written)");
    int orphans;
    if ((rc = claude_orphans(&m, &orphans, err)) != LC_OK) goto done;
    if ((rc = imp_end(&m, path, 1, err)) != LC_OK) goto done;
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
    e->seq = -1; /* before anything this call reads */
    e->group = e->same_as = e->answers = -1;
    e->agent = -1;
    e->seed = 1;
    e->kind = kind;
    e->ctxlast = ctxlast < 0 ? (long)m->n : ctxlast;
    m->n++;
    m->prev_linear = (long)m->n - 1;
    return LC_OK;
}

/* One object's id and parent as imp_extends weighs them: 0 = no entry (ignored), 1 = an
 * entry, -1 = a line that makes resuming meaningless (Pi version 1: no ids, one line). */
static int imp_extends_obj(const cJSON *root, import_format f, const char **id, const char **parent, int *side)
{
    const char *type = jstr(root, "type");
    *side = 0;
    if (f == IMPORT_CLAUDE) {
        *id = jstr(root, "uuid");
        *parent = claude_parent(root);
        *side = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "isSidechain"));
        return *id ? 1 : 0;
    }
    if (!type || !strcmp(type, "session")) return 0;
    *id = jstr(root, "id");
    *parent = jstr(root, "parentId");
    return *id ? 1 : -1;
}

/* Whether the lines after rs->offset only go on from the entry the last call ended on:
 * every new entry's parent is a new entry (before or after it in the file) or that entry,
 * and no new conversation starts but a sub-agent's. Then the older rows keep their marks
 * and the new ones are decided among themselves (imp_mark); anything else (a fork into
 * older entries, a new root, a parent not written yet) is read again from the start.
 * Codex rollouts are one line by construction. Reads the new bytes once more (they are
 * small: one turn); 1 = extends, 0 = read again from the start. */
static int imp_extends(const char *path, const import_resume *rs)
{
    jsonl_reader *r = NULL;
    const char *line;
    size_t len, n = 0, cap = 0;
    char **parents = NULL;
    ingest_idset ids = {0};
    int ok = 0;
    if (rs->format == IMPORT_CODEX) return 1;
    if (!rs->last_id || jsonl_open_at(path, rs->offset, &r, NULL) != LC_OK) return 0;
    while (jsonl_next(r, &line, &len, NULL) == LC_OK && jsonl_last_complete(r)) {
        const char *at = line, *stop = line + len, *end = NULL;
        while (at < stop) {
            cJSON *root = cJSON_ParseWithLengthOpts(at, (size_t)(stop - at), &end, 0);
            const char *id = NULL, *parent = NULL;
            int side = 0, what = cJSON_IsObject(root) ? imp_extends_obj(root, rs->format, &id, &parent, &side) : 0;
            if (what < 0) {
                cJSON_Delete(root);
                ok = 1;
                goto done;
            }
            if (what > 0 && !parent && !side) { /* a new root: the old branch ends (marks change) */
                cJSON_Delete(root);
                goto done;
            }
            if (what > 0) {
                if (n == cap) {
                    size_t nc = cap ? cap * 2 : 64;
                    char **np = realloc(parents, nc * sizeof *np);
                    if (!np) {
                        cJSON_Delete(root);
                        goto done;
                    }
                    parents = np;
                    cap = nc;
                }
                parents[n] = parent ? lc_strdup(parent) : NULL;
                if ((parent && !parents[n]) || ingest_idset_add(&ids, id) != LC_OK) {
                    free(parents[n]);
                    cJSON_Delete(root);
                    goto done;
                }
                n++;
            }
            cJSON_Delete(root);
            if (!end || end <= at) break;
            at = end;
            while (at < stop && (*at == ' ' || *at == '\t' || *at == '\r')) at++;
        }
    }
    ok = 1;
    for (size_t i = 0; i < n && ok; i++)
        if (parents[i] && strcmp(parents[i], rs->last_id) != 0 && ingest_idset_find(&ids, parents[i]) < 0) ok = 0;
done:
    for (size_t i = 0; i < n; i++) free(parents[i]);
    free(parents);
    ingest_idset_free(&ids);
    jsonl_close(r);
    return ok;
}

/* The state the next call resumes from: the leaf, its context's last message, recent
 * tool names (the newest IMP_RESUME_TOOLS). */
static int imp_keep_state(imp *m, import_resume *rs, long long offset, long long lines)
{
    /* The leaf: the main conversation's entry latest in the file (a line read late, once
     * its parent came, is not), else the last one added. */
    long leaf = m->n ? (long)m->n - 1 : -1;
    for (size_t i = 0; i < m->n; i++) {
        const imp_entry *e = &m->v[i];
        if (e->group < 0 && !e->orphan && (m->v[leaf].group >= 0 || e->seq >= m->v[leaf].seq)) leaf = (long)i;
    }
    char *last = leaf >= 0 ? lc_strdup(m->v[leaf].id) : NULL;
    long cl = leaf >= 0 ? m->v[leaf].ctxlast : -1;
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
    m.path = path;
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
        const char *end = NULL;
        cJSON *root = clipped ? NULL : cJSON_ParseWithLengthOpts(line, len, &end, 0);
        st->long_lines += (size_t)clipped;
        size_t abs_line = (size_t)base + lineno;
        rc = imp_line(&m, root, line, len, end, abs_line, err);
        if (rc != LC_OK) goto done;
        offset = jsonl_offset(r);
        lines = (long long)abs_line;
    }
    if (rc != LC_NOTFOUND) {
        rc = lc_errf(err, LC_ERR, "%s: %s", path, jsonl_error(r) ? jsonl_error(r) : "read failed");
        goto done;
    }
    int orphans;
    if ((rc = claude_orphans(&m, &orphans, err)) != LC_OK) goto done;
    /* Resumed, the new lines only go on from the last call's leaf (imp_extends): their
     * marks are decided among themselves, the older rows keep theirs. */
    if ((rc = imp_end(&m, path, full, err)) != LC_OK) goto done;
    if (m.st && m.cwd && *m.cwd) {
        /* A store opened before the session's folder was known gets it now. */
        char *had = store_meta_get(m.st, "cwd");
        if (!had || !*had) rc = store_meta_put(m.st, "cwd", m.cwd, err);
        free(had);
        if (rc != LC_OK) goto done;
    }
    if (imp_keep_state(&m, rs, offset, lines) != LC_OK) goto oom;
    /* A line whose parent is not written yet: the next call reads the file from the start,
     * so that the tree (and its marks) is decided again once that parent has come. */
    if (orphans) rs->offset = 0;
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
