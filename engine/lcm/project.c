/*
 * project.c -- the projection: rendering the pointer block, prepared cuts, the pin, the
 * per-request plan and items (project.h). Cuts are rendered between turns and stored as
 * the exact bytes a request carries, so a pinned projection is a byte-for-byte prefix of
 * every later request until the next cut.
 */
#include "project.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "message.h"
#include "summarize.h"
#include "util.h"

#define PROJECT_INTRO                                                                       \
    "[lcm] Earlier conversation is stored verbatim and summarized below, one summary per "  \
    "node. A header names the node and the entries it covers: lcm_describe reads a node, "  \
    "lcm_expand_query answers from its originals, lcm_grep searches everything.\n\n"

void project_cut_free(project_cut *c)
{
    if (!c) return;
    free(c->anchor_entry);
    free(c->message);
    memset(c, 0, sizeof *c);
}

long project_tokens(size_t json_len) { return (long)((json_len + 3) / 4); }

const char *project_action_name(project_action a)
{
    switch (a) {
    case PROJECT_SWAP: return "swap";
    case PROJECT_RECUT: return "recut";
    case PROJECT_DROP: return "drop";
    default: return "keep";
    }
}

/* ---- rendering ------------------------------------------------------------------------ */

enum { TIER_STUB = 0, TIER_PRIMARY = 1, TIER_RICH = 2 };

/* Bytes of the first `chars` code points of s. */
static size_t project_prefix_bytes(const char *s, size_t chars)
{
    size_t i = 0, k = 0;
    while (s[i] && k < chars) {
        i++;
        while ((s[i] & 0xC0) == 0x80) i++;
        k++;
    }
    return i;
}

static int project_node_text(sbuf *b, const dag_node *n, int tier)
{
    char *h = dag_header(n);
    if (!h) return LC_NOMEM;
    if (tier == TIER_STUB) {
        size_t cut = project_prefix_bytes(n->text, DAG_STUB_CHARS);
        sb_printf(b, "%s\n", h);
        sb_append(b, n->text, cut);
        sb_printf(b, "%s\n(stubbed to fit the pointer budget: the summary is %zu tokens; read it "
                     "with lcm_describe #%lld)\n\n",
                  n->text[cut] ? " [...]" : "", summ_estimate_tokens(n->text), (long long)n->id);
    } else {
        sb_printf(b, "%s\n%s\n\n", h, tier == TIER_RICH && n->rich ? n->rich : n->text);
    }
    free(h);
    return b->oom ? LC_NOMEM : LC_OK;
}

static long project_node_cost(const dag_node *n, int tier)
{
    sbuf b = {0};
    long t = project_node_text(&b, n, tier) == LC_OK ? (long)summ_estimate_tokens(b.p) : 0;
    sb_free(&b);
    return t;
}

int project_render_text(const dag_node *nodes, size_t n, long budget, char **text, int *stubbed,
                        char **err)
{
    int rc = LC_OK;
    int *tier = calloc(n ? n : 1, sizeof *tier);
    long *cost = calloc(n ? n * 3 : 1, sizeof *cost);
    sbuf b = {0};
    *text = NULL;
    if (stubbed) *stubbed = 0;
    if (!tier || !cost) {
        rc = lc_errf(err, LC_NOMEM, "project: out of memory");
        goto done;
    }
    long total = (long)summ_estimate_tokens(PROJECT_INTRO);
    for (size_t i = 0; i < n; i++) {
        for (int t = 0; t < 3; t++) cost[i * 3 + t] = project_node_cost(&nodes[i], t);
        tier[i] = nodes[i].rich ? TIER_RICH : TIER_PRIMARY;
        total += cost[i * 3 + tier[i]];
    }
    /* Under pressure the oldest nodes give way first: every node drops to its shorter text
     * before any node drops to a stub, and the stub keeps the pointer itself. */
    for (int floor = TIER_PRIMARY; floor >= TIER_STUB && budget > 0 && total > budget; floor--) {
        for (size_t i = 0; i < n && total > budget; i++) {
            if (tier[i] <= floor) continue;
            total += cost[i * 3 + floor] - cost[i * 3 + tier[i]];
            tier[i] = floor;
        }
    }
    sb_puts(&b, PROJECT_INTRO);
    for (size_t i = 0; i < n; i++) {
        if ((rc = project_node_text(&b, &nodes[i], tier[i])) != LC_OK) {
            rc = lc_errf(err, LC_NOMEM, "project: out of memory");
            goto done;
        }
        if (tier[i] == TIER_STUB && stubbed) (*stubbed)++;
    }
    if (b.oom) {
        rc = lc_errf(err, LC_NOMEM, "project: out of memory");
        goto done;
    }
    *text = sb_detach(&b);
done:
    sb_free(&b);
    free(tier);
    free(cost);
    return rc;
}

