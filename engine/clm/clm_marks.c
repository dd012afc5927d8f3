/*
 * clm_marks.c -- the branch's live-context marks kept incrementally, and the walk from two
 * leaves to their common ancestor (see clm_marks.h). A branch is a path in an append-only
 * tree, so the marks that leave on a tree move are always the newest ones: popping them
 * from the top of the stack and pushing those of the new path is the whole update.
 */
#include "clm_marks.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clm_revision.h"
#include "clm_settings.h"
#include "util.h"

static const char *marks_str(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

clm_mark_kind clm_mark_classify(const cJSON *entry, clm_mark *out)
{
    memset(out, 0, sizeof *out);
    out->revision = -1;
    out->enabled = 1;
    const char *type = marks_str(entry, "type");
    if (!type) return CLM_MARK_NONE;
    if (strcmp(type, "compaction") == 0) return out->kind = CLM_MARK_COMPACTION;
    if (strcmp(type, "custom") != 0) return CLM_MARK_NONE;
    const char *ct = marks_str(entry, "customType");
    if (!ct) return CLM_MARK_NONE;
    if (strcmp(ct, CLM_SETTINGS_TYPE) == 0) return out->kind = CLM_MARK_SETTINGS;
    if (strcmp(ct, CLM_STATE_TYPE) != 0) return CLM_MARK_NONE;
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(entry, "data");
    const char *kind = marks_str(data, "kind");
    const cJSON *rev = cJSON_GetObjectItemCaseSensitive(data, "revision");
    if (!kind) return out->kind = CLM_MARK_MALFORMED;
    if (cJSON_IsNumber(rev)) out->revision = (long)rev->valuedouble;
    if (strcmp(kind, "toggle") == 0) {
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(data, "enabled");
        /* A toggle without a boolean changes nothing, like the full reconstruction. */
        out->enabled = cJSON_IsBool(en) ? cJSON_IsTrue(en) : -1;
        return out->kind = CLM_MARK_TOGGLE;
    }
    if (strcmp(kind, "accept") == 0 || strcmp(kind, "reset") == 0) {
        if (!cJSON_IsNumber(rev) || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(data, "messages")))
            return out->kind = CLM_MARK_MALFORMED;
        return out->kind = strcmp(kind, "accept") == 0 ? CLM_MARK_ACCEPT : CLM_MARK_RESET;
    }
    if (strcmp(kind, "reject") == 0) return out->kind = CLM_MARK_REJECT;
    /* An unknown kind still carries a revision number the counter must respect. */
    return out->kind = CLM_MARK_OTHER;
}

int clm_marks_push(clm_marks *m, const char *id, clm_mark_kind kind, long revision, int enabled)
{
    if (!id) return LC_INVALID;
    clm_mark *v = lc_grow(m->v, &m->cap, m->n + 1, sizeof *v);
    if (!v) return LC_NOMEM;
    m->v = v;
    char *dup = lc_strdup(id);
    if (!dup) return LC_NOMEM;
    m->v[m->n++] = (clm_mark){dup, kind, revision, enabled};
    return LC_OK;
}

int clm_marks_push_entry(clm_marks *m, const cJSON *entry)
{
    clm_mark mk;
    if (clm_mark_classify(entry, &mk) == CLM_MARK_NONE) return LC_OK;
    const char *id = marks_str(entry, "id");
    if (!id) return LC_INVALID;
    return clm_marks_push(m, id, mk.kind, mk.revision, mk.enabled);
}

void clm_marks_free(clm_marks *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->v[i].id);
    free(m->v);
    memset(m, 0, sizeof *m);
}

void clm_marks_summarize(const clm_marks *m, clm_marks_view *out)
{
    memset(out, 0, sizeof *out);
    out->enabled = 1;
    snprintf(out->why, sizeof out->why, "no accepted revision on this branch");
    for (size_t i = 0; i < m->n; i++) {
        const clm_mark *k = &m->v[i];
        if (k->revision > out->last_revision) out->last_revision = k->revision;
        switch (k->kind) {
        case CLM_MARK_COMPACTION:
            if (out->in_force)
                snprintf(out->why, sizeof out->why,
                         "a compaction after revision %ld became the new baseline",
                         out->in_force->revision);
            out->in_force = NULL;
            break;
        case CLM_MARK_ACCEPT:
            out->in_force = k;
            out->accepted++;
            break;
        case CLM_MARK_RESET:
            out->in_force = NULL;
            snprintf(out->why, sizeof out->why, "revision %ld reset the context to raw",
                     k->revision);
            break;
        case CLM_MARK_REJECT:
            out->rejected++;
            break;
        case CLM_MARK_TOGGLE:
            if (k->enabled >= 0) out->enabled = k->enabled;
            break;
        case CLM_MARK_SETTINGS:
            out->settings = k;
            break;
        case CLM_MARK_MALFORMED:
            out->malformed++;
            break;
        case CLM_MARK_OTHER:
        case CLM_MARK_NONE:
            break;
        }
    }
    if (out->in_force) out->why[0] = '\0';
}

