/*
 * clm.c -- the live-context glue (docs/DESIGN.md §1.1, §3, §4, §5, §2.1): turns ABI events into
 * calls of the CLM engine. Owns the glue state (clm_glue.h): the revision in force, the
 * branch marks and tree moves, the one-call notices, the budget state, the settings in
 * force; the context hook composes (clm_raw, clm_eff), guards and renders (clm_folder)
 * in O(new). The /clm and /clm-compact commands live in clm_pages.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clm_glue.h"
#include "clm_safefs.h"
#include "clm_skill.h"
#include "lcm.h"
#include "message.h"

/* ---- host calls that must keep exact bytes (no cJSON round trip) ---------------------- */

static int clm_host_error(clm_glue *g, int rc, char *herr, char **err, const char *what)
{
    lc_errf(err, rc, "%s: %s", what, herr ? herr : "the host gave no reason");
    if (herr && AP_HOST_HAS(g->p->host, free)) g->p->host->free(herr);
    return rc;
}

/* Persist a custom entry whose data is already JSON text: revision payloads carry message
 * bytes verbatim, and a parse + print would reformat numbers inside them. The entry is
 * also a mark of the branch (kind, revision, enabled as in clm_marks.h); its id is kept
 * there, and in *out_id (optional, malloc'd). */
int clm_append_raw(clm_glue *g, const char *type, const char *json, clm_mark_kind kind,
                          long revision, int enabled, char **out_id, char **err)
{
    const ap_host_api *h = g->p->host;
    if (out_id) *out_id = NULL;
    if (!AP_HOST_HAS(h, append_custom))
        return lc_errf(err, AP_UNSUPPORTED, "the host cannot append session entries");
    char *id = NULL, *herr = NULL;
    int rc = h->append_custom(h->host_ctx, type, json, &id, &herr);
    if (rc != AP_OK) return clm_host_error(g, rc, herr, err, "appending a session entry failed");
    /* Without the id a later tree move cannot tell whether the entry left the branch. */
    if (!id || clm_marks_push(&g->marks, id, kind, revision, enabled) != LC_OK) g->marks_ok = 0;
    if (out_id && id) *out_id = lc_strdup(id);
    if (AP_HOST_HAS(h, free)) h->free(id);
    return AP_OK;
}

static int clm_branch_text(clm_glue *g, char **out, char **err)
{
    const ap_host_api *h = g->p->host;
    *out = NULL;
    if (!AP_HOST_HAS(h, get_branch))
        return lc_errf(err, AP_UNSUPPORTED, "the host cannot list the branch");
    char *json = NULL, *herr = NULL;
    int rc = h->get_branch(h->host_ctx, &json, &herr);
    if (rc != AP_OK) return clm_host_error(g, rc, herr, err, "reading the branch failed");
    *out = lc_strdup(json ? json : "[]");
    if (AP_HOST_HAS(h, free)) h->free(json);
    return *out ? AP_OK : lc_errf(err, AP_NOMEM, "out of memory");
}

void clm_notice(clm_glue *g, const char *text)
{
    if (!text || !*text) return;
    if (g->notices.len) sb_puts(&g->notices, "\n\n");
    sb_puts(&g->notices, text);
}


/* ---- the mirror folder ---------------------------------------------------------------- */

/* Claim the mirror folder (clm_folder_claim) and tell the user and the log what it says.
 * 1 when the folder changed since the last claim. */
static int clm_claim_dir(clm_glue *g)
{
    char *notice = NULL, *warn = NULL;
    int changed = clm_folder_claim(&g->folder, &notice, &warn);
    if (notice) plugin_notify(g->p, AP_LEVEL_WARNING, "%s", notice);
    if (warn) plugin_log(g->p, AP_LEVEL_WARNING, "%s", warn);
    free(notice);
    free(warn);
    return changed;
}

/* ---- skills and steering -------------------------------------------------------------- */

char *clm_resolve(clm_glue *g, const char *path)
{
    if (path[0] == '/' || !g->p->cwd || !*g->p->cwd) return lc_strdup(path);
    return lc_asprintf("%s/%s", g->p->cwd, path);
}

/* redactSecrets (lcm.json); on until that config is loaded and says otherwise. */
int clm_redact_on(const clm_glue *g)
{
    return g->p->lcm && g->p->lcm->cfg ? g->p->lcm->redact : 1;
}

/* Load the steering document named by `s` into *text/hash; NULL text when none. */
int clm_load_steering(clm_glue *g, const clm_settings *s, char **text, char hash[13], char **err)
{
    *text = NULL;
    hash[0] = '\0';
    if (!s->steering) return LC_OK;
    char *path = clm_resolve(g, s->steering);
    if (!path) return lc_errf(err, LC_NOMEM, "out of memory");
    int rc = clm_skill_steering(path, clm_redact_on(g), text, hash, err);
    free(path);
    return rc;
}

/* ---- the revision in force -------------------------------------------------------------- */

/* The revision the raw prefix is checked against, NULL when none is in force. */
static const clm_raw_anchor *clm_anchor_of(const clm_glue *g, clm_raw_anchor *a)
{
    if (!g->has_rev) return NULL;
    *a = (clm_raw_anchor){g->rev.anchor_count, g->rev.anchor_digest, g->rev.revision};
    return a;
}

static void clm_drop_revision(clm_glue *g)
{
    g->rev_gen++; /* the composition's revision items are not these any more */
    clm_revision_free(&g->rev);
    free(g->rev_raw);
    free(g->rev_tokens);
    g->rev_raw = NULL;
    g->rev_tokens = NULL;
    g->has_rev = 0;
}

/* Take ownership of r as the revision in force. raw_idx (owned, may be NULL) maps its
 * messages to raw inputs with the same bytes. */
static int clm_set_revision(clm_glue *g, clm_revision *r, long *raw_idx)
{
    clm_drop_revision(g);
    g->rev_gen++;
    g->rev = *r;
    memset(r, 0, sizeof *r);
    size_t n = g->rev.n_messages;
    g->rev_raw = raw_idx ? raw_idx : malloc((n ? n : 1) * sizeof *g->rev_raw);
    g->rev_tokens = malloc((n ? n : 1) * sizeof *g->rev_tokens);
    if (!g->rev_raw || !g->rev_tokens) {
        clm_drop_revision(g);
        return LC_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (!raw_idx) g->rev_raw[i] = -1;
        g->rev_tokens[i] = msg_estimate_tokens_json(g->rev.messages[i]);
    }
    g->has_rev = 1;
    return LC_OK;
}

