/*
 * dag.c -- the summary DAG: compaction passes, the frontier, node headers, coverage,
 * event rows and heal (dag.h). Every node is written with its provenance in one
 * transaction (store_summary_add), so the store is consistent after any crash and a pass
 * resumes by asking which messages no leaf covers yet.
 */
#include "dag.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "store.h"
#include "util.h"

#define DAG_DEFAULT_CHUNK 20000
#define DAG_DEFAULT_SUMMARY 1200
#define DAG_HEAL_WINDOWS 8


/* ---- events and runs ------------------------------------------------------------- */

int dag_event(store *s, const char *kind, const char *data_json, char **err)
{
    return store_event_add(s, kind, data_json, err);
}

int64_t dag_event_count(store *s, const char *kind)
{
    return store_event_count(s, kind);
}

/* ---- boundaries and coverage ------------------------------------------------------ */

/* The fresh tail as it is walked: tokens so far, the boundary, the uncovered sum. */
typedef struct dag_tail_walk {
    long keep, acc, unc;
    int64_t boundary, last;
    int reached;
} dag_tail_walk;

static int dag_tail_visit(void *ud, const store_dag_msg *m, char **err)
{
    dag_tail_walk *t = ud;
    (void)err;
    if (t->last < 0) {
        t->last = m->ordinal;
        if (t->keep <= 0) {
            t->boundary = m->ordinal + 1;
            t->reached = 1;
            return STORE_VISIT_STOP;
        }
    }
    if (m->uncovered) t->unc += (long)m->tokens;
    if (!t->reached) {
        t->acc += (long)m->tokens;
        t->boundary = m->ordinal;
        if (t->acc >= t->keep) t->reached = 1;
        if (!t->reached) return LC_OK;
    }
    /* A tail that starts at a toolResult would orphan it from its call. */
    t->boundary = m->ordinal;
    return m->role && strcmp(m->role, "toolResult") == 0 ? LC_OK : STORE_VISIT_STOP;
}

/* The fresh tail, walked from the newest message back: O(tail), never O(history). Also
 * sums the tail's eligible messages that no leaf covers, so a pass knows how many
 * uncovered tokens lie before the boundary without reading them. */
static int dag_tail(store *s, long keep_recent_tokens, int64_t *ordinal, long *tail_uncovered,
                    char **err)
{
    dag_tail_walk t = {.keep = keep_recent_tokens, .last = -1};
    int stopped = 0;
    int rc = store_dag_walk_tail(s, dag_tail_visit, &t, &stopped, err);
    if (rc != LC_OK) return rc;
    if (!t.reached) t.boundary = 0; /* everything is fresh */
    else if (!stopped) t.boundary = 0; /* walked to the first message: all in the tail */
    *ordinal = t.boundary;
    if (tail_uncovered) *tail_uncovered = t.unc;
    return LC_OK;
}

int dag_fresh_boundary(store *s, long keep_recent_tokens, int64_t *ordinal, char **err)
{
    return dag_tail(s, keep_recent_tokens, ordinal, NULL, err);
}

int dag_uncovered(store *s, int64_t before_ordinal, int64_t *count, char **err)
{
    int64_t wm = 0;
    int rc;
    *count = 0;
    /* Below the watermark every eligible message is covered: count from there. */
    if ((rc = store_dag_progress(s, &wm, NULL, err)) != LC_OK) return rc;
    return store_dag_count_uncovered(s, wm, before_ordinal, count, err);
}

/* ---- nodes -------------------------------------------------------------------------- */

void dag_nodes_free(dag_node *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) LC_FREE(v[i].text, v[i].rich, v[i].first_entry, v[i].last_entry);
    free(v);
}

char *dag_header(const dag_node *n)
{
    return lc_asprintf("[lcm:summary #%lld depth %d span %s..%s]", (long long)n->id, n->depth,
                       n->first_entry ? n->first_entry : "?", n->last_entry ? n->last_entry : "?");
}

long dag_node_block_tokens(const dag_node *n)
{
    char *h = dag_header(n);
    long t = (long)summ_estimate_tokens(h ? h : "") + (long)summ_estimate_tokens(n->text ? n->text : "") + 1;
    free(h);
    return t;
}

