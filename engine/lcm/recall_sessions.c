/*
 * recall_sessions.c -- recall across past sessions (recall.h): the scopes (session,
 * sessions, all_sessions, fleet) and the fleet policy check, and the cross-session grep:
 * one walk over the catalog's stores (catalog_walk), each store's hits labelled with its
 * session, query hits merged into one ranked list on the stores' joint counts.
 */
#include "recall.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "config.h"
#include "recall_query.h"
#include "util.h"

/* ---- past sessions ------------------------------------------------------------------ */

static const char *const recall_scope_names[] = {"session", "sessions", "all_sessions", "fleet"};

int recall_scope_parse(const char *name, recall_scope *out, char **err)
{
    for (size_t i = 0; name && i < sizeof recall_scope_names / sizeof recall_scope_names[0]; i++)
        if (strcmp(name, recall_scope_names[i]) == 0) {
            *out = (recall_scope)i;
            return LC_OK;
        }
    return lc_errf(err, LC_INVALID, "lcm_grep: scope is session, sessions (this project's past sessions), "
                   "all_sessions (every session this agent home wrote) or fleet (every session in the "
                   "shared store)%s%s%s", name ? "; not \"" : "", name ? name : "", name ? "\"" : "");
}

const char *recall_scope_name(recall_scope scope)
{
    return (size_t)scope < sizeof recall_scope_names / sizeof recall_scope_names[0] ? recall_scope_names[scope] : "?";
}

int recall_scope_check(const char *agent_home, recall_scope scope, char **err)
{
    lcm_config cfg;
    char *path = NULL, *why = NULL;
    int rc;
    if (scope != RECALL_SCOPE_FLEET) return LC_OK;
    if (!(path = lc_asprintf("%s/lcm.json", agent_home ? agent_home : ".")))
        return lc_errf(err, LC_NOMEM, "recall: out of memory");
    if ((rc = lcm_config_load(path, &cfg, &why)) != LC_OK) {
        rc = lc_errf(err, rc == LC_NOMEM ? LC_NOMEM : LC_ERR, "lcm_grep: scope fleet is refused: %s cannot be "
                     "read (%s), and only its \"fleetRecall\": true allows reading other agents' sessions",
                     path, why ? why : "?");
        goto done;
    }
    if (!cfg.fleet_recall)
        rc = lc_errf(err, LC_INVALID, "lcm_grep: scope fleet (every session in the shared store, whoever wrote "
                     "it) is refused: agents do not read each other's history unless the agent home's lcm.json "
                     "sets \"fleetRecall\": true (%s; `/lcm settings fleetRecall true`). Scopes sessions and "
                     "all_sessions read this home's own sessions", path);
    lcm_config_free(&cfg);
done:
    free(why);
    free(path);
    return rc;
}

/* Cross-session query hits in one list: by the key in `score` (the rank's score, or the
 * time for a time order), higher first; ties by session order then rank within the store
 * (the hits' order before the sort, kept in `ordinal`'s stead by the index), so the order is
 * the same call after call. */
typedef struct recall_merge_item {
    double key;
    size_t at;
} recall_merge_item;

