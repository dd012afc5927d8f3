/*
 * projstate.c -- the projection's state across a session's requests (see projstate.h): the
 * pin and the candidate, a request's plan and its pin move, making room over the fit line,
 * the between-turns pass decision, the blocking regime's summary and the request log.
 */
#include "projstate.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dag.h"
#include "ingest.h"
#include "message.h"
#include "sha256.h"
#include "util.h"
#include "zones.h"

struct projstate {
    projstate_hooks h;
    project_cut pinned;        /* the applied cut (pin.cut_id), loaded once */
    int has_pinned;
    project_cut cand;          /* the newest prepared cut not yet applied */
    int has_cand;
    project_pin pin;
    int pin_dirty;             /* decided in `context`, written between turns */
    size_t hint;               /* where the pinned anchor was last found */
    zones_resolved z;
    long last_tokens, last_raw_tokens;
    const char *last_action;
    long passes;
    int covered;               /* truncation was laid because summaries were late */
    ingest_seen seen;          /* what the previous request carried */
    project_msg *pm;           /* the plan's input, reused across requests */
    size_t pm_cap;
    /* the request log */
    FILE *log;
    char *dump_path;
    unsigned long requests;
    size_t prev_items;
    char prev_sha[65];
    size_t prev_n;
    char *prev_last;           /* entry id of the previous request's last raw message */
    project_plan plan;         /* the last request's plan */
    int64_t plan_cut;
    int logged_plan;
    char *store_err;           /* the last request's failed ingest (projstate_store_error) */
    int store_rc;
    /* the catch-up: a long first request's messages on their way in through the worker */
    int catchup;
    size_t cu_total;           /* messages handed over */
    project_cut cu_note;       /* the note its requests start with (id 0, never stored) */
};

