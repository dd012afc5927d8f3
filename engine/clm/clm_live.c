/*
 * clm_live.c -- the live context of one session (clm_live.h; docs/DESIGN.md §1.1, §3, §4,
 * §5, §2.1): the state and its services, the revision in force, restores and tree moves,
 * and the rules of the session events. The composition of a request is clm_request.c; the
 * /clm pages are clm_pages.c. The host is reached through the hooks alone.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clm_live.h"
#include "clm_safefs.h"
#include "clm_skill.h"
#include "message.h"

/* ---- services ----------------------------------------------------------------------------- */

void clm_live_facts_get(const clm_live *g, clm_live_facts *f)
{
    memset(f, 0, sizeof *f);
    f->redact = 1;
    if (g->hooks.facts) g->hooks.facts(g->hooks.ud, f);
}

size_t clm_live_window(const clm_live *g)
{
    clm_live_facts f;
    clm_live_facts_get(g, &f);
    return (size_t)(f.window > 0 ? f.window : LC_WINDOW_DEFAULT);
}

void clm_live_say(const clm_live *g, int how, const char *fmt, ...)
{
    va_list ap;
    char *text = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (g->hooks.say) g->hooks.say(g->hooks.ud, how, text);
    free(text);
}

void clm_live_notice(clm_live *g, const char *text)
{
    if (!text || !*text) return;
    if (g->notices.len) sb_puts(&g->notices, "\n\n");
    sb_puts(&g->notices, text);
}

/* Revision payloads carry message bytes verbatim, so the entry goes to the host as text:
 * a parse + print would reformat numbers inside them. The entry is also a mark of the
 * branch (kind, revision, enabled as in clm_marks.h). */
int clm_live_append(clm_live *g, const char *type, const char *json, clm_mark_kind kind,
                    long revision, int enabled, char **out_id, char **err)
{
    char *id = NULL;
    if (out_id) *out_id = NULL;
    int rc = g->hooks.append(g->hooks.ud, type, json, &id, err);
    if (rc != LC_OK) return rc;
    /* Without the id a later tree move cannot tell whether the entry left the branch. */
    if (!id || clm_marks_push(&g->marks, id, kind, revision, enabled) != LC_OK) g->marks_ok = 0;
    if (out_id) *out_id = id;
    else free(id);
    return LC_OK;
}

size_t clm_live_budget(const clm_live *g)
{
    return g->set.budget > 0 ? (size_t)g->set.budget : clm_live_window(g);
}

size_t clm_live_anchor(const clm_live *g)
{
    return g && g->enabled && g->has_rev ? g->rev.anchor_count : 0;
}

/* ---- the mirror folder ---------------------------------------------------------------- */

/* Claim the mirror folder (clm_folder_claim) and tell the user and the log what it says.
 * 1 when the folder changed since the last claim. */
int clm_live_claim_dir(clm_live *g)
{
    char *notice = NULL, *warn = NULL;
    int changed = clm_folder_claim(&g->folder, &notice, &warn);
    if (notice) clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING, "%s", notice);
    if (warn) clm_live_say(g, CLM_LIVE_WARNING, "%s", warn);
    free(notice);
    free(warn);
    return changed;
}

/* ---- skills and steering -------------------------------------------------------------- */

char *clm_live_resolve(const clm_live *g, const char *path)
{
    clm_live_facts f;
    clm_live_facts_get(g, &f);
    if (path[0] == '/' || !f.cwd || !*f.cwd) return lc_strdup(path);
    return lc_asprintf("%s/%s", f.cwd, path);
}

static int clm_live_redact_on(const clm_live *g)
{
    clm_live_facts f;
    clm_live_facts_get(g, &f);
    return f.redact;
}

/* Load the steering document named by `s` into *text/hash; NULL text when none. */
static int clm_live_load_steering(clm_live *g, const clm_settings *s, char **text, char hash[13],
                                  char **err)
{
    *text = NULL;
    hash[0] = '\0';
    if (!s->steering) return LC_OK;
    char *path = clm_live_resolve(g, s->steering);
    if (!path) return lc_errf(err, LC_NOMEM, "out of memory");
    int rc = clm_skill_steering(path, clm_live_redact_on(g), text, hash, err);
    free(path);
    return rc;
}

