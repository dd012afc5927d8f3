/*
 * clm_validate.c -- acceptance rules of an edited mirror (see clm_validate.h). Every
 * rejection sentence says what was wrong, where (line), and what would be accepted.
 */
#include "clm_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *clm_expected_first_line(const clm_view *v)
{
    return lc_asprintf("the first line must be exactly: %s", v->meta_line ? v->meta_line : "");
}

static int reject(char **reason, char *text)
{
    if (!text) return -1;
    free(*reason);
    *reason = text;
    return 1;
}

static int is_new_id(const char *id) { return strncmp(id, "new-", 4) == 0; }

/* Blocks with new- ids, sorted by id and then by position: equal ids end up adjacent. */
typedef struct new_ref {
    const char *id;
    size_t i;
} new_ref;

static int new_ref_cmp(const void *a, const void *b)
{
    const new_ref *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* The first block (in document order) whose new- id an earlier block already has, and
 * that earlier block: what a scan comparing every block with all before it reports, in
 * O(n log n) instead of O(n^2) (issue 14.6: 100,000 inserted blocks took 43 s here).
 * *dup = (size_t)-1 when there is none; -1 on out of memory. */
static int first_new_duplicate(const clm_doc *d, size_t *dup, size_t *first)
{
    *dup = *first = (size_t)-1;
    size_t n = 0;
    for (size_t i = 0; i < d->n_blocks; i++) n += is_new_id(d->blocks[i].id);
    if (n < 2) return 0;
    new_ref *r = malloc(n * sizeof *r);
    if (!r) return -1;
    n = 0;
    for (size_t i = 0; i < d->n_blocks; i++)
        if (is_new_id(d->blocks[i].id)) r[n++] = (new_ref){d->blocks[i].id, i};
    qsort(r, n, sizeof *r, new_ref_cmp);
    for (size_t k = 1; k < n; k++) {
        /* the second of a run is that id's first repeat; the run's first is its origin */
        if (strcmp(r[k].id, r[k - 1].id) != 0 || (k >= 2 && strcmp(r[k - 2].id, r[k].id) == 0))
            continue;
        if (r[k].i < *dup) {
            *dup = r[k].i;
            *first = r[k - 1].i;
        }
    }
    free(r);
    return 0;
}

int clm_validate_document(const clm_view *v, const clm_doc *d, long *src_of_block,
                          char **reason)
{
    int rc = 0;
    size_t *first_line = NULL;
    char *expect = clm_expected_first_line(v);
    if (!expect) return -1;

    if (d->problem) {
        rc = reject(reason, lc_asprintf("line %zu: %s.", d->problem_line, d->problem));
        goto done;
    }
    if (!d->has_meta) {
        rc = reject(reason, lc_asprintf("LIVE_CONTEXT.md has no metadata line; %s", expect));
        goto done;
    }
    if (d->meta_version != 1 || d->meta_revision != v->revision || !d->meta_nonce ||
        strcmp(d->meta_nonce, v->nonce) != 0) {
        rc = reject(reason, lc_asprintf("line %zu: the metadata line is stale or altered "
                                        "(the mirror was rendered again since it was read); "
                                        "re-read LIVE_CONTEXT.md — %s",
                                        d->meta_line, expect));
        goto done;
    }
    size_t current = 0;
    for (size_t i = 0; i < d->n_blocks; i++)
        if (strcmp(d->blocks[i].nonce, v->nonce) == 0) current++;
    if (current == 0 && d->n_blocks > 0) {
        rc = reject(reason, lc_asprintf("line %zu: the block headers carry document=%s, but "
                                        "the current document is %s (stale nonce); re-read "
                                        "LIVE_CONTEXT.md — %s",
                                        d->blocks[0].line, d->blocks[0].nonce, v->nonce,
                                        expect));
        goto done;
    }
    for (size_t i = 0; i < d->n_blocks; i++) {
        const clm_block *b = &d->blocks[i];
        if (strcmp(b->nonce, v->nonce) != 0) {
            rc = reject(reason,
                        lc_asprintf("line %zu: an injected block header with a foreign "
                                    "document=%s appears inside the document (copied from an "
                                    "older mirror?); only headers with document=%s are blocks "
                                    "— escape that line with a leading backslash or remove it.",
                                    b->line, b->nonce, v->nonce));
            goto done;
        }
    }
    if (v->mode == CLM_MODE_CONSERVATIVE && d->outside) {
        rc = reject(reason, lc_asprintf("line %zu: conservative mode does not accept text "
                                        "outside blocks.", d->outside_line));
        goto done;
    }
    size_t dup_at, dup_first;
    first_line = calloc(v->n + 1, sizeof *first_line);
    if (!first_line || first_new_duplicate(d, &dup_at, &dup_first) < 0) { rc = -1; goto done; }
    for (size_t i = 0; i < d->n_blocks; i++) {
        const clm_block *b = &d->blocks[i];
        if (is_new_id(b->id)) {
            if (v->mode == CLM_MODE_CONSERVATIVE) {
                rc = reject(reason, lc_asprintf("line %zu: conservative mode does not accept "
                                                "new blocks (id=%s).", b->line, b->id));
                goto done;
            }
            if (i == dup_at) {
                rc = reject(reason, lc_asprintf("duplicate id=%s (lines %zu and %zu); "
                                                "every block id may appear only once.",
                                                b->id, d->blocks[dup_first].line, b->line));
                goto done;
            }
            src_of_block[i] = -1;
            continue;
        }
        long k = clm_view_find(v, b->id);
        if (k < 0) {
            rc = reject(reason, lc_asprintf("line %zu: unknown id=%s; keep the ids of the "
                                            "current mirror, or give an inserted block an id "
                                            "starting with new-.", b->line, b->id));
            goto done;
        }
        if (first_line[k]) {
            rc = reject(reason, lc_asprintf("duplicate id=%s (lines %zu and %zu); every block "
                                            "id may appear only once.",
                                            b->id, first_line[k], b->line));
            goto done;
        }
        first_line[k] = b->line;
        src_of_block[i] = k;
    }
done:
    free(first_line);
    free(expect);
    return rc;
}

int clm_validate_sequence(const clm_view *v, const clm_item *items, size_t n,
                          const size_t *item_line, char **reason)
{
    if (n == 0)
        return reject(reason, lc_strdup("the edit leaves no message at all; keep at least "
                                         "one block."));
    long group = -1;        /* the structured assistant whose results may follow */
    size_t seen = 0;        /* its results seen so far */
    size_t group_line = 0;
    for (size_t i = 0; i <= n; i++) {
        const clm_vmsg *m = (i < n && items[i].src >= 0) ? &v->msgs[items[i].src] : NULL;
        int structured_result = m && m->role == MSG_ROLE_TOOL_RESULT && m->owner >= 0;
        if (structured_result) {
            if (group != m->owner) {
                const clm_vmsg *a = &v->msgs[m->owner];
                return reject(reason,
                              lc_asprintf("line %zu: illegal sequence: the tool result id=%s "
                                          "(call %s) must directly follow the assistant block "
                                          "id=%s that made the call, together with the other "
                                          "results of that call group.",
                                          item_line[i], m->id, m->call_id, a->id));
            }
            seen++;
            continue;
        }
        if (group >= 0 && seen < v->msgs[group].n_results) {
            const clm_vmsg *a = &v->msgs[group];
            char where[64] = "";
            if (i < n && item_line[i])
                snprintf(where, sizeof where, " (the block at line %zu interrupts them)",
                         item_line[i]);
            return reject(reason,
                          lc_asprintf("line %zu: illegal sequence: the assistant block id=%s "
                                      "made %zu tool call(s) with results, but only %zu of "
                                      "them follow it directly%s; keep tool results right "
                                      "after their assistant block.",
                                      group_line, a->id, a->n_results, seen, where));
        }
        group = -1;
        seen = 0;
        if (m && m->role == MSG_ROLE_ASSISTANT && m->n_results > 0) {
            group = items[i].src;
            group_line = item_line[i];
        }
    }
    return 0;
}

int clm_validate_conservative(const clm_view *v, const clm_item *items, size_t n,
                              const size_t *item_line, size_t tokens_before,
                              size_t tokens_after, char **reason)
{
    long last = -1;
    for (size_t i = 0; i < n; i++) {
        if (items[i].src < 0) continue;
        if (items[i].src < last)
            return reject(reason,
                          lc_asprintf("line %zu: conservative mode keeps source order, but "
                                      "id=%s was moved before id=%s.",
                                      item_line[i], v->msgs[items[i].src].id,
                                      v->msgs[last].id));
        last = items[i].src;
    }
    for (size_t k = 0; k < v->n; k++) {
        if (!v->msgs[k].is_protected) continue;
        int kept = 0;
        for (size_t i = 0; i < n && !kept; i++) kept = items[i].src == (long)k;
        if (!kept)
            return reject(reason,
                          lc_asprintf("conservative mode protects the first and latest user "
                                      "turns; id=%s (protected=true) was removed or edited.",
                                      v->msgs[k].id));
    }
    if (tokens_after >= tokens_before)
        return reject(reason,
                      lc_asprintf("conservative mode accepts only edits that shrink the "
                                  "context (estimated ~%zu tokens before, ~%zu after).",
                                  tokens_before, tokens_after));
    return 0;
}
