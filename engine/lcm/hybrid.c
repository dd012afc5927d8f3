/*
 * hybrid.c -- hybrid semantic recall and the embedding pass (see hybrid.h).
 */
#include "hybrid.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "embed.h"
#include "files.h"
#include "util.h"
#include "vecindex.h"

/* ---- the fusion -------------------------------------------------------------------------- */

static int hybrid_by_cosine(const void *a, const void *b)
{
    const hybrid_cand *x = *(const hybrid_cand *const *)a, *y = *(const hybrid_cand *const *)b;
    return x->cosine < y->cosine ? 1 : x->cosine > y->cosine ? -1 : 0;
}

static int hybrid_by_score(const void *a, const void *b)
{
    const hybrid_cand *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    if (x->has_vec != y->has_vec) return x->has_vec ? -1 : 1;
    if (x->has_vec && x->cosine != y->cosine) return x->cosine < y->cosine ? 1 : -1;
    int fx = x->fts_rank ? x->fts_rank : 1 << 30, fy = y->fts_rank ? y->fts_rank : 1 << 30;
    if (fx != fy) return fx < fy ? -1 : 1;
    if (x->store != y->store) return x->store < y->store ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id ? 1 : 0;
}

void hybrid_rrf(hybrid_cand *c, size_t n, double w_fts, double w_vector, long k)
{
    if (k <= 0) k = 60;
    hybrid_cand **byv = n ? malloc(n * sizeof *byv) : NULL;
    size_t nv = 0;
    for (size_t i = 0; i < n; i++) {
        c[i].vec_rank = 0;
        if (c[i].has_vec && byv) byv[nv++] = &c[i];
    }
    if (nv) qsort(byv, nv, sizeof *byv, hybrid_by_cosine);
    for (size_t i = 0; i < nv; i++) byv[i]->vec_rank = (int)i + 1;
    free(byv);
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        if (c[i].fts_rank > 0) s += w_fts / (double)(k + c[i].fts_rank);
        if (c[i].vec_rank > 0) s += w_vector / (double)(k + c[i].vec_rank);
        c[i].score = s;
    }
    if (n) qsort(c, n, sizeof *c, hybrid_by_score);
}

void hybrid_result_free(hybrid_result *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) free(r->v[i].entry_id);
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* ---- gathering the candidates ------------------------------------------------------------ */

typedef struct hybrid_gather {
    hybrid_result *res;
    size_t cap;
    size_t store;
    int rank;
    /* the nearest vectors over every store, best first */
    hybrid_cand top[HYBRID_VEC_CANDIDATES];
    size_t ntop;
    const float *q;
    int qdim;
} hybrid_gather;

static int hybrid_push(hybrid_gather *g, const hybrid_cand *c)
{
    hybrid_result *r = g->res;
    hybrid_cand *nv = lc_grow(r->v, &g->cap, r->n + 1, sizeof *nv);
    if (!nv) return LC_NOMEM;
    r->v = nv;
    r->v[r->n++] = *c;
    return LC_OK;
}

static int hybrid_fts_visit(void *ud, const store_search_row *row, char **err)
{
    hybrid_gather *g = ud;
    hybrid_cand c = {.store = g->store, .kind = STORE_VEC_MESSAGE, .id = row->id, .fts_rank = ++g->rank};
    if (!(c.entry_id = lc_strdup(row->entry_id)) || hybrid_push(g, &c) != LC_OK) {
        free(c.entry_id);
        return lc_errf(err, LC_NOMEM, "hybrid: out of memory");
    }
    g->res->fts_hits++;
    return LC_OK;
}