/* An edit is read at turn_end; one that lands after that read (a slow background job of
 * the model's, a hand edit) is still only a draft when the baseline moves. The next
 * rendering would overwrite it silently, so it is discarded here, by name: mirror_hash
 * holds what the plugin last wrote or read, and anything else on disk is that draft. */
static void clm_discard_draft(clm_glue *g, const char *why)
{
    char *text = NULL;
    size_t len = 0;
    uint8_t h[32];
    if (!g->have_view || !g->folder.path ||
        clm_safe_read(g->folder.path, CLM_MIRROR_MAX_BYTES, &text, &len, NULL) != LC_OK)
        return;
    clm_mirror_digest(text, len, h);
    free(text);
    if (memcmp(h, g->folder.hash, 32) == 0) return;
    g->folder.current = 0;
    plugin_notify(g->p, AP_LEVEL_WARNING, "live context: an unread edit of LIVE_CONTEXT.md was "
                  "discarded (%s); nothing from it was saved", why);
    char *t = lc_asprintf("[CLM] Your edit of LIVE_CONTEXT.md was discarded before it was read: "
                          "the live context changed under it (%s). Nothing from it was saved; "
                          "LIVE_CONTEXT.md has been rendered again, read it before editing.", why);
    clm_notice(g, t);
    free(t);
}

void clm_mark_stale(clm_glue *g, const char *why)
{
    clm_discard_draft(g, why);
    g->stale_epoch++;
    if (g->have_view) {
        g->view_stale = 1;
        snprintf(g->stale_why, sizeof g->stale_why, "%s", why);
    }
    if (g->compact_pending) {
        g->compact_pending = 0;
        g->compact_wait = 0;
        plugin_notify(g->p, AP_LEVEL_INFO, "/clm-compact: not sent, the live context changed (%s)",
                      why);
    }
}

static int clm_ids_equal(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* Apply the settings entry `data` (NULL: the defaults) and load its steering document. */
static void clm_restore_settings(clm_glue *g, const cJSON *data)
{
    char *problems = NULL;
    long old_cap = g->set.obs_cap;
    double old_head = g->set.obs_head;
    if (data) {
        char *json = cJSON_PrintUnformatted(data);
        if (json)
            clm_settings_apply_overrides(&g->set, json, strlen(json), (const char *const *)g->typed_path,
                                         &problems, NULL);
        free(json);
    } else {
        clm_settings_reset(&g->set, NULL);
    }
    free(g->set_problems);
    g->set_problems = problems;
    if (g->set.obs_cap != old_cap || g->set.obs_head != old_head) clm_raw_uncap(&g->raw);
    char *text = NULL, *err = NULL, hash[13];
    if (clm_load_steering(g, &g->set, &text, hash, &err) != LC_OK) {
        plugin_notify(g->p, AP_LEVEL_WARNING, "live context: %s; no steering in force", err);
        free(err);
    }
    free(g->steering_text);
    g->steering_text = text;
    memcpy(g->steering_hash, hash, sizeof hash);
}

static void clm_set_id(char **slot, const char *id)
{
    free(*slot);
    *slot = id ? lc_strdup(id) : NULL;
}

/* The revision changed under the raw cache: its anchor must be digested again. */
static void clm_rev_moved(clm_glue *g)
{
    clm_raw_anchor a;
    clm_raw_rev_changed(&g->raw, clm_anchor_of(g, &a));
}

/* What every restore ends with: branch-local counters and one-shot state start over. */
static void clm_restore_finish(clm_glue *g, const char *why, const char *no_rev_why)
{
    g->observed_stale = g->has_rev;
    clm_calib_init(&g->cal, getenv("LC_CLM_ESTIMATE_FACTOR"));
    memset(&g->tiers, 0, sizeof g->tiers);
    g->invalidations = 0;
    clm_mark_stale(g, why);
    plugin_log(g->p, AP_LEVEL_INFO, "live context restored (%s): %s", why,
               g->has_rev ? "a revision is in force" : no_rev_why);
}

/* Rebuild everything branch-local from the whole branch (start, resume, or a tree move
 * the marks cannot follow): O(branch), once. */
static int clm_restore(clm_glue *g, const char *why, char **err)
{
    char *text = NULL, *e = NULL;
    cJSON *branch = NULL;
    clm_branch_state st;
    clm_marks_view mv;
    memset(&st, 0, sizeof st);
    int rc = clm_branch_text(g, &text, err);
    if (rc != AP_OK) return rc;
    g->tree_full++;
    clm_marks_free(&g->marks);
    g->marks_ok = 0;
    rc = clm_branch_reconstruct(text, strlen(text), &st, &e);
    if (rc != LC_OK) {
        /* An unreadable branch leaves the raw context: the transcript is never at risk. */
        plugin_notify(g->p, AP_LEVEL_WARNING, "live context: %s; using the raw context",
                      e ? e : "the branch cannot be read");
        free(e);
        clm_drop_revision(g);
        rc = AP_OK;
        goto done;
    }
    clm_drop_revision(g);
    clm_raw_reset(&g->raw);
    g->last_revision = st.last_revision;
    g->enabled = st.enabled;
    if (st.has_revision && clm_set_revision(g, &st.rev, NULL) != LC_OK) {
        rc = lc_errf(err, AP_NOMEM, "out of memory restoring the live context");
        goto done;
    }
    if (st.malformed)
        plugin_notify(g->p, AP_LEVEL_WARNING, "live context: %zu unreadable state entr%s skipped",
                      st.malformed, st.malformed == 1 ? "y" : "ies");
    branch = cJSON_Parse(text);
    g->observed_prev = 0;
    g->marks_ok = cJSON_IsArray(branch);
    const cJSON *en;
    cJSON_ArrayForEach(en, branch) {
        if (clm_marks_push_entry(&g->marks, en) != LC_OK) g->marks_ok = 0;
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "type"));
        if (type && strcmp(type, "message") == 0) {
            long u = msg_usage_total(cJSON_GetObjectItemCaseSensitive(en, "message"));
            if (u > 0) g->observed_prev = (size_t)u;
        }
    }
    clm_marks_summarize(&g->marks, &mv);
    /* The marks must tell the same story as the full reading, or tree moves fall back to
     * full readings. */
    if ((mv.in_force != NULL) != (st.has_revision != 0) ||
        (mv.in_force && mv.in_force->revision != g->rev.revision))
        g->marks_ok = 0;
    g->accepted = mv.accepted;
    g->rejected = mv.rejected;
    clm_set_id(&g->rev_entry_id, g->has_rev && mv.in_force ? mv.in_force->id : NULL);
    const cJSON *sdata = NULL;
    if (mv.settings) {
        cJSON_ArrayForEach(en, branch) {
            const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "id"));
            if (id && strcmp(id, mv.settings->id) == 0)
                sdata = cJSON_GetObjectItemCaseSensitive(en, "data");
        }
    }
    clm_set_id(&g->settings_entry_id, mv.settings ? mv.settings->id : NULL);
    clm_restore_settings(g, sdata);
    clm_restore_finish(g, why, st.why);