/* The frontier as it is read: a growing array of nodes. */
typedef struct dag_nodes {
    dag_node *v;
    size_t n, cap;
} dag_nodes;

static int dag_frontier_visit(void *ud, const store_node *r, char **err)
{
    dag_nodes *a = ud;
    dag_node *nv = lc_grow(a->v, &a->cap, a->n + 1, sizeof *nv);
    if (!nv) return lc_errf(err, LC_NOMEM, "dag: out of memory");
    a->v = nv;
    dag_node *d = &a->v[a->n++];
    memset(d, 0, sizeof *d);
    d->id = r->id;
    d->depth = r->depth;
    d->leaf = r->leaf;
    d->text = lc_strdup(r->text ? r->text : "");
    if (r->tiers_json) {
        cJSON *tiers = cJSON_Parse(r->tiers_json);
        const char *rich = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tiers, "rich"));
        if (rich) d->rich = lc_strdup(rich);
        cJSON_Delete(tiers);
    }
    d->tokens = (long)r->tokens;
    d->first_ordinal = r->first_ordinal;
    d->last_ordinal = r->last_ordinal;
    d->first_entry = r->first_entry ? lc_strdup(r->first_entry) : NULL;
    d->last_entry = r->last_entry ? lc_strdup(r->last_entry) : NULL;
    d->entry_count = r->entry_count;
    return d->text ? LC_OK : lc_errf(err, LC_NOMEM, "dag: out of memory");
}

int dag_frontier(store *s, dag_node **out, size_t *n, char **err)
{
    dag_nodes a = {0};
    int rc = store_dag_walk_frontier(s, dag_frontier_visit, &a, err);
    *out = NULL;
    *n = 0;
    if (rc != LC_OK) {
        dag_nodes_free(a.v, a.n);
        return rc;
    }
    *out = a.v;
    *n = a.n;
    return LC_OK;
}

static long dag_block_total(const dag_node *v, size_t n)
{
    long t = 0;
    for (size_t i = 0; i < n; i++) t += dag_node_block_tokens(&v[i]);
    return t;
}

/* Write one node from a summarizer result; the tiers keep the thorough text and say which
 * rung and entry produced the primary one (heal and describe read them). */
static int dag_write_node(store *s, const summ_result *r, int depth, const char *const *entries,
                          size_t n_entries, const int64_t *children, size_t n_children,
                          int64_t *id, char **err)
{
    int rc;
    cJSON *tiers = cJSON_CreateObject();
    char *tiers_json = NULL;
    if (!tiers) return lc_errf(err, LC_NOMEM, "dag: out of memory");
    if (r->rich_text) cJSON_AddStringToObject(tiers, "rich", r->rich_text);
    cJSON_AddNumberToObject(tiers, "level", r->level);
    cJSON_AddStringToObject(tiers, "entry", r->entry ? r->entry : "?");
    tiers_json = cJSON_PrintUnformatted(tiers);
    cJSON_Delete(tiers);
    if (!tiers_json) return lc_errf(err, LC_NOMEM, "dag: out of memory");
    store_summary in = {
        .kind = n_children ? "condensed" : "leaf",
        .depth = depth,
        .text = r->text,
        .tiers_json = tiers_json,
        .tokens = (int64_t)r->tokens,
        .entry_ids = entries,
        .n_entries = n_entries,
        .children = children,
        .n_children = n_children,
    };
    rc = store_summary_add(s, &in, id, err);
    free(tiers_json);
    return rc;
}

/* ---- leaves ------------------------------------------------------------------------- */

typedef struct dag_chunk {
    char **ids;
    size_t n, cap;
    sbuf src;
    long tokens;
    int64_t first_ordinal, last_ordinal;
} dag_chunk;

static void dag_chunk_reset(dag_chunk *c)
{
    for (size_t i = 0; i < c->n; i++) free(c->ids[i]);
    c->n = 0;
    c->tokens = 0;
    c->src.len = 0;
    if (c->src.p) c->src.p[0] = '\0';
}

static void dag_chunk_free(dag_chunk *c)
{
    dag_chunk_reset(c);
    free(c->ids);
    sb_free(&c->src);
}