char *clm_live_compact_prompt(clm_live *g, const char *instructions)
{
    char *path = g->set.compact_prompt ? clm_live_resolve(g, g->set.compact_prompt) : NULL;
    if (g->set.compact_prompt && !path) return NULL;
    char *t = clm_skill_compact_prompt(path, clm_live_redact_on(g), g->folder.path, g->est_next,
                                       clm_live_budget(g), instructions);
    free(path);
    return t;
}

int clm_live_settings_commit(clm_live *g, clm_settings *next, char **err)
{
    char *steer = NULL, hash[13] = "", *json = NULL, *entry_id = NULL;
    int rc = clm_live_load_steering(g, next, &steer, hash, err);
    if (rc != LC_OK) return rc;
    if (next->compact_prompt) {
        char *path = clm_live_resolve(g, next->compact_prompt), *t = NULL;
        size_t len;
        char *e = NULL;
        if (!path || lc_read_file(path, &t, &len, &e) != LC_OK) {
            rc = lc_errf(err, LC_INVALID, "the compact prompt %s cannot be read: %s",
                         path ? path : next->compact_prompt, e ? e : "out of memory");
            free(e);
            free(path);
            free(steer);
            return rc;
        }
        free(t);
        free(path);
    }
    if (!(json = clm_settings_overrides_json(next))) {
        free(steer);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    rc = clm_live_append(g, CLM_SETTINGS_TYPE, json, CLM_MARK_SETTINGS, -1, 1, &entry_id, err);
    free(json);
    if (rc != LC_OK) {
        free(steer);
        return rc;
    }
    free(g->settings_entry_id);
    g->settings_entry_id = entry_id;
    int cap_changed = next->obs_cap != g->set.obs_cap || next->obs_head != g->set.obs_head;
    clm_settings_free(&g->set);
    g->set = *next;
    memset(next, 0, sizeof *next);
    if (cap_changed) clm_raw_uncap(&g->raw);
    free(g->steering_text);
    g->steering_text = steer;
    memcpy(g->steering_hash, hash, sizeof hash);
    return LC_OK;
}

/* ---- the revision in force -------------------------------------------------------------- */

/* The revision the raw prefix is checked against, NULL when none is in force. */
const clm_raw_anchor *clm_live_anchor_of(const clm_live *g, clm_raw_anchor *a)
{
    if (!g->has_rev) return NULL;
    *a = (clm_raw_anchor){g->rev.anchor_count, g->rev.anchor_digest, g->rev.revision};
    return a;
}

void clm_live_drop_revision(clm_live *g)
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
static int clm_live_set_revision(clm_live *g, clm_revision *r, long *raw_idx)
{
    clm_live_drop_revision(g);
    g->rev_gen++;
    g->rev = *r;
    memset(r, 0, sizeof *r);
    size_t n = g->rev.n_messages;
    g->rev_raw = raw_idx ? raw_idx : malloc((n ? n : 1) * sizeof *g->rev_raw);
    g->rev_tokens = malloc((n ? n : 1) * sizeof *g->rev_tokens);
    if (!g->rev_raw || !g->rev_tokens) {
        clm_live_drop_revision(g);
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
static void clm_live_discard_draft(clm_live *g, const char *why)
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
    clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING, "live context: an unread edit of "
                 "LIVE_CONTEXT.md was discarded (%s); nothing from it was saved", why);
    char *t = lc_asprintf("[CLM] Your edit of LIVE_CONTEXT.md was discarded before it was read: "
                          "the live context changed under it (%s). Nothing from it was saved; "
                          "LIVE_CONTEXT.md has been rendered again, read it before editing.", why);
    clm_live_notice(g, t);
    free(t);
}

void clm_live_mark_stale(clm_live *g, const char *why)
{
    clm_live_discard_draft(g, why);
    g->stale_epoch++;
    if (g->have_view) {
        g->view_stale = 1;
        snprintf(g->stale_why, sizeof g->stale_why, "%s", why);
    }
    if (g->compact_pending) {
        g->compact_pending = 0;
        g->compact_wait = 0;
        clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_INFO,
                     "/clm-compact: not sent, the live context changed (%s)", why);
    }
}