/* ---- the walk to the common ancestor ---------------------------------------------------- */

/* Open-addressing set of entry ids, each tagged with the side(s) that reached it. */
typedef struct marks_slot {
    char *id;
    unsigned sides;
    size_t pos;       /* position on the old side's path (leaf = 0) */
} marks_slot;

typedef struct marks_set {
    marks_slot *s;
    size_t n, cap;
} marks_set;

static marks_slot *marks_find(marks_set *set, const char *id)
{
    if (!set->cap) return NULL;
    size_t i = (size_t)lc_fnv1a_str(id) & (set->cap - 1);
    while (set->s[i].id) {
        if (strcmp(set->s[i].id, id) == 0) return &set->s[i];
        i = (i + 1) & (set->cap - 1);
    }
    return NULL;
}

static int marks_grow(marks_set *set)
{
    size_t cap = set->cap ? set->cap * 2 : 64;
    marks_slot *s = calloc(cap, sizeof *s);
    if (!s) return LC_NOMEM;
    for (size_t j = 0; j < set->cap; j++) {
        if (!set->s[j].id) continue;
        size_t i = (size_t)lc_fnv1a_str(set->s[j].id) & (cap - 1);
        while (s[i].id) i = (i + 1) & (cap - 1);
        s[i] = set->s[j];
    }
    free(set->s);
    set->s = s;
    set->cap = cap;
    return LC_OK;
}

/* Tag `id` with `side`; *out the slot. */
static int marks_tag(marks_set *set, const char *id, unsigned side, size_t pos, marks_slot **out)
{
    marks_slot *sl = marks_find(set, id);
    if (!sl) {
        if ((set->n + 1) * 2 > set->cap && marks_grow(set) != LC_OK) return LC_NOMEM;
        size_t i = (size_t)lc_fnv1a_str(id) & (set->cap - 1);
        while (set->s[i].id) i = (i + 1) & (set->cap - 1);
        if (!(set->s[i].id = lc_strdup(id))) return LC_NOMEM;
        set->s[i].sides = 0;
        set->s[i].pos = (size_t)-1;
        set->n++;
        sl = &set->s[i];
    }
    sl->sides |= side;
    if (side == 1 && sl->pos == (size_t)-1) sl->pos = pos;
    *out = sl;
    return LC_OK;
}

static void marks_set_free(marks_set *set)
{
    if (!set) return;
    for (size_t i = 0; i < set->cap; i++) free(set->s[i].id);
    free(set->s);
    free(set);
}

/* One step of a side: fetch `*cur`, remember it, move *cur to its parent. */
typedef struct marks_side {
    char *cur;           /* next id to visit (owned), NULL at the root */
    cJSON **seen;        /* new side: the entries, leaf first */
    char **ids;          /* old side: the ids, leaf first */
    size_t n, cap;
} marks_side;

static int marks_step(marks_side *sd, int keep_entry, clm_fetch_fn fetch, void *ud, char **err)
{
    cJSON *e = NULL;
    int rc = fetch(ud, sd->cur, &e, err);
    if (rc != LC_OK) return rc;
    if (sd->n == sd->cap) {
        size_t cap = sd->cap ? sd->cap * 2 : 16;
        void *p = keep_entry ? realloc(sd->seen, cap * sizeof *sd->seen)
                             : realloc(sd->ids, cap * sizeof *sd->ids);
        if (!p) {
            cJSON_Delete(e);
            return lc_errf(err, LC_NOMEM, "out of memory");
        }
        if (keep_entry) sd->seen = p;
        else sd->ids = p;
        sd->cap = cap;
    }
    const char *parent = marks_str(e, "parentId");
    char *next = parent && *parent ? lc_strdup(parent) : NULL;
    if (parent && *parent && !next) {
        cJSON_Delete(e);
        return lc_errf(err, LC_NOMEM, "out of memory");
    }
    if (keep_entry) {
        sd->seen[sd->n++] = e;
        free(sd->cur);
    } else {
        sd->ids[sd->n++] = sd->cur;
        cJSON_Delete(e);
    }
    sd->cur = next;
    return LC_OK;
}