/* A store's nearest vectors (vecindex, best first) into the nearest over every store. */
static int hybrid_vec_visit(void *ud, const vecindex_hit *h, char **err)
{
    hybrid_gather *g = ud;
    double cos = h->cosine;
    /* No positive similarity is no neighbour: orthogonal rows are not ranked by meaning.
     * The hits come best first: the first such one ends this store's list. */
    if (cos <= 1e-6) return STORE_VISIT_STOP;
    if (g->ntop == HYBRID_VEC_CANDIDATES && cos <= g->top[g->ntop - 1].cosine) return STORE_VISIT_STOP;
    char *eid = NULL;
    if (h->entry_id && !(eid = lc_strdup(h->entry_id))) return lc_errf(err, LC_NOMEM, "hybrid: out of memory");
    size_t at = g->ntop < HYBRID_VEC_CANDIDATES ? g->ntop : g->ntop - 1;
    if (g->ntop == HYBRID_VEC_CANDIDATES) free(g->top[at].entry_id);
    else g->ntop++;
    while (at > 0 && g->top[at - 1].cosine < cos) {
        g->top[at] = g->top[at - 1];
        at--;
    }
    g->top[at] = (hybrid_cand){.store = g->store, .kind = h->kind, .id = h->id, .entry_id = eid,
                               .has_vec = 1, .cosine = cos};
    return LC_OK;
}

/* The query's words as quoted FTS5 terms joined by `op`: " OR " (any word counts, bm25
 * ranks) or " " (every word). */
static char *hybrid_words_query(const char *q, const char *op)
{
    sbuf b = {0};
    size_t terms = 0, len;
    const char *p = q, *s;
    while (terms < HYBRID_QUERY_TERMS && (s = lc_next_word(&p, &len))) {
        sb_printf(&b, "%s\"%.*s\"", terms ? op : "", (int)len, s);
        terms++;
    }
    if (!terms) {
        sb_free(&b);
        return lc_strdup("");
    }
    return sb_detach(&b);
}

/* One store's full-text candidates. Ranking is bm25 over any of the words, as long as
 * at most RECALL_RANK_MAX messages match (recall's bound: ranking costs per match);
 * beyond it the messages holding every word are ranked instead, and beyond that too the
 * newest of them are taken (the output says so). */
static int hybrid_fts_side(store *s, const char *query, const char *orq, const store_search_scope *scope,
                           hybrid_gather *g, char **err)
{
    int64_t count = 0;
    char *andq = NULL;
    int rc = store_search_count(s, orq, scope, &count, err), newest = 0;
    const char *use = orq;
    if (rc == LC_OK && count > RECALL_RANK_MAX) {
        g->res->fts_narrowed = 1;
        if (!(andq = hybrid_words_query(query, " "))) return lc_errf(err, LC_NOMEM, "hybrid: out of memory");
        use = andq;
        rc = store_search_count(s, andq, scope, &count, err);
        newest = rc == LC_OK && count > RECALL_RANK_MAX;
        if (newest) g->res->fts_newest = 1;
    }
    if (rc == LC_OK) rc = store_search_page(s, use, scope, newest, HYBRID_FTS_CANDIDATES, 0, hybrid_fts_visit, g, err);
    free(andq);
    return rc;
}