static int clm_live_ids_equal(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* Apply the settings entry `data` (NULL: the defaults) and load its steering document. */
static void clm_live_restore_settings(clm_live *g, const cJSON *data)
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
    if (clm_live_load_steering(g, &g->set, &text, hash, &err) != LC_OK) {
        clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING, "live context: %s; no steering in force",
                     err);
        free(err);
    }
    free(g->steering_text);
    g->steering_text = text;
    memcpy(g->steering_hash, hash, sizeof hash);
}

static void clm_live_set_id(char **slot, const char *id)
{
    free(*slot);
    *slot = id ? lc_strdup(id) : NULL;
}

/* The revision changed under the raw cache: its anchor must be digested again. */
static void clm_live_rev_moved(clm_live *g)
{
    clm_raw_anchor a;
    clm_raw_rev_changed(&g->raw, clm_live_anchor_of(g, &a));
}

/* What every restore ends with: branch-local counters and one-shot state start over. */
static void clm_live_restore_finish(clm_live *g, const char *why, const char *no_rev_why)
{
    g->observed_stale = g->has_rev;
    clm_calib_init(&g->cal, getenv("LC_CLM_ESTIMATE_FACTOR"));
    memset(&g->tiers, 0, sizeof g->tiers);
    g->invalidations = 0;
    clm_live_mark_stale(g, why);
    clm_live_say(g, CLM_LIVE_INFO, "live context restored (%s): %s", why,
                 g->has_rev ? "a revision is in force" : no_rev_why);
}

/* Rebuild everything branch-local from the whole branch (start, resume, or a tree move
 * the marks cannot follow): O(branch), once. */
static int clm_live_restore(clm_live *g, const char *why, char **err)
{
    char *text = NULL, *e = NULL;
    cJSON *branch = NULL;
    clm_branch_state st;
    clm_marks_view mv;
    memset(&st, 0, sizeof st);
    int rc = g->hooks.branch(g->hooks.ud, &text, err);
    if (rc != LC_OK) return rc;
    g->tree_full++;
    clm_marks_free(&g->marks);
    g->marks_ok = 0;
    rc = clm_branch_reconstruct(text, strlen(text), &st, &e);
    if (rc != LC_OK) {
        /* An unreadable branch leaves the raw context: the transcript is never at risk. */
        clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING, "live context: %s; using the raw context",
                     e ? e : "the branch cannot be read");
        free(e);
        clm_live_drop_revision(g);
        rc = LC_OK;
        goto done;
    }
    clm_live_drop_revision(g);
    clm_raw_reset(&g->raw);
    g->last_revision = st.last_revision;
    g->enabled = st.enabled;
    if (st.has_revision && clm_live_set_revision(g, &st.rev, NULL) != LC_OK) {
        rc = lc_errf(err, LC_NOMEM, "out of memory restoring the live context");
        goto done;
    }
    if (st.malformed)
        clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING,
                     "live context: %zu unreadable state entr%s skipped", st.malformed,
                     st.malformed == 1 ? "y" : "ies");
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
    clm_live_set_id(&g->rev_entry_id, g->has_rev && mv.in_force ? mv.in_force->id : NULL);
    const cJSON *sdata = NULL;
    if (mv.settings) {
        cJSON_ArrayForEach(en, branch) {
            const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "id"));
            if (id && strcmp(id, mv.settings->id) == 0)
                sdata = cJSON_GetObjectItemCaseSensitive(en, "data");
        }
    }
    clm_live_set_id(&g->settings_entry_id, mv.settings ? mv.settings->id : NULL);
    clm_live_restore_settings(g, sdata);
    clm_live_restore_finish(g, why, st.why);
done:
    clm_branch_state_free(&st);
    cJSON_Delete(branch);
    free(text);
    return rc;
}

static int clm_live_fetch(void *ud, const char *id, cJSON **out, char **err)
{
    clm_live *g = ud;
    return g->hooks.entry(g->hooks.ud, id, out, err);
}

/* A tree move in O(distance moved): walk both leaves to their common ancestor, update the
 * marks, and fetch only the entries whose content is needed (the revision in force and
 * the settings, when they changed). LC_OK when done; anything else: read the branch. */