static int dag_chunk_add(dag_chunk *c, const char *id, const char *role, const char *text,
                         long tokens, int64_t ordinal)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 32;
        char **ni = realloc(c->ids, nc * sizeof *ni);
        if (!ni) return LC_NOMEM;
        c->ids = ni;
        c->cap = nc;
    }
    if (!(c->ids[c->n] = lc_strdup(id))) return LC_NOMEM;
    c->n++;
    /* Appended piece by piece: printf's %s copied the history's text a byte at a time
     * (a tenth of an extractive compaction). */
    sb_puts(&c->src, role);
    sb_append(&c->src, ": ", 2);
    sb_puts(&c->src, text ? text : "");
    sb_append(&c->src, "\n\n", 2);
    c->tokens += tokens;
    if (c->n == 1) c->first_ordinal = ordinal;
    c->last_ordinal = ordinal;
    return c->src.oom ? LC_NOMEM : LC_OK;
}

/* A chunk as it is read: full at chunk_tokens, at a place a leaf may end. */
typedef struct dag_chunk_walk {
    dag_chunk *c;
    long chunk_tokens;
    int complete;
} dag_chunk_walk;

static int dag_chunk_visit(void *ud, const store_dag_msg *m, char **err)
{
    dag_chunk_walk *w = ud;
    /* A leaf ends where the chunk is full, but never right before a toolResult: the
     * call and its result are one unit for the summary and for the cut after it. */
    if (w->c->tokens >= w->chunk_tokens && (!m->role || strcmp(m->role, "toolResult") != 0)) {
        w->complete = 1;
        return STORE_VISIT_STOP;
    }
    if (dag_chunk_add(w->c, m->entry_id, m->role ? m->role : "?", m->text, (long)m->tokens, m->ordinal) != LC_OK)
        return lc_errf(err, LC_NOMEM, "dag: out of memory");
    return LC_OK;
}

/* Read the next chunk of uncovered eligible messages after `after_ordinal` and before
 * `boundary`. *complete: the chunk reached leaf_chunk tokens at a place a leaf may end. */
static int dag_next_chunk(store *s, int64_t after_ordinal, int64_t boundary, long chunk_tokens,
                          dag_chunk *c, int *complete, char **err)
{
    dag_chunk_walk w = {c, chunk_tokens, 0};
    dag_chunk_reset(c);
    int rc = store_dag_walk_uncovered(s, after_ordinal, boundary, dag_chunk_visit, &w, NULL, err);
    *complete = w.complete;
    return rc;
}

static long dag_or(long v, long dflt) { return v > 0 ? v : dflt; }

/* Whether the caller wants the pass to end before the next node. */
static int dag_stop(const dag_opts *o, dag_stats *stats)
{
    if (!o->keep_going || o->keep_going(o->keep_going_ud)) return 0;
    stats->stopped = 1;
    return 1;
}

/* A pass's run row: begun at its first write, its lease renewed before each node after
 * (a summarizer call may take the length of its timeout). */
static void dag_run_touch(store *s, int64_t *run)
{
    if (!*run) *run = store_run_begin(s, "dag-pass");
    else store_run_renew(s, *run);
}

/* Another pass made this node first: not an error, the pass just ends. */
static int dag_conflict(dag_stats *stats, char **err)
{
    stats->conflicts++;
    if (err) {
        free(*err);
        *err = NULL;
    }
    return LC_OK;
}

/* Leaves from the watermark on (store_dag_progress): everything eligible before it is
 * covered, and the pending count says, without reading a row, whether the uncovered
 * tokens before the boundary fill a chunk at all. A pass therefore reads only what it
 * summarizes (plus at most one partial chunk with `flush`), never the history. */