int hybrid_search(store *const *stores, size_t n_stores, const hybrid_opts *o, hybrid_result *out, char **err)
{
    int rc = LC_OK;
    float *qv = NULL;
    char *orq = NULL;
    hybrid_gather *g = calloc(1, sizeof *g);
    memset(out, 0, sizeof *out);
    if (!g) return lc_errf(err, LC_NOMEM, "hybrid: out of memory");
    if (!o->cfg || !o->cfg->enabled) {
        rc = lc_errf(err, LC_INVALID, "%s", embed_not_configured);
        goto done;
    }
    g->res = out;
    g->q = o->qvec;
    g->qdim = o->qdim;
    if (!g->q) {
        const char *t = o->query;
        g->qdim = 0;
        if ((rc = embed_texts(o->cfg, &t, 1, &qv, &g->qdim, err)) != LC_OK) goto done;
        g->q = qv;
    }
    if (!(orq = hybrid_words_query(o->query, " OR "))) {
        rc = lc_errf(err, LC_NOMEM, "hybrid: out of memory");
        goto done;
    }
    store_search_scope scope = {.include_removed = o->include_removed};
    for (size_t i = 0; i < n_stores; i++) {
        g->store = i;
        g->rank = 0;
        if (*orq && (rc = hybrid_fts_side(stores[i], o->query, orq, &scope, g, err)) != LC_OK) goto done;
        vecindex_stats vs;
        rc = vecindex_search(stores[i], o->cfg->model, o->include_removed, g->q, g->qdim, HYBRID_VEC_CANDIDATES,
                             hybrid_vec_visit, g, &vs, err);
        out->scanned += vs.scanned;
        out->other_dim += vs.other_dim;
        int have_vec = rc == LC_OK;
        if (rc == LC_INVALID && n_stores > 1) {
            /* A backend without vectors: its full-text side still counts. */
            free(*err);
            *err = NULL;
            out->no_vectors++;
            rc = LC_OK;
        }
        if (rc != LC_OK) goto done;
        /* Coverage from the cache's own count: the store's count per model costs a scan
         * of its index on every query. */
        if (have_vec) {
            int64_t m = store_message_count(stores[i]);
            out->messages += m > 0 ? m : 0;
            out->embedded += vs.messages_embedded;
        }
    }
    /* Merge the nearest vectors into the full-text candidates. */
    for (size_t t = 0; t < g->ntop; t++) {
        hybrid_cand *c = &g->top[t];
        size_t j = 0;
        for (; j < out->n; j++)
            if (out->v[j].store == c->store && out->v[j].kind == c->kind && out->v[j].id == c->id) break;
        if (j < out->n) {
            out->v[j].has_vec = 1;
            out->v[j].cosine = c->cosine;
            free(c->entry_id);
        } else if (hybrid_push(g, c) != LC_OK) {
            free(c->entry_id);
            rc = lc_errf(err, LC_NOMEM, "hybrid: out of memory");
        }
        c->entry_id = NULL;
    }
    g->ntop = 0;
    if (rc == LC_OK) hybrid_rrf(out->v, out->n, o->cfg->w_fts, o->cfg->w_vector, o->cfg->rrf_k);
done:
    for (size_t t = 0; t < g->ntop; t++) free(g->top[t].entry_id);
    if (rc != LC_OK) hybrid_result_free(out);
    free(g);
    free(qv);
    free(orq);
    return rc;
}

/* ---- the tool's text --------------------------------------------------------------------- */

typedef struct hybrid_label {
    char *session_id, *date, *cwd;
} hybrid_label;

/* Where in `text` the snippet starts: the first query word found, else the start. */
static size_t hybrid_snippet_at(const char *text, const char *query)
{
    size_t best = (size_t)-1;
    const char *p = query;
    while (*p) {
        while (*p && !isalnum((unsigned char)*p)) p++;
        const char *s = p;
        while (*p && isalnum((unsigned char)*p)) p++;
        size_t n = (size_t)(p - s);
        if (n < 3) continue;
        for (const char *t = text; *t; t++)
            if (strncasecmp(t, s, n) == 0) {
                if ((size_t)(t - text) < best) best = (size_t)(t - text);
                break;
            }
    }
    return best == (size_t)-1 ? 0 : best;
}

static int hybrid_node_text(void *ud, const store_node *n, char **err)
{
    (void)err;
    char **out = ud;
    *out = lc_asprintf("%s\x1f%d\x1f%s", n->leaf ? "leaf" : "condensed", n->depth, n->text ? n->text : "");
    return LC_OK;
}