static int clm_live_tree_fast(clm_live *g, const char *old_leaf, const char *new_leaf)
{
    clm_tree_move mv;
    clm_marks_view v;
    cJSON *entry = NULL;
    char *e = NULL;
    int rc;
    if (!g->marks_ok || !old_leaf || !g->hooks.entry) return LC_ERR;
    memset(&mv, 0, sizeof mv);
    if ((rc = clm_tree_diff(old_leaf, new_leaf, clm_live_fetch, g, &mv, &e)) != LC_OK) {
        clm_live_say(g, CLM_LIVE_INFO, "live context: tree walk failed (%s); reading the branch",
                     e ? e : "?");
        free(e);
        return rc;
    }
    size_t usage = clm_marks_usage_after_move(&mv, clm_live_fetch, g);
    if ((rc = clm_marks_move(&g->marks, &mv, NULL)) != LC_OK) {
        g->marks_ok = 0;
        goto done;
    }
    clm_marks_summarize(&g->marks, &v);
    if (!v.in_force) {
        if (g->has_rev) {
            clm_live_drop_revision(g);
            clm_live_rev_moved(g);
        }
        clm_live_set_id(&g->rev_entry_id, NULL);
    } else if (!g->has_rev || !g->rev_entry_id || strcmp(g->rev_entry_id, v.in_force->id) != 0) {
        clm_revision r;
        if ((rc = clm_live_fetch(g, v.in_force->id, &entry, &e)) != LC_OK ||
            (rc = clm_revision_from_data(cJSON_GetObjectItemCaseSensitive(entry, "data"), &r,
                                         &e)) != LC_OK) {
            /* The marks are already moved; a full reading decides (and reports) instead. */
            clm_live_say(g, CLM_LIVE_INFO, "live context: revision %ld unreadable (%s)",
                         v.in_force->revision, e ? e : "?");
            free(e);
            g->marks_ok = 0;
            goto done;
        }
        if ((rc = clm_live_set_revision(g, &r, NULL)) != LC_OK) {
            clm_revision_free(&r);
            g->marks_ok = 0;
            goto done;
        }
        clm_live_set_id(&g->rev_entry_id, v.in_force->id);
        clm_live_rev_moved(g);
    }
    const char *sid = v.settings ? v.settings->id : NULL;
    if (!clm_live_ids_equal(sid, g->settings_entry_id) && (sid || g->settings_entry_id)) {
        cJSON_Delete(entry);
        entry = NULL;
        if (sid && (rc = clm_live_fetch(g, sid, &entry, NULL)) != LC_OK) {
            g->marks_ok = 0;
            goto done;
        }
        clm_live_restore_settings(g, sid ? cJSON_GetObjectItemCaseSensitive(entry, "data") : NULL);
        clm_live_set_id(&g->settings_entry_id, sid);
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
    clm_live_restore_finish(g, why, v.why);
done:
    cJSON_Delete(entry);
    clm_tree_move_free(&mv);
    return rc;
}

int clm_live_tree(clm_live *g, const char *old_leaf, const char *new_leaf, char **err)
{
    if (clm_live_tree_fast(g, old_leaf, new_leaf) == LC_OK) return LC_OK;
    return clm_live_restore(g, "tree move", err);
}

/* ---- turn_end: the edit ------------------------------------------------------------------ */

static void clm_live_observe_usage(clm_live *g, const cJSON *msg)
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

static int clm_live_accept(clm_live *g, clm_outcome *o)
{
    char *payload = NULL, *perr = NULL, *entry_id = NULL;
    long next = g->view.revision + 1;
    int rc = clm_payload_accept(&g->view, o, next, g->view_raw_n, g->view_digest, &payload, &perr);
    if (rc == LC_OK)
        rc = clm_live_append(g, CLM_STATE_TYPE, payload, CLM_MARK_ACCEPT, next, 1, &entry_id, &perr);
    if (rc != LC_OK) {
        /* Persist before activate: what could not be saved never takes effect. */
        char *t = lc_asprintf("[CLM] Your edit of LIVE_CONTEXT.md was valid but could not be "
                              "saved (%s); the previous context stays in force.",
                              perr ? perr : "unknown error");
        clm_live_notice(g, t);
        clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING, "live context: %s", t ? t : "save failed");
        free(t);
        free(perr);
        free(payload);
        return LC_OK;
    }
    clm_revision r;
    long *raw_idx = NULL;
    if (clm_revision_of_edit(&g->view, o, next, g->view_raw_n, g->view_digest, &r, &raw_idx) != LC_OK)
        goto oom;
    if (clm_live_set_revision(g, &r, raw_idx) != LC_OK) {
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
    clm_live_notice(g, o->notice);
    free(payload);
    return LC_OK;
oom:
    free(payload);
    free(entry_id);
    return LC_NOMEM;
}

static void clm_live_overflow_fallback(clm_live *g, const char *error, const char *where);

int clm_live_turn_end(clm_live *g, const cJSON *msg, char **err)
{
    char *text = NULL, *e = NULL;
    size_t len = 0;
    clm_outcome o;
    int rc = LC_OK, have_outcome = 0;
    g->tools_this_turn = 0;
    clm_live_observe_usage(g, msg);
    /* A host that ends the turn with the provider's error as the answer (Pi does) */
    const char *stop = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "stopReason"));
    if (stop && strcmp(stop, "error") == 0)
        clm_live_overflow_fallback(g, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "errorMessage")),
                                   "an error answer");
    if (!g->enabled || !g->have_view || !g->folder.path) return LC_OK;
    if (g->folder.own_fd >= 0 && !clm_folder_held(&g->folder)) {
        /* Removed or replaced during the turn: what is there now is not our mirror (it may
         * be another process's), so nothing is read; the next request claims a folder. */
        char *t = lc_asprintf("[CLM] The mirror folder %s was removed or replaced during your "
                              "turn, so LIVE_CONTEXT.md was not read and any edit of it is "
                              "ignored; it is written again before the next request.", g->folder.dir);
        clm_live_notice(g, t);
        clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING, "live context: %s",
                     t ? t : "mirror folder lost");
        free(t);
        g->folder.current = 0;
        return LC_OK;
    }
    char *refused = NULL;
    int rrc = clm_folder_read(&g->folder, &text, &len, &refused, &e);
    if (rrc != LC_OK) {
        /* A deleted mirror is no edit; a refused one (a symlink, a huge file, a directory)
         * is named to the model. Either way it is rendered again before the next request. */
        if (refused) {
            clm_live_notice(g, refused);
            clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING, "live context: %s", refused);
        } else {
            clm_live_say(g, CLM_LIVE_INFO, "live context: mirror unreadable at turn end: %s",
                         e ? e : "?");
        }
        free(refused);
        free(e);
        return LC_OK;
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
        clm_live_notice(g, t);
        free(t);
        goto done;
    }
    if ((rc = clm_edit(&g->view, text, len, &o, err)) != LC_OK) goto done;
    have_outcome = 1;
    if (o.accepted) {
        if (clm_live_accept(g, &o) != LC_OK) rc = lc_errf(err, LC_NOMEM, "live context: out of memory");
    } else {
        char *slim = clm_payload_reject(g->last_revision, o.reason ? o.reason : "rejected");
        char *perr = NULL;
        if (!slim || clm_live_append(g, CLM_STATE_TYPE, slim, CLM_MARK_REJECT, g->last_revision, 1,
                                     NULL, &perr) != LC_OK)
            clm_live_say(g, CLM_LIVE_WARNING, "live context: the rejection was not recorded: %s",
                         perr ? perr : "out of memory");
        free(perr);
        free(slim);
        g->rejected++;
        clm_live_notice(g, o.notice);
    }