static int dag_leaves(store *s, summ_ctx *sc, const dag_opts *o, int64_t boundary,
                      long tail_uncovered, dag_stats *stats, int *nodes, int64_t *run, char **err)
{
    int rc = LC_OK, complete = 0;
    dag_chunk c = {0};
    int64_t wm = 0, pending = 0, next_wm = 0;
    long chunk = dag_or(o->leaf_chunk_tokens, DAG_DEFAULT_CHUNK);
    long target = dag_or(o->summary_tokens, DAG_DEFAULT_SUMMARY);
    summ_result r = {0};
    if ((rc = store_dag_progress(s, &wm, &pending, err)) != LC_OK) goto done;
    int64_t before = pending - tail_uncovered;
    if (before <= 0 || (!o->flush && before < chunk)) goto done;
    int64_t after = wm - 1;
    for (;;) {
        next_wm = after + 1;
        if (o->max_nodes > 0 && *nodes >= o->max_nodes) break;
        if (o->max_source_tokens > 0 && stats->source_tokens >= o->max_source_tokens) break;
        if ((rc = dag_next_chunk(s, after, boundary, chunk, &c, &complete, err)) != LC_OK) goto done;
        /* The range up to the boundary is exhausted once a read ends short of a chunk. */
        next_wm = boundary > wm ? boundary : wm;
        if (c.n == 0) break;
        if (!complete && !o->flush) {
            next_wm = c.first_ordinal;
            break;
        }
        if (dag_stop(o, stats)) {
            next_wm = c.first_ordinal;
            break;
        }
        dag_run_touch(s, run);
        if ((rc = summ_summarize(sc, c.src.p, (size_t)target, &r, err)) != LC_OK) goto done;
        int64_t id = 0;
        rc = dag_write_node(s, &r, 0, (const char *const *)c.ids, c.n, NULL, 0, &id, err);
        if (rc == LC_BUSY) {
            rc = dag_conflict(stats, err);
            next_wm = c.first_ordinal;
            break;
        }
        if (rc != LC_OK) goto done;
        stats->leaves++;
        stats->messages += (int64_t)c.n;
        stats->source_tokens += c.tokens;
        stats->summary_tokens += (long)r.tokens;
        (*nodes)++;
        summ_result_free(&r);
        memset(&r, 0, sizeof r);
        after = c.last_ordinal;
        if (!complete) break;
    }
    /* Work left behind a cap is not an error: the next pass starts where this one ended. */
    if (c.n > 0 && (complete || o->flush) &&
        ((o->max_nodes > 0 && *nodes >= o->max_nodes) ||
         (o->max_source_tokens > 0 && stats->source_tokens >= o->max_source_tokens)))
        stats->capped = 1;
    if (next_wm > wm) rc = store_dag_set_watermark(s, wm, next_wm, NULL, err);
done:
    summ_result_free(&r);
    dag_chunk_free(&c);
    return rc;
}

/* ---- condensation -------------------------------------------------------------------- */

/* The oldest run (>= 2) of adjacent same-depth nodes at the shallowest depth that has one.
 * Returns the run length (0: none) and its start in *start. */
static size_t dag_find_run(const dag_node *v, size_t n, size_t *start)
{
    for (int d = 0; d < DAG_MAX_DEPTH; d++) {
        for (size_t i = 0; i + 1 < n; i++) {
            if (v[i].depth != d || v[i + 1].depth != d) continue;
            size_t len = 2;
            while (len < DAG_MAX_FANOUT && i + len < n && v[i + len].depth == d) len++;
            *start = i;
            return len;
        }
    }
    return 0;
}