int clm_tree_diff(const char *old_leaf, const char *new_leaf, clm_fetch_fn fetch, void *ud,
                  clm_tree_move *out, char **err)
{
    int rc = LC_OK;
    marks_side olds = {0}, news = {0};
    marks_set *set = calloc(1, sizeof *set);
    memset(out, 0, sizeof *out);
    if (!set) return lc_errf(err, LC_NOMEM, "out of memory");
    olds.cur = old_leaf ? lc_strdup(old_leaf) : NULL;
    news.cur = new_leaf ? lc_strdup(new_leaf) : NULL;
    if ((old_leaf && !olds.cur) || (new_leaf && !news.cur)) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    size_t cut_old = (size_t)-1, cut_new = (size_t)-1;
    /* Lock step: each side tags what it visits; the first id the other side already
     * tagged is the common ancestor. Neither side walks more than twice the longer
     * distance to it. */
    while ((olds.cur || news.cur) && cut_old == (size_t)-1) {
        marks_slot *sl;
        if (news.cur) {
            if ((rc = marks_tag(set, news.cur, 2, 0, &sl)) != LC_OK) goto oom;
            if (sl->sides & 1) {
                cut_new = news.n;
                cut_old = sl->pos;
                out->ancestor = lc_strdup(news.cur);
                break;
            }
            if ((rc = marks_step(&news, 1, fetch, ud, err)) != LC_OK) goto done;
        }
        if (olds.cur) {
            if ((rc = marks_tag(set, olds.cur, 1, olds.n, &sl)) != LC_OK) goto oom;
            if (sl->sides & 2) {
                cut_old = olds.n;
                /* The new side visited this id at some depth: everything it saw after
                 * that is above the ancestor. */
                for (size_t i = 0; i < news.n; i++) {
                    const char *id = marks_str(news.seen[i], "id");
                    if (id && strcmp(id, olds.cur) == 0) {
                        cut_new = i;
                        break;
                    }
                }
                out->ancestor = lc_strdup(olds.cur);
                break;
            }
            if ((rc = marks_step(&olds, 0, fetch, ud, err)) != LC_OK) goto done;
        }
    }
    if (cut_old == (size_t)-1) cut_old = olds.n;
    if (cut_new == (size_t)-1) cut_new = news.n;
    /* The result: the new path oldest first, the old path as a set. */
    out->came = calloc(cut_new ? cut_new : 1, sizeof *out->came);
    if (!out->came) goto oom;
    for (size_t i = 0; i < cut_new; i++) {
        out->came[i] = news.seen[cut_new - 1 - i];
        news.seen[cut_new - 1 - i] = NULL;
    }
    out->n_came = cut_new;
    marks_set *left = calloc(1, sizeof *left);
    if (!left) goto oom;
    out->left = left;
    for (size_t i = 0; i < cut_old; i++) {
        marks_slot *sl;
        if (marks_tag(left, olds.ids[i], 1, i, &sl) != LC_OK) goto oom;
    }
    out->n_left = cut_old;
    goto done;
oom:
    rc = lc_errf(err, LC_NOMEM, "out of memory");
done:
    if (rc != LC_OK) clm_tree_move_free(out);
    for (size_t i = 0; i < news.n; i++) cJSON_Delete(news.seen[i]);
    for (size_t i = 0; i < olds.n; i++) free(olds.ids[i]);
    free(news.seen);
    free(olds.ids);
    free(news.cur);
    free(olds.cur);
    marks_set_free(set);
    return rc;
}

int clm_tree_left(const clm_tree_move *mv, const char *id)
{
    return id && mv->left && marks_find(mv->left, id) != NULL;
}

void clm_tree_move_free(clm_tree_move *mv)
{
    for (size_t i = 0; i < mv->n_came; i++) cJSON_Delete(mv->came[i]);
    free(mv->came);
    free(mv->ancestor);
    marks_set_free(mv->left);
    memset(mv, 0, sizeof *mv);
}

int clm_marks_move(clm_marks *m, const clm_tree_move *mv, size_t *changed)
{
    size_t c = 0;
    while (m->n && clm_tree_left(mv, m->v[m->n - 1].id)) {
        free(m->v[--m->n].id);
        c++;
    }
    for (size_t i = 0; i < mv->n_came; i++) {
        clm_mark mk;
        if (clm_mark_classify(mv->came[i], &mk) == CLM_MARK_NONE) continue;
        int rc = clm_marks_push_entry(m, mv->came[i]);
        if (rc != LC_OK) return rc;
        c++;
    }
    if (changed) *changed = c;
    return LC_OK;
}

size_t clm_marks_usage_after_move(const clm_tree_move *mv, clm_fetch_fn fetch, void *ud)
{
    for (size_t i = mv->n_came; i-- > 0;) {
        const cJSON *e = mv->came[i];
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type"));
        if (!type || strcmp(type, "message") != 0) continue;
        long u = msg_usage_total(cJSON_GetObjectItemCaseSensitive(e, "message"));
        if (u > 0) return (size_t)u;
    }
    char *id = mv->ancestor ? lc_strdup(mv->ancestor) : NULL;
    size_t found = 0;
    for (int step = 0; id && step < CLM_USAGE_WALK && !found; step++) {
        cJSON *e = NULL;
        if (fetch(ud, id, &e, NULL) != LC_OK) break;
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type"));
        if (type && strcmp(type, "message") == 0) {
            long u = msg_usage_total(cJSON_GetObjectItemCaseSensitive(e, "message"));
            if (u > 0) found = (size_t)u;
        }
        const char *parent = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "parentId"));
        free(id);
        id = parent ? lc_strdup(parent) : NULL;
        cJSON_Delete(e);
    }
    free(id);
    return found;
}
