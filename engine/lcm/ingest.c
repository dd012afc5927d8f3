/*
 * ingest.c -- what of a session gets stored, and how (see ingest.h): entry messages, the
 * id set, batches, tree moves, branch tails, off-branch messages, removed marks and the
 * O(new) ingest of a request. Shared by the plugin and `lcm import`.
 */
#include "ingest.h"

#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "util.h"

/* ---- entries and their messages ------------------------------------------------------- */

static const char *ingest_jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

char *ingest_entry_message(const char *text, size_t len)
{
    size_t off = 0, mlen = 0;
    char *out = NULL;
    cJSON *e = text ? cJSON_ParseWithLength(text, len) : NULL;
    const char *type = ingest_jstr(e, "type");
    if (type && strcmp(type, "message") == 0 &&
        cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(e, "message")) &&
        json_member_span(text, len, "message", &off, &mlen) == LC_OK)
        out = lc_strndup(text + off, mlen);
    cJSON_Delete(e);
    return out;
}

static char *ingest_print(cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

char *ingest_context_message(const cJSON *root, const char *text, size_t len, long long ts_ms)
{
    const char *type = ingest_jstr(root, "type");
    cJSON *m = NULL;
    if (!type) return NULL;
    if (strcmp(type, "message") == 0) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(root, "message");
        size_t off = 0, mlen = 0;
        if (!cJSON_IsObject(msg)) return NULL;
        /* Byte for byte as the file holds it, as the host sends it; printed only when the
         * scanner cannot walk the text. */
        if (text && json_member_span(text, len, "message", &off, &mlen) == LC_OK)
            return lc_strndup(text + off, mlen);
        return cJSON_PrintUnformatted(msg);
    }
    if (strcmp(type, "custom_message") == 0) {
        m = cJSON_CreateObject();
        const char *ct = ingest_jstr(root, "customType");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(root, "content");
        const cJSON *display = cJSON_GetObjectItemCaseSensitive(root, "display");
        const cJSON *details = cJSON_GetObjectItemCaseSensitive(root, "details");
        cJSON_AddStringToObject(m, "role", "custom");
        cJSON_AddStringToObject(m, "customType", ct ? ct : "");
        cJSON_AddItemToObject(m, "content", content ? cJSON_Duplicate(content, 1) : cJSON_CreateString(""));
        cJSON_AddBoolToObject(m, "display", display ? cJSON_IsTrue(display) : 1);
        if (details) cJSON_AddItemToObject(m, "details", cJSON_Duplicate(details, 1));
        cJSON_AddNumberToObject(m, "timestamp", (double)ts_ms);
    } else if (strcmp(type, "branch_summary") == 0) {
        const char *summary = ingest_jstr(root, "summary"), *from = ingest_jstr(root, "fromId");
        if (!summary) return NULL;
        m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "branchSummary");
        cJSON_AddStringToObject(m, "summary", summary);
        cJSON_AddStringToObject(m, "fromId", from ? from : "");
        cJSON_AddNumberToObject(m, "timestamp", (double)ts_ms);
    } else if (strcmp(type, "compaction") == 0) {
        const char *summary = ingest_jstr(root, "summary");
        const cJSON *before = cJSON_GetObjectItemCaseSensitive(root, "tokensBefore");
        m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "compactionSummary");
        cJSON_AddStringToObject(m, "summary", summary ? summary : "");
        cJSON_AddNumberToObject(m, "tokensBefore", cJSON_IsNumber(before) ? before->valuedouble : 0);
        cJSON_AddNumberToObject(m, "timestamp", (double)ts_ms);
    }
    return ingest_print(m);
}

/* ---- the id set ------------------------------------------------------------------------- */

long ingest_idset_find(const ingest_idset *s, const char *id)
{
    if (!id || !s->nslots) return -1;
    for (size_t h = (size_t)lc_fnv1a_str(id) & (s->nslots - 1);; h = (h + 1) & (s->nslots - 1)) {
        size_t v = s->slots[h];
        if (!v) return -1;
        if (strcmp(s->ids[v - 1], id) == 0) return (long)(v - 1);
    }
}

static void ingest_idset_slot(ingest_idset *s, size_t pos)
{
    size_t h = (size_t)lc_fnv1a_str(s->ids[pos]) & (s->nslots - 1);
    while (s->slots[h]) h = (h + 1) & (s->nslots - 1);
    s->slots[h] = pos + 1;
}

