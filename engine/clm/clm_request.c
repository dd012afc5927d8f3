/*
 * clm_request.c -- one request of the live context (clm_request.h; docs/DESIGN.md §3,
 * §5.3): the revision in force ++ LCM's projection of the raw suffix,
 * the observation cap (clm_eff), the overflow guard, the one-call notices, and the mirror
 * rendered in O(new) -- a context that only grew is appended to LIVE_CONTEXT.md.
 */
#include <stdlib.h>
#include <string.h>

#include "clm_request.h"
#include "clm_skill.h"
#include "message.h"

/* One item of the request as sent: the composed item, or the guard's note in its place. */
typedef struct clm_request_sent {
    const char *json;
    size_t len;
    long raw;
    const char *key;
} clm_request_sent;

static clm_request_sent clm_request_sent_at(const clm_live *g, const clm_input *in,
                                            const clm_guard_result *gr, size_t i)
{
    const clm_eff *e = &g->effl.items[i];
    clm_request_sent it = {NULL, 0, e->raw, e->key};
    if (gr->replace && gr->replace[i]) {
        it.json = gr->replace[i];
        it.len = strlen(it.json);
        it.raw = -1;
    } else {
        it.json = clm_eff_json(&g->effl, i, in, &it.len);
    }
    return it;
}

static int clm_request_view_same_at(const clm_live *g, const clm_input *in,
                                    const clm_guard_result *gr, size_t i)
{
    clm_request_sent it = clm_request_sent_at(g, in, gr, i);
    return clm_view_same(&g->view, i, it.json, it.len, it.raw, it.key);
}

/* Render the request into the view and the mirror file. The previous view is kept when
 * the mode is the same: the items the composition found unchanged since the previous
 * request (which that view rendered) keep their ids and bodies; the last of them is
 * compared byte for byte, and what follows is compared until the first difference (all of
 * it when the guard replaced messages, or the previous request rendered nothing). Only
 * the rest is derived again, and a context that only grew is appended to the file. */
static int clm_request_render(clm_live *g, const clm_input *in, const clm_guard_result *gr,
                              int guard_on, size_t n_rev, size_t raw_n, char **err)
{
    int rc;
    char nonce[CLM_NONCE_LEN + 1];
    size_t n = g->effl.n, k = 0;
    static unsigned long renders;
    clm_live_facts f;
    clm_live_facts_get(g, &f);
    clm_mode mode = g->set.conservative ? CLM_MODE_CONSERVATIVE : CLM_MODE_CLM;
    if (g->set.conservative)
        clm_nonce_fresh(f.session_id ? f.session_id : "", ++renders, nonce);
    else
        clm_nonce_stable(f.session_id ? f.session_id : "", g->has_rev ? g->rev.anchor_digest : "",
                         g->last_revision, nonce);
    if (g->have_view && g->view.mode == mode &&
        clm_view_rebase(&g->view, g->last_revision, nonce, NULL) == LC_OK) {
        if (g->view_synced && !guard_on) {
            k = g->effl.same < g->view.n ? g->effl.same : g->view.n;
            if (k > n) k = n;
            if (k > 0 && !clm_request_view_same_at(g, in, gr, k - 1)) k = 0;
        }
        while (k < n && clm_request_view_same_at(g, in, gr, k)) k++;
        clm_view_truncate(&g->view, k);
    } else {
        if (g->have_view) clm_view_free(&g->view);
        g->have_view = 0;
        rc = clm_view_init(&g->view, mode, g->last_revision, nonce, err);
        if (rc != LC_OK) return rc;
        g->have_view = 1;
    }
    rc = LC_OK;
    for (size_t i = k; i < n && rc == LC_OK; i++) {
        clm_request_sent it = clm_request_sent_at(g, in, gr, i);
        rc = clm_view_add(&g->view, it.json, it.len, it.raw, it.key, err);
    }
    if (rc == LC_OK) rc = clm_folder_render(&g->folder, &g->view, err);
    if (rc != LC_OK) {
        clm_view_free(&g->view);
        g->have_view = 0;
        return rc;
    }
    g->view_raw_n = raw_n;
    g->view_rev_n = n_rev;
    clm_raw_digest_hex(&g->raw, g->view_digest);
    g->view_stale = 0;
    g->view_synced = 1;
    return LC_OK;
}

