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
 *
 * This file is the driver: format detection, the read loop (whole and resumed), and the
 * end of a read (the removed marks, the sub-agents' stores sealed). The entry table and
 * its replay are import_tree.c; each format's reader is import_pi.c, import_claude.c,
 * import_codex.c.
 */
#include "import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "convtree.h"
#include "import_claude.h"
#include "import_codex.h"
#include "import_pi.h"
#include "import_tree.h"
#include "ingest.h"
#include "jsonl.h"
#include "store.h"
#include "util.h"

#define IMP_PROGRESS_LINES 512
#define IMP_DETECT_LINES 25
#define IMP_TAIL_STEP_MS 50

const char *import_format_name(import_format f)
{
    switch (f) {
    case IMPORT_PI: return "pi";
    case IMPORT_CLAUDE: return "claude-code";
    case IMPORT_CODEX: return "codex";
    default: return "unknown";
    }
}

/* ---- detection and the driver ------------------------------------------------------------ */

static import_format imp_shape(const cJSON *root)
{
    const char *type = imp_jstr(root, "type");
    if (!cJSON_IsObject(root)) return IMPORT_UNKNOWN;
    if (type && !strcmp(type, "session") && imp_jstr(root, "id")) return IMPORT_PI;
    if (type && (!strcmp(type, "session_meta") || !strcmp(type, "response_item") || !strcmp(type, "turn_context")))
        return IMPORT_CODEX;
    if (imp_jstr(root, "sessionId") && (imp_jstr(root, "uuid") || cJSON_GetObjectItemCaseSensitive(root, "parentUuid")))
        return IMPORT_CLAUDE;
    if (type && !strcmp(type, "summary") && imp_jstr(root, "leafUuid")) return IMPORT_CLAUDE;
    if (!type && imp_jstr(root, "id") && cJSON_GetObjectItemCaseSensitive(root, "instructions")) return IMPORT_CODEX;
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
            if (vals[k] && !imp_jstr(o, keys[k])) {
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
    const char *type = imp_jstr(root, "type");
    *side = 0;
    if (f == IMPORT_CLAUDE) {
        *id = imp_jstr(root, "uuid");
        *parent = claude_parent(root);
        *side = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "isSidechain"));
        return *id ? 1 : 0;
    }
    if (!type || !strcmp(type, "session")) return 0;
    *id = imp_jstr(root, "id");
    *parent = imp_jstr(root, "parentId");
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