int ingest_idset_add(ingest_idset *s, const char *id)
{
    if (s->n == s->cap) {
        /* Twice as many slots as ids keeps the probe runs short. */
        size_t cap = s->cap ? s->cap * 2 : 64;
        char **ids = realloc(s->ids, cap * sizeof *ids);
        if (ids) s->ids = ids;
        size_t *slots = ids ? calloc(cap * 2, sizeof *slots) : NULL;
        if (!slots) return LC_NOMEM;
        s->cap = cap;
        free(s->slots);
        s->slots = slots;
        s->nslots = cap * 2;
        for (size_t i = 0; i < s->n; i++) ingest_idset_slot(s, i);
    }
    if (!(s->ids[s->n] = lc_strdup(id))) return LC_NOMEM;
    ingest_idset_slot(s, s->n++);
    return LC_OK;
}

void ingest_idset_free(ingest_idset *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->ids[i]);
    free(s->ids);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

/* ---- batches ---------------------------------------------------------------------------- */

int ingest_batch_add(ingest_batch *b, const char *entry_id, char *json)
{
    return ingest_batch_add_tree(b, entry_id, json, NULL);
}

int ingest_batch_add_tree(ingest_batch *b, const char *entry_id, char *json, cJSON *tree)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        store_msg *m = realloc(b->m, cap * sizeof *m);
        if (m) b->m = m;
        char **own = m ? realloc(b->own, cap * sizeof *own) : NULL;
        if (own) b->own = own;
        cJSON **trees = own ? realloc(b->trees, cap * sizeof *trees) : NULL;
        if (!trees) {
            free(json);
            cJSON_Delete(tree);
            return LC_NOMEM;
        }
        b->trees = trees;
        b->cap = cap;
    }
    b->m[b->n] = (store_msg){entry_id, json ? json : "", json ? strlen(json) : 0, json ? tree : NULL};
    b->own[b->n] = json;
    b->trees[b->n++] = tree;
    return LC_OK;
}

static void ingest_batch_empty(ingest_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->own[i]);
        cJSON_Delete(b->trees[i]);
    }
    b->n = 0;
}

int ingest_batch_flush(store *st, ingest_batch *b, size_t *inserted, char **err)
{
    store_ingest_stats s = {0};
    int rc = b->n ? store_ingest(st, b->m, b->n, &s, err) : LC_OK;
    ingest_batch_empty(b);
    if (inserted) *inserted = rc == LC_OK ? s.inserted : 0;
    return rc;
}

void ingest_batch_free(ingest_batch *b)
{
    ingest_batch_empty(b);
    free(b->m);
    free(b->own);
    free(b->trees);
    memset(b, 0, sizeof *b);
}

/* ---- the host side ------------------------------------------------------------------------ */

/* The message of entry id as the host holds it (malloc'd), NULL when it is none or the
 * host cannot read it. */
static char *ingest_read_message(ingest_entry_fn get, void *ud, const char *id)
{
    char *text = NULL, *out;
    if (get(ud, id, &text, NULL) != LC_OK || !text) {
        free(text);
        return NULL;
    }
    out = ingest_entry_message(text, strlen(text));
    free(text);
    return out;
}

static int ingest_stored(store *st, const char *id)
{
    store_row row = {0};
    int found = store_get_message(st, id, &row, NULL) == LC_OK;
    store_row_free(&row);
    return found;
}

int ingest_entries(store *st, ingest_entry_fn get, void *ud, char *const *ids, size_t n,
                   size_t *inserted, char **err)
{
    ingest_batch b = {0};
    int rc = LC_OK;
    if (inserted) *inserted = 0;
    /* Root first, the order a request carries them in. */
    for (size_t i = n; i-- > 0 && rc == LC_OK;) {
        char *json = ingest_read_message(get, ud, ids[i]);
        if (json) rc = ingest_batch_add(&b, ids[i], json);
    }
    if (rc != LC_OK) rc = lc_errf(err, LC_NOMEM, "out of memory");
    else rc = ingest_batch_flush(st, &b, inserted, err);
    ingest_batch_free(&b);
    return rc;
}

/* The parent id of an entry (malloc'd; NULL at the root). */
static int ingest_parent_of(ingest_entry_fn get, void *ud, const char *id, char **parent,
                            char **err)
{
    char *text = NULL;
    int rc = get(ud, id, &text, err);
    cJSON *e = NULL;
    *parent = NULL;
    if (rc != LC_OK) goto done;
    e = text ? cJSON_Parse(text) : NULL;
    if (!cJSON_IsObject(e)) {
        rc = lc_errf(err, LC_INVALID, "the host's entry %s is not a JSON object", id);
        goto done;
    }
    const char *pid = ingest_jstr(e, "parentId");
    if (pid && *pid && !(*parent = lc_strdup(pid))) rc = lc_errf(err, LC_NOMEM, "out of memory");
done:
    cJSON_Delete(e);
    free(text);
    return rc;
}