done:
    clm_branch_state_free(&st);
    cJSON_Delete(branch);
    free(text);
    return rc;
}

static int clm_fetch(void *ud, const char *id, cJSON **out, char **err)
{
    clm_glue *g = ud;
    int rc = plugin_get_entry(g->p, id, out, err);
    return rc == AP_OK ? LC_OK : rc == AP_NOTFOUND ? LC_NOTFOUND : rc == AP_NOMEM ? LC_NOMEM : LC_ERR;
}

/* A tree move in O(distance moved): walk both leaves to their common ancestor, update the
 * marks, and fetch only the entries whose content is needed (the revision in force and
 * the settings, when they changed). LC_OK when done; anything else: read the branch. */
static int clm_tree_fast(clm_glue *g, const cJSON *ev)
{
    const char *old_leaf = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "oldLeafId"));
    const char *new_leaf = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "newLeafId"));
    clm_tree_move mv;
    clm_marks_view v;
    cJSON *entry = NULL;
    char *e = NULL;
    int rc;
    if (!g->marks_ok || !old_leaf || !AP_HOST_HAS(g->p->host, get_entry)) return LC_ERR;
    memset(&mv, 0, sizeof mv);
    if ((rc = clm_tree_diff(old_leaf, new_leaf, clm_fetch, g, &mv, &e)) != LC_OK) {
        plugin_log(g->p, AP_LEVEL_INFO, "live context: tree walk failed (%s); reading the branch",
                   e ? e : "?");
        free(e);
        return rc;
    }
    size_t usage = clm_marks_usage_after_move(&mv, clm_fetch, g);
    if ((rc = clm_marks_move(&g->marks, &mv, NULL)) != LC_OK) {
        g->marks_ok = 0;
        goto done;
    }
    clm_marks_summarize(&g->marks, &v);
    if (!v.in_force) {
        if (g->has_rev) {
            clm_drop_revision(g);
            clm_rev_moved(g);
        }
        clm_set_id(&g->rev_entry_id, NULL);
    } else if (!g->has_rev || !g->rev_entry_id || strcmp(g->rev_entry_id, v.in_force->id) != 0) {
        clm_revision r;
        if ((rc = clm_fetch(g, v.in_force->id, &entry, &e)) != LC_OK ||
            (rc = clm_revision_from_data(cJSON_GetObjectItemCaseSensitive(entry, "data"), &r,
                                         &e)) != LC_OK) {
            /* The marks are already moved; a full reading decides (and reports) instead. */
            plugin_log(g->p, AP_LEVEL_INFO, "live context: revision %ld unreadable (%s)",
                       v.in_force->revision, e ? e : "?");
            free(e);
            g->marks_ok = 0;
            goto done;
        }
        if ((rc = clm_set_revision(g, &r, NULL)) != LC_OK) {
            clm_revision_free(&r);
            g->marks_ok = 0;
            goto done;
        }
        clm_set_id(&g->rev_entry_id, v.in_force->id);
        clm_rev_moved(g);
    }
    const char *sid = v.settings ? v.settings->id : NULL;
    if (!clm_ids_equal(sid, g->settings_entry_id) && (sid || g->settings_entry_id)) {
        cJSON_Delete(entry);
        entry = NULL;
        if (sid && (rc = clm_fetch(g, sid, &entry, NULL)) != LC_OK) {
            g->marks_ok = 0;
            goto done;
        }
        clm_restore_settings(g, sid ? cJSON_GetObjectItemCaseSensitive(entry, "data") : NULL);
        clm_set_id(&g->settings_entry_id, sid);
    }
    g->last_revision = v.last_revision;
    g->enabled = v.enabled;
    g->accepted = v.accepted;
    g->rejected = v.rejected;
    g->observed_prev = usage;
    g->tree_fast++;
    char why[96];
    snprintf(why, sizeof why, "tree move, incremental: %zu entries left, %zu came",
             mv.n_left, mv.n_came);
    clm_restore_finish(g, why, v.why);
done:
    cJSON_Delete(entry);
    clm_tree_move_free(&mv);
    return rc;
}

size_t clm_glue_anchor(lc_plugin *p)
{
    const clm_glue *g = p->clm;
    return g && g->enabled && g->has_rev ? g->rev.anchor_count : 0;
}

size_t clm_budget_of(const clm_glue *g)
{
    return g->set.budget > 0 ? (size_t)g->set.budget : (size_t)plugin_window(g->p);
}

char *clm_compact_prompt(clm_glue *g, const char *instructions)
{
    char *path = g->set.compact_prompt ? clm_resolve(g, g->set.compact_prompt) : NULL;
    if (g->set.compact_prompt && !path) return NULL;
    char *t = clm_skill_compact_prompt(path, clm_redact_on(g), g->folder.path, g->est_next,
                                       clm_budget_of(g), instructions);
    free(path);
    return t;
}

/* ---- composing the request ------------------------------------------------------------- */

