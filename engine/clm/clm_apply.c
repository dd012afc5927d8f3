/*
 * clm_apply.c -- apply an edited mirror (see clm_apply.h): block states to messages,
 * role lowering, tool-call group repair, then the acceptance rules of clm_validate.
 * Untouched blocks are carried by reference so their bytes never pass through a JSON
 * printer; only edited, lowered and inserted messages are newly serialized.
 */
#include "clm_apply.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clm_validate.h"
#include "message.h"
#include "sha256.h"

typedef enum disp {
    D_KEEP = 0,       /* reuse the original message */
    D_USER,           /* user message with new text */
    D_ASSISTANT,      /* text-only assistant */
    D_LOWER,          /* custom message carrying the text under a label */
    D_FLATTEN,        /* kept, but its tool group broke: assistant -> text, result -> custom */
} disp;

/* One entry of the new context before serialization. */
typedef struct slot {
    long src;            /* view index or -1 */
    disp d;
    const char *label;   /* label for D_LOWER (borrowed from the doc / view) */
    const char *text;    /* new text (borrowed), NULL = derive from the source */
    size_t text_len;
    size_t line;         /* mirror line of the block */
    const char *id;      /* block id (borrowed) */
    clm_trace_kind kind;
    const char *why;
} slot;

char *clm_lower_custom(const char *label, const char *text, size_t text_len, double timestamp)
{
    char *out = NULL;
    char *t = lc_strndup(text, text_len);
    cJSON *m = cJSON_CreateObject();
    cJSON *det = cJSON_CreateObject();
    if (!t || !m || !det) goto done;
    /* a member that could not be added is out of memory, not a message without it */
    if (!cJSON_AddStringToObject(m, "role", "custom") ||
        !cJSON_AddStringToObject(m, "customType", "live-context") ||
        !cJSON_AddStringToObject(m, "content", t) || !cJSON_AddBoolToObject(m, "display", 1) ||
        !cJSON_AddStringToObject(det, "contextRole", label) ||
        !cJSON_AddItemToObject(m, "details", det))
        goto done;
    det = NULL;
    if (!cJSON_AddNumberToObject(m, "timestamp", timestamp)) goto done;
    out = cJSON_PrintUnformatted(m);
done:
    cJSON_Delete(det);
    cJSON_Delete(m);
    free(t);
    return out;
}

static double timestamp_of(const cJSON *m)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "timestamp");
    return cJSON_IsNumber(t) ? t->valuedouble : (double)lc_epoch_ms();
}

/* Serialize one slot as a new message (never for D_KEEP). */
static char *slot_json(const clm_view *v, const slot *s)
{
    char *out = NULL, *derived = NULL;
    cJSON *orig = NULL, *content = NULL;
    const clm_vmsg *src = s->src >= 0 ? &v->msgs[s->src] : NULL;
    if (src) orig = cJSON_ParseWithLength(src->json, src->json_len);
    double ts = orig ? timestamp_of(orig) : (double)lc_epoch_ms();
    const char *text = s->text;
    size_t text_len = s->text_len;
    if (!text) {
        derived = orig ? msg_derive_text(orig, NULL) : lc_strdup("");
        if (!derived) goto done;
        text = derived;
        text_len = strlen(derived);
    }
    char *t = lc_strndup(text, text_len);
    if (!t) goto done;

    if (s->d == D_USER) {
        cJSON *m = cJSON_CreateObject();
        if (m && cJSON_AddStringToObject(m, "role", "user") &&
            cJSON_AddStringToObject(m, "content", t) && cJSON_AddNumberToObject(m, "timestamp", ts))
            out = cJSON_PrintUnformatted(m);
        cJSON_Delete(m);
    } else if ((s->d == D_ASSISTANT || (s->d == D_FLATTEN && src->role == MSG_ROLE_ASSISTANT)) &&
               orig) {
        /* Keep provider, model and usage so the message still reads as that turn; only
         * the blocks change, and a text-only turn cannot have stopped for tool use. */
        content = cJSON_CreateArray();
        if (content && msg_add_text(content, t)) {
            int ok = msg_set_member(orig, "content", content);
            content = NULL;
            const cJSON *sr = cJSON_GetObjectItemCaseSensitive(orig, "stopReason");
            if (ok && cJSON_IsString(sr) && strcmp(sr->valuestring, "toolUse") == 0)
                ok = msg_set_member(orig, "stopReason", cJSON_CreateString("stop"));
            if (ok) out = cJSON_PrintUnformatted(orig);
        }
    } else {
        const char *label = s->label ? s->label : (src ? src->label : "notes");
        out = clm_lower_custom(label, t, strlen(t), ts);
    }
    free(t);
done:
    cJSON_Delete(content);
    cJSON_Delete(orig);
    free(derived);
    return out;
}