static void projstate_logf(projstate *ps, int warn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void projstate_logf(projstate *ps, int warn, const char *fmt, ...)
{
    va_list ap, ap2;
    if (!ps->h.log) return;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (text) vsnprintf(text, (size_t)len + 1, fmt, ap2);
    va_end(ap2);
    va_end(ap);
    /* Out of memory: the line is lost, never the caller's work. */
    if (text) ps->h.log(ps->h.ud, warn, text);
    free(text);
}

/* ---- life ------------------------------------------------------------------------------ */

int projstate_new(const projstate_hooks *hooks, projstate **out)
{
    projstate *ps = calloc(1, sizeof *ps);
    *out = NULL;
    if (!ps) return LC_NOMEM;
    if (hooks) ps->h = *hooks;
    ps->last_action = "keep";
    *out = ps;
    return LC_OK;
}

void projstate_reset(projstate *ps)
{
    project_cut_free(&ps->pinned);
    project_cut_free(&ps->cand);
    ps->has_pinned = ps->has_cand = 0;
    memset(&ps->pin, 0, sizeof ps->pin);
    ps->pin_dirty = 0;
    ps->hint = 0;
    ps->last_action = "keep";
    free(ps->prev_last);
    ps->prev_last = NULL;
    ps->prev_items = ps->prev_n = 0;
    ps->prev_sha[0] = '\0';
    ingest_seen_reset(&ps->seen);
    ps->catchup = 0;
    ps->cu_total = 0;
    project_cut_free(&ps->cu_note);
}

void projstate_free(projstate *ps)
{
    if (!ps) return;
    projstate_reset(ps);
    LC_FREE(ps->pm, ps->store_err, ps->dump_path);
    if (ps->log) fclose(ps->log);
    free(ps);
}

void projstate_log_open(projstate *ps, const char *log_path, const char *dump_path)
{
    if (log_path && *log_path && !ps->log) ps->log = fopen(log_path, "a");
    free(ps->dump_path);
    ps->dump_path = dump_path && *dump_path ? lc_strdup(dump_path) : NULL;
}

void projstate_load(projstate *ps, store *st)
{
    char *e = NULL;
    projstate_reset(ps);
    if (project_pin_get(st, &ps->pin, &e) == LC_OK && ps->pin.cut_id > 0) {
        if (project_get_cut(st, ps->pin.cut_id, &ps->pinned, &e) == LC_OK)
            ps->has_pinned = 1;
        else
            memset(&ps->pin, 0, sizeof ps->pin);
    }
    free(e);
    e = NULL;
    if (project_latest_cut(st, &ps->cand, &e) == LC_OK) {
        if (ps->has_pinned && ps->cand.id == ps->pinned.id) project_cut_free(&ps->cand);
        else ps->has_cand = 1;
    }
    free(e);
}

void projstate_view_get(const projstate *ps, projstate_view *out)
{
    memset(out, 0, sizeof *out);
    out->last_action = "keep";
    if (!ps) return;
    out->cut_id = ps->pin.cut_id;
    out->applied_tokens = ps->pin.applied_tokens;
    out->window = ps->z.window;
    out->last_tokens = ps->last_tokens;
    out->last_raw_tokens = ps->last_raw_tokens;
    out->last_action = ps->last_action;
    out->passes = ps->passes;
}

/* ---- zones and budgets ------------------------------------------------------------------ */

int projstate_zones(const projstate_env *env, zones_resolved *z)
{
    const lcm_config *cfg = env->cfg;
    zones_cfg zc = cfg ? lcm_config_zones_for(cfg, env->model) : zones_cfg_unset();
    long keep = cfg ? cfg->keep_recent_tokens : 0;
    return zones_resolve(&zc, keep, env->window > 0 ? env->window : LC_WINDOW_DEFAULT, z, NULL);
}

/* A quarter of the swap line, so a cut brings the request to about the fresh tail plus a
 * quarter of the swap line, well under it, and the appends that follow have most of the
 * band up to the re-cut line. */
long projstate_block_budget(const zones_resolved *z, const lcm_config *cfg)
{
    long b = z->swap_tokens / 4;
    long floor = cfg ? cfg->summary_tokens * 2 : 2400;
    return b > floor ? b : floor;
}

/* ---- the candidate ---------------------------------------------------------------------- */

/* A cut id worth holding as the candidate the context hook may swap to: newer than the one
 * held (ids grow with every prepared cut) and not the pin. */
static int projstate_newer(const projstate *ps, int64_t id)
{
    return id > 0 && !(ps->has_pinned && id == ps->pinned.id) && !(ps->has_cand && id <= ps->cand.id);
}

/* Make cut *c (ownership taken) the candidate when it is newer; else free it. */
static void projstate_adopt(projstate *ps, project_cut *c)
{
    if (!projstate_newer(ps, c->id)) {
        project_cut_free(c);
        return;
    }
    project_cut_free(&ps->cand);
    ps->cand = *c;
    ps->has_cand = 1;
}

static void projstate_take(projstate *ps, store *st, int64_t id)
{
    project_cut c;
    if (projstate_newer(ps, id) && project_get_cut(st, id, &c, NULL) == LC_OK) projstate_adopt(ps, &c);
}

/* Render the current frontier as the next cut on this thread's connection and take it. */
static void projstate_refresh(projstate *ps, store *st, long budget)
{
    char *e = NULL;
    int64_t id = 0;
    int rc = project_prepare_cut(st, budget, &id, &e);
    if (rc == LC_OK) projstate_take(ps, st, id);
    else if (rc != LC_NOTFOUND) projstate_logf(ps, 1, "lcm: preparing a cut failed: %s", e ? e : "?");
    free(e);
}

/* What the worker committed since the last request: its newest cut becomes the candidate. */
static void projstate_take_worker(projstate *ps, store *st, long wait_ms)
{
    projstate_pick pick;
    memset(&pick, 0, sizeof pick);
    if (!ps->h.pickup || !ps->h.pickup(ps->h.ud, wait_ms, &pick)) return;
    ps->passes += pick.passes;
    /* Heal ran with these passes; nothing left that it could improve ends the asking. */
    if (ps->covered && !pick.healed) ps->covered = 0;
    projstate_take(ps, st, pick.cut_id);
}

void projstate_tree_moved(projstate *ps, store *st)
{
    project_cut c;
    /* The latest cut may stand on the branch just left: a request past the lines needs a
     * cut on the branch now active to swap to. */
    if (!ps || project_branch_cut(st, &c, NULL) != LC_OK) return;
    if (ps->has_pinned && c.id == ps->pinned.id) {
        project_cut_free(&c);
        return;
    }
    if (ps->has_cand) project_cut_free(&ps->cand);
    ps->cand = c;
    ps->has_cand = 1;
}

/* ---- passes ------------------------------------------------------------------------------ */

static dag_opts projstate_dag_opts(const projstate *ps, const lcm_config *cfg, long budget,
                                   int flush_all)
{
    /* Approaching the swap line, the last partial chunk is summarized too, so the cut
     * that the line calls for is ready when it is crossed. */
    int flush = flush_all || ps->last_tokens >= ps->z.swap_tokens - ps->z.swap_tokens / 10;
    dag_opts o = {
        .keep_recent_tokens = ps->z.keep_recent_tokens,
        .leaf_chunk_tokens = cfg ? cfg->leaf_chunk_tokens : 0,
        .summary_tokens = cfg ? cfg->summary_tokens : 0,
        .block_budget = budget,
        .max_source_tokens = cfg ? cfg->async_chunk_tokens : 0,
        .flush = flush,
    };
    return o;
}

/* A pass on the host thread that must get done: a node the worker committed first (its
 * call was in flight when it was told to stop) ends a pass early, so it runs again over
 * what is left. The worker makes at most that one node more. */
static int projstate_dag_pass(store *st, summ_ctx *sc, const dag_opts *o, dag_stats *ds,
                              char **err)
{
    int rc = LC_OK;
    dag_stats one;
    memset(ds, 0, sizeof *ds);
    for (int round = 0; round < 4; round++) {
        if ((rc = dag_pass(st, sc, o, &one, err)) != LC_OK) break;
        ds->leaves += one.leaves;
        ds->condensed += one.condensed;
        ds->source_tokens += one.source_tokens;
        ds->summary_tokens += one.summary_tokens;
        ds->stalled = one.stalled;
        ds->capped = one.capped;
        ds->block_tokens = one.block_tokens;
        ds->boundary_ordinal = one.boundary_ordinal;
        ds->conflicts += one.conflicts;
        if (!one.conflicts) break;
    }
    return rc;
}

/* One pass on the host thread (no worker could start, or a request that cannot wait),
 * then the next cut. */
static void projstate_pass_here(projstate *ps, const projstate_env *env, summ_ctx *sc,
                                const dag_opts *o, long budget, int always_cut, const char *what)
{
    char *e = NULL;
    dag_stats ds;
    if (projstate_dag_pass(env->st, sc, o, &ds, &e) != LC_OK) {
        projstate_logf(ps, 1, "lcm: %s failed: %s", what, e ? e : "?");
        free(e);
        return;
    }
    ps->passes++;
    if ((ds.leaves || ds.condensed) && ps->h.metric) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "leaves", ds.leaves);
        cJSON_AddNumberToObject(d, "condensed", ds.condensed);
        cJSON_AddNumberToObject(d, "sourceTokens", (double)ds.source_tokens);
        cJSON_AddNumberToObject(d, "blockTokens", (double)ds.block_tokens);
        cJSON_AddBoolToObject(d, "stalled", ds.stalled);
        if (sc == env->cover) cJSON_AddBoolToObject(d, "truncated", 1);
        ps->h.metric(ps->h.ud, "compaction-pass", d);
        cJSON_Delete(d);
    }
    if (ds.leaves || ds.condensed || (!ps->has_cand && !ps->has_pinned)) {
        projstate_refresh(ps, env->st, budget);
    } else if (always_cut) {
        /* Nothing new here, but the worker prepares a cut after each of its passes, and one
         * whose result an invalidation dropped is still in the store: take the newest
         * (one row) rather than render the frontier again on every request. */
        project_cut c;
        if (project_latest_cut(env->st, &c, NULL) == LC_OK) projstate_adopt(ps, &c);
    }
}