static void clm_in_get(const void *ud, size_t i, const char **id, const char **json, size_t *len)
{
    const ap_message_in *m = &((const ap_message_in *)ud)[i];
    *id = m->entry_id;
    *json = m->json;
    *len = m->json_len;
}

static void clm_suffix_get(const void *ud, size_t k, long *index, const char **json)
{
    const ap_context_item *it = &((const ap_context_result *)ud)->items[k];
    *index = it->input_index < 0 ? -1 : (long)it->input_index;
    *json = it->json;
}

/* One item of the request as sent: the composed item, or the guard's note in its place. */
typedef struct clm_sent {
    const char *json;
    size_t len;
    long raw;
    const char *key;
} clm_sent;

static clm_sent clm_sent_at(const clm_glue *g, const clm_input *in, const clm_guard_result *gr,
                            size_t i)
{
    const clm_eff *e = &g->effl.items[i];
    clm_sent it = {NULL, 0, e->raw, e->key};
    if (gr->replace && gr->replace[i]) {
        it.json = gr->replace[i];
        it.len = strlen(it.json);
        it.raw = -1;
    } else {
        it.json = clm_eff_json(&g->effl, i, in, &it.len);
    }
    return it;
}

static int clm_view_same_at(const clm_glue *g, const clm_input *in, const clm_guard_result *gr,
                            size_t i)
{
    clm_sent it = clm_sent_at(g, in, gr, i);
    return clm_view_same(&g->view, i, it.json, it.len, it.raw, it.key);
}

/* Render the request into the view and the mirror file. The previous view is kept when
 * the mode is the same: the items the composition found unchanged since the previous
 * request (which that view rendered) keep their ids and bodies; the last of them is
 * compared byte for byte, and what follows is compared until the first difference (all of
 * it when the guard replaced messages, or the previous request rendered nothing). Only
 * the rest is derived again, and a context that only grew is appended to the file. */