done:
    if (have_outcome) clm_outcome_free(&o);
    free(text);
    return rc;
}

/* ---- the other events ------------------------------------------------------------------ */

int clm_live_session_start(clm_live *g, const char *tmp_dir, const char *session_id,
                           const char *model, const char *reason, char **err)
{
    clm_folder_release(&g->folder, 1); /* a second session_start: the old session's folder */
    clm_folder_set_paths(&g->folder, tmp_dir, session_id);
    g->folder.other_pid = 0;
    clm_live_claim_dir(g);
    char *swept = NULL;
    clm_folder_sweep(tmp_dir, g->folder.dir, &swept);
    if (swept) clm_live_say(g, CLM_LIVE_INFO, "%s", swept);
    free(swept);
    g->render_off = model && strlen(model) >= 7 && strcmp(model + strlen(model) - 7, "/replay") == 0;
    if (g->have_view) {
        clm_view_free(&g->view);
        g->have_view = 0;
    }
    g->folder.current = 0;
    sb_free(&g->notices);
    return clm_live_restore(g, reason ? reason : "start", err);
}

void clm_live_session_shutdown(clm_live *g)
{
    clm_live_mark_stale(g, "the session shut down");
    clm_folder_release(&g->folder, 1); /* ours only: another process's folder is left alone */
    if (g->have_view) clm_view_free(&g->view);
    g->have_view = 0;
    g->folder.current = 0;
}

