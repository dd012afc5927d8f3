/*
 * import_tree.c -- the entry table of one import and its replay into the store (see
 * import_tree.h): what a format reader adds, in file order, becomes ingest batches in the
 * order the plugin would have stored them living through the session.
 */
#include "import_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "jsonw.h"
#include "util.h"

const char *imp_jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ISO-8601 UTC to epoch milliseconds, as the reference host reads entry timestamps
 * (0 when unparsable, like the host). */
long long imp_iso_ms(const char *iso)
{
    long long t = lc_iso_ms(iso);
    return t < 0 ? 0 : t;
}

/* An entry's time, toward the session's date when the header gives none. */
void imp_saw_ts(imp *m, long long ts)
{
    if (ts > 0 && (!m->first_ts || ts < m->first_ts)) m->first_ts = ts;
}

/* One more of `kind` in the summary's counts (import_kind). */
void imp_count(imp *m, int which, const char *kind)
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
int imp_tool_put_at(imp *m, const char *id, const char *name, long entry)
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

int imp_tool_put(imp *m, const char *id, const char *name)
{
    return imp_tool_put_at(m, id, name, (long)m->n);
}

/* The entry that made call `id`, -1 when unknown. */
long imp_tool_entry(const imp *m, const char *id)
{
    long i = id ? ingest_idset_find(&m->tool_ids, id) : -1;
    return i >= 0 ? m->tool_entryv[i] : -1;
}

const char *imp_tool_name(const imp *m, const char *id)
{
    long i = id ? ingest_idset_find(&m->tool_ids, id) : -1;
    return i >= 0 ? m->tool_namev[i] : NULL;
}

/* Index the names a resumed import starts with. */
int imp_tools_index(imp *m)
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

long imp_find(const imp *m, const char *id)
{
    return ingest_idset_find(&m->ids, id);
}

int imp_grow(imp *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    imp_entry *v = realloc(m->v, cap * sizeof *v);
    if (!v) return LC_NOMEM;
    m->v = v;
    m->cap = cap;
    return LC_OK;
}

/* ---- the store side ------------------------------------------------------------------- */

int imp_open_store(imp *m, char **err)
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
int imp_date(imp *m, char **err)
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
int imp_flush(imp *m, char **err)
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
int imp_finish(imp *m, char **err)
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
int imp_queue(imp *m, long idx, char *json, cJSON *tree, char **err)
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
int imp_add(imp *m, const char *id, const char *parent_id, int kind, char *json, cJSON *tree,
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
        const char *what = m->cur.kind ? m->cur.kind : tree && imp_jstr(tree, "role") ? imp_jstr(tree, "role") : "message";
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
int imp_add_built(imp *m, const char *id, const char *parent_id, cJSON *o, char **err)
{
    char *json = o ? jsonw_print(o) : NULL;
    if (!json) {
        cJSON_Delete(o);
        o = NULL;
    }
    return imp_add(m, id, parent_id, IMP_MESSAGE, json, o, NULL, err);
}


/* What an import starts with (m zeroed). */
int imp_init(imp *m, const char *home, import_stats *st, int whole)
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
void imp_free(imp *m)
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