const char *clm_item_json(const clm_view *v, const clm_item *it, size_t *len)
{
    /* an item reuses a message the view holds, or owns its new JSON: never neither */
    assert(it->src < 0 ? it->json != NULL : (size_t)it->src < v->n);
    const char *j = it->src >= 0 ? v->msgs[it->src].json : it->json;
    if (len) *len = it->src >= 0 ? v->msgs[it->src].json_len : strlen(j);
    return j;
}

void clm_outcome_free(clm_outcome *out)
{
    if (!out) return;
    for (size_t i = 0; i < out->n_items; i++) free(out->items[i].json);
    LC_FREE(out->items, out->trace, out->notice, out->reason);
    memset(out, 0, sizeof *out);
}

static int finish_reject(const clm_view *v, clm_outcome *out, char *reason)
{
    (void)v;
    if (!reason) return LC_NOMEM;
    for (size_t i = 0; i < out->n_items; i++) free(out->items[i].json);
    free(out->items);
    free(out->trace);
    out->items = NULL;
    out->trace = NULL;
    out->n_items = out->n_trace = 0;
    out->accepted = 0;
    out->reason = reason;
    out->notice = lc_asprintf("[CLM] Your edit of LIVE_CONTEXT.md was rejected: %s The previous "
                              "context stays in force, and LIVE_CONTEXT.md has been rendered "
                              "again; read it before editing.",
                              reason);
    return out->notice ? LC_OK : LC_NOMEM;
}

/* Group repair (docs/DESIGN.md §3.3): an assistant keeps structured calls only if every result it had is
 * kept unchanged; a result stays structured only if its assistant does. */