void projstate_pin_flush(projstate *ps, store *st)
{
    char *e = NULL;
    if (!ps || !ps->pin_dirty || !st) return;
    int rc = ps->pin.cut_id > 0 ? project_pin_set(st, &ps->pin, &e) : project_pin_clear(st, &e);
    if (rc != LC_OK) projstate_logf(ps, 1, "lcm: the pin was not stored: %s", e ? e : "?");
    else ps->pin_dirty = 0;
    free(e);
}

void projstate_between_turns(projstate *ps, const projstate_env *env, int flush_all)
{
    const lcm_config *cfg = env->cfg;
    if (!ps || !env->st || !env->summ) return;
    projstate_pin_flush(ps, env->st);
    long budget = projstate_block_budget(&ps->z, cfg);
    dag_opts o = projstate_dag_opts(ps, cfg, budget, flush_all);
    long lead = cfg ? cfg->leaf_chunk_tokens : 20000;
    /* Summaries are made just ahead of need: every model call costs the user money. */
    if (!flush_all && !(cfg && cfg->eager_summaries) &&
        !zones_summaries_due(&ps->z, ps->last_tokens, ps->has_pinned, lead))
        return;
    if (!env->worker || !ps->h.submit) {
        projstate_pass_here(ps, env, env->summ, &o, budget, 0, "compaction pass");
        return;
    }
    worker_job j = {
        .dag = o,
        .cut_budget = budget,
        /* Always: a cut the worker prepared may have been dropped with an invalidation,
         * and preparing one that exists already writes nothing. */
        .want_cut = 1,
        /* Truncation laid because summaries were late is redone by the model once the
         * worker has nothing newer to do. */
        .heal_nodes = ps->covered ? 4 : 0,
        .heal = {
            .tokens_per_heal = cfg ? cfg->summarizer_tokens_per_heal : 0,
            .heal_source_tokens = cfg ? lcm_config_heal_source_tokens(cfg) : 0,
            .summary_tokens = cfg ? cfg->summary_tokens : 0,
        },
    };
    ps->h.submit(ps->h.ud, &j);
}

