/*
 * clm_revision.c -- revision payloads, prefix digests and branch reconstruction (see
 * clm_revision.h).
 */
#include "clm_revision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"

void clm_prefix_digest(const clm_text *msgs, size_t n, char hex[65])
{
    sha256_ctx c;
    uint8_t d[32];
    char len[32];
    sha256_init(&c);
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(len, sizeof len, "%zu\n", msgs[i].len);
        sha256_update(&c, len, (size_t)k);
        sha256_update(&c, msgs[i].json, msgs[i].len);
    }
    sha256_final(&c, d);
    sha256_to_hex(d, hex);
}

void clm_revision_free(clm_revision *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_messages; i++) free(r->messages[i]);
    free(r->messages);
    free(r->lens);
    memset(r, 0, sizeof *r);
}

static const char *trace_kind_name(clm_trace_kind k)
{
    switch (k) {
    case CLM_TRACE_KEPT: return "kept";
    case CLM_TRACE_EDITED: return "edited";
    case CLM_TRACE_REMOVED: return "removed";
    case CLM_TRACE_INSERTED: return "inserted";
    }
    return "kept";
}

int clm_payload_accept(const clm_view *v, const clm_outcome *o, long revision,
                       size_t anchor_count, const char *anchor_digest, char **out,
                       char **err)
{
    int rc = LC_OK;
    sbuf b = {0};
    cJSON *trace = cJSON_CreateArray();
    char *trace_s = NULL;
    cJSON *check = NULL;
    *out = NULL;
    if (!trace) { rc = LC_NOMEM; goto done; }
    for (size_t i = 0; i < o->n_trace; i++) {
        const clm_trace *t = &o->trace[i];
        cJSON *e = cJSON_CreateObject();
        if (!e) { rc = LC_NOMEM; goto done; }
        cJSON_AddItemToArray(trace, e);
        cJSON_AddStringToObject(e, "kind", trace_kind_name(t->kind));
        cJSON_AddStringToObject(e, "id", t->id);
        cJSON_AddStringToObject(e, "role", t->label);
        cJSON_AddNumberToObject(e, "from", (double)t->src);
        cJSON_AddNumberToObject(e, "to", (double)t->dst);
        if (t->why) cJSON_AddStringToObject(e, "why", t->why);
    }
    if (!(trace_s = cJSON_PrintUnformatted(trace))) { rc = LC_NOMEM; goto done; }
    sb_printf(&b, "{\"kind\":\"accept\",\"version\":1,\"revision\":%ld,\"anchorCount\":%zu,"
                  "\"anchorDigest\":\"%.64s\",\"tokensBefore\":%zu,\"tokensAfter\":%zu,"
                  "\"rewrite\":%s,\"messages\":[",
              revision, anchor_count, anchor_digest ? anchor_digest : "", o->tokens_before,
              o->tokens_after, o->rewrite ? "true" : "false");
    for (size_t i = 0; i < o->n_items; i++) {
        size_t len;
        const char *j = clm_item_json(v, &o->items[i], &len);
        if (i) sb_putc(&b, ',');
        sb_append(&b, j, len);
    }
    sb_puts(&b, "],\"trace\":");
    sb_puts(&b, trace_s);
    sb_putc(&b, '}');
    if (b.oom) { rc = LC_NOMEM; goto done; }
    /* Rule 4: what is persisted must read back. */
    check = cJSON_ParseWithLength(b.p, b.len);
    if (!check) {
        rc = lc_errf(err, LC_INVALID, "the revision cannot be serialized as a session entry");
        goto done;
    }
    *out = sb_detach(&b);
done:
    cJSON_Delete(check);
    cJSON_Delete(trace);
    free(trace_s);
    sb_free(&b);
    if (rc == LC_NOMEM) lc_errf(err, rc, "clm payload: out of memory");
    return rc;
}