static int clm_render(clm_glue *g, const clm_input *in, const clm_guard_result *gr, int guard_on,
                      size_t n_rev, size_t raw_n, char **err)
{
    int rc;
    char nonce[CLM_NONCE_LEN + 1];
    size_t n = g->effl.n, k = 0;
    static unsigned long renders;
    clm_mode mode = g->set.conservative ? CLM_MODE_CONSERVATIVE : CLM_MODE_CLM;
    if (g->set.conservative)
        clm_nonce_fresh(g->p->session_id ? g->p->session_id : "", ++renders, nonce);
    else
        clm_nonce_stable(g->p->session_id ? g->p->session_id : "",
                         g->has_rev ? g->rev.anchor_digest : "", g->last_revision, nonce);
    if (g->have_view && g->view.mode == mode &&
        clm_view_rebase(&g->view, g->last_revision, nonce, NULL) == LC_OK) {
        if (g->view_synced && !guard_on) {
            k = g->effl.same < g->view.n ? g->effl.same : g->view.n;
            if (k > n) k = n;
            if (k > 0 && !clm_view_same_at(g, in, gr, k - 1)) k = 0;
        }
        while (k < n && clm_view_same_at(g, in, gr, k)) k++;
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
        clm_sent it = clm_sent_at(g, in, gr, i);
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
static void clm_invalidate(clm_glue *g)
{
    g->invalidations++;
    char *t = lc_asprintf("[CLM] Revision %ld of the live context no longer matches the raw "
                          "history (%s); the context is the raw transcript again.",
                          g->rev.revision, g->raw.rev_why ? g->raw.rev_why : "changed");
    clm_notice(g, t);
    plugin_log(g->p, AP_LEVEL_WARNING, "%s", t ? t : "live context invalidated");
    if (g->invalidations >= 2)
        plugin_notify(g->p, AP_LEVEL_WARNING,
                      "live context: the revision was invalidated %u times in a row; a "
                      "plugin loaded before lossless-context may be changing the messages",
                      g->invalidations);
    free(t);
    clm_drop_revision(g);
}

/* The overflow guard over the composed items (O(context), only while it is needed): the
 * notes it puts in place of old tool results land in *gr; *total follows them. */
static int clm_guard(clm_glue *g, const clm_input *in, size_t fixed, size_t limit, size_t n_rev,
                     size_t *total, clm_guard_result *gr, char **err)
{
    size_t ne = g->effl.n;
    clm_text *texts = malloc((ne ? ne : 1) * sizeof *texts);
    size_t *toks = malloc((ne ? ne : 1) * sizeof *toks);
    char *gerr = NULL;
    int rc = LC_OK;
    if (!texts || !toks) {
        rc = lc_errf(err, AP_NOMEM, "live context: out of memory");
        goto done;
    }
    for (size_t i = 0; i < ne; i++) {
        texts[i].json = clm_eff_json(&g->effl, i, in, &texts[i].len);
        toks[i] = g->effl.items[i].tokens;
    }
    if (clm_guard_apply(&g->guard, g->folder.dir, texts, ne, n_rev, toks, fixed, limit, &g->cal,
                        gr, &gerr) != LC_OK) {
        plugin_log(g->p, AP_LEVEL_WARNING, "live context: overflow guard failed: %s",
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
    if (gr->notice) clm_notice(g, gr->notice);
done:
    free(gerr);
    free(texts);
    free(toks);
    return rc;
}

/* The one-call notices, the budget reminder and a waiting /clm-compact prompt. */
static void clm_budget_notices(clm_glue *g, size_t budget, size_t reserve)
{
    if (g->set.reminders) {
        size_t used = g->est_next;
        if (!g->observed_stale && g->observed_prev > used) used = g->observed_prev;
        int tier = clm_tiers_check(&g->tiers, used, budget, reserve);
        if (tier) {
            char *t = clm_budget_notice(tier, g->est_next, g->observed_prev, g->observed_stale,
                                        budget, reserve);
            clm_notice(g, t);
            free(t);
        }
    }
}

static void clm_compact_notice(clm_glue *g)
{
    if (!g->compact_pending || g->compact_wait) return;
    char *t = clm_compact_prompt(g, g->compact_baseline);
    if (t) clm_notice(g, t);
    else plugin_notify(g->p, AP_LEVEL_WARNING, "/clm-compact: the compact prompt %s cannot "
                       "be read; nothing sent", g->set.compact_prompt);
    free(t);
    g->compact_pending = 0;
    free(g->compact_baseline);
    g->compact_baseline = NULL;
}

/* The result the host gets: every item by input index, or as a new text. */
static int clm_result(clm_glue *g, const clm_input *in, const clm_guard_result *gr,
                      char **notice_msg, ap_context_result **out, char **err)
{
    size_t ne = g->effl.n;
    ap_context_result *r = calloc(1, sizeof *r);
    size_t n_items = ne + (*notice_msg ? 1 : 0);
    int rc = AP_OK;
    if (r) r->items = calloc(n_items ? n_items : 1, sizeof *r->items);
    if (!r || !r->items) {
        free(r);
        return lc_errf(err, AP_NOMEM, "live context: out of memory");
    }
    r->n_items = n_items;
    for (size_t i = 0; i < ne; i++) {
        clm_sent it = clm_sent_at(g, in, gr, i);
        r->items[i].input_index = it.raw;
        if (it.raw < 0 && !(r->items[i].json = lc_strndup(it.json, it.len))) rc = AP_NOMEM;
    }
    if (*notice_msg) {
        r->items[ne].input_index = -1;
        r->items[ne].json = *notice_msg;
        *notice_msg = NULL;
    }
    if (rc != AP_OK) {
        for (size_t i = 0; i < r->n_items; i++) free(r->items[i].json);
        free(r->items);
        free(r);
        return lc_errf(err, AP_NOMEM, "live context: out of memory");
    }
    *out = r;
    return AP_OK;
}

int clm_glue_context(lc_plugin *p, const ap_context_event *ev,
                     const ap_context_result *lcm_suffix, ap_context_result **out, char **err)
{
    clm_glue *g = p->clm;
    int rc = AP_OK;
    clm_guard_result gr;
    char *notice_msg = NULL;
    clm_raw_anchor a;
    memset(&gr, 0, sizeof gr);
    *out = NULL;
    g->tools_this_turn = 0;
    if (!g->enabled) return AP_OK;
    size_t n = ev->n_messages;
    clm_input in = {n, ev->messages, clm_in_get};
    if (clm_raw_update(&g->raw, &in, clm_anchor_of(g, &a)) != LC_OK) {
        rc = lc_errf(err, AP_NOMEM, "live context: out of memory");
        goto done;
    }
    if (g->has_rev && !g->raw.rev_ok) clm_invalidate(g);
    else if (g->has_rev) g->invalidations = 0;
    size_t anchor = g->has_rev ? g->rev.anchor_count : 0;
    size_t n_rev = g->has_rev ? g->rev.n_messages : 0;
    clm_eff_rev rv = {n_rev, g->rev.messages, g->rev.lens, g->rev_raw, g->rev_tokens, anchor,
                      g->rev_gen};
    clm_eff_suffix sx = {lcm_suffix ? lcm_suffix->n_items : 0, lcm_suffix, clm_suffix_get};
    if ((rc = clm_eff_build(&g->effl, g->has_rev ? &rv : NULL, lcm_suffix ? &sx : NULL, &g->raw,
                            &in, g->set.obs_cap, g->set.obs_head, err)) != LC_OK) {
        rc = AP_NOMEM;
        goto done;
    }
    clm_raw_settle(&g->raw);
    size_t ne = g->effl.n;
    g->capped_n = clm_eff_capped(&g->effl);
    /* Anything but the raw input as it came (a revision, a projection, an exclusion, a
     * cap, a note, a notice) makes a result. */
    int changed = g->has_rev || lcm_suffix || g->capped_n || ne - n_rev != (n > anchor ? n - anchor : 0);
    /* Estimates: the system prompt, the notices so far, the messages. */
    size_t sys = ev->system_prompt ? (strlen(ev->system_prompt) + 3) / 4 : 0;
    size_t fixed = sys + (g->notices.len + 3) / 4;
    size_t total = fixed + clm_eff_tokens(&g->effl);
    size_t budget = clm_budget_of(g), reserve = (size_t)g->set.reserve;
    size_t window = (size_t)plugin_window(g->p);
    size_t limit = clm_guard_limit(budget, reserve, window);
    size_t withheld_before = g->withheld;
    g->withheld = 0;
    if (!g->render_off && clm_claim_dir(g)) {
        char *t = lc_asprintf("[CLM] The mirror folder was removed or taken over, so "
                              "LIVE_CONTEXT.md is now at %s.", g->folder.path ? g->folder.path : "?");
        clm_notice(g, t);
        free(t);
    }
    if (g->set.guard && g->folder.dir && (clm_calib_apply(&g->cal, total) > limit || g->guard.n > 0) &&
        (rc = clm_guard(g, &in, fixed, limit, n_rev, &total, &gr, err)) != LC_OK)
        goto done;
    if (g->withheld) changed = 1;
    clm_calib_sent(&g->cal, total);
    g->est_next = clm_calib_apply(&g->cal, total);
    clm_budget_notices(g, budget, reserve);
    if (!g->render_off && g->folder.dir) {
        char *rerr = NULL;
        if (clm_render(g, &in, &gr, g->withheld || withheld_before, n_rev, n, &rerr) != LC_OK) {
            g->view_synced = 0;
            plugin_notify(g->p, AP_LEVEL_WARNING, "live context: the mirror cannot be written: %s",
                          rerr ? rerr : "unknown");
            free(rerr);
        }
    } else {
        g->view_synced = 0;
    }
    clm_compact_notice(g);
    g->eff_n = ne;
    g->eff_raw_n = n;
    if (g->notices.len) {
        notice_msg = clm_skill_notice(CLM_NOTICE_TYPE, g->notices.p);
        sb_free(&g->notices);
        changed = 1;
    }
    if (changed) rc = clm_result(g, &in, &gr, &notice_msg, out, err);
done:
    clm_guard_result_free(&gr);
    free(notice_msg);
    return rc;
}

static void clm_overflow_fallback(clm_glue *g, const char *error, const char *where);

/* ---- turn_end: the edit ------------------------------------------------------------------ */

static void clm_observe_usage(clm_glue *g, const cJSON *msg)
{
    /* A replayed message's usage measured the original run's request, not the one this
     * replay sent: calibrating on it would inflate every estimate (and wake the guard). */
    if (g->render_off) return;
    long u = msg_usage_total(msg);
    if (u <= 0) return;
    clm_calib_observed(&g->cal, (size_t)u);
    g->observed_prev = (size_t)u;
    g->observed_stale = 0;
}

static int clm_accept(clm_glue *g, clm_outcome *o)
{
    char *payload = NULL, *perr = NULL, *entry_id = NULL;
    long next = g->view.revision + 1;
    int rc = clm_payload_accept(&g->view, o, next, g->view_raw_n, g->view_digest, &payload, &perr);
    if (rc == LC_OK)
        rc = clm_append_raw(g, CLM_STATE_TYPE, payload, CLM_MARK_ACCEPT, next, 1, &entry_id, &perr);
    if (rc != LC_OK) {
        /* Persist before activate: what could not be saved never takes effect. */
        char *t = lc_asprintf("[CLM] Your edit of LIVE_CONTEXT.md was valid but could not be "
                              "saved (%s); the previous context stays in force.",
                              perr ? perr : "unknown error");
        clm_notice(g, t);
        plugin_notify(g->p, AP_LEVEL_WARNING, "live context: %s", t ? t : "save failed");
        free(t);
        free(perr);
        free(payload);
        return LC_OK;
    }
    clm_revision r;
    long *raw_idx = NULL;
    if (clm_revision_of_edit(&g->view, o, next, g->view_raw_n, g->view_digest, &r, &raw_idx) != LC_OK)
        goto oom;
    if (clm_set_revision(g, &r, raw_idx) != LC_OK) {
        clm_revision_free(&r);
        goto oom;
    }
    free(g->rev_entry_id);
    g->rev_entry_id = entry_id;
    entry_id = NULL;
    /* The anchor is the digest this very cache produced: no need to check it again. */
    if (g->raw.n == g->view_raw_n) {
        g->raw.rev_checked = g->raw.rev_ok = 1;
    } else {
        clm_raw_truncate(&g->raw, g->view_raw_n, g->view_raw_n);
        g->raw.rev_checked = 0;
    }
    g->last_revision = next;
    g->accepted++;
    g->observed_stale = 1;
    g->folder.current = 0;
    clm_notice(g, o->notice);
    free(payload);
    return LC_OK;
oom:
    free(payload);
    free(entry_id);
    return LC_NOMEM;
}

int clm_glue_turn_end(lc_plugin *p, const cJSON *ev, char **err)
{
    clm_glue *g = p->clm;
    char *text = NULL, *e = NULL;
    size_t len = 0;
    clm_outcome o;
    int rc = AP_OK, have_outcome = 0;
    g->tools_this_turn = 0;
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(ev, "message");
    clm_observe_usage(g, msg);
    /* A host that ends the turn with the provider's error as the answer (Pi does) */
    const char *stop = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "stopReason"));
    if (stop && strcmp(stop, "error") == 0)
        clm_overflow_fallback(g, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "errorMessage")),
                              "an error answer");
    if (!g->enabled || !g->have_view || !g->folder.path) return AP_OK;
    if (g->folder.own_fd >= 0 && !clm_folder_held(&g->folder)) {
        /* Removed or replaced during the turn: what is there now is not our mirror (it may
         * be another process's), so nothing is read; the next request claims a folder. */
        char *t = lc_asprintf("[CLM] The mirror folder %s was removed or replaced during your "
                              "turn, so LIVE_CONTEXT.md was not read and any edit of it is "
                              "ignored; it is written again before the next request.", g->folder.dir);
        clm_notice(g, t);
        plugin_notify(g->p, AP_LEVEL_WARNING, "live context: %s", t ? t : "mirror folder lost");
        free(t);
        g->folder.current = 0;
        return AP_OK;
    }
    char *refused = NULL;
    int rrc = clm_folder_read(&g->folder, &text, &len, &refused, &e);
    if (rrc != LC_OK) {
        /* A deleted mirror is no edit; a refused one (a symlink, a huge file, a directory)
         * is named to the model. Either way it is rendered again before the next request. */
        if (refused) {
            clm_notice(g, refused);
            plugin_notify(g->p, AP_LEVEL_WARNING, "live context: %s", refused);
        } else {
            plugin_log(g->p, AP_LEVEL_INFO, "live context: mirror unreadable at turn end: %s",
                       e ? e : "?");
        }
        free(refused);
        free(e);
        return AP_OK;
    }
    uint8_t h[32];
    clm_mirror_digest(text, len, h);
    if (g->folder.current && memcmp(h, g->folder.hash, 32) == 0) goto done;
    g->folder.current = 0;
    memcpy(g->folder.hash, h, 32); /* read now: only a later write is a draft */
    if (g->view_stale) {
        char *t = lc_asprintf("[CLM] Your edit of LIVE_CONTEXT.md was discarded: the live "
                              "context changed under it (%s). LIVE_CONTEXT.md has been rendered "
                              "again; read it before editing.", g->stale_why);
        clm_notice(g, t);
        free(t);
        goto done;
    }
    if ((rc = clm_edit(&g->view, text, len, &o, err)) != LC_OK) goto done;
    have_outcome = 1;
    if (o.accepted) {
        if (clm_accept(g, &o) != LC_OK) rc = lc_errf(err, AP_NOMEM, "live context: out of memory");
    } else {
        char *slim = clm_payload_reject(g->last_revision, o.reason ? o.reason : "rejected");
        char *perr = NULL;
        if (!slim || clm_append_raw(g, CLM_STATE_TYPE, slim, CLM_MARK_REJECT, g->last_revision, 1,
                                     NULL, &perr) != AP_OK)
            plugin_log(g->p, AP_LEVEL_WARNING, "live context: the rejection was not recorded: %s",
                       perr ? perr : "out of memory");
        free(perr);
        free(slim);
        g->rejected++;
        clm_notice(g, o.notice);
    }
done:
    if (have_outcome) clm_outcome_free(&o);
    free(text);
    return rc;
}