/* ---- a request ---------------------------------------------------------------------------- */

static int projstate_cand_changed(const projstate *ps, int64_t before)
{
    return ps->has_cand && ps->cand.id != before;
}

/* A request over the fit line with summaries late: wait for the worker up to
 * summaryWaitMs when that can help, then cover what is still uncovered with truncation
 * (instant; the worker improves it later). True when the candidate changed. */
static int projstate_make_room(projstate *ps, const projstate_env *env)
{
    const lcm_config *cfg = env->cfg;
    int64_t before = ps->has_cand ? ps->cand.id : 0;
    long wait = cfg ? cfg->summary_wait_ms : 15000;
    if (wait > 0 && ps->h.can_wait && ps->h.can_wait(ps->h.ud)) {
        double t0 = lc_now_ms();
        projstate_take_worker(ps, env->st, wait);
        projstate_logf(ps, 0, "lcm: the request waited %.0f ms for summaries (summaryWaitMs %ld)",
                       lc_now_ms() - t0, wait);
    }
    if (projstate_cand_changed(ps, before)) return 1;
    if (!env->cover || !env->st) return 0;
    long budget = projstate_block_budget(&ps->z, cfg);
    dag_opts o = projstate_dag_opts(ps, cfg, budget, 1);
    o.max_source_tokens = 0;
    /* The worker's pass in flight would only repeat what is covered now; what it committed
     * before is taken first. */
    projstate_take_worker(ps, env->st, 0);
    if (projstate_cand_changed(ps, before)) return 1;
    if (ps->h.invalidate) ps->h.invalidate(ps->h.ud);
    projstate_pass_here(ps, env, env->cover, &o, budget, 1, "covering late summaries");
    /* Still nothing newer: the fresh tail itself is what does not fit. Its older half is
     * covered too -- the originals stay in the store, and the window is the promise. */
    if (!projstate_cand_changed(ps, before) && o.keep_recent_tokens > 0) {
        o.keep_recent_tokens /= 2;
        projstate_pass_here(ps, env, env->cover, &o, budget, 1, "covering late summaries");
    }
    if (!projstate_cand_changed(ps, before)) return 0;
    ps->covered = 1;
    projstate_logf(ps, 1, "lcm: summaries were late; the oldest uncovered history is "
                   "truncated for now ([lcm:truncated]) and summarized again in the background");
    return 1;
}

/* The plan's outcome on the state: a swap or a re-cut makes the candidate the pin, a drop
 * lets it go; either is stored between turns (pin_dirty). */
static void projstate_apply(projstate *ps, const project_plan *plan)
{
    ps->last_tokens = plan->occupancy;
    ps->last_raw_tokens = plan->raw_tokens;
    ps->last_action = project_action_name(plan->action);
    if (plan->action == PROJECT_SWAP || plan->action == PROJECT_RECUT) {
        project_cut_free(&ps->pinned);
        ps->pinned = ps->cand;
        memset(&ps->cand, 0, sizeof ps->cand);
        ps->has_cand = 0;
        ps->has_pinned = 1;
        ps->pin = (project_pin){ps->pinned.id, plan->current_tokens, ps->z.window};
        ps->pin_dirty = 1;
        projstate_logf(ps, 0, "lcm: %s to cut %lld at %ld of %ld tokens; the request is %ld",
                       ps->last_action, (long long)ps->pin.cut_id, plan->current_tokens,
                       ps->z.window, plan->occupancy);
    } else if (plan->action == PROJECT_DROP) {
        projstate_logf(ps, 0, "lcm: cut %lld no longer applies (its anchor left the context)",
                       (long long)ps->pinned.id);
        project_cut_free(&ps->pinned);
        ps->has_pinned = 0;
        memset(&ps->pin, 0, sizeof ps->pin);
        ps->pin_dirty = 1;
    }
}