static int dag_condense(store *s, summ_ctx *sc, const dag_opts *o, dag_stats *stats, int *nodes,
                        int64_t *run, char **err)
{
    int rc = LC_OK;
    dag_node *v = NULL;
    size_t n = 0;
    long target = dag_or(o->summary_tokens, DAG_DEFAULT_SUMMARY);
    summ_result r = {0};
    sbuf src = {0};
    /* Most passes add no node: the block measured last time still holds, and reading the
     * frontier (every node of the history) is not needed to know it fits. */
    int64_t known = 0;
    if (store_dag_block_get(s, &known) && (o->block_budget <= 0 || known <= o->block_budget)) {
        stats->block_tokens = (long)known;
        goto done;
    }
    /* A pass that already made its max_nodes cannot condense: measuring the block here
     * read the whole frontier once per leaf (`lcm compact` makes one node a pass, so a
     * 20M-token backfill read its summaries 500 times over). The next pass measures it. */
    if (o->max_nodes > 0 && *nodes >= o->max_nodes) {
        stats->block_tokens = -1;
        stats->capped = 1;
        goto done;
    }
    for (;;) {
        dag_nodes_free(v, n);
        v = NULL;
        if ((rc = dag_frontier(s, &v, &n, err)) != LC_OK) goto done;
        stats->block_tokens = dag_block_total(v, n);
        if (o->block_budget <= 0 || stats->block_tokens <= o->block_budget) {
            rc = store_dag_block_put(s, stats->block_tokens, err);
            break;
        }
        if (o->max_nodes > 0 && *nodes >= o->max_nodes) {
            stats->capped = 1;
            break;
        }
        size_t start = 0, len = dag_find_run(v, n, &start);
        if (len == 0) {
            char *data = lc_asprintf("{\"blockTokens\":%ld,\"budget\":%ld,\"frontier\":%zu}",
                                     stats->block_tokens, o->block_budget, n);
            stats->stalled = 1;
            dag_run_touch(s, run);
            rc = dag_event(s, "condensation-stalled", data, err);
            free(data);
            goto done;
        }
        if (dag_stop(o, stats)) break;
        int depth = v[start].depth + 1;
        assert(depth <= DAG_MAX_DEPTH);
        int64_t children[DAG_MAX_FANOUT];
        src.len = 0;
        for (size_t i = 0; i < len; i++) {
            char *h = dag_header(&v[start + i]);
            sb_printf(&src, "%s\n%s\n\n", h ? h : "", v[start + i].text);
            free(h);
            children[i] = v[start + i].id;
        }
        if (src.oom) {
            rc = lc_errf(err, LC_NOMEM, "dag: out of memory");
            goto done;
        }
        dag_run_touch(s, run);
        if ((rc = summ_summarize(sc, src.p, (size_t)target, &r, err)) != LC_OK) goto done;
        int64_t id = 0;
        rc = dag_write_node(s, &r, depth, NULL, 0, children, len, &id, err);
        if (rc == LC_BUSY) {
            rc = dag_conflict(stats, err);
            break;
        }
        if (rc != LC_OK) goto done;
        stats->condensed++;
        stats->summary_tokens += (long)r.tokens;
        (*nodes)++;
        summ_result_free(&r);
        memset(&r, 0, sizeof r);
    }
done:
    summ_result_free(&r);
    sb_free(&src);
    dag_nodes_free(v, n);
    return rc;
}

int dag_pass(store *s, summ_ctx *sc, const dag_opts *o, dag_stats *out, char **err)
{
    int rc = LC_OK, nodes = 0;
    dag_stats stats = {0};
    int64_t boundary = 0;
    long tail_uncovered = 0; /* unknown with before_ordinal: pending bounds it from above */
    /* The `runs` row is opened by the first write: a pass with nothing to do (most turns)
     * writes nothing at all. */
    int64_t run = 0;
    summ_pass_begin(sc);
    if (o->before_ordinal > 0)
        boundary = o->before_ordinal;
    else if ((rc = dag_tail(s, o->keep_recent_tokens, &boundary, &tail_uncovered, err)) != LC_OK)
        goto done;
    stats.boundary_ordinal = boundary;
    if ((rc = dag_leaves(s, sc, o, boundary, tail_uncovered, &stats, &nodes, &run, err)) != LC_OK)
        goto done;
    rc = dag_condense(s, sc, o, &stats, &nodes, &run, err);
done:
    /* A model call the caller gave up ends the pass like keep_going would have. */
    if (rc == LC_CANCELLED) stats.stopped = 1;
    store_run_end(s, run, rc == LC_CANCELLED ? "stopped" : rc != LC_OK ? "error" : stats.stalled ? "condensation-stalled"
                                              : stats.capped ? "capped"
                                              : stats.stopped ? "stopped"
                                              : stats.conflicts ? "conflict" : "ok");
    if (out) *out = stats;
    return rc;
}

/* ---- heal ----------------------------------------------------------------------------- */

void dag_heal_report_free(dag_heal_report *r)
{
    if (!r) return;
    free(r->text);
    r->text = NULL;
}