/* ---- the other events ------------------------------------------------------------------ */

int clm_glue_session_start(lc_plugin *p, const cJSON *ev, char **err)
{
    clm_glue *g = p->clm;
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason"));
    clm_folder_release(&g->folder, 1); /* a second session_start: the old session's folder */
    clm_folder_set_paths(&g->folder, p->tmp_dir, p->session_id);
    g->folder.other_pid = 0;
    clm_claim_dir(g);
    char *swept = NULL;
    clm_folder_sweep(p->tmp_dir, g->folder.dir, &swept);
    if (swept) plugin_log(p, AP_LEVEL_INFO, "%s", swept);
    free(swept);
    g->render_off = p->model && strlen(p->model) >= 7 &&
                    strcmp(p->model + strlen(p->model) - 7, "/replay") == 0;
    if (g->have_view) {
        clm_view_free(&g->view);
        g->have_view = 0;
    }
    g->folder.current = 0;
    sb_free(&g->notices);
    return clm_restore(g, reason ? reason : "start", err);
}

int clm_glue_session_shutdown(lc_plugin *p, char **err)
{
    clm_glue *g = p->clm;
    (void)err;
    clm_mark_stale(g, "the session shut down");
    clm_folder_release(&g->folder, 1); /* ours only: another process's folder is left alone */
    if (g->have_view) clm_view_free(&g->view);
    g->have_view = 0;
    g->folder.current = 0;
    return AP_OK;
}