static void projstate_decide(projstate *ps, size_t n, size_t clm_anchor, project_plan *plan)
{
    project_decide(ps->pm, n, clm_anchor, ps->has_pinned ? &ps->pinned : NULL,
                   ps->has_cand ? &ps->cand : NULL, &ps->z, &ps->hint, plan);
}

/* ---- the catch-up ----------------------------------------------------------------------- */

/* Where the catch-up stands: the messages still on their way (0 once it ended). Its end is
 * taken here: done, the requests store their own messages again; failed, the next request
 * offers the store everything again. */
static long projstate_catchup_poll(projstate *ps)
{
    char *why = NULL;
    if (!ps->catchup) return 0;
    long left = ps->h.catchup_left ? ps->h.catchup_left(ps->h.ud, &why) : -1;
    if (left > 0) return left;
    ps->catchup = 0;
    if (left == 0) {
        ps->seen.stored = 1;
        projstate_logf(ps, 0, "lcm: the session's history is stored: %zu message(s) caught up in the background",
                       ps->cu_total);
    } else {
        projstate_logf(ps, 1, "lcm: the background catch-up failed: %s; the next request offers the store "
                       "its messages again", why ? why : "?");
        ingest_seen_reset(&ps->seen);
    }
    free(why);
    return 0;
}

long projstate_catchup_left(projstate *ps)
{
    return ps ? projstate_catchup_poll(ps) : 0;
}

/* A first request whose messages the store lacks by the thousand: hand them to the worker
 * (one copy) instead of storing them before the request can go. 1 when handed over. */
static int projstate_catchup_start(projstate *ps, const projstate_env *env, const store_msg *msgs, size_t n)
{
    if (!env->worker || !ps->h.catchup || !ps->h.catchup_left || n < PROJSTATE_CATCHUP_MIN ||
        !ingest_lacks_tail(env->st, msgs, n, PROJSTATE_CATCHUP_MIN))
        return 0;
    char *text = lc_asprintf("[lcm] This session's earlier history (%zu messages) is being stored and indexed "
                             "in the background, so only its newest messages are shown here for now; the "
                             "older ones come back as summaries once that is done. lcm_grep, lcm_describe "
                             "and lcm_expand_query answer from what is stored so far and say when the "
                             "indexing is still running.", n);
    cJSON *m = text ? msg_text_message("user", text, 0) : NULL;
    char *json = m ? cJSON_PrintUnformatted(m) : NULL;
    cJSON_Delete(m);
    free(text);
    if (!json || ps->h.catchup(ps->h.ud, msgs, n) != LC_OK) {
        free(json);
        return 0;
    }
    project_cut_free(&ps->cu_note);
    ps->cu_note.message = json;
    ps->cu_note.message_len = strlen(json);
    ps->cu_note.tokens = project_tokens(ps->cu_note.message_len);
    ps->catchup = 1;
    ps->cu_total = n;
    projstate_logf(ps, 0, "lcm: %zu message(s) the store lacks are stored in the background; until then "
                   "requests carry the newest messages that fit", n);
    return 1;
}

/* A request while the catch-up runs: the newest messages that fit under the fit line,
 * starting at a prompt, after the note; as it came when all of it fits. Nothing is read
 * from the store (it is being written). */