char *clm_live_system_prompt(clm_live *g, const char *sp)
{
    if (!g->enabled) return NULL;
    int fallback = 0;
    char *proto = clm_skill_protocol(g->folder.path, &fallback);
    if (fallback)
        clm_live_say(g, CLM_LIVE_WARNING, "live context: skills/live-context.md not found beside "
                     "the plugin; using the short built-in protocol");
    sbuf b = {0};
    if (sp && *sp) sb_printf(&b, "%s\n\n", sp);
    sb_puts(&b, proto ? proto : "");
    if (g->steering_text)
        sb_printf(&b, "\n\n## Context-management guidance (%s)\n\n%s", g->steering_hash,
                  g->steering_text);
    free(proto);
    return sb_detach(&b);
}

const char *clm_live_tool_call(clm_live *g)
{
    if (!g->enabled) return NULL;
    g->tools_this_turn++;
    if (g->set.one_tool && g->tools_this_turn > 1)
        return "oneToolPerTurn is on: only the first tool call of an assistant turn runs; call "
               "this one again in your next turn if you still need it.";
    return NULL;
}

char *clm_live_tool_trailer(clm_live *g, size_t chars)
{
    if (!g->enabled || !g->set.size_trailer) return NULL;
    size_t after = g->est_next + clm_calib_apply(&g->cal, (chars + 3) / 4);
    return lc_asprintf("[context: ~%zu of %zu tokens after this result]", after, clm_live_budget(g));
}

/* Threshold compactions summarize the raw transcript and would discard the model's
 * accepted projection; a manual /compact is the user's explicit choice and always runs. */
int clm_live_before_compact(clm_live *g, const char *reason, const char *error)
{
    if (reason && strcmp(reason, "overflow") == 0)
        /* Without the provider's words, an overflow compaction is an overflow all the same. */
        clm_live_overflow_fallback(g, error ? error : "context length", "the host's overflow compaction");
    if (!g->enabled || !reason || strcmp(reason, "manual") == 0) return 0;
    int cancel = 0;
    if (g->set.host_compaction == CLM_HC_OFF)
        cancel = 1;
    else if (g->set.host_compaction == CLM_HC_AUTO)
        cancel = strcmp(reason, "threshold") == 0 && g->set.guard && g->has_rev;
    if (cancel)
        clm_live_say(g, CLM_LIVE_INFO, "live context: cancelled a %s compaction (piCompaction=%s)",
                     reason, g->set.val[CLM_SET_HOST_COMPACTION]);
    return cancel;
}

void clm_live_compact(clm_live *g, const char *cid)
{
    if (!cid || clm_marks_push(&g->marks, cid, CLM_MARK_COMPACTION, -1, 1) != LC_OK)
        g->marks_ok = 0;
    free(g->rev_entry_id);
    g->rev_entry_id = NULL;
    if (g->has_rev) {
        char *t = lc_asprintf("[CLM] The session was compacted: revision %ld of the live context "
                              "no longer applies, and the compacted transcript is the new "
                              "baseline.", g->rev.revision);
        clm_live_notice(g, t);
        free(t);
    }
    clm_live_drop_revision(g);
    clm_raw_reset(&g->raw);
    clm_live_mark_stale(g, "the session was compacted");
    memset(&g->tiers, 0, sizeof g->tiers);
}

/* ---- back to the raw transcript ----------------------------------------------------------- */