static int repair_groups(const clm_view *v, slot *slots, size_t n)
{
    int rc = LC_OK;
    char *kept = calloc(v->n ? v->n : 1, 1);
    size_t *kept_results = calloc(v->n ? v->n : 1, sizeof *kept_results);
    if (!kept || !kept_results) {
        rc = LC_NOMEM; /* unrepaired, a group would reach the provider broken */
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (slots[i].src >= 0 && slots[i].d == D_KEEP) kept[slots[i].src] = 1;
    for (size_t k = 0; k < v->n; k++)
        if (kept[k] && v->msgs[k].role == MSG_ROLE_TOOL_RESULT && v->msgs[k].owner >= 0)
            kept_results[v->msgs[k].owner]++;
    for (size_t i = 0; i < n; i++) {
        slot *s = &slots[i];
        if (s->src < 0 || s->d != D_KEEP) continue;
        const clm_vmsg *m = &v->msgs[s->src];
        int broken = 0;
        /* a result's owner is the assistant that called it, rendered before it */
        assert(m->role != MSG_ROLE_TOOL_RESULT || m->owner < s->src);
        if (m->role == MSG_ROLE_ASSISTANT && m->n_results > 0)
            broken = kept_results[s->src] < m->n_results;
        else if (m->role == MSG_ROLE_TOOL_RESULT && m->owner >= 0) {
            const clm_vmsg *a = &v->msgs[m->owner];
            broken = !kept[m->owner] || kept_results[m->owner] < a->n_results;
        }
        if (broken) {
            s->d = D_FLATTEN;
            s->kind = CLM_TRACE_EDITED;
            s->why = "tool-call group flattened to text";
        }
    }
done:
    free(kept);
    free(kept_results);
    return rc;
}

static size_t item_tokens(const clm_view *v, const clm_item *it)
{
    return it->src >= 0 ? v->msgs[it->src].tokens : msg_estimate_tokens_json(it->json);
}

static void trim_blank(const char **s, size_t *n)
{
    while (*n > 0 && (**s == '\n' || **s == '\r' || **s == ' ' || **s == '\t')) { (*s)++; (*n)--; }
    while (*n > 0 && ((*s)[*n - 1] == '\n' || (*s)[*n - 1] == '\r' || (*s)[*n - 1] == ' ' ||
                      (*s)[*n - 1] == '\t'))
        (*n)--;
}

/* Whether the metadata line of a header-less file still names the mirror as rendered. */
static int edit_meta_current(const clm_view *v, const clm_doc *d)
{
    return !d->has_meta || (d->meta_revision == v->revision && d->meta_nonce && strcmp(d->meta_nonce, v->nonce) == 0);
}

/* No headers: the model wrote a whole new context. The first user turn stays as the task
 * anchor; everything else becomes one notes block. A refusal is out->reason. */
static int edit_plan_rewrite(const clm_view *v, const clm_doc *d, slot *slots, size_t *ns, clm_outcome *out)
{
    if (!edit_meta_current(v, d)) {
        char *e = clm_expected_first_line(v);
        char *reason = e ? lc_asprintf("the metadata line is stale or altered (the mirror was "
                                       "rendered again since it was read); re-read "
                                       "LIVE_CONTEXT.md — %s", e) : NULL;
        free(e);
        return finish_reject(v, out, reason);
    }
    if (v->mode == CLM_MODE_CONSERVATIVE)
        return finish_reject(v, out, lc_strdup("conservative mode does not accept a whole-"
                                               "context rewrite; keep the block headers."));
    const char *t = d->plain;
    size_t tl = strlen(d->plain);
    trim_blank(&t, &tl);
    if (tl == 0 && d->has_meta) {
        /* Only the metadata line: read literally it is a whole-context rewrite to nothing
         * (every block gone, no notes) -- a cut-off write far more often than a plan. */
        return finish_reject(v, out, lc_strdup("LIVE_CONTEXT.md holds only its metadata line. "
                                               "With no block headers a file is a whole-"
                                               "context rewrite, and this one would replace "
                                               "the whole context with nothing (only the first "
                                               "user turn would stay), so it is refused. To drop "
                                               "messages, delete their blocks and keep the rest; "
                                               "to rewrite the context, write your notes below "
                                               "the metadata line."));
    }
    if (tl == 0)
        return finish_reject(v, out, lc_strdup("LIVE_CONTEXT.md is empty; an empty file is "
                                               "taken as an accident, not as a rewrite. "
                                               "Write the context you want (blocks, or "
                                               "plain notes for a whole-context rewrite)."));
    for (size_t k = 0; k < v->n; k++) {
        if (v->msgs[k].role != MSG_ROLE_USER) continue;
        slots[(*ns)++] = (slot){.src = (long)k, .d = D_KEEP, .id = v->msgs[k].id,
                                .kind = CLM_TRACE_KEPT, .why = "first user turn"};
        break;
    }
    slots[(*ns)++] = (slot){.src = -1, .d = D_LOWER, .label = "notes", .text = t,
                            .text_len = tl, .id = "new-notes", .kind = CLM_TRACE_INSERTED,
                            .why = "whole-context rewrite"};
    out->rewrite = 1;
    return LC_OK;
}

/* What one edited block becomes: kept by reference, or re-serialized as its role allows. */
static slot edit_block_slot(const clm_view *v, const clm_block *b, long src)
{
    slot s = {.src = src, .line = b->line, .id = b->id, .label = b->label,
              .text = b->body, .text_len = b->body_len};
    if (s.src < 0) {
        s.d = D_LOWER;
        s.kind = CLM_TRACE_INSERTED;
        s.why = "new block";
        return s;
    }
    const clm_vmsg *m = &v->msgs[s.src];
    uint8_t dg[32];
    sha256(b->body, b->body_len, dg);
    int same_body = memcmp(dg, m->body_digest, 32) == 0;
    int same_label = strcmp(b->label, m->label) == 0;
    s.kind = CLM_TRACE_EDITED;
    if (same_body && same_label) {
        s.d = D_KEEP;
        s.kind = CLM_TRACE_KEPT;
        s.why = "unchanged";
    } else if (!same_label) {
        s.d = D_LOWER;
        s.why = "role label changed";
    } else if (m->role == MSG_ROLE_USER) {
        s.d = D_USER;
        s.why = "body edited";
    } else if (m->role == MSG_ROLE_ASSISTANT) {
        s.d = D_ASSISTANT;
        s.why = m->n_calls ? "body edited; tool calls dropped" : "body edited";
    } else {
        s.d = D_LOWER;
        s.why = "body edited";
    }
    return s;
}

/* Blocks with headers: the document's rules first, then one slot per block (text outside
 * every block becomes notes ahead of them), then group repair. A refusal is out->reason. */
static int edit_plan_blocks(const clm_view *v, const clm_doc *d, slot *slots, size_t *ns, clm_outcome *out)
{
    char *reason = NULL;
    long *src_of = calloc(d->n_blocks + 1, sizeof *src_of);
    int rc = LC_OK;
    if (!src_of) return LC_NOMEM;
    int r = clm_validate_document(v, d, src_of, &reason);
    if (r != 0) {
        rc = r < 0 ? LC_NOMEM : finish_reject(v, out, reason);
        reason = r < 0 ? reason : NULL;
        goto done;
    }
    if (d->outside) {
        const char *t = d->outside;
        size_t tl = strlen(t);
        trim_blank(&t, &tl);
        slots[(*ns)++] = (slot){.src = -1, .d = D_LOWER, .label = "notes", .text = t,
                                .text_len = tl, .line = d->outside_line, .id = "new-outside",
                                .kind = CLM_TRACE_INSERTED, .why = "text outside blocks"};
    }
    for (size_t i = 0; i < d->n_blocks; i++) slots[(*ns)++] = edit_block_slot(v, &d->blocks[i], src_of[i]);
    rc = repair_groups(v, slots, *ns);
done:
    free(reason);
    free(src_of);
    return rc;
}

/* The slots serialized into out->items (a kept one by reference), with the trace of each and
 * of every message no slot took; lines[i] is item i's mirror line. */
static int edit_items(const clm_view *v, const slot *slots, size_t ns, clm_outcome *out, size_t *lines)
{
    int rc = LC_OK;
    char *flag = calloc(v->n ? v->n : 1, 1);
    out->items = calloc(ns ? ns : 1, sizeof *out->items);
    out->trace = calloc(ns + v->n + 1, sizeof *out->trace);
    if (!out->items || !out->trace || !flag) { rc = LC_NOMEM; goto done; }
    for (size_t i = 0; i < ns; i++) {
        const slot *s = &slots[i];
        clm_item *it = &out->items[out->n_items];
        if (s->d == D_KEEP) {
            it->src = s->src;
        } else {
            it->src = -1;
            if (!(it->json = slot_json(v, s))) { rc = LC_NOMEM; goto done; }
        }
        lines[out->n_items] = s->line;
        clm_trace *t = &out->trace[out->n_trace++];
        t->kind = s->kind;
        t->src = s->src;
        t->dst = (long)out->n_items;
        snprintf(t->id, sizeof t->id, "%s", s->id ? s->id : "");
        snprintf(t->label, sizeof t->label, "%s",
                 s->d == D_LOWER && s->label ? s->label
                 : s->src >= 0                ? v->msgs[s->src].label
                                              : "notes");
        t->why = s->why;
        if (s->src >= 0) flag[s->src] = 1;
        out->tokens_after += item_tokens(v, it);
        out->n_items++;
    }
    for (size_t k = 0; k < v->n; k++) {
        if (flag[k]) continue;
        clm_trace *t = &out->trace[out->n_trace++];
        t->kind = CLM_TRACE_REMOVED;
        t->src = (long)k;
        t->dst = -1;
        snprintf(t->id, sizeof t->id, "%s", v->msgs[k].id);
        snprintf(t->label, sizeof t->label, "%s", v->msgs[k].label);
        t->why = out->rewrite ? "whole-context rewrite" : "removed";
    }
    /* the trace holds each slot once and each view message no slot reused once: within the
     * ns + v->n + 1 rows allocated for it */
    assert(out->n_trace <= ns + v->n);
done:
    free(flag);
    return rc;
}

/* The rules on the new sequence (and conservative mode's), then the notice the model reads:
 * accepted with its counts, or the refusal (out->reason). */
static int edit_accept(const clm_view *v, clm_outcome *out, const size_t *lines)
{
    char *reason = NULL;
    int r = clm_validate_sequence(v, out->items, out->n_items, lines, &reason);
    if (r == 0 && v->mode == CLM_MODE_CONSERVATIVE)
        r = clm_validate_conservative(v, out->items, out->n_items, lines, out->tokens_before,
                                      out->tokens_after, &reason);
    if (r < 0) {
        free(reason);
        return LC_NOMEM;
    }
    if (r > 0) return finish_reject(v, out, reason);
    size_t kept = 0, edited = 0, removed = 0, inserted = 0;
    for (size_t i = 0; i < out->n_trace; i++) {
        switch (out->trace[i].kind) {
        case CLM_TRACE_KEPT: kept++; break;
        case CLM_TRACE_EDITED: edited++; break;
        case CLM_TRACE_REMOVED: removed++; break;
        case CLM_TRACE_INSERTED: inserted++; break;
        }
    }
    out->accepted = 1;
    out->notice = lc_asprintf("[CLM] Your edit of LIVE_CONTEXT.md was accepted as revision %ld"
                              "%s: kept %zu, edited %zu, removed %zu, inserted %zu message(s); "
                              "estimated context ~%zu -> ~%zu tokens.",
                              v->revision + 1, out->rewrite ? " (whole-context rewrite)" : "",
                              kept, edited, removed, inserted, out->tokens_before,
                              out->tokens_after);
    return out->notice ? LC_OK : LC_NOMEM;
}

/* Three steps, each of which may refuse (out->reason set, the outcome not accepted): the
 * plan (a whole-context rewrite, or the blocks), the items with their trace, the rules. */
int clm_edit(const clm_view *v, const char *text, size_t len, clm_outcome *out, char **err)
{
    int rc = LC_OK;
    clm_doc d;
    slot *slots = NULL;
    size_t *lines = NULL;
    size_t ns = 0;
    memset(out, 0, sizeof *out);
    memset(&d, 0, sizeof d);

    if (!v->finished || !v->meta_line)
        return lc_errf(err, LC_INVALID, "clm edit: the view was never rendered");
    for (size_t k = 0; k < v->n; k++) out->tokens_before += v->msgs[k].tokens;

    if ((rc = clm_doc_parse(text, len, &d, err)) != LC_OK) goto done;
    if (!(slots = calloc(d.n_blocks + 2, sizeof *slots))) { rc = LC_NOMEM; goto done; }
    rc = d.n_blocks == 0 && !d.problem ? edit_plan_rewrite(v, &d, slots, &ns, out)
                                       : edit_plan_blocks(v, &d, slots, &ns, out);
    if (rc != LC_OK || out->reason) goto done;
    if (!(lines = calloc(ns ? ns : 1, sizeof *lines))) { rc = LC_NOMEM; goto done; }
    if ((rc = edit_items(v, slots, ns, out, lines)) != LC_OK) goto done;
    rc = edit_accept(v, out, lines);
done:
    free(lines);
    free(slots);
    clm_doc_free(&d);
    if (rc == LC_NOMEM) {
        clm_outcome_free(out);
        lc_errf(err, rc, "clm edit: out of memory");
    }
    return rc;
}