static void hybrid_line(sbuf *b, store *s, const hybrid_cand *c, const hybrid_label *lab, const hybrid_opts *o,
                        int *any_clipped)
{
    int clipped = 0;
    char *snip = NULL;
    sb_puts(b, "- [hybrid] ");
    if (c->kind == STORE_VEC_MESSAGE) {
        store_row row;
        memset(&row, 0, sizeof row);
        int have = store_get_message(s, c->entry_id, &row, NULL) == LC_OK;
        sb_printf(b, "%s%s [%s]", have && row.removed ? "[removed] " : "", c->entry_id, have ? row.role : "?");
        if (lab) sb_printf(b, " (past session %s, %s, cwd %s)", lab->session_id, lab->date, lab->cwd);
        int64_t top = 0, leaf = 0;
        store_search_cover(s, c->entry_id, &top, &leaf);
        if (top) {
            sb_printf(b, " covered by summary #%lld", (long long)top);
            if (leaf != top) sb_printf(b, " (leaf #%lld)", (long long)leaf);
        }
        if (have && row.text) {
            size_t len = strlen(row.text);
            snip = recall_line(row.text, len, hybrid_snippet_at(row.text, o->query), o->redact, &clipped);
        }
        store_row_free(&row);
    } else {
        char *node = NULL;
        store_summary_get(s, c->id, hybrid_node_text, &node, NULL);
        char *kind = node, *depth = node ? strchr(node, '\x1f') : NULL, *text = depth ? strchr(depth + 1, '\x1f') : NULL;
        if (depth) *depth++ = '\0';
        if (text) *text++ = '\0';
        sb_printf(b, "summary #%lld [%s, depth %s]", (long long)c->id, kind ? kind : "?", depth ? depth : "?");
        if (lab) sb_printf(b, " (past session %s, %s, cwd %s)", lab->session_id, lab->date, lab->cwd);
        if (text) snip = recall_line(text, strlen(text), hybrid_snippet_at(text, o->query), o->redact, &clipped);
        free(node);
    }
    sb_printf(b, ": %s (", snip ? snip : "");
    if (c->fts_rank) sb_printf(b, "full-text #%d", c->fts_rank);
    if (c->fts_rank && c->vec_rank) sb_puts(b, ", ");
    if (c->vec_rank) sb_printf(b, "meaning #%d, cosine %.3f", c->vec_rank, c->cosine);
    sb_puts(b, ")\n");
    *any_clipped |= clipped;
    free(snip);
}

static char *hybrid_format(store *const *stores, const hybrid_label *labels, const hybrid_opts *o,
                           const hybrid_result *r, const char *sessions_note)
{
    sbuf b = {0};
    size_t limit = o->limit ? o->limit : RECALL_PAGE;
    size_t from = o->offset < r->n ? o->offset : r->n;
    size_t to = from + limit < r->n ? from + limit : r->n;
    const lcm_embeddings *e = o->cfg;
    if (to == from)
        sb_printf(&b, "hybrid: no hits (model %s)\n", e->model);
    else
        sb_printf(&b, "hybrid: %zu hit(s) fused from full-text and meaning (model %s; reciprocal rank fusion, k %ld,"
                  " weights fts %g vector %g); showing %zu-%zu\n",
                  r->n, e->model, e->rrf_k, e->w_fts, e->w_vector, from + 1, to);
    int any_clipped = 0;
    for (size_t i = from; i < to; i++)
        hybrid_line(&b, stores[r->v[i].store], &r->v[i], labels ? &labels[r->v[i].store] : NULL, o, &any_clipped);
    if (to < r->n) sb_printf(&b, "more: call again with offset %zu\n", to);
    sb_printf(&b, "meaning: %zu vector(s) compared", r->scanned);
    if (r->other_dim) sb_printf(&b, ", %zu of another dimension skipped (re-embed: lcm reindex --embeddings --force)", r->other_dim);
    sb_printf(&b, "; %lld of %lld messages embedded by %s", (long long)r->embedded, (long long)r->messages, e->model);
    if (r->embedded < r->messages) sb_puts(&b, " (the rest are found by their words only until the background worker"
                                           " or `lcm reindex --embeddings` embeds them)");
    sb_putc(&b, '\n');
    if (r->fts_newest)
        sb_printf(&b, "bound: the words match more than %d messages even all together: their full-text side is the"
                  " newest %d, not ranked\n", RECALL_RANK_MAX, HYBRID_FTS_CANDIDATES);
    else if (r->fts_narrowed)
        sb_printf(&b, "bound: any of the words matches more than %d messages: the full-text side ranks those holding"
                  " every word\n", RECALL_RANK_MAX);
    if (r->no_vectors) sb_printf(&b, "bound: %zu store(s) cannot hold vectors (their backend): full-text only\n", r->no_vectors);
    if (any_clipped) sb_printf(&b, "bound: a grep line is clipped at %d characters; lcm_expand_query reads the entry\n", RECALL_LINE_CHARS);
    if (sessions_note) sb_puts(&b, sessions_note);
    return sb_detach(&b);
}

