/*
 * store_common.c -- the backend-neutral steps both store backends share (store_common.h).
 */
#include "store_common.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

int store_common_visit_next(int v, int *rc, int *stopped)
{
    if (v == LC_OK) return 1;
    if (v == STORE_VISIT_STOP) {
        if (stopped) *stopped = 1;
        *rc = LC_OK;
    } else {
        *rc = v;
    }
    return 0;
}

int store_common_vec_room(float **buf, int *cap, int dim, char **err)
{
    if (dim <= *cap) return LC_OK;
    float *nb = realloc(*buf, (size_t)dim * sizeof *nb);
    if (!nb) return lc_errf(err, LC_NOMEM, "store: out of memory");
    *buf = nb;
    *cap = dim;
    return LC_OK;
}

int store_common_ingest_from(store *s, const store_msg *msgs, size_t n, const char *last_entry, int64_t last_ordinal,
                             int64_t (*lookup)(store *s, const char *entry_id, char **err), size_t *first_new,
                             int64_t *ordinal, store_ingest_stats *stats, char **err)
{
    *first_new = 0;
    *ordinal = -1;
    for (size_t i = n; i-- > 0;) {
        const char *id = msgs[i].entry_id;
        if (!id) continue;
        stats->examined++;
        int64_t ord = last_entry && strcmp(last_entry, id) == 0 ? last_ordinal : lookup(s, id, err);
        if (ord == -2) return LC_ERR;
        if (ord >= 0) {
            *first_new = i + 1;
            *ordinal = ord + 1;
            break;
        }
    }
    return LC_OK;
}

void store_common_ingest_done(char **last_entry, int64_t *last_ordinal, const char *newest, int64_t ordinal)
{
    if (!newest) return;
    free(*last_entry);
    *last_entry = lc_strdup(newest);
    *last_ordinal = ordinal;
}

int store_common_meta_int(store *s, const char *key, int64_t *out)
{
    char *v = store_meta_get(s, key), *end = NULL;
    long long n = v ? strtoll(v, &end, 10) : 0;
    int found = v && end != v;
    if (found) *out = n;
    free(v);
    return found;
}

int store_common_dag_progress(store *s, int read_only, int (*recompute)(store *s, char **err), int64_t *watermark,
                              int64_t *pending, char **err)
{
    int rc = LC_OK;
    int64_t w = 0, p = 0;
    if (!store_common_meta_int(s, "dag_watermark", &w) || !store_common_meta_int(s, "dag_pending", &p)) {
        if (read_only) {
            /* Nothing may be written: report "everything may be uncovered". */
            w = 0;
            p = INT64_MAX;
            goto done;
        }
        if ((rc = recompute(s, err)) != LC_OK) goto done;
        if (!store_common_meta_int(s, "dag_watermark", &w) || !store_common_meta_int(s, "dag_pending", &p)) {
            rc = lc_errf(err, LC_ERR, "store: dag progress: the numbers were not written");
            goto done;
        }
    }
done:
    if (rc == LC_OK) {
        if (watermark) *watermark = w;
        if (pending) *pending = p;
    }
    return rc;
}

int store_common_cut_read(store_cut *c, char **err)
{
    if (c->anchor_entry && c->message && c->nodes_json) return LC_OK;
    store_cut_free(c);
    return lc_errf(err, LC_NOMEM, "store: out of memory");
}

int store_common_row_read(store_row *r, char **err)
{
    if (r->entry_id && r->text && r->raw_json) return LC_OK;
    store_row_free(r);
    return lc_errf(err, LC_NOMEM, "store: out of memory");
}

int store_common_dump_buffers(int ncol, const char ***names, store_value **vals, char **err)
{
    *names = calloc((size_t)ncol + 1, sizeof **names);
    *vals = calloc((size_t)ncol + 1, sizeof **vals);
    if (!*names || !*vals) return lc_errf(err, LC_NOMEM, "export: out of memory");
    return LC_OK;
}