static int recall_merge_cmp(const void *a, const void *b)
{
    const recall_merge_item *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? 1 : -1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* The joint counts of the stores a cross-session query ranked: rows and, per phrase of
 * the query, the rows holding it, summed over the stores (each store once). */
typedef struct recall_joint {
    size_t n;            /* phrases */
    double rows;
    double *df;
    const double *w;     /* the query's weights (recall_query) */
} recall_joint;

static void recall_joint_add(recall_joint *j, const recall_hit *h)
{
    if (!h->rank_in || h->rank_n != 3 + 2 * j->n) return;
    j->rows += h->rank_in[0];
    for (size_t i = 0; i < j->n; i++) j->df[i] += h->rank_in[3 + 2 * i];
}

#define RECALL_TOOL_WEIGHT 0.5
#define RECALL_THINKING_WEIGHT 0.5

/* The same score as the store's rank (store_sqlite_search.c, lc_rank), on the joint
 * counts: a word common in one session and rare across all of them weighs as rare. */
static double recall_joint_score(const recall_joint *j, const recall_hit *h)
{
    if (!h->rank_in || h->rank_n != 3 + 2 * j->n) return h->score;
    double avgdl = h->rank_in[1] > 0 ? h->rank_in[1] : 1, dl = h->rank_in[2], score = 0;
    double norm = 1.2 * (0.25 + 0.75 * dl / avgdl);
    for (size_t i = 0; i < j->n; i++) {
        double tf = h->rank_in[4 + 2 * i];
        if (tf <= 0) continue;
        double idf = log(1.0 + (j->rows - j->df[i] + 0.5) / (j->df[i] + 0.5));
        if (idf < 0.01) idf = 0.01;
        score += (j->w ? j->w[i] : 1.0) * idf * (1.0 + tf * 2.2 / (tf + norm));
    }
    /* What people and agents said ranks above what tools printed or were given: a tool's
     * output, or a call's arguments (a file written, an edit's text), repeats the words of a
     * question far more often than it answers one. Measured on the shared real questions:
     * recall@10 0.53 -> 0.58, MRR 0.27 -> 0.33 (outputs); calls with no prose too: see DESIGN. */
    if (h->tool_words) score *= RECALL_TOOL_WEIGHT;
    /* A message found by its thinking alone: the agent's reasoning restates what it was
     * asked and plans, the reply it then wrote says what was found; so the thinking weighs
     * as a tool's words do. */
    if (h->thinking) score *= RECALL_THINKING_WEIGHT;
    return score;
}

/* A message of a turn -- the agent's reply, its calls and their results -- also weighs
 * RECALL_TURN_WEIGHT of the prompt that turn answers, when that prompt matched too: a
 * question about the past names what was asked then ("how do I reach the vm from the
 * browser") more often than the words of the answer ("open http://host:8006"), and the
 * reply to a matching prompt is where that answer is. The prompt keeps its own score.
 * Hits of one store are adjacent in `out` (the walk pushes a store's page whole), so a
 * prompt is looked for within its store's run only. `m[k].key` holds hit k's own score
 * on entry. */
#define RECALL_TURN_WEIGHT 0.25

static int recall_turn_weigh(const recall_result *out, recall_merge_item *m)
{
    double *own = malloc(out->n * sizeof *own);
    if (!own) return LC_NOMEM;
    for (size_t k = 0; k < out->n; k++) own[k] = m[k].key;
    for (size_t b = 0, e; b < out->n; b = e) {
        const char *sid = out->hits[b].session_id ? out->hits[b].session_id : "";
        for (e = b + 1; e < out->n; e++)
            if (strcmp(out->hits[e].session_id ? out->hits[e].session_id : "", sid) != 0) break;
        for (size_t k = b; k < e; k++) {
            const recall_hit *h = &out->hits[k];
            if (!h->has_prompt || !strcmp(h->role, "user")) continue;
            for (size_t p = b; p < e; p++)
                if (out->hits[p].ordinal == h->prompt_ordinal && !strcmp(out->hits[p].role, "user")) {
                    m[k].key += RECALL_TURN_WEIGHT * own[p];
                    break;
                }
        }
    }
    free(own);
    return LC_OK;
}

static int recall_merge(recall_result *out, const recall_grep_opts *o, size_t want, const recall_joint *j)
{
    recall_merge_item *m = out->n ? malloc(out->n * sizeof *m) : NULL;
    recall_hit *sorted = out->n ? malloc(out->n * sizeof *sorted) : NULL;
    if (out->n && (!m || !sorted)) {
        free(m);
        free(sorted);
        return LC_NOMEM;
    }
    for (size_t k = 0; k < out->n; k++) {
        const recall_hit *h = &out->hits[k];
        m[k].at = k;
        m[k].key = o->sort == RECALL_SORT_NEWEST   ? (double)h->created
                   : o->sort == RECALL_SORT_OLDEST ? -(double)h->created
                   : j                             ? recall_joint_score(j, h)
                                                   : h->score;
    }
    if (j && o->sort == RECALL_SORT_RELEVANCE && out->n && recall_turn_weigh(out, m) != LC_OK) {
        free(m);
        free(sorted);
        return LC_NOMEM;
    }
    if (out->n > 1) qsort(m, out->n, sizeof *m, recall_merge_cmp);
    size_t from = o->offset < out->n ? o->offset : out->n;
    size_t to = from + want < out->n ? from + want : out->n;
    for (size_t k = 0; k < out->n; k++) {
        recall_hit *h = &out->hits[m[k].at];
        if (k >= from && k < to) {
            sorted[k - from] = *h;
            continue;
        }
        LC_FREE(h->entry_id, h->role, h->snippet, h->session_id, h->session_date, h->session_cwd, h->rank_in);
    }
    free(out->hits);
    free(m);
    out->hits = sorted;
    out->n = to - from;
    return LC_OK;
}

/* One cross-session grep as the walk carries it from store to store. */
typedef struct recall_sessions_ctx {
    const recall_grep_opts *o;
    const char *cwd;
    recall_scope scope;
    recall_result *out;
    recall_joint *joint;     /* NULL: hits keep each store's own score */
    double t0;
    /* Query mode ("counted"): every store's best offset+page hits, merged into one ranked
     * list, then the page cut from it. Pattern mode: the stores' matches in store order,
     * `skip` passed over, then up to `want` kept, one more looked for ("probing") to say
     * whether another page exists. */
    size_t skip, want;
    int counted, probing;
    int64_t total;
} recall_sessions_ctx;

/* The options one store is searched with: the page it is asked for and the time left. */
static recall_grep_opts recall_sessions_opts(const recall_sessions_ctx *c, double left)
{
    recall_grep_opts po = *c->o;
    po.summary_id = 0;
    po.time_budget_ms = left;
    po.resume = c->counted ? NULL : c->o->resume;
    if (c->counted) {
        po.offset = 0;
        po.limit = c->o->offset + c->want;
    } else if (c->probing) { /* pattern, page full: is there one more? */
        po.offset = 0;
        po.limit = 1;
    } else {
        po.offset = c->skip;
        po.limit = c->want - c->out->n;
    }
    return po;
}

/* One store's result added to the walk's: its notes and counts, and its hits moved over,
 * each labelled with the store's session. LC_NOMEM when a hit cannot be kept: a short list
 * would read as all there is. */
static int recall_sessions_take(recall_sessions_ctx *c, const catalog_entry *e, recall_result *pr)
{
    recall_result *out = c->out;
    const char *sid = e->session_id ? e->session_id : "?", *pcwd = e->cwd ? e->cwd : "?";
    char *date = lc_utc_format(e->created, "%Y-%m-%d", "?");
    int rc = date ? LC_OK : LC_NOMEM;
    out->stores_searched++;
    out->words_dropped = pr->words_dropped;
    out->stopwords = pr->stopwords;
    out->no_words = pr->no_words;
    out->raw = pr->raw;
    if (pr->timed_out) out->stop_time = 1;
    if (pr->limit_hits) {
        if (!out->limit_hits) {
            out->limit_rc = pr->limit_rc;
            out->limit_entry = pr->limit_entry;
            pr->limit_entry = NULL;
            if (!(out->limit_session = lc_strdup(sid))) rc = LC_NOMEM;
        }
        out->limit_hits += pr->limit_hits;
    }
    if (pr->newest_first) {
        out->newest_first = 1;
        if (pr->total > out->rank_skipped_total) out->rank_skipped_total = pr->total;
    }
    if (c->counted) {
        if (pr->total > 0) c->total += pr->total;
    } else if (!c->probing) {
        c->skip = c->skip > pr->matched ? c->skip - pr->matched : 0;
    }
    if (c->probing && pr->n) {
        out->more = 1;
        recall_result_free(pr);
    }
    if (c->joint && pr->n) recall_joint_add(c->joint, &pr->hits[0]);
    for (size_t k = 0; k < pr->n && rc == LC_OK; k++) {
        recall_hit *h = recall_hit_push(out);
        if (!h) {
            rc = LC_NOMEM;
            break;
        }
        *h = pr->hits[k];
        memset(&pr->hits[k], 0, sizeof pr->hits[k]);
        h->session_id = lc_strdup(sid);
        h->session_date = lc_strdup(date);
        h->session_cwd = lc_strdup(pcwd);
        if (!h->session_id || !h->session_date || !h->session_cwd) rc = LC_NOMEM;
    }
    if (pr->more) out->more = 1;
    free(date);
    return rc;
}

/* The walk's visit of one past store (catalog_each_fn). */
static int recall_sessions_visit(void *cb, const catalog_entry *e, size_t i, store **s, char **err)
{
    recall_sessions_ctx *c = cb;
    recall_result *out = c->out, pr;
    char *perr = NULL;
    int rc;
    (void)i;
    if (!c->counted && out->n >= c->want && !c->probing) c->probing = 1;
    double left = RECALL_SESSIONS_MS - (lc_now_ms() - c->t0);
    if (left <= 0) {
        out->stop_time = 1;
        return CATALOG_STOP_BEFORE;
    }
    /* The listing read each store's meta (catalog.h): not read again here. */
    if (c->scope == RECALL_SCOPE_SESSIONS && (!c->cwd || !e->cwd || strcmp(c->cwd, e->cwd) != 0)) {
        out->stores_skipped++;
        return LC_OK;
    }
    recall_grep_opts po = recall_sessions_opts(c, left);
    if ((rc = recall_grep(*s, &po, &pr, &perr)) != LC_OK) {
        if (rc == LC_NOMEM) rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
        /* A syntax error (fts5: only) is the caller's, the same in every store. */
        else if (c->o->query) rc = lc_errf(err, LC_INVALID, "%s", perr ? perr : "lcm_grep: bad query");
        else {
            out->stores_skipped++;
            rc = LC_OK;
        }
        free(perr);
        return rc;
    }
    rc = recall_sessions_take(c, e, &pr);
    recall_result_free(&pr);
    if (rc != LC_OK) return lc_errf(err, LC_NOMEM, "recall: out of memory");
    if (out->stop_time || (!c->counted && out->more)) return CATALOG_STOP;
    return LC_OK;
}

/* ---- the home index ------------------------------------------------------------------------
 * A query across sessions runs once over the home index (store.h, store_index_*): the stores
 * are caught up first (a stat each when unchanged), the index's counts are the joint counts,
 * its rank is the store's (lc_rank) with the tool and thinking weights applied, and only
 * the page's rows are read from their stores. Stores the catch-up did not reach within
 * RECALL_INDEX_CATCHUP_MS are searched one by one as before and merged in; an index that
 * cannot be opened or read leaves the whole query to the walk, with a note. */

typedef struct recall_ix_src {
    int64_t key;
    size_t at; /* the store's place in the listing */
} recall_ix_src;

static int recall_ix_src_cmp(const void *a, const void *b)
{
    const recall_ix_src *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

typedef struct recall_ix_ctx {
    recall_result *out;
    const recall_ix_src *map; /* by key */
    size_t nmap;
} recall_ix_ctx;

static int recall_ix_visit(void *ud, const store_index_hit *ih, char **err)
{
    recall_ix_ctx *c = ud;
    recall_ix_src want = {.key = ih->key},
                   *m = c->nmap ? bsearch(&want, c->map, c->nmap, sizeof *c->map, recall_ix_src_cmp) : NULL;
    if (!m) return LC_OK; /* a store not asked for: cannot happen, the index filters by key */
    recall_hit *h = recall_hit_push(c->out);
    if (!h || !(h->role = lc_strdup(ih->role))) return lc_errf(err, LC_NOMEM, "recall: out of memory");
    h->pending = 1;
    h->store_at = m->at;
    h->row_id = ih->id;
    h->ordinal = ih->ordinal;
    h->created = ih->created;
    h->score = ih->score;
    h->thinking = ih->thinking;
    h->tool_words = ih->tool_words;
    h->prompt_ordinal = ih->prompt_ordinal;
    h->has_prompt = ih->has_prompt;
    return LC_OK;
}

/* The page's candidates read from their stores (each store opened once), labelled; a row
 * gone since it was indexed (its store replaced) is dropped. */
static int recall_ix_fill(const catalog_list *stores, const recall_grep_opts *o, recall_result *out, char **err)
{
    store *s = NULL;
    size_t open_at = (size_t)-1, keep = 0;
    int rc = LC_OK;
    for (size_t k = 0; k < out->n; k++) {
        recall_hit *h = &out->hits[k];
        if (h->pending && rc == LC_OK) {
            const catalog_entry *e = &stores->v[h->store_at];
            if (open_at != h->store_at) {
                store_close(s);
                s = NULL;
                open_at = h->store_at;
                char *why = NULL;
                int orc = catalog_open_entry(e, &s, NULL, &why);
                free(why);
                if (orc == LC_NOMEM) rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
            }
            int hrc = s ? recall_hit_read(s, o, h->row_id, h->thinking, h, NULL) : LC_NOTFOUND;
            if (hrc == LC_NOMEM) rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
            if (hrc == LC_OK) {
                char *date = lc_utc_format(e->created, "%Y-%m-%d", "?");
                h->session_id = lc_strdup(e->session_id ? e->session_id : "?");
                h->session_cwd = lc_strdup(e->cwd ? e->cwd : "?");
                h->session_date = date;
                if (!h->session_id || !h->session_cwd || !h->session_date)
                    rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
            }
        }
        if (h->pending || rc != LC_OK) {
            LC_FREE(h->entry_id, h->role, h->snippet, h->session_id, h->session_date, h->session_cwd, h->rank_in);
            continue;
        }
        out->hits[keep++] = *h;
    }
    store_close(s);
    out->n = keep;
    return rc;
}

/* The query over the home index, the stores it has not caught up walked beside it. *used 0:
 * the index is not there or failed (out->index_note says why when it failed); the caller
 * walks every store. */
static int recall_sessions_indexed(const char *agent_home, const catalog_list *stores, recall_sessions_ctx *c,
                                   int *used, char **err)
{
    const recall_grep_opts *o = c->o;
    recall_result *out = c->out;
    store_index *ix = NULL;
    store_index_source *src = NULL;
    recall_ix_src *map = NULL;
    int64_t *keys = NULL;
    recall_query q = {0};
    recall_joint joint = {0};
    catalog_list stale = {0};
    char *why = NULL;
    size_t nsrc = 0, nmap = 0;
    int rc = LC_OK;
    *used = 0;
    rc = store_index_open(agent_home, &ix, &why);
    if (rc == LC_NOMEM) goto nomem;
    if (rc != LC_OK) {
        if (rc != LC_INVALID && !(out->index_note = lc_asprintf("%s", why ? why : "?"))) goto nomem;
        rc = LC_OK;
        goto done;
    }
    if ((rc = recall_query_parse(o->query, &q, err)) != LC_OK) goto done;
    src = stores->n ? calloc(stores->n, sizeof *src) : NULL;
    size_t *src_at = stores->n ? calloc(stores->n, sizeof *src_at) : NULL;
    unsigned char *in_scope = stores->n ? calloc(stores->n, 1) : NULL;
    if (stores->n && (!src || !src_at || !in_scope)) {
        free(src_at);
        free(in_scope);
        goto nomem;
    }
    /* Oldest created first: stores get their keys in that order, so the index's row order
     * (what a newest-first page follows) is the sessions' order. */
    size_t skipped = 0, older = 0;
    for (size_t i = stores->n; i-- > 0;) {
        const catalog_entry *e = &stores->v[i];
        /* Counted as the walk counts them: the schema first, then the project. */
        if (e->damaged || !STORE_SCHEMA_ANSWERS(e->schema_version)) {
            if (!e->damaged && e->schema_version >= 0 && e->schema_version < STORE_SCHEMA_VERSION) older++;
            else skipped++;
            continue;
        }
        /* Every store is caught up whatever the scope (the index is the home's; one it
         * holds that is no longer listed nor on disk is how a forgotten one is seen). */
        if (c->scope == RECALL_SCOPE_SESSIONS && (!c->cwd || !e->cwd || strcmp(c->cwd, e->cwd) != 0)) skipped++;
        else in_scope[nsrc] = 1;
        src[nsrc] = (store_index_source){.path = e->path, .name = e->name, .created = e->created};
        src_at[nsrc++] = i;
    }
    store_index_stats st;
    rc = store_index_catch_up(ix, src, nsrc, c->t0 + RECALL_INDEX_CATCHUP_MS, &st, &why);
    if (rc == LC_NOMEM) {
        free(src_at);
        free(in_scope);
        goto nomem;
    }
    if (rc != LC_OK) {
        free(src_at);
        free(in_scope);
        if (!(out->index_note = lc_asprintf("%s", why ? why : "?"))) goto nomem;
        rc = LC_OK;
        goto done;
    }
    map = nsrc ? calloc(nsrc, sizeof *map) : NULL;
    keys = nsrc ? calloc(nsrc, sizeof *keys) : NULL;
    stale.v = nsrc ? calloc(nsrc, sizeof *stale.v) : NULL;
    if (nsrc && (!map || !keys || !stale.v)) {
        free(src_at);
        free(in_scope);
        goto nomem;
    }
    for (size_t k = 0; k < nsrc; k++) {
        if (!in_scope[k]) continue;
        if (src[k].fresh) map[nmap++] = (recall_ix_src){.key = src[k].key, .at = src_at[k]};
        else stale.v[stale.n++] = stores->v[src_at[k]]; /* borrowed: not freed with `stale` */
    }
    free(src_at);
    free(in_scope);
    if (nmap > 1) qsort(map, nmap, sizeof *map, recall_ix_src_cmp);
    for (size_t k = 0; k < nmap; k++) keys[k] = map[k].key;
    *used = 1;
    out->home_index = 1;
    out->index_stale = stale.n;
    out->stores_skipped += skipped;
    out->stores_older += older;
    out->raw = q.raw;
    out->words_dropped = q.dropped;
    out->stopwords = q.stop_dropped;
    if (!q.match) {
        out->no_words = 1;
        goto done;
    }
    char rolebuf[256];
    store_search_scope scope = recall_query_scope(o, rolebuf, sizeof rolebuf);
    scope.weights = q.raw ? NULL : q.weights;
    scope.nweights = q.raw ? 0 : q.nphrases;
    scope.deadline_ms = c->t0 + RECALL_SESSIONS_MS;
    size_t upto = o->offset + c->want;
    store_index_query iq = {.match = q.match, .scope = &scope, .keys = keys, .nkeys = nmap,
                            .tool_weight = RECALL_TOOL_WEIGHT, .thinking_weight = RECALL_THINKING_WEIGHT,
                            .turn_weight = RECALL_TURN_WEIGHT,
                            .rank_max = RECALL_RANK_MAX,
                            .limit = upto};
    recall_ix_ctx ic = {.out = out, .map = map, .nmap = nmap};
    int64_t itotal = 0;
    int newest = 0;
    if (nmap) {
        rc = store_index_search(ix, &iq, recall_ix_visit, &ic, &itotal, &newest, &why);
        if (rc == LC_INVALID) {
            rc = lc_errf(err, LC_INVALID,
                         "lcm_grep: the query after \"fts5:\" is not valid FTS5 syntax (%s); without the \"fts5:\""
                         " prefix any text is a query",
                         why ? why : "?");
            goto done;
        }
        if (rc == LC_NOMEM) goto nomem;
        if (rc == LC_CANCELLED) {
            out->stop_time = 1;
            rc = LC_OK;
        } else if (rc != LC_OK) {
            /* The index failed mid-query (damaged): the walk answers instead. */
            recall_result_free(out);
            memset(out, 0, sizeof *out);
            out->total = -1;
            out->shared = stores->shared;
            out->stores_total = stores->n;
            *used = 0;
            if (!(out->index_note = lc_asprintf("%s", why ? why : "?"))) goto nomem;
            rc = LC_OK;
            goto done;
        }
    }
    out->stores_searched = nmap;
    if (newest) {
        out->newest_first = 1;
        out->rank_skipped_total = itotal;
    }
    size_t from_stale = out->n;
    /* The stores not caught up: each searched as before, its hits scored on their own joint
     * counts with the same weights. */
    if (stale.n) {
        catalog_counts counts;
        if (o->sort == RECALL_SORT_RELEVANCE && !q.raw && q.nphrases) {
            joint.n = q.nphrases;
            joint.w = q.weights;
            if (!(joint.df = calloc(q.nphrases, sizeof *joint.df))) goto nomem;
            c->joint = &joint;
        }
        if ((rc = catalog_walk(&stale, 0, CATALOG_ANSWERS, recall_sessions_visit, c, &counts, err)) != LC_OK) goto done;
        c->joint = NULL;
        out->stores_skipped += counts.damaged + counts.newer;
        out->stores_older += counts.older;
        for (size_t k = from_stale; k < out->n; k++)
            if (joint.df) out->hits[k].score = recall_joint_score(&joint, &out->hits[k]);
    }
    if (recall_merge(out, o, c->want, NULL) != LC_OK) goto nomem;
    if ((rc = recall_ix_fill(stores, o, out, err)) != LC_OK) goto done;
    int64_t total = newest ? -1 : itotal + c->total;
    out->total = total;
    out->more = total >= 0 ? (int64_t)(o->offset + out->n) < total : out->n >= c->want;
    goto done;
nomem:
    rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
done:
    free(why);
    free(joint.df);
    free(stale.v);
    free(map);
    free(keys);
    free(src);
    recall_query_free(&q);
    store_index_close(ix);
    return rc;
}

int recall_grep_sessions(const char *agent_home, const char *current_session_id,
                         const char *cwd, recall_scope scope, const recall_grep_opts *o,
                         recall_result *out, char **err)
{
    /* Newest created first, then by file name: an order that a write to a store (another
     * session running) does not change, so offsets page the same sequence call after call. */
    catalog_filter f = {.except_session = current_session_id, .order = CATALOG_NEWEST_FIRST,
                        .all_homes = scope == RECALL_SCOPE_FLEET};
    catalog_list stores = {0};
    catalog_counts counts;
    recall_query jq = {0};
    recall_joint joint = {0};
    recall_sessions_ctx c = {.o = o, .cwd = cwd, .scope = scope, .out = out, .t0 = lc_now_ms(),
                             .skip = o->offset, .want = o->limit ? o->limit : RECALL_SESSIONS_HITS,
                             .counted = o->query && *o->query};
    size_t first = 0;
    int rc;
    memset(out, 0, sizeof *out);
    out->total = -1;
    if ((rc = catalog_list_stores(agent_home, &f, &stores, err)) != LC_OK) goto done;
    out->shared = stores.shared;
    out->stores_total = stores.n;
    if (c.counted && o->resume && !strncmp(o->resume, "sessions:", 9)) {
        first = (size_t)strtoull(o->resume + 9, NULL, 10);
        if (first > stores.n) first = stores.n;
    }
    out->stores_from = first;
    /* The joint counts need the query's phrases and weights: the same parse the stores do. */
    if (c.counted && o->sort == RECALL_SORT_RELEVANCE) {
        int prc = recall_query_parse(o->query, &jq, NULL);
        if (prc == LC_NOMEM) goto nomem;
        if (prc == LC_OK && !jq.raw && jq.nphrases) {
            joint.n = jq.nphrases;
            joint.w = jq.weights;
            if (!(joint.df = calloc(jq.nphrases, sizeof *joint.df))) goto nomem;
            c.joint = &joint;
        }
    }
    /* A query from the start, of this home's own files: the home index answers it. */
    if (c.counted && !first && !o->summary_id && !stores.shared) {
        int used = 0;
        if ((rc = recall_sessions_indexed(agent_home, &stores, &c, &used, err)) != LC_OK || used) goto done;
    }
    if ((rc = catalog_walk(&stores, first, CATALOG_ANSWERS, recall_sessions_visit, &c, &counts, err)) != LC_OK)
        goto done;
    /* Older stores are never migrated by a search: counted, and read once their session runs
     * again. Damaged ones and newer schemas are skipped. */
    out->stores_older = counts.older;
    out->stores_skipped += counts.damaged + counts.newer;
    if (out->stop_time && counts.unreached) {
        out->stop_stores = 1;
        out->unreached_before = stores.v[counts.next].created;
    }
    if (c.counted) {
        /* One list: sorted, then the page [offset, offset + want) kept. */
        if (recall_merge(out, o, c.want, c.joint) != LC_OK) goto nomem;
        out->total = c.total;
        out->more = (int64_t)(o->offset + out->n) < c.total;
    }
    goto done;
nomem:
    rc = lc_errf(err, LC_NOMEM, "recall: out of memory");
done:
    free(joint.df);
    recall_query_free(&jq);
    catalog_list_free(&stores);
    if (rc) recall_result_free(out);
    return rc;
}