int hybrid_grep(store *s, const hybrid_opts *o, char **text, char **err)
{
    hybrid_result r;
    *text = NULL;
    int rc = hybrid_search(&s, 1, o, &r, err);
    if (rc != LC_OK) return rc;
    *text = hybrid_format(&s, NULL, o, &r, NULL);
    hybrid_result_free(&r);
    return *text ? LC_OK : lc_errf(err, LC_NOMEM, "hybrid: out of memory");
}

/* The past stores a cross-session hybrid search reads, kept open for it (at most
 * RECALL_SESSIONS_MAX), each with its session's label. */
typedef struct hybrid_sessions {
    store *st[RECALL_SESSIONS_MAX];
    hybrid_label lab[RECALL_SESSIONS_MAX];
    size_t n;
} hybrid_sessions;

/* The walk's visit of one past store (catalog_each_fn): the store is taken, kept open for
 * the search. */
static int hybrid_sessions_take(void *cb, const catalog_entry *e, size_t i, store **s, char **err)
{
    hybrid_sessions *h = cb;
    hybrid_label *lab = &h->lab[h->n];
    (void)i;
    h->st[h->n++] = *s;
    *s = NULL;
    lab->session_id = lc_strdup(e->session_id);
    lab->date = lc_utc_format(e->created, "%Y-%m-%d", "?");
    lab->cwd = lc_strdup(e->cwd && *e->cwd ? e->cwd : "?");
    if (!lab->session_id || !lab->date || !lab->cwd) return lc_errf(err, LC_NOMEM, "hybrid: out of memory");
    return h->n < RECALL_SESSIONS_MAX ? LC_OK : CATALOG_STOP;
}

int hybrid_grep_sessions(const char *agent_home, const char *current_session_id, const char *cwd,
                         recall_scope scope, const hybrid_opts *o, char **text, char **err)
{
    catalog_filter f = {.except_session = current_session_id, .order = CATALOG_NEWEST_FIRST};
    catalog_counts c;
    hybrid_sessions h = {0};
    char *note = NULL;
    hybrid_result r = {0};
    int rc;
    *text = NULL;
    if (!o->cfg || !o->cfg->enabled) return lc_errf(err, LC_INVALID, "%s", embed_not_configured);
    if (scope == RECALL_SCOPE_SESSIONS) f.cwd = cwd;
    f.all_homes = scope == RECALL_SCOPE_FLEET;
    /* Older stores are counted, not searched (never migrated by a search); damaged ones and
     * newer schemas are skipped. */
    if ((rc = catalog_each(agent_home, &f, CATALOG_ANSWERS, hybrid_sessions_take, &h, &c, err)) != LC_OK) goto done;
    if ((rc = hybrid_search(h.st, h.n, o, &r, err)) != LC_OK) goto done;
    sbuf nb = {0};
    sb_printf(&nb, "sessions: %zu searched", h.n);
    if (c.older) sb_printf(&nb, ", %zu older-generation (not searched; /lcm migrate)", c.older);
    if (c.damaged + c.newer) sb_printf(&nb, ", %zu skipped", c.damaged + c.newer);
    sb_putc(&nb, '\n');
    if (c.unreached) sb_printf(&nb, "bound: stopped at %d stores\n", RECALL_SESSIONS_MAX);
    if (r.n) sb_puts(&nb, "read one with lcm_expand_query({session, entry_id}); past history, not this session\n");
    note = sb_detach(&nb);
    *text = hybrid_format(h.st, h.lab, o, &r, note);
    if (!*text) rc = lc_errf(err, LC_NOMEM, "hybrid: out of memory");
done:
    hybrid_result_free(&r);
    for (size_t i = 0; i < h.n; i++) {
        store_close(h.st[i]);
        free(h.lab[i].session_id);
        free(h.lab[i].date);
        free(h.lab[i].cwd);
    }
    free(note);
    return rc;
}

/* ---- the embedding pass ------------------------------------------------------------------ */

typedef struct hybrid_pending {
    store_vec_kind *kind;
    int64_t *id;
    char **text;
    size_t n, max;
    long max_chars;
} hybrid_pending;