int clm_glue_before_agent_start(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    clm_glue *g = p->clm;
    (void)err;
    *out = NULL;
    if (!g->enabled) return AP_OK;
    const char *sp = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "systemPrompt"));
    int fallback = 0;
    char *proto = clm_skill_protocol(g->folder.path, &fallback);
    if (fallback)
        plugin_log(p, AP_LEVEL_WARNING, "live context: skills/live-context.md not found beside "
                   "the plugin; using the short built-in protocol");
    sbuf b = {0};
    if (sp && *sp) sb_printf(&b, "%s\n\n", sp);
    sb_puts(&b, proto ? proto : "");
    if (g->steering_text)
        sb_printf(&b, "\n\n## Context-management guidance (%s)\n\n%s", g->steering_hash,
                  g->steering_text);
    if (!b.oom) {
        *out = cJSON_CreateObject();
        cJSON_AddStringToObject(*out, "systemPrompt", b.p);
    }
    sb_free(&b);
    free(proto);
    return AP_OK;
}

int clm_glue_before_provider_request(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    clm_glue *g = p->clm;
    *out = NULL;
    const cJSON *payload = cJSON_GetObjectItemCaseSensitive(ev, "payload");
    if (!g->enabled || !cJSON_IsObject(payload)) return AP_OK;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(payload, "replay"))) {
        g->render_off = 1;
        return AP_OK;
    }
    cJSON *fixed = NULL;
    size_t window = (size_t)plugin_window(p);
    size_t model_max = (size_t)(p->max_tokens > 0 ? p->max_tokens : 8192);
    int rc = clm_max_tokens_repair_doc(payload, window, model_max, g->est_next, &fixed, err);
    if (rc == LC_OK && fixed) {
        *out = cJSON_CreateObject();
        cJSON_AddItemToObject(*out, "payload", fixed);
        g->repairs++;
    }
    return rc;
}

int clm_glue_tool_call(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    clm_glue *g = p->clm;
    (void)ev, (void)err;
    *out = NULL;
    if (!g->enabled) return AP_OK;
    g->tools_this_turn++;
    if (g->set.one_tool && g->tools_this_turn > 1) {
        *out = cJSON_CreateObject();
        cJSON_AddBoolToObject(*out, "block", 1);
        cJSON_AddStringToObject(*out, "reason", "oneToolPerTurn is on: only the first tool call "
                                                "of an assistant turn runs; call this one again "
                                                "in your next turn if you still need it.");
    }
    return AP_OK;
}

int clm_glue_tool_result(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    clm_glue *g = p->clm;
    (void)err;
    *out = NULL;
    if (!g->enabled || !g->set.size_trailer) return AP_OK;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(ev, "content");
    if (!cJSON_IsArray(content)) return AP_OK;
    size_t chars = 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, content) {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "text"));
        if (t) chars += strlen(t);
    }
    size_t after = g->est_next + clm_calib_apply(&g->cal, (chars + 3) / 4);
    cJSON *nc = cJSON_Duplicate(content, 1);
    cJSON *tb = cJSON_CreateObject();
    char *t = lc_asprintf("[context: ~%zu of %zu tokens after this result]", after, clm_budget_of(g));
    cJSON_AddStringToObject(tb, "type", "text");
    cJSON_AddStringToObject(tb, "text", t ? t : "");
    cJSON_AddItemToArray(nc, tb);
    free(t);
    *out = cJSON_CreateObject();
    cJSON_AddItemToObject(*out, "content", nc);
    return AP_OK;
}

/* Threshold compactions summarize the raw transcript and would discard the model's
 * accepted projection; a manual /compact is the user's explicit choice and always runs. */
int clm_glue_before_compact(lc_plugin *p, const cJSON *ev, cJSON **out, char **err)
{
    clm_glue *g = p->clm;
    (void)err;
    *out = NULL;
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason"));
    if (reason && strcmp(reason, "overflow") == 0) {
        /* Without the provider's words, an overflow compaction is an overflow all the same. */
        const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "error"));
        clm_overflow_fallback(g, e ? e : "context length", "the host's overflow compaction");
    }
    if (!g->enabled || !reason || strcmp(reason, "manual") == 0) return AP_OK;
    int cancel = 0;
    if (g->set.host_compaction == CLM_HC_OFF)
        cancel = 1;
    else if (g->set.host_compaction == CLM_HC_AUTO)
        cancel = strcmp(reason, "threshold") == 0 && g->set.guard && g->has_rev;
    if (cancel) {
        *out = cJSON_CreateObject();
        cJSON_AddBoolToObject(*out, "cancel", 1);
        plugin_log(p, AP_LEVEL_INFO, "live context: cancelled a %s compaction (piCompaction=%s)",
                   reason, g->set.val[CLM_SET_HOST_COMPACTION]);
    }
    return AP_OK;
}