static char *slim(const char *kind, long revision, const char *reason, int enabled)
{
    cJSON *o = cJSON_CreateObject();
    char *s = NULL;
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddNumberToObject(o, "version", 1);
    if (revision >= 0) cJSON_AddNumberToObject(o, "revision", (double)revision);
    if (reason) cJSON_AddStringToObject(o, "reason", reason);
    if (enabled >= 0) cJSON_AddBoolToObject(o, "enabled", enabled);
    if (strcmp(kind, "reset") == 0) {
        char hex[65];
        clm_prefix_digest(NULL, 0, hex);
        cJSON_AddNumberToObject(o, "anchorCount", 0);
        cJSON_AddStringToObject(o, "anchorDigest", hex);
        cJSON_AddItemToObject(o, "messages", cJSON_CreateArray());
    }
    s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

char *clm_payload_reset(long revision, const char *reason) { return slim("reset", revision, reason, -1); }
char *clm_payload_reject(long revision, const char *reason) { return slim("reject", revision, reason, -1); }
char *clm_payload_toggle(int enabled) { return slim("toggle", -1, NULL, enabled ? 1 : 0); }

static int revision_from(const cJSON *data, clm_revision *out, char **err)
{
    int rc = LC_OK;
    memset(out, 0, sizeof *out);
    const cJSON *rev = cJSON_GetObjectItemCaseSensitive(data, "revision");
    const cJSON *ac = cJSON_GetObjectItemCaseSensitive(data, "anchorCount");
    const cJSON *ad = cJSON_GetObjectItemCaseSensitive(data, "anchorDigest");
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(data, "messages");
    if (!cJSON_IsNumber(rev) || !cJSON_IsNumber(ac) || ac->valuedouble < 0 ||
        !cJSON_IsString(ad) || strlen(ad->valuestring) != 64 || !cJSON_IsArray(msgs))
        return lc_errf(err, LC_INVALID, "a live-context-state entry lacks revision, "
                                        "anchorCount, anchorDigest or messages");
    out->revision = (long)rev->valuedouble;
    out->anchor_count = (size_t)ac->valuedouble;
    memcpy(out->anchor_digest, ad->valuestring, 65);
    const cJSON *tb = cJSON_GetObjectItemCaseSensitive(data, "tokensBefore");
    const cJSON *ta = cJSON_GetObjectItemCaseSensitive(data, "tokensAfter");
    if (cJSON_IsNumber(tb)) out->tokens_before = (size_t)tb->valuedouble;
    if (cJSON_IsNumber(ta)) out->tokens_after = (size_t)ta->valuedouble;
    size_t n = (size_t)cJSON_GetArraySize(msgs);
    out->messages = calloc(n ? n : 1, sizeof *out->messages);
    out->lens = calloc(n ? n : 1, sizeof *out->lens);
    if (!out->messages || !out->lens) { rc = LC_NOMEM; goto done; }
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        if (!cJSON_IsObject(m)) {
            rc = lc_errf(err, LC_INVALID, "a revision message is not an object");
            goto done;
        }
        char *s = cJSON_PrintUnformatted(m);
        if (!s) { rc = LC_NOMEM; goto done; }
        out->lens[out->n_messages] = strlen(s);
        out->messages[out->n_messages++] = s;
    }
done:
    if (rc != LC_OK) clm_revision_free(out);
    if (rc == LC_NOMEM) lc_errf(err, rc, "clm revision: out of memory");
    return rc;
}

int clm_revision_from_data(const cJSON *data, clm_revision *out, char **err)
{
    return revision_from(data, out, err);
}