static int hybrid_pending_visit(void *ud, const store_vec_pending *t, char **err)
{
    hybrid_pending *d = ud;
    if (d->n == d->max) return STORE_VISIT_STOP; /* one more exists: `more` */
    size_t keep = files_utf8_prefix(t->text, t->text_len, (size_t)d->max_chars);
    if (!(d->text[d->n] = lc_strndup(t->text, keep))) return lc_errf(err, LC_NOMEM, "hybrid: out of memory");
    d->kind[d->n] = t->kind;
    d->id[d->n] = t->id;
    d->n++;
    return LC_OK;
}

/* The dimension of the first stored vector of a model (the walk stops there). */
static int hybrid_dim_visit(void *ud, const store_vec_row *row, char **err)
{
    (void)err;
    *(int *)ud = row->dim;
    return STORE_VISIT_STOP;
}

int hybrid_embed_pass(store *s, const lcm_embeddings *cfg, size_t max_rows, int force, hybrid_embed_stats *st,
                      char **err)
{
    hybrid_pending d = {0};
    float *vecs = NULL;
    store_vec *rows = NULL;
    int dim = 0, stopped = 0, rc = LC_OK;
    memset(st, 0, sizeof *st);
    if (!cfg || !cfg->enabled) return lc_errf(err, LC_INVALID, "%s", embed_not_configured);
    if (max_rows == 0) max_rows = cfg->pass_rows > 0 ? (size_t)cfg->pass_rows : 64;
    d.max = max_rows;
    d.max_chars = cfg->max_chars > 0 ? cfg->max_chars : 8000;
    d.kind = calloc(max_rows, sizeof *d.kind);
    d.id = calloc(max_rows, sizeof *d.id);
    d.text = calloc(max_rows, sizeof *d.text);
    if (!d.kind || !d.id || !d.text) {
        rc = lc_errf(err, LC_NOMEM, "hybrid: out of memory");
        goto done;
    }
    if ((rc = store_vec_walk_missing(s, cfg->model, force, hybrid_pending_visit, &d, &stopped, err)) != LC_OK) goto done;
    if (d.n == 0) goto done;
    /* New rows take the dimension the model's stored rows have (--force re-embeds other
     * models' rows, never these): an answer of another length would leave rows no query can
     * be compared with. A store without vectors has none to keep. */
    if (store_vec_walk(s, cfg->model, 1, hybrid_dim_visit, &dim, NULL) != LC_OK) dim = 0;
    if ((rc = embed_texts_metered(cfg, (const char *const *)d.text, d.n, &vecs, &dim, &st->tokens, &st->requests,
                                  err)) != LC_OK)
        goto done;
    if (!(rows = calloc(d.n, sizeof *rows))) {
        rc = lc_errf(err, LC_NOMEM, "hybrid: out of memory");
        goto done;
    }
    for (size_t i = 0; i < d.n; i++)
        rows[i] = (store_vec){.kind = d.kind[i], .id = d.id[i], .model = cfg->model, .dim = dim,
                              .v = vecs + i * (size_t)dim};
    if ((rc = store_vec_put(s, rows, d.n, err)) != LC_OK) goto done;
    st->embedded = d.n;
    st->more = stopped;
done:
    for (size_t i = 0; i < d.n; i++) free(d.text[i]);
    free(d.text);
    free(d.kind);
    free(d.id);
    free(vecs);
    free(rows);
    return rc;
}

char *hybrid_coverage_line(store *s, const lcm_embeddings *cfg)
{
    store_vec_coverage c;
    if (!cfg || !cfg->enabled) return NULL;
    if (store_vec_coverage_get(s, cfg->model, &c, NULL) != LC_OK) return lc_strdup("this store cannot hold vectors");
    sbuf b = {0};
    sb_printf(&b, "%lld of %lld messages embedded (model %s)", (long long)c.messages_embedded, (long long)c.messages,
              cfg->model);
    if (c.summaries) sb_printf(&b, ", %lld of %lld summaries", (long long)c.summaries_embedded, (long long)c.summaries);
    if (c.messages_other || c.summaries_other)
        sb_printf(&b, "; %lld row(s) carry another model's vectors (%s): `lcm reindex --embeddings --force` re-embeds them",
                  (long long)(c.messages_other + c.summaries_other), c.other_model ? c.other_model : "?");
    store_vec_coverage_free(&c);
    return sb_detach(&b);
}