int project_render(const dag_node *nodes, size_t n, long budget, char **message, int *stubbed,
                   char **err)
{
    char *text = NULL;
    cJSON *m = NULL;
    int rc = project_render_text(nodes, n, budget, &text, stubbed, err);
    *message = NULL;
    if (rc != LC_OK) return rc;
    /* A user message: every provider accepts it anywhere, and it is what the model reads
     * as context rather than as its own words. */
    if (!(m = msg_text_message("user", text, 0))) {
        rc = lc_errf(err, LC_NOMEM, "project: out of memory");
        goto done;
    }
    if (!(*message = cJSON_PrintUnformatted(m))) rc = lc_errf(err, LC_NOMEM, "project: out of memory");
done:
    cJSON_Delete(m);
    free(text);
    return rc;
}

/* ---- cuts ------------------------------------------------------------------------------ */

/* A stored cut as the projection holds it: the token measure and node count derived. */
static int project_read_cut(store *s, store_cut_which which, int64_t id, project_cut *out, char **err)
{
    store_cut c;
    int rc = store_cut_get(s, which, id, &c, err);
    memset(out, 0, sizeof *out);
    if (rc != LC_OK) return rc;
    out->id = c.id;
    out->anchor_entry = c.anchor_entry;
    out->anchor_ordinal = c.anchor_ordinal;
    out->message = c.message;
    out->message_len = strlen(c.message);
    out->tokens = project_tokens(out->message_len);
    cJSON *nodes = cJSON_Parse(c.nodes_json);
    out->n_nodes = (size_t)cJSON_GetArraySize(nodes);
    cJSON_Delete(nodes);
    out->stubbed = c.stubbed;
    free(c.nodes_json); /* the strings kept moved to *out */
    return LC_OK;
}

int project_get_cut(store *s, int64_t id, project_cut *out, char **err)
{
    return project_read_cut(s, STORE_CUT_BY_ID, id, out, err);
}

int project_latest_cut(store *s, project_cut *out, char **err)
{
    return project_read_cut(s, STORE_CUT_NEWEST, 0, out, err);
}

int project_branch_cut(store *s, project_cut *out, char **err)
{
    /* The newest cut standing on the active branch: what a request on it may swap to. */
    return project_read_cut(s, STORE_CUT_ON_BRANCH, 0, out, err);
}

int project_prepare_cut(store *s, long budget, int64_t *cut_id, char **err)
{
    dag_node *v = NULL;
    size_t n = 0;
    char *msg = NULL, *nodes_json = NULL;
    int stubbed = 0, rc;
    project_cut latest = {0};
    *cut_id = 0;
    if ((rc = dag_frontier(s, &v, &n, err)) != LC_OK) goto done;
    if (n == 0) {
        rc = LC_NOTFOUND;
        goto done;
    }
    /* The frontier covers a contiguous history, so its newest entry is where the raw
     * messages take over; leaves never end before a toolResult, so no call is orphaned. */
    size_t newest = 0;
    for (size_t i = 1; i < n; i++)
        if (v[i].last_ordinal > v[newest].last_ordinal) newest = i;
    if ((rc = project_render(v, n, budget, &msg, &stubbed, err)) != LC_OK) goto done;
    rc = project_latest_cut(s, &latest, err);
    if (rc == LC_OK && strcmp(latest.anchor_entry, v[newest].last_entry) == 0 &&
        strcmp(latest.message, msg) == 0) {
        *cut_id = latest.id;
        goto done;
    }
    if (rc != LC_OK && rc != LC_NOTFOUND) goto done;
    rc = LC_OK;
    sbuf ids = {0};
    sb_putc(&ids, '[');
    for (size_t i = 0; i < n; i++) sb_printf(&ids, "%s%lld", i ? "," : "", (long long)v[i].id);
    sb_putc(&ids, ']');
    if (ids.oom) {
        sb_free(&ids);
        rc = lc_errf(err, LC_NOMEM, "project: out of memory");
        goto done;
    }
    nodes_json = sb_detach(&ids);
    store_cut row = {0, v[newest].last_entry, v[newest].last_ordinal, msg, nodes_json, stubbed};
    rc = store_cut_add(s, &row, project_tokens(strlen(msg)), cut_id, err);
done:
    project_cut_free(&latest);
    dag_nodes_free(v, n);
    free(msg);
    free(nodes_json);
    return rc;
}

/* ---- the pin ----------------------------------------------------------------------------- */

int project_pin_get(store *s, project_pin *out, char **err)
{
    return store_pin_get(s, out, err);
}