/* The revision in force failed its anchor check: back to the raw transcript, told. */
static void clm_request_invalidate(clm_live *g)
{
    g->invalidations++;
    char *t = lc_asprintf("[CLM] Revision %ld of the live context no longer matches the raw "
                          "history (%s); the context is the raw transcript again.",
                          g->rev.revision, g->raw.rev_why ? g->raw.rev_why : "changed");
    clm_live_notice(g, t);
    clm_live_say(g, CLM_LIVE_WARNING, "%s", t ? t : "live context invalidated");
    if (g->invalidations >= 2)
        clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING,
                     "live context: the revision was invalidated %u times in a row; a "
                     "plugin loaded before lossless-context may be changing the messages",
                     g->invalidations);
    free(t);
    clm_live_drop_revision(g);
}

/* The overflow guard over the composed items (O(context), only while it is needed): the
 * notes it puts in place of old tool results land in *gr; *total follows them. */
static int clm_request_guard(clm_live *g, const clm_input *in, size_t fixed, size_t limit,
                             size_t n_rev, size_t *total, clm_guard_result *gr, char **err)
{
    size_t ne = g->effl.n;
    clm_text *texts = malloc((ne ? ne : 1) * sizeof *texts);
    size_t *toks = malloc((ne ? ne : 1) * sizeof *toks);
    char *gerr = NULL;
    int rc = LC_OK;
    if (!texts || !toks) {
        rc = lc_errf(err, LC_NOMEM, "live context: out of memory");
        goto done;
    }
    for (size_t i = 0; i < ne; i++) {
        texts[i].json = clm_eff_json(&g->effl, i, in, &texts[i].len);
        toks[i] = g->effl.items[i].tokens;
    }
    if (clm_guard_apply(&g->guard, g->folder.dir, texts, ne, n_rev, toks, fixed, limit, &g->cal,
                        gr, &gerr) != LC_OK) {
        clm_live_say(g, CLM_LIVE_WARNING, "live context: overflow guard failed: %s",
                     gerr ? gerr : "unknown");
        clm_guard_result_free(gr);
        memset(gr, 0, sizeof *gr);
        goto done;
    }
    for (size_t i = 0; i < ne; i++) {
        if (!gr->replace[i]) continue;
        *total = *total - toks[i] + msg_estimate_tokens_json(gr->replace[i]);
        g->withheld++;
    }
    if (gr->notice) clm_live_notice(g, gr->notice);
done:
    free(gerr);
    free(texts);
    free(toks);
    return rc;
}

/* The one-call notices, the budget reminder and a waiting /clm-compact prompt. */
static void clm_request_budget_notices(clm_live *g, size_t budget, size_t reserve)
{
    if (g->set.reminders) {
        size_t used = g->est_next;
        if (!g->observed_stale && g->observed_prev > used) used = g->observed_prev;
        int tier = clm_tiers_check(&g->tiers, used, budget, reserve);
        if (tier) {
            char *t = clm_budget_notice(tier, g->est_next, g->observed_prev, g->observed_stale,
                                        budget, reserve);
            clm_live_notice(g, t);
            free(t);
        }
    }
}

static void clm_request_compact_notice(clm_live *g)
{
    if (!g->compact_pending || g->compact_wait) return;
    char *t = clm_live_compact_prompt(g, g->compact_baseline);
    if (t) clm_live_notice(g, t);
    else clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING, "/clm-compact: the compact prompt %s "
                      "cannot be read; nothing sent", g->set.compact_prompt);
    free(t);
    g->compact_pending = 0;
    free(g->compact_baseline);
    g->compact_baseline = NULL;
}

clm_request_item clm_request_at(const clm_request_result *r, size_t i)
{
    clm_request_sent it = clm_request_sent_at(r->g, r->in, &r->gr, i);
    return (clm_request_item){it.raw, it.json, it.len};
}