int clm_revision_parse(const char *json, size_t len, clm_revision *out, char **err)
{
    cJSON *data = cJSON_ParseWithLength(json, len);
    memset(out, 0, sizeof *out);
    if (!data) return lc_errf(err, LC_INVALID, "the revision payload is not JSON");
    int rc = revision_from(data, out, err);
    cJSON_Delete(data);
    return rc;
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

int clm_branch_reconstruct(const char *branch_json, size_t len, clm_branch_state *out,
                           char **err)
{
    int rc = LC_OK;
    cJSON *arr = cJSON_ParseWithLength(branch_json, len);
    const cJSON *newest = NULL;   /* data of the newest accept/reset in force */
    const cJSON *e;
    memset(out, 0, sizeof *out);
    out->enabled = 1;
    snprintf(out->why, sizeof out->why, "no accepted revision on this branch");
    if (!cJSON_IsArray(arr)) {
        rc = lc_errf(err, LC_INVALID, "the branch is not a JSON array of entries");
        goto done;
    }
    cJSON_ArrayForEach(e, arr) {
        const char *type = str_of(e, "type");
        if (!type) continue;
        if (strcmp(type, "compaction") == 0) {
            if (newest)
                snprintf(out->why, sizeof out->why,
                         "a compaction after revision %ld became the new baseline",
                         (long)cJSON_GetObjectItemCaseSensitive(newest, "revision")->valuedouble);
            newest = NULL;
            continue;
        }
        if (strcmp(type, "custom") != 0) continue;
        const char *ct = str_of(e, "customType");
        if (!ct || strcmp(ct, CLM_STATE_TYPE) != 0) continue;
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(e, "data");
        const char *kind = str_of(data, "kind");
        const cJSON *rev = cJSON_GetObjectItemCaseSensitive(data, "revision");
        if (!kind) { out->malformed++; continue; }
        if (cJSON_IsNumber(rev) && (long)rev->valuedouble > out->last_revision)
            out->last_revision = (long)rev->valuedouble;
        if (strcmp(kind, "toggle") == 0) {
            const cJSON *en = cJSON_GetObjectItemCaseSensitive(data, "enabled");
            if (cJSON_IsBool(en)) out->enabled = cJSON_IsTrue(en);
        } else if (strcmp(kind, "accept") == 0 || strcmp(kind, "reset") == 0) {
            if (!cJSON_IsNumber(rev) || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(data, "messages"))) {
                out->malformed++;
                continue;
            }
            if (strcmp(kind, "reset") == 0) {
                newest = NULL;
                snprintf(out->why, sizeof out->why, "revision %ld reset the context to raw",
                         (long)rev->valuedouble);
            } else {
                newest = data;
            }
        }
    }
    if (newest) {
        char *e2 = NULL;
        int r = revision_from(newest, &out->rev, &e2);
        if (r == LC_NOMEM) {
            free(e2);
            rc = lc_errf(err, LC_NOMEM, "clm branch: out of memory");
            goto done;
        }
        if (r != LC_OK) {
            out->malformed++;
            snprintf(out->why, sizeof out->why, "the newest revision is unreadable: %s",
                     e2 ? e2 : "malformed");
        } else {
            out->has_revision = 1;
            out->why[0] = '\0';
        }
        free(e2);
    }
done:
    cJSON_Delete(arr);
    return rc;
}

void clm_branch_state_free(clm_branch_state *s)
{
    if (!s) return;
    clm_revision_free(&s->rev);
    memset(s, 0, sizeof *s);
}

int clm_revision_matches(const clm_revision *r, const clm_text *raw, size_t n_raw, char **why)
{
    char hex[65];
    if (r->anchor_count > n_raw) {
        if (why)
            *why = lc_asprintf("revision %ld replaces %zu raw messages, but the branch has only "
                               "%zu", r->revision, r->anchor_count, n_raw);
        return 0;
    }
    clm_prefix_digest(raw, r->anchor_count, hex);
    if (strcmp(hex, r->anchor_digest) != 0) {
        if (why)
            *why = lc_asprintf("the first %zu raw messages no longer match revision %ld "
                               "(digest %.12s, expected %.12s)",
                               r->anchor_count, r->revision, hex, r->anchor_digest);
        return 0;
    }
    return 1;
}

int clm_revision_of_edit(const clm_view *v, const clm_outcome *o, long revision,
                         size_t anchor_count, const char *anchor_digest, clm_revision *r,
                         long **raw_idx)
{
    size_t n = o->n_items ? o->n_items : 1;
    memset(r, 0, sizeof *r);
    long *idx = malloc(n * sizeof *idx);
    r->messages = calloc(n, sizeof *r->messages);
    r->lens = calloc(n, sizeof *r->lens);
    if (!idx || !r->messages || !r->lens) goto oom;
    for (size_t i = 0; i < o->n_items; i++) {
        size_t len;
        const char *j = clm_item_json(v, &o->items[i], &len);
        if (!(r->messages[i] = lc_strndup(j, len))) goto oom;
        r->lens[i] = len;
        r->n_messages = i + 1;
        idx[i] = o->items[i].src >= 0 ? v->msgs[o->items[i].src].origin : -1;
    }
    r->revision = revision;
    r->anchor_count = anchor_count;
    snprintf(r->anchor_digest, sizeof r->anchor_digest, "%s", anchor_digest);
    r->tokens_before = o->tokens_before;
    r->tokens_after = o->tokens_after;
    *raw_idx = idx;
    return LC_OK;
oom:
    free(idx);
    clm_revision_free(r);
    return LC_NOMEM;
}