/* Back to the raw transcript (LCM's projection of it) from the next request on: a reset
 * entry records `why`, so a resumed session does not bring the revision back; a draft the
 * model was writing is discarded naming `stale_why`. */
int clm_live_to_raw(clm_live *g, const char *why, const char *stale_why, char **err)
{
    char *payload = clm_payload_reset(g->last_revision + 1, why);
    int rc = payload ? clm_live_append(g, CLM_STATE_TYPE, payload, CLM_MARK_RESET, g->last_revision + 1,
                                       1, NULL, err)
                     : lc_errf(err, LC_NOMEM, "out of memory");
    free(payload);
    if (rc != LC_OK) return rc;
    g->last_revision++;
    clm_live_drop_revision(g);
    clm_live_rev_moved(g);
    clm_live_mark_stale(g, stale_why);
    g->observed_stale = 1;
    return LC_OK;
}

/* Issue 14.6: there is no size gate on an edit, so a revision can be far over the window,
 * and then every request fails at the provider. The way out runs by itself: a provider
 * overflow while a revision is in force drops back to the raw transcript (LCM keeps its
 * projection inside the window) from the next request on -- the host's retry of the same
 * request included -- until the model makes a new edit; the model and the user are told.
 * The revision stays in the session file. */
static void clm_live_overflow_fallback(clm_live *g, const char *error, const char *where)
{
    if (!g->enabled || !g->has_rev || !clm_budget_is_overflow(error)) return;
    long rev = g->rev.revision;
    size_t est = g->est_next, budget = clm_live_budget(g);
    char *err = NULL;
    char *why = lc_asprintf("provider overflow with revision %ld in force", rev);
    int rc = clm_live_to_raw(g, why ? why : "provider overflow", "a provider overflow", &err);
    if (rc != LC_OK) {
        /* Not recorded: still out of the way for this run, or every request keeps failing. */
        clm_live_say(g, CLM_LIVE_WARNING, "live context: the fallback was not recorded (%s); "
                     "a resumed session brings revision %ld back", err ? err : "?", rev);
        clm_live_drop_revision(g);
        clm_live_rev_moved(g);
        clm_live_mark_stale(g, "a provider overflow");
        g->observed_stale = 1;
    }
    char *t = lc_asprintf("[CLM] The provider refused a request as over the model's context "
                          "window while revision %ld of the live context was in force (~%zu "
                          "tokens estimated against a budget of %zu). The live context is the raw "
                          "transcript again from this request on (older history summarized as "
                          "usual); revision %ld stays in the session file. Re-read "
                          "LIVE_CONTEXT.md before editing, and keep an edit within the budget.",
                          rev, est, budget, rev);
    clm_live_notice(g, t);
    free(t);
    clm_live_say(g, CLM_LIVE_NOTIFY | CLM_LIVE_WARNING, "live context: the provider reported a "
                 "context overflow (%s) with revision %ld in force (~%zu tokens): back to the raw "
                 "transcript until the next edit%s", where, rev, est,
                 rc == LC_OK ? "" : " (not recorded in the session file)");
    free(why);
    free(err);
}

/* ---- new / free ---------------------------------------------------------------------------- */

static const char *clm_live_getenv(const char *name)
{
    return getenv(name);
}

int clm_live_new(const clm_live_hooks *hooks, const char *tmp_dir, const char *session_id,
                 clm_live **out, char **err)
{
    clm_live *g = calloc(1, sizeof *g);
    char *problems = NULL;
    *out = NULL;
    if (!g) return lc_errf(err, LC_NOMEM, "out of memory");
    g->hooks = *hooks;
    g->enabled = 1;
    clm_raw_init(&g->raw);
    clm_folder_init(&g->folder);
    if (clm_settings_init(&g->set, clm_live_getenv, &problems, err) != LC_OK) {
        free(g);
        return LC_NOMEM;
    }
    g->set_problems = problems;
    clm_calib_init(&g->cal, getenv("LC_CLM_ESTIMATE_FACTOR"));
    clm_folder_set_paths(&g->folder, tmp_dir, session_id);
    *out = g;
    return LC_OK;
}

void clm_live_free(clm_live *g)
{
    if (!g) return;
    clm_live_drop_revision(g);
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
    LC_FREE(g->steering_text, g->compact_baseline, g);
}