void clm_request_result_free(clm_request_result *r)
{
    clm_guard_result_free(&r->gr);
    free(r->notice);
    memset(r, 0, sizeof *r);
}

int clm_request_compose(clm_live *g, const clm_input *in, const char *system_prompt,
                        const clm_eff_suffix *suffix, clm_request_result *out, char **err)
{
    int rc = LC_OK;
    clm_raw_anchor a;
    memset(out, 0, sizeof *out);
    g->tools_this_turn = 0;
    if (!g->enabled) return LC_OK;
    size_t n = in->n;
    if (clm_raw_update(&g->raw, in, clm_live_anchor_of(g, &a)) != LC_OK)
        return lc_errf(err, LC_NOMEM, "live context: out of memory");
    if (g->has_rev && !g->raw.rev_ok) clm_request_invalidate(g);
    else if (g->has_rev) g->invalidations = 0;
    size_t anchor = g->has_rev ? g->rev.anchor_count : 0;
    size_t n_rev = g->has_rev ? g->rev.n_messages : 0;
    clm_eff_rev rv = {n_rev, g->rev.messages, g->rev.lens, g->rev_raw, g->rev_tokens, anchor,
                      g->rev_gen};
    if ((rc = clm_eff_build(&g->effl, g->has_rev ? &rv : NULL, suffix, &g->raw, in,
                            g->set.obs_cap, g->set.obs_head, err)) != LC_OK)
        return LC_NOMEM;
    clm_raw_settle(&g->raw);
    size_t ne = g->effl.n;
    g->capped_n = clm_eff_capped(&g->effl);
    /* Anything but the raw input as it came (a revision, a projection, an exclusion, a
     * cap, a note, a notice) makes a result. */
    int changed = g->has_rev || suffix || g->capped_n || ne - n_rev != (n > anchor ? n - anchor : 0);
    /* Estimates: the system prompt, the notices so far, the messages. */
    size_t sys = system_prompt ? (strlen(system_prompt) + 3) / 4 : 0;
    size_t fixed = sys + (g->notices.len + 3) / 4;
    size_t total = fixed + clm_eff_tokens(&g->effl);
    size_t budget = clm_live_budget(g), reserve = (size_t)g->set.reserve;
    size_t limit = clm_guard_limit(budget, reserve, clm_live_window(g));
    size_t withheld_before = g->withheld;
    g->withheld = 0;
    if (!g->render_off && clm_live_claim_dir(g)) {
        char *t = lc_asprintf("[CLM] The mirror folder was removed or taken over, so "
                              "LIVE_CONTEXT.md is now at %s.", g->folder.path ? g->folder.path : "?");
        clm_live_notice(g, t);
        free(t);
    }
    if (g->set.guard && g->folder.dir && (clm_calib_apply(&g->cal, total) > limit || g->guard.n > 0) &&
        (rc = clm_request_guard(g, in, fixed, limit, n_rev, &total, &out->gr, err)) != LC_OK)
        goto done;
    if (g->withheld) changed = 1;
    clm_calib_sent(&g->cal, total);
    g->est_next = clm_calib_apply(&g->cal, total);
    clm_request_budget_notices(g, budget, reserve);
    if (!g->render_off && g->folder.dir) {
        char *rerr = NULL;
        if (clm_request_render(g, in, &out->gr, g->withheld || withheld_before, n_rev, n, &rerr) !=
            LC_OK) {
            g->view_synced = 0;
            clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING,
                         "live context: the mirror cannot be written: %s", rerr ? rerr : "unknown");
            free(rerr);
        }
    } else {
        g->view_synced = 0;
    }
    clm_request_compact_notice(g);
    g->eff_n = ne;
    g->eff_raw_n = n;
    if (g->notices.len) {
        out->notice = clm_skill_notice(CLM_NOTICE_TYPE, g->notices.p);
        sb_free(&g->notices);
        changed = 1;
    }
    if (changed) {
        out->changed = 1;
        out->n = ne;
        out->g = g;
        out->in = in;
    }
done:
    if (rc != LC_OK) clm_request_result_free(out);
    return rc;
}
