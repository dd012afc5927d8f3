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

static recall_hit *recall_sessions_push(recall_result *r)
{
    recall_hit *h = realloc(r->hits, (r->n + 1) * sizeof *h);
    if (!h) return NULL;
    r->hits = h;
    memset(&h[r->n], 0, sizeof *h);
    return &h[r->n++];
}

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
        recall_hit *h = recall_sessions_push(out);
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