/* Walk parent links from both leaves, one step each in turn, until one side reaches an
 * entry the other has passed: that is the common ancestor, and the entries walked before
 * it are exactly those that left the branch (old side, a) and joined it (new side, b).
 * *left_n / *joined_n: how many entries of each are below the ancestor. */
static int ingest_walk(ingest_entry_fn get, void *ud, const char *old_leaf, const char *new_leaf,
                       ingest_idset *a, ingest_idset *b, size_t *left_n, size_t *joined_n,
                       char **err)
{
    char *next[2] = {old_leaf ? lc_strdup(old_leaf) : NULL, new_leaf ? lc_strdup(new_leaf) : NULL};
    ingest_idset *side[2] = {a, b};
    int rc = LC_OK;
    *left_n = *joined_n = 0;
    if ((old_leaf && !next[0]) || (new_leaf && !next[1])) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; next[0] || next[1]; k ^= 1) {
        if (!next[k]) continue;
        long at = ingest_idset_find(side[k ^ 1], next[k]);
        if (at >= 0) {
            *left_n = k == 0 ? a->n : (size_t)at;
            *joined_n = k == 0 ? (size_t)at : b->n;
            goto done;
        }
        if (ingest_idset_find(side[k], next[k]) >= 0) {
            rc = lc_errf(err, LC_INVALID, "entry %s is its own ancestor", next[k]);
            goto done;
        }
        if (ingest_idset_add(side[k], next[k]) != LC_OK) {
            rc = lc_errf(err, LC_NOMEM, "out of memory");
            goto done;
        }
        char *parent = NULL;
        if ((rc = ingest_parent_of(get, ud, next[k], &parent, err)) != LC_OK) goto done;
        free(next[k]);
        next[k] = parent;
    }
    /* Two roots: nothing is shared. */
    *left_n = a->n;
    *joined_n = b->n;
done:
    free(next[0]);
    free(next[1]);
    return rc;
}

int ingest_move(store *st, ingest_entry_fn get, void *ud, const char *old_leaf,
                const char *new_leaf, char **warn, char **err)
{
    ingest_idset a = {0}, b = {0};
    size_t left = 0, joined = 0;
    char *e = NULL;
    int rc = ingest_walk(get, ud, old_leaf, new_leaf, &a, &b, &left, &joined, err);
    if (rc == LC_OK && left && ingest_entries(st, get, ud, a.ids, left, NULL, &e) != LC_OK && warn) {
        *warn = e;
        e = NULL;
    }
    if (rc == LC_OK && left &&
        store_set_removed(st, (const char *const *)a.ids, left, 1, NULL, err) != LC_OK)
        rc = LC_ERR;
    if (rc == LC_OK && joined &&
        store_set_removed(st, (const char *const *)b.ids, joined, 0, NULL, err) != LC_OK)
        rc = LC_ERR;
    free(e);
    ingest_idset_free(&a);
    ingest_idset_free(&b);
    return rc;
}

int ingest_branch_tail(store *st, const cJSON *branch, ingest_entry_fn get, void *ud,
                       char **err)
{
    size_t n = (size_t)cJSON_GetArraySize(branch), k = 0, i = 0;
    const cJSON **entries = calloc(n ? n : 1, sizeof *entries);
    char **ids = calloc(n ? n : 1, sizeof *ids);
    const cJSON *e;
    int rc = LC_OK;
    if (!entries || !ids) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    cJSON_ArrayForEach(e, branch) entries[i++] = e;
    /* Leaf first, as a tree walk yields them; stop at the first stored message. */
    while (i-- > 0) {
        const char *id = ingest_jstr(entries[i], "id");
        const char *type = ingest_jstr(entries[i], "type");
        if (!id || !type || strcmp(type, "message") != 0) continue;
        if (ingest_stored(st, id)) break;
        ids[k++] = (char *)id;
    }
    if (k) rc = ingest_entries(st, get, ud, ids, k, NULL, err);
done:
    free(entries);
    free(ids);
    return rc;
}

int ingest_branch_lacks_tail(store *st, const cJSON *branch, size_t k)
{
    store_msg *m = k ? calloc(k, sizeof *m) : NULL;
    size_t got = 0;
    int lacks = 0;
    if (!m) return 0;
    const cJSON *e = branch ? branch->child : NULL;
    while (e && e->next) e = e->next;
    /* Leaf first, through the array's back links: the last k message entries' ids. */
    for (; e && got < k; e = e == branch->child ? NULL : e->prev) {
        const char *id = ingest_jstr(e, "id");
        const char *type = ingest_jstr(e, "type");
        if (id && type && strcmp(type, "message") == 0) m[k - 1 - got++].entry_id = id;
    }
    if (got == k) lacks = ingest_lacks_tail(st, m, k, k);
    free(m);
    return lacks;
}