int clm_glue_compact(lc_plugin *p, const cJSON *ev, char **err)
{
    clm_glue *g = p->clm;
    (void)err;
    const char *cid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(ev, "compactionEntry"), "id"));
    if (!cid || clm_marks_push(&g->marks, cid, CLM_MARK_COMPACTION, -1, 1) != LC_OK)
        g->marks_ok = 0;
    free(g->rev_entry_id);
    g->rev_entry_id = NULL;
    if (g->has_rev) {
        char *t = lc_asprintf("[CLM] The session was compacted: revision %ld of the live context "
                              "no longer applies, and the compacted transcript is the new "
                              "baseline.", g->rev.revision);
        clm_notice(g, t);
        free(t);
    }
    clm_drop_revision(g);
    clm_raw_reset(&g->raw);
    clm_mark_stale(g, "the session was compacted");
    memset(&g->tiers, 0, sizeof g->tiers);
    return AP_OK;
}

int clm_glue_tree(lc_plugin *p, const cJSON *ev, char **err)
{
    if (clm_tree_fast(p->clm, ev) == LC_OK) return AP_OK;
    return clm_restore(p->clm, "tree move", err);
}

/* ---- commands ------------------------------------------------------------------------------ */

/* Back to the raw transcript (LCM's projection of it) from the next request on: a reset
 * entry records `why`, so a resumed session does not bring the revision back; a draft the
 * model was writing is discarded naming `stale_why`. */
int clm_to_raw(clm_glue *g, const char *why, const char *stale_why, char **err)
{
    char *payload = clm_payload_reset(g->last_revision + 1, why);
    int rc = payload ? clm_append_raw(g, CLM_STATE_TYPE, payload, CLM_MARK_RESET, g->last_revision + 1,
                                      1, NULL, err)
                     : lc_errf(err, AP_NOMEM, "out of memory");
    free(payload);
    if (rc != AP_OK) return rc;
    g->last_revision++;
    clm_drop_revision(g);
    clm_rev_moved(g);
    clm_mark_stale(g, stale_why);
    g->observed_stale = 1;
    return AP_OK;
}

/* Issue 14.6: there is no size gate on an edit, so a revision can be far over the window,
 * and then every request fails at the provider. The way out runs by itself: a provider
 * overflow while a revision is in force drops back to the raw transcript (LCM keeps its
 * projection inside the window) from the next request on -- the host's retry of the same
 * request included -- until the model makes a new edit; the model and the user are told.
 * The revision stays in the session file. */
static void clm_overflow_fallback(clm_glue *g, const char *error, const char *where)
{
    if (!g->enabled || !g->has_rev || !clm_budget_is_overflow(error)) return;
    long rev = g->rev.revision;
    size_t est = g->est_next, budget = clm_budget_of(g);
    char *err = NULL;
    char *why = lc_asprintf("provider overflow with revision %ld in force", rev);
    int rc = clm_to_raw(g, why ? why : "provider overflow", "a provider overflow", &err);
    if (rc != AP_OK) {
        /* Not recorded: still out of the way for this run, or every request keeps failing. */
        plugin_log(g->p, AP_LEVEL_WARNING, "live context: the fallback was not recorded (%s); "
                   "a resumed session brings revision %ld back", err ? err : "?", rev);
        clm_drop_revision(g);
        clm_rev_moved(g);
        clm_mark_stale(g, "a provider overflow");
        g->observed_stale = 1;
    }
    char *t = lc_asprintf("[CLM] The provider refused a request as over the model's context "
                          "window while revision %ld of the live context was in force (~%zu "
                          "tokens estimated against a budget of %zu). The live context is the raw "
                          "transcript again from this request on (older history summarized as "
                          "usual); revision %ld stays in the session file. Re-read "
                          "LIVE_CONTEXT.md before editing, and keep an edit within the budget.",
                          rev, est, budget, rev);
    clm_notice(g, t);
    free(t);
    plugin_notify(g->p, AP_LEVEL_WARNING, "live context: the provider reported a context overflow "
                  "(%s) with revision %ld in force (~%zu tokens): back to the raw transcript "
                  "until the next edit%s", where, rev, est,
                  rc == AP_OK ? "" : " (not recorded in the session file)");
    free(why);
    free(err);
}

/* ---- init / free ---------------------------------------------------------------------------- */

static const char *clm_getenv(const char *name)
{
    return getenv(name);
}

int clm_glue_init(lc_plugin *p, char **err)
{
    clm_glue *g = calloc(1, sizeof *g);
    char *problems = NULL;
    if (!g) return lc_errf(err, AP_NOMEM, "out of memory");
    g->p = p;
    g->enabled = 1;
    clm_raw_init(&g->raw);
    clm_folder_init(&g->folder);
    if (clm_settings_init(&g->set, clm_getenv, &problems, err) != LC_OK) {
        free(g);
        return AP_NOMEM;
    }
    g->set_problems = problems;
    clm_calib_init(&g->cal, getenv("LC_CLM_ESTIMATE_FACTOR"));
    p->clm = g;
    clm_folder_set_paths(&g->folder, p->tmp_dir, p->session_id);
    int rc = plugin_register_command(p, "clm", "Live context: status, input, edits, overview, "
                                     "settings, config, on/off, reset", clm_page_command, err);
    if (rc == AP_OK)
        rc = plugin_register_command(p, "clm-compact",
                                     "Ask the model to compact its live context", clm_page_compact_command,
                                     err);
    return rc;
}

void clm_glue_free(lc_plugin *p)
{
    clm_glue *g = p ? p->clm : NULL;
    if (!g) return;
    clm_drop_revision(g);
    clm_raw_free(&g->raw);
    clm_eff_free(&g->effl);
    clm_marks_free(&g->marks);
    free(g->rev_entry_id);
    free(g->settings_entry_id);
    if (g->have_view) clm_view_free(&g->view);
    clm_guard_cache_free(&g->guard);
    clm_settings_free(&g->set);
    sb_free(&g->notices);
    for (int i = 0; i < CLM_N_SETTINGS; i++) free(g->typed_path[i]);
    free(g->set_problems);
    clm_folder_free(&g->folder);
    free(g->steering_text);
    free(g->compact_baseline);
    free(g);
    p->clm = NULL;
}