static int projstate_catchup_request(projstate *ps, const store_msg *msgs, size_t n, size_t clm_anchor,
                                     size_t tokens, project_item **items, size_t *n_items, char **err)
{
    project_plan plan;
    memset(&plan, 0, sizeof plan);
    size_t lo = clm_anchor < n ? clm_anchor : n, k = n;
    long fit = zones_fit_tokens(&ps->z), sum = ps->cu_note.tokens;
    for (size_t i = 0; i < lo; i++) sum += project_tokens(msgs[i].json_len);
    while (k > lo && sum + project_tokens(msgs[k - 1].json_len) <= fit) sum += project_tokens(msgs[--k].json_len);
    plan.raw_tokens = (long)tokens;
    plan.occupancy = plan.current_tokens = (long)tokens;
    if (k > lo) {
        if (k == n) k = n - 1; /* the newest message goes whatever its size */
        /* From a prompt on: a tool result without the call that asked for it is refused. */
        for (size_t i = k; i < n; i++) {
            cJSON *j = cJSON_ParseWithLength(msgs[i].json, msgs[i].json_len);
            int user = j && msg_role_of(j) == MSG_ROLE_USER;
            cJSON_Delete(j);
            if (user) {
                k = i;
                break;
            }
        }
        plan.use = &ps->cu_note;
        plan.anchor_pos = k - 1;
        plan.occupancy = ps->cu_note.tokens;
        for (size_t i = 0; i < lo; i++) plan.occupancy += project_tokens(msgs[i].json_len);
        for (size_t i = k; i < n; i++) plan.occupancy += project_tokens(msgs[i].json_len);
        plan.current_tokens = plan.occupancy;
    }
    plan.zone = zones_classify(&ps->z, plan.occupancy);
    if (project_items(n, clm_anchor, &plan, items, n_items, err) != LC_OK) return LC_NOMEM;
    ps->requests++;
    ps->plan = plan;
    ps->plan_cut = 0;
    ps->logged_plan = 1;
    /* The raw size, so the pass the stored history calls for is asked for between turns
     * (the worker runs it once the catch-up is done). */
    ps->last_tokens = ps->last_raw_tokens = (long)tokens;
    ps->last_action = "keep";
    return LC_OK;
}

int projstate_context(projstate *ps, const projstate_env *env, const store_msg *msgs, size_t n,
                      size_t clm_anchor, project_item **items, size_t *n_items, size_t *tokens,
                      char **err)
{
    char *e = NULL;
    project_plan plan;
    *items = NULL;
    *n_items = 0;
    size_t known = ingest_known(&ps->seen, msgs, n, tokens);
    if (n == 0 || (!env->st && !env->offline)) return LC_OK;
    if (env->st) projstate_catchup_poll(ps);
    if (env->st && !ps->catchup && !known && projstate_catchup_start(ps, env, msgs, n)) known = n;
    if (env->st && ps->catchup) {
        /* What came since goes the same way, behind it, so the ordinals stay in order. */
        if (known < n && ps->h.catchup(ps->h.ud, msgs + known, n - known) == LC_OK) ps->cu_total += n - known;
        ingest_seen_note(&ps->seen, msgs, n, *tokens, 0);
        if (projstate_zones(env, &ps->z) != LC_OK) return LC_OK;
        return projstate_catchup_request(ps, msgs, n, clm_anchor, *tokens, items, n_items, err);
    }
    int irc = env->st ? ingest_request(env->st, &ps->seen, msgs, n, known, *tokens, &e) : LC_OK;
    if (irc != LC_OK) {
        projstate_logf(ps, 1, "lcm: ingest failed: %s", e ? e : "?");
        ps->store_rc = irc;
        free(ps->store_err);
        ps->store_err = e ? e : lc_strdup("the store's ingest failed");
        e = NULL;
    }
    if (projstate_zones(env, &ps->z) != LC_OK) return LC_OK;
    if (env->st) projstate_take_worker(ps, env->st, 0);
    /* The plan reads only what is in memory: the applied cut and the prepared one. The
     * entry id pointers are the caller's, valid for this call only, so they are copied
     * every time; the buffer itself is kept (a history-sized malloc per request would be
     * an mmap and its page faults). */
    if (n > ps->pm_cap) {
        project_msg *v = lc_grow(ps->pm, &ps->pm_cap, n, sizeof *v);
        if (!v) return LC_OK;
        ps->pm = v;
    }
    for (size_t i = 0; i < n; i++) ps->pm[i] = (project_msg){msgs[i].entry_id, msgs[i].json_len};
    projstate_decide(ps, n, clm_anchor, &plan);
    /* Caught up, but the worker's first pass over that history has prepared no cut yet:
     * the request stays the newest messages that fit rather than wait for it here. */
    if (env->st && ps->cu_note.message && !ps->has_cand && !ps->has_pinned &&
        plan.occupancy >= zones_fit_tokens(&ps->z) && ps->h.can_wait && ps->h.can_wait(ps->h.ud))
        return projstate_catchup_request(ps, msgs, n, clm_anchor, *tokens, items, n_items, err);
    /* No request goes over the window because summaries were late. */
    if (env->st && plan.occupancy >= zones_fit_tokens(&ps->z) && projstate_make_room(ps, env))
        projstate_decide(ps, n, clm_anchor, &plan);
    if (project_items(n, clm_anchor, &plan, items, n_items, err) != LC_OK) return LC_NOMEM;
    ps->requests++;
    ps->plan = plan;
    ps->plan_cut = plan.use ? plan.use->id : 0;
    ps->logged_plan = 1;
    /* The items borrow the cut's message: a swap moves it into the pin, never frees it. */
    projstate_apply(ps, &plan);
    return LC_OK;
}