int ingest_offbranch(store *st, const cJSON *all, const cJSON *branch, ingest_entry_fn get,
                     void *ud, size_t *inserted, char **err)
{
    ingest_idset on = {0};
    ingest_batch b = {0};
    const cJSON *x;
    int rc = LC_OK;
    if (inserted) *inserted = 0;
    cJSON_ArrayForEach(x, branch)
    {
        const char *id = ingest_jstr(x, "id");
        if (id && ingest_idset_find(&on, id) < 0 && (rc = ingest_idset_add(&on, id)) != LC_OK) goto done;
    }
    cJSON_ArrayForEach(x, all)
    {
        const char *id = ingest_jstr(x, "id");
        const char *type = ingest_jstr(x, "type");
        if (!id || !type || strcmp(type, "message") != 0 || ingest_idset_find(&on, id) >= 0) continue;
        if (ingest_stored(st, id)) continue;
        char *json = ingest_read_message(get, ud, id);
        if (json && (rc = ingest_batch_add(&b, id, json)) != LC_OK) goto done;
    }
    rc = ingest_batch_flush(st, &b, inserted, err);
done:
    if (rc == LC_NOMEM) rc = lc_errf(err, LC_NOMEM, "out of memory");
    ingest_batch_free(&b);
    ingest_idset_free(&on);
    return rc;
}

int ingest_mark_branch(store *st, const cJSON *branch, size_t *marked, size_t *cleared,
                       char **err)
{
    size_t cap = (size_t)cJSON_GetArraySize(branch) + 1, k = 0;
    const char **ids = calloc(cap, sizeof *ids);
    const cJSON *e;
    int rc;
    if (marked) *marked = 0;
    if (cleared) *cleared = 0;
    if (!ids) return lc_errf(err, LC_NOMEM, "out of memory");
    cJSON_ArrayForEach(e, branch)
    {
        const char *id = ingest_jstr(e, "id");
        if (id && k < cap) ids[k++] = id;
    }
    rc = store_mark_branch(st, ids, k, marked, cleared, err);
    free(ids);
    return rc;
}

/* ---- a request's messages ----------------------------------------------------------------- */

static int ingest_same_id(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

void ingest_seen_reset(ingest_seen *s)
{
    free(s->first);
    free(s->last);
    memset(s, 0, sizeof *s);
}

size_t ingest_known(const ingest_seen *s, const store_msg *msgs, size_t n, size_t *tokens)
{
    /* The input only grew when its first message and the last one of the previous call
     * are where they were: then only the new messages are summed, copied and ingested. */
    size_t known = 0;
    if (s->n && s->n <= n && ingest_same_id(s->first, msgs[0].entry_id) &&
        ingest_same_id(s->last, msgs[s->n - 1].entry_id))
        known = s->n;
    size_t t = known ? s->tokens : 0;
    for (size_t i = known; i < n; i++) t += (msgs[i].json_len + 3) / 4;
    *tokens = t;
    return known;
}

int ingest_lacks_tail(store *st, const store_msg *msgs, size_t n, size_t k)
{
    if (k == 0 || k > n) return 0;
    /* Each lookup prepares its statement: thousands of them were most of a first request. */
    for (size_t j = 0; j <= 8; j++) {
        const char *id = msgs[n - 1 - (k - 1) * j / 8].entry_id;
        if (!id || ingest_stored(st, id)) return 0;
    }
    return 1;
}

int ingest_request(store *st, ingest_seen *s, const store_msg *msgs, size_t n, size_t known,
                   size_t tokens, char **err)
{
    store_ingest_stats stats;
    /* The previous last message is stored when the previous ingest succeeded, so the
     * store's walk back stops at it. */
    size_t from = known && s->stored && msgs[known - 1].entry_id ? known - 1 : 0;
    int rc = store_ingest(st, msgs + from, n - from, &stats, err);
    ingest_seen_note(s, msgs, n, tokens, rc == LC_OK);
    return rc;
}

void ingest_seen_note(ingest_seen *s, const store_msg *msgs, size_t n, size_t tokens, int stored)
{
    const char *first = msgs[0].entry_id, *last = msgs[n - 1].entry_id;
    if (!ingest_same_id(s->first, first)) {
        free(s->first);
        s->first = first ? lc_strdup(first) : NULL;
    }
    free(s->last);
    s->last = last ? lc_strdup(last) : NULL;
    /* Without ids the next call cannot be matched: it starts over. */
    s->n = s->first && s->last ? n : 0;
    s->tokens = tokens;
    s->stored = stored;
}