static int dag_source_visit(void *ud, const store_dag_msg *m, char **err)
{
    sbuf *b = ud;
    (void)err;
    if (m->role && *m->role) sb_printf(b, "%s: ", m->role);
    sb_printf(b, "%s\n\n", m->text ? m->text : "");
    return LC_OK;
}

/* The source a node was made from: its messages (leaf) or its children (condensed). */
static char *dag_node_source(store *s, int64_t id, int leaf)
{
    sbuf b = {0};
    if (store_dag_walk_source(s, id, leaf, dag_source_visit, &b, NULL) != LC_OK || b.oom) {
        sb_free(&b);
        return NULL;
    }
    return b.p ? sb_detach(&b) : lc_strdup("");
}

/* Map the source over windows of `window` tokens and reduce once. LC_BUSY: a budget
 * refused a call. *out malloc'd. */
static int dag_heal_text(summ_ctx *sc, const char *source, long window, long target, char **out,
                         char **err)
{
    size_t len = strlen(source), step = (size_t)window * 4;
    size_t windows = (len + step - 1) / step;
    const char *entry = NULL;
    int rc = LC_OK;
    sbuf maps = {0};
    *out = NULL;
    if (windows <= 1)
        return summ_run_chain(sc, source, (size_t)target, SUMM_DETAILS, "heal", out, &entry, err);
    for (size_t w = 0; w < windows; w++) {
        size_t from = w * step, n = len - from < step ? len - from : step;
        char *part = lc_strndup(source + from, n), *text = NULL;
        if (!part) {
            rc = lc_errf(err, LC_NOMEM, "dag: out of memory");
            goto done;
        }
        rc = summ_run_chain(sc, part, (size_t)target, SUMM_DETAILS, "heal-map", &text, &entry, err);
        free(part);
        if (rc != LC_OK) goto done;
        sb_printf(&maps, "%s\n\n", text);
        free(text);
    }
    if (maps.oom) {
        rc = lc_errf(err, LC_NOMEM, "dag: out of memory");
        goto done;
    }
    rc = summ_run_chain(sc, maps.p, (size_t)target, SUMM_DETAILS, "heal-reduce", out, &entry, err);
done:
    sb_free(&maps);
    return rc;
}

/* A node heal may re-derive: read before any write. */
typedef struct dag_cand {
    int64_t id;
    int leaf;
} dag_cand;

typedef struct dag_cands {
    dag_cand *v;
    size_t n, cap;
} dag_cands;

static int dag_cand_visit(void *ud, const store_node *r, char **err)
{
    dag_cands *a = ud;
    (void)err;
    dag_cand *nv = lc_grow(a->v, &a->cap, a->n + 1, sizeof *nv);
    if (!nv) return STORE_VISIT_STOP; /* out of memory: heal the ones read */
    a->v = nv;
    a->v[a->n++] = (dag_cand){r->id, r->leaf};
    return LC_OK;
}