char *projstate_store_error(projstate *ps, int *rc)
{
    char *e = ps ? ps->store_err : NULL;
    *rc = e ? ps->store_rc : LC_OK;
    if (ps) ps->store_err = NULL;
    return e;
}

/* ---- the blocking regime ------------------------------------------------------------------ */

int projstate_compaction(projstate *ps, const projstate_env *env, const char *first_kept,
                         char **text, int64_t **node_ids, size_t *n_nodes, int *stubbed,
                         char **err)
{
    dag_node *v = NULL;
    size_t n = 0, k = 0;
    store_row row = {0};
    int64_t left = 0;
    dag_stats ds;
    int rc;
    *text = NULL;
    *node_ids = NULL;
    *n_nodes = 0;
    *stubbed = 0;
    /* This pass covers what the worker is on; the worker's nodes would collide with it. */
    if (ps->h.invalidate) ps->h.invalidate(ps->h.ud);
    projstate_pin_flush(ps, env->st);
    if ((rc = store_get_message(env->st, first_kept, &row, err)) != LC_OK) goto done;
    long budget = projstate_block_budget(&ps->z, env->cfg);
    dag_opts o = {
        .leaf_chunk_tokens = env->cfg ? env->cfg->leaf_chunk_tokens : 0,
        .summary_tokens = env->cfg ? env->cfg->summary_tokens : 0,
        .block_budget = budget,
        .flush = 1,
        .before_ordinal = row.ordinal > 0 ? row.ordinal : 1,
    };
    rc = LC_NOTFOUND;
    if (row.ordinal <= 0 || projstate_dag_pass(env->st, env->summ, &o, &ds, err) != LC_OK ||
        dag_uncovered(env->st, row.ordinal, &left, err) != LC_OK || left > 0 ||
        dag_frontier(env->st, &v, &n, err) != LC_OK)
        goto done;
    ps->passes++;
    /* The nodes that hold what the host is about to drop. */
    while (k < n && v[k].first_ordinal < row.ordinal) k++;
    if (k == 0) goto done;
    if (!(*node_ids = malloc(k * sizeof **node_ids))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < k; i++) (*node_ids)[i] = v[i].id;
    if ((rc = project_render_text(v, k, budget, text, stubbed, err)) != LC_OK) {
        free(*node_ids);
        *node_ids = NULL;
        goto done;
    }
    *n_nodes = k;
done:
    dag_nodes_free(v, n);
    store_row_free(&row);
    return rc;
}

/* ---- the request log ---------------------------------------------------------------------- */

int projstate_logging(const projstate *ps)
{
    return ps && ps->log && ps->logged_plan;
}

static void projstate_hex(const sha256_ctx *c, char out[65])
{
    sha256_ctx copy = *c;
    uint8_t d[32];
    sha256_final(&copy, d);
    sha256_to_hex(d, out);
}

/* A 64-bit fingerprint of p[0..n) folded into h, eight bytes a step: what the comparison
 * without the request log reads of the items it must read (a summary block, live context's
 * own messages), several times faster than SHA-256 and as good for telling two requests
 * apart. */
