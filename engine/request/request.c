/*
 * request.c -- one `context` request of a session, end to end (request.h): LCM projects the
 * raw input past the live-context revision's anchor, live context composes its revision ++
 * that projection, and the request as sent is noted (the request log, a metrics row).
 */
#include <stdlib.h>
#include <string.h>

#include "clm_request.h"
#include "metrics.h"
#include "request.h"
#include "util.h"

/* clm_input over the request's messages. */
static void request_in_get(const void *ud, size_t i, const char **id, const char **json, size_t *len)
{
    const store_msg *m = &((const store_msg *)ud)[i];
    *id = m->entry_id;
    *json = m->json;
    *len = m->json_len;
}

/* LCM's projection, as the suffix live context composes on. */
typedef struct request_proj {
    const project_item *items;
    size_t n;
} request_proj;

static void request_suffix_get(const void *ud, size_t k, long *index, const char **json)
{
    const project_item *it = &((const request_proj *)ud)->items[k];
    *index = it->index < 0 ? -1 : (long)it->index;
    *json = it->json;
}

void request_result_free(request_result *r)
{
    if (!r) return;
    for (size_t i = 0; r->items && i < r->n; i++) free(r->items[i].json);
    free(r->items);
    memset(r, 0, sizeof *r);
}

/* A result of n items (the array never empty, so a request of no message is still one). */
static int request_alloc(request_result *out, size_t n, const char *who, char **err)
{
    if (!(out->items = calloc(n ? n : 1, sizeof *out->items)))
        return lc_errf(err, LC_NOMEM, "%sout of memory", who);
    out->n = n;
    out->changed = 1;
    return LC_OK;
}

/* The request live context composed: its items, then its one-call notice (taken). */
static int request_from_clm(clm_request_result *res, request_result *out, char **err)
{
    if (request_alloc(out, res->n + (res->notice ? 1 : 0), "live context: ", err) != LC_OK) return LC_NOMEM;
    for (size_t i = 0; i < res->n; i++) {
        clm_request_item it = clm_request_at(res, i);
        out->items[i].raw = it.raw;
        if (it.raw < 0 && !(out->items[i].json = lc_strndup(it.json, it.len)))
            return lc_errf(err, LC_NOMEM, "live context: out of memory");
    }
    if (res->notice) {
        out->items[res->n].raw = -1;
        out->items[res->n].json = res->notice;
        res->notice = NULL;
    }
    return LC_OK;
}

/* LCM's projection as the request (live context left it alone); the pointer messages are
 * borrowed from the projection, so the result gets its copies. */
static int request_from_lcm(const project_item *items, size_t n, request_result *out, char **err)
{
    if (request_alloc(out, n, "", err) != LC_OK) return LC_NOMEM;
    for (size_t i = 0; i < n; i++) {
        out->items[i].raw = (long)items[i].index;
        if (items[i].index < 0 && !(out->items[i].json = lc_strdup(items[i].json)))
            return lc_errf(err, LC_NOMEM, "out of memory");
    }
    return LC_OK;
}

/* The request as sent: whether it extends the previous one byte for byte (the provider can
 * serve that prefix from its cache) becomes a `request` metrics row, and the line of
 * LCM_REQUEST_LOG when one waits. Without a store LCM is not active (a refused store path
 * among the reasons: the metrics file beside it must not be made either), so no row. */
static void request_note_sent(request_session *s, const store_msg *msgs, size_t n, const request_result *sent,
                              int have_store)
{
    project_item *items = NULL;
    if (!s->proj || !n) return;
    if (sent->changed && (items = malloc((sent->n ? sent->n : 1) * sizeof *items)))
        for (size_t i = 0; i < sent->n; i++) items[i] = (project_item){sent->items[i].raw, sent->items[i].json};
    if (sent->changed && !items) return;
    int raw = -1;
    int ext = projstate_log_sent(s->proj, msgs, n, items, items ? sent->n : 0, &raw);
    cJSON *row = cJSON_CreateObject();
    if (row && ext >= 0) cJSON_AddBoolToObject(row, "extends", ext);
    if (row && raw >= 0) cJSON_AddBoolToObject(row, "rawExtends", raw);
    if (row) cJSON_AddBoolToObject(row, "projected", sent->changed);
    if (row && have_store && s->hooks.metric) s->hooks.metric(s->hooks.ud, METRIC_REQUEST, row);
    cJSON_Delete(row);
    free(items);
}

int request_context(request_session *s, const store_msg *msgs, size_t n, const char *system_prompt,
                    request_result *out, char **err)
{
    int rc = LC_OK;
    project_item *items = NULL;
    size_t n_items = 0;
    clm_request_result cres;
    /* Live context reads the input and the projection until its result is converted. */
    clm_input in = {n, msgs, request_in_get};
    request_proj proj = {NULL, 0};
    clm_eff_suffix sx = {0, &proj, request_suffix_get};
    memset(&cres, 0, sizeof cres);
    memset(out, 0, sizeof *out);
    /* The raw messages the revision in force owns are its, not the projection's. */
    size_t anchor = s->clm ? clm_live_anchor(s->clm) : 0;
    int have_store = s->env.st != NULL;
    if (s->proj) {
        if (s->env.offline && n && s->off) s->off->requests++;
        rc = projstate_context(s->proj, &s->env, msgs, n, anchor, &items, &n_items, &out->raw_tokens, err);
        int src = LC_OK;
        char *why = projstate_store_error(s->proj, &src);
        if (why && have_store && offline_failure(src)) {
            /* The env's store and chains are let go of here: nothing below reads them. */
            if (s->hooks.offline) s->hooks.offline(s->hooks.ud, why);
            have_store = 0;
        }
        free(why);
        if (rc != LC_OK) {
            rc = LC_NOMEM;
            goto done;
        }
    }
    /* Live context composes on LCM's projection of the raw suffix; off, it hands nothing
     * back and the projection is the request. */
    if (s->clm) {
        proj = (request_proj){items, n_items};
        sx.n = n_items;
        if ((rc = clm_request_compose(s->clm, &in, system_prompt, items ? &sx : NULL, &cres, err)) != LC_OK)
            goto done;
    }
    if (cres.changed) rc = request_from_clm(&cres, out, err);
    else if (items) rc = request_from_lcm(items, n_items, out, err);
    if (rc != LC_OK) goto done;
    request_note_sent(s, msgs, n, out, have_store);
done:
    if (rc != LC_OK) {
        size_t tokens = out->raw_tokens;
        request_result_free(out);
        out->raw_tokens = tokens;
    }
    clm_request_result_free(&cres);
    free(items);
    return rc;
}