int project_pin_set(store *s, const project_pin *pin, char **err)
{
    return store_pin_set(s, pin, err);
}

int project_pin_clear(store *s, char **err)
{
    return store_pin_clear(s, err);
}

char *project_pin_describe(const project_pin *pin)
{
    if (!pin || pin->cut_id <= 0) return lc_strdup("none");
    double pct = pin->window > 0 ? 100.0 * (double)pin->applied_tokens / (double)pin->window : 0.0;
    return lc_asprintf("pinned at cut %lld (applied at %.0f%%)", (long long)pin->cut_id, pct);
}

/* ---- the per-request plan ------------------------------------------------------------------ */

/* Index of `entry` in msgs[from, n), trying *hint first; n when absent. */
static size_t project_find(const project_msg *msgs, size_t n, size_t from, const char *entry,
                           size_t hint)
{
    if (hint >= from && hint < n && msgs[hint].entry_id && strcmp(msgs[hint].entry_id, entry) == 0)
        return hint;
    /* Newest first: a cut leaves only the fresh tail (and what arrived since) after its
     * anchor, so the walk costs O(tail), not O(history), whichever cut the hint follows. */
    for (size_t i = n; i > from; i--)
        if (msgs[i - 1].entry_id && strcmp(msgs[i - 1].entry_id, entry) == 0) return i - 1;
    return n;
}

void project_decide(const project_msg *msgs, size_t n, size_t clm_anchor,
                    const project_cut *pinned, const project_cut *candidate,
                    const zones_resolved *z, size_t *hint, project_plan *out)
{
    size_t a = clm_anchor > n ? n : clm_anchor;
    long raw = 0;
    memset(out, 0, sizeof *out);
    /* cum[i] would cost an allocation; two sums over json_len are cheaper than parsing. */
    for (size_t i = 0; i < n; i++) raw += project_tokens(msgs[i].json_len);
    out->raw_tokens = raw;
    size_t h = hint ? *hint : 0;
    size_t ppos = pinned ? project_find(msgs, n, a, pinned->anchor_entry, h) : n;
    size_t cpos = candidate ? project_find(msgs, n, a, candidate->anchor_entry, h) : n;
    long replaced_p = 0, replaced_c = 0;
    for (size_t i = a; i < n && (i <= ppos || i <= cpos); i++) {
        long t = project_tokens(msgs[i].json_len);
        if (i <= ppos && ppos < n) replaced_p += t;
        if (i <= cpos && cpos < n) replaced_c += t;
    }
    int pinned_ok = pinned && ppos < n;
    long cur = pinned_ok ? raw - replaced_p + pinned->tokens : raw;
    out->current_tokens = cur;
    out->zone = z ? zones_classify(z, cur) : ZONES_BELOW_SWAP;
    out->action = pinned && !pinned_ok ? PROJECT_DROP : PROJECT_KEEP;
    out->use = pinned_ok ? pinned : NULL;
    out->anchor_pos = pinned_ok ? ppos : 0;
    long cand_occ = candidate && cpos < n ? raw - replaced_c + candidate->tokens : 0;
    /* Monotonic: a new cut covers strictly more history and leaves a smaller request. */
    int cand_ok = candidate && cpos < n && (!pinned_ok || (candidate->id != pinned->id &&
                                                           candidate->anchor_ordinal > pinned->anchor_ordinal)) &&
                  cand_occ < cur;
    if (cand_ok && ((!pinned_ok && out->zone >= ZONES_SWAP) || (pinned_ok && out->zone == ZONES_RECUT))) {
        out->action = pinned_ok ? PROJECT_RECUT : PROJECT_SWAP;
        out->use = candidate;
        out->anchor_pos = cpos;
    }
    out->occupancy = out->use == NULL ? raw : out->use == pinned ? cur : cand_occ;
    if (hint && out->use) *hint = out->anchor_pos;
}

int project_items(size_t n, size_t clm_anchor, const project_plan *plan, project_item **items,
                  size_t *n_items, char **err)
{
    *items = NULL;
    *n_items = 0;
    if (!plan->use) return LC_OK;
    size_t a = clm_anchor > n ? n : clm_anchor;
    size_t count = a + 1 + (n - plan->anchor_pos - 1);
    project_item *v = malloc(count * sizeof *v);
    if (!v) return lc_errf(err, LC_NOMEM, "project: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < a; i++) v[k++] = (project_item){(int64_t)i, NULL};
    v[k++] = (project_item){-1, plan->use->message};
    for (size_t i = plan->anchor_pos + 1; i < n; i++) v[k++] = (project_item){(int64_t)i, NULL};
    *items = v;
    *n_items = k;
    return LC_OK;
}