static uint64_t projstate_fold(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    h = (h ^ (uint64_t)n) * 0x9e3779b97f4a7c15ULL;
    for (; n >= 8; b += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, b, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

/* The running digest of either kind as hex: SHA-256 of the bytes, or the fingerprint. */
static void projstate_digest(const sha256_ctx *c, uint64_t fp, int by_bytes, char out[65])
{
    if (by_bytes) projstate_hex(c, out);
    else snprintf(out, 65, "%016llx", (unsigned long long)fp);
}

/* One JSON line per request (action, cut, tokens sent, window, and SHA-256 digests of the
 * request and of its prefix the size of the previous request) so a test can prove the
 * byte-for-byte extension property from outside. */
int projstate_log_sent(projstate *ps, const store_msg *msgs, size_t n, const project_item *items,
                       size_t n_items, int *raw_extends)
{
    if (raw_extends) *raw_extends = -1;
    if (!ps || n == 0) return -1;
    int logging = projstate_logging(ps);
    ps->logged_plan = 0;
    const project_plan *plan = &ps->plan;
    long sent_tokens = 0;
    sha256_ctx full;
    char sha[65], psha[65] = "";
    size_t count = items ? n_items : n;
    FILE *dump = logging && ps->dump_path ? fopen(ps->dump_path, "w") : NULL;
    /* With the request log open its digests are of the bytes sent (a test proves the
     * extension from outside); without it only the comparison is wanted, and the previous
     * digest is always of the same kind (the log is opened once, at session start). */
    int by_bytes = ps->log != NULL;
    /* Live context's one-call notice rides at the very end of one request only; the
     * provider's cached prefix is everything before it, so that is what must survive. */
    if (count > 0 && items && items[count - 1].index < 0 &&
        strstr(items[count - 1].json, "\"customType\":\"live-context-notice\""))
        count--;
    uint64_t fp = 0;
    if (by_bytes) sha256_init(&full);
    for (size_t i = 0; i < count; i++) {
        const char *json;
        size_t len;
        if (!items || items[i].index >= 0) {
            size_t k = items ? (size_t)items[i].index : i;
            json = msgs[k].json;
            len = msgs[k].json_len;
        } else {
            json = items[i].json;
            len = strlen(json);
        }
        if (i == ps->prev_items) projstate_digest(&full, fp, by_bytes, psha);
        const char *id = !items || items[i].index >= 0 ? msgs[!items ? i : (size_t)items[i].index].entry_id : NULL;
        if (by_bytes) {
            sha256_update(&full, json, len);
            sha256_update(&full, "\n", 1);
        } else if (id) {
            /* A raw message by its entry id and length, as the ingest knows it (an id's
             * message does not change): hashing the whole window's bytes on every request
             * was a fifth of the host thread's cost. */
            fp = projstate_fold(projstate_fold(fp, id, strlen(id)), &len, sizeof len);
        } else {
            fp = projstate_fold(fp, json, len);
        }
        sent_tokens += project_tokens(len);
        if (dump) {
            fwrite(json, 1, len, dump);
            fputc('\n', dump);
        }
    }
    if (dump) fclose(dump);
    if (count == ps->prev_items) projstate_digest(&full, fp, by_bytes, psha);
    projstate_digest(&full, fp, by_bytes, sha);
    /* The raw input only grew when the previous last message is still where it was. */
    int appended = ps->prev_last && ps->prev_n <= n && ps->prev_n > 0 && msgs[ps->prev_n - 1].entry_id &&
                   strcmp(msgs[ps->prev_n - 1].entry_id, ps->prev_last) == 0;
    int extends = ps->prev_sha[0] ? strcmp(psha, ps->prev_sha) == 0 : -1;
    if (raw_extends && ps->prev_sha[0]) *raw_extends = appended;
    if (logging) {
        fprintf(ps->log,
                "{\"request\":%lu,\"ts\":%lld,\"action\":\"%s\",\"cut\":%lld,\"zone\":\"%s\",\"tokens\":%ld,"
                "\"raw\":%ld,\"window\":%ld,\"swap\":%ld,\"recut\":%ld,\"messages\":%zu,\"items\":%zu,"
                "\"rawAppended\":%s,\"prevItems\":%zu,\"prefixSha\":\"%s\",\"prevSha\":\"%s\",\"sha\":\"%s\"}\n",
                ps->requests, lc_epoch_ms(), project_action_name(plan->action),
                (long long)ps->plan_cut, zones_zone_name(plan->zone), sent_tokens, plan->raw_tokens,
                ps->z.window, ps->z.swap_tokens, ps->z.recut_tokens, n, count,
                appended ? "true" : "false", ps->prev_items, psha, ps->prev_sha, sha);
        fflush(ps->log);
    }
    ps->prev_items = count;
    memcpy(ps->prev_sha, sha, sizeof sha);
    free(ps->prev_last);
    const char *last = msgs[n - 1].entry_id;
    ps->prev_last = last ? lc_strdup(last) : NULL;
    ps->prev_n = n;
    return extends;
}