int dag_heal(store *s, summ_ctx *sc, const dag_heal_opts *o, dag_heal_report *out, char **err)
{
    int rc = LC_OK, attempted = 0;
    sbuf b = {0};
    long window = dag_or(o->heal_source_tokens, 3000);
    long target = dag_or(o->summary_tokens, DAG_DEFAULT_SUMMARY);
    int64_t run = o->apply ? store_run_begin(s, "heal") : 0;
    memset(out, 0, sizeof *out);
    if (sc) summ_pass_begin(sc);
    /* Candidates are read first: a heal write must not run under an open read cursor. */
    dag_cands cands = {0};
    if ((rc = store_dag_walk_prefixed(s, SUMM_TRUNCATED_TAG, dag_cand_visit, &cands, err)) != LC_OK) {
        free(cands.v);
        goto done;
    }
    dag_cand *cs = cands.v;
    size_t nc = cands.n;
    out->candidates = (int)nc;
    sb_printf(&b, "heal%s: %zu mechanical node(s)\n", o->apply ? "" : " (dry run)", nc);
    for (size_t i = 0; i < nc && rc == LC_OK; i++) {
        char *source = dag_node_source(s, cs[i].id, cs[i].leaf), *text = NULL, *e = NULL;
        long src_tokens = source ? (long)summ_estimate_tokens(source) : 0;
        long windows = (src_tokens + window - 1) / window;
        if (!source) {
            rc = lc_errf(err, LC_NOMEM, "dag: out of memory");
        } else if (windows > DAG_HEAL_WINDOWS) {
            out->blocked++;
            sb_printf(&b, "#%lld: blocked: source %ld tokens is %ld windows of %ld (max %d)\n",
                      (long long)cs[i].id, src_tokens, windows, window, DAG_HEAL_WINDOWS);
        } else if (o->max_nodes > 0 && attempted >= o->max_nodes) {
            sb_printf(&b, "#%lld: left for a later run (--max-nodes %d)\n", (long long)cs[i].id,
                      o->max_nodes);
        } else if (!o->apply || !sc) {
            attempted++;
            sb_printf(&b, "#%lld: would re-derive from %ld source tokens in %ld window(s)\n",
                      (long long)cs[i].id, src_tokens, windows < 1 ? 1 : windows);
        } else {
            summ_pass_stats ps;
            summ_pass_stats_get(sc, &ps);
            attempted++;
            if (o->tokens_per_heal > 0 && ps.billed_tokens + src_tokens + target > o->tokens_per_heal) {
                out->budget_stopped = 1;
                sb_printf(&b, "#%lld: stopped: summarizerTokensPerHeal %ld would be crossed\n",
                          (long long)cs[i].id, o->tokens_per_heal);
                free(source);
                break;
            }
            store_run_renew(s, run);
            int hr = dag_heal_text(sc, source, window, target, &text, &e);
            if (hr == LC_CANCELLED) {
                /* The caller gave the call up: stop here, nothing was changed. */
                rc = LC_CANCELLED;
                free(e);
                free(text);
                free(source);
                break;
            }
            if (hr == LC_BUSY) {
                out->budget_stopped = 1;
                sb_printf(&b, "#%lld: stopped: a summarizer budget refused the call\n",
                          (long long)cs[i].id);
                free(e);
                free(source);
                break;
            } else if (hr != LC_OK || !text || !*text ||
                       strncmp(text, SUMM_TRUNCATED_TAG, strlen(SUMM_TRUNCATED_TAG)) == 0 ||
                       summ_estimate_tokens(text) >= (size_t)src_tokens) {
                out->unchanged++;
                sb_printf(&b, "#%lld: unchanged (%s)\n", (long long)cs[i].id,
                          hr != LC_OK ? (e ? e : "failed") : "no improvement");
            } else if ((rc = store_summary_set_text(s, cs[i].id, text, (int64_t)summ_estimate_tokens(text),
                                                    err)) == LC_OK) {
                out->healed++;
                sb_printf(&b, "#%lld: healed (%zu tokens)\n", (long long)cs[i].id,
                          summ_estimate_tokens(text));
            } else if (rc == LC_NOTFOUND) { /* a repair dropped it meanwhile */
                rc = LC_OK;
                out->unchanged++;
                sb_printf(&b, "#%lld: unchanged (the node is gone)\n", (long long)cs[i].id);
            }
            free(e);
            free(text);
        }
        free(source);
    }
    if (sc) {
        summ_pass_stats ps;
        summ_pass_stats_get(sc, &ps);
        out->billed_tokens = ps.billed_tokens;
    }
    sb_printf(&b, "total: %d healed, %d unchanged, %d blocked%s; %ld tokens billed", out->healed,
              out->unchanged, out->blocked, out->budget_stopped ? ", budget reached" : "",
              out->billed_tokens);
    if (o->apply && rc == LC_OK) {
        char *data = lc_asprintf("{\"candidates\":%d,\"healed\":%d,\"unchanged\":%d,\"blocked\":%d,"
                                 "\"billed\":%ld}",
                                 out->candidates, out->healed, out->unchanged, out->blocked,
                                 out->billed_tokens);
        rc = dag_event(s, "heal", data, err);
        free(data);
    }
    free(cs);
    out->text = b.oom ? NULL : sb_detach(&b);
    if (b.oom) sb_free(&b);
done:
    store_run_end(s, run, rc == LC_OK ? "ok" : "error");
    return rc;
}
