/*
 * embed.c -- the embeddings client and the vector math (see embed.h).
 */
#include "embed.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "files.h"
#include "llm_http.h"
#include "redact.h"
#include "util.h"

const char embed_not_configured[] =
    "hybrid recall needs an embeddings endpoint: set \"embeddings\": {\"url\": \"http://127.0.0.1:11434\", "
    "\"model\": \"nomic-embed-text\"} in <home>/lcm.json (any OpenAI-compatible /v1/embeddings server); "
    "full-text search (without hybrid) works without one";

static int embed_ends_with(const char *s, size_t n, const char *tail)
{
    size_t t = strlen(tail);
    return n >= t && memcmp(s + n - t, tail, t) == 0;
}

char *embed_url(const char *url)
{
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/') n--;
    if (embed_ends_with(url, n, "/embeddings")) return lc_strndup(url, n);
    return lc_asprintf("%.*s%s", (int)n, url, embed_ends_with(url, n, "/v1") ? "/embeddings" : "/v1/embeddings");
}

void embed_normalize(float *v, int dim)
{
    double ss = 0;
    for (int i = 0; i < dim; i++) ss += (double)v[i] * v[i];
    if (ss <= 0 || !isfinite(ss)) {
        if (!isfinite(ss)) memset(v, 0, (size_t)dim * sizeof *v);
        return;
    }
    double inv = 1.0 / sqrt(ss);
    for (int i = 0; i < dim; i++) v[i] = (float)(v[i] * inv);
}

double embed_dot(const float *a, const float *b, int dim)
{
    double s = 0;
    for (int i = 0; i < dim; i++) s += (double)a[i] * b[i];
    return s;
}

/* One request: texts[0..n) -> rows of *vecs (grown to hold them), checking the shape. */
static int embed_batch(const lcm_embeddings *cfg, const llm_http_endpoint *ep, const char *url,
                       const char *const *texts, size_t n, float **vecs, size_t first, size_t total, int *dim,
                       long *tokens, char **err)
{
    int rc = LC_OK;
    cJSON *req = cJSON_CreateObject(), *in = NULL, *resp = NULL;
    char *body = NULL, *seen = NULL;
    sbuf r = {0};
    if (!req || !cJSON_AddStringToObject(req, "model", cfg->model) || !(in = cJSON_AddArrayToObject(req, "input")))
        goto oom;
    if (cfg->dimensions > 0 && !cJSON_AddNumberToObject(req, "dimensions", (double)cfg->dimensions)) goto oom;
    for (size_t i = 0; i < n; i++) {
        const char *t = texts[i] ? texts[i] : "";
        /* Masked as every other text leaving the machine is (redactSecrets), before the clip:
         * a key cut in two by it might no longer look like one. */
        char *masked = redact_text(t, strlen(t), !cfg->send_unmasked, NULL);
        if (!masked) goto oom;
        size_t keep = files_utf8_prefix(masked, strlen(masked), (size_t)(cfg->max_chars > 0 ? cfg->max_chars : 8000));
        char *clip = lc_strndup(masked, keep);
        free(masked);
        /* An empty input is refused by some servers: one space embeds as "nothing". */
        cJSON *s = clip ? cJSON_CreateString(*clip ? clip : " ") : NULL;
        free(clip);
        if (!s || !cJSON_AddItemToArray(in, s)) {
            cJSON_Delete(s);
            goto oom;
        }
    }
    if (!(body = cJSON_PrintUnformatted(req))) goto oom;
    if ((rc = llm_http_post_json(ep, url, body, &r, err)) != LC_OK) {
        char *why = err ? *err : NULL;
        if (err) *err = NULL;
        rc = lc_errf(err, rc, "embeddings (%s, model %s): %s", url, cfg->model, why ? why : "failed");
        free(why);
        goto done;
    }
    if (!(resp = cJSON_Parse(r.p ? r.p : ""))) {
        rc = lc_errf(err, LC_ERR, "embeddings (%s): the answer is not JSON", url);
        goto done;
    }
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(resp, "usage");
    const cJSON *ut = cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens");
    if (!cJSON_IsNumber(ut)) ut = cJSON_GetObjectItemCaseSensitive(usage, "total_tokens");
    if (tokens && cJSON_IsNumber(ut) && ut->valuedouble > 0) *tokens += (long)ut->valuedouble;
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(resp, "data");
    if (!cJSON_IsArray(data) || (size_t)cJSON_GetArraySize(data) != n) {
        rc = lc_errf(err, LC_ERR, "embeddings (%s): expected %zu vectors in \"data\", got %d", url, n,
                     cJSON_IsArray(data) ? cJSON_GetArraySize(data) : 0);
        goto done;
    }
    /* Every row once, every number finite as a float: a bad answer is refused whole, never
     * stored as a zero vector and counted as embedded. */
    if (!(seen = calloc(n, 1))) goto oom;
    size_t pos = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, data) {
        const cJSON *ix = cJSON_GetObjectItemCaseSensitive(item, "index");
        const cJSON *emb = cJSON_GetObjectItemCaseSensitive(item, "embedding");
        int64_t row = (int64_t)pos;
        pos++;
        int d = cJSON_IsArray(emb) ? cJSON_GetArraySize(emb) : 0;
        if ((ix && lc_json_int(ix, 0, (int64_t)n - 1, &row) != LC_OK) || d <= 0) {
            rc = lc_errf(err, LC_ERR, "embeddings (%s): a vector without numbers or with an index not in 0..%zu",
                         url, n - 1);
            goto done;
        }
        if (seen[row]++) {
            rc = lc_errf(err, LC_ERR, "embeddings (%s): two vectors for input %lld (none was stored)", url,
                         (long long)row);
            goto done;
        }
        if (cfg->dimensions > 0 && d != cfg->dimensions) {
            rc = lc_errf(err, LC_ERR, "embeddings (%s): model %s returned %d dimensions, not the configured %ld",
                         url, cfg->model, d, cfg->dimensions);
            goto done;
        }
        if (!*vecs) {
            if (*dim > 0 && d != *dim) {
                rc = lc_errf(err, LC_ERR, "embeddings (%s): model %s returned %d dimensions where its stored vectors "
                             "have %d (none was stored; a model that changed its vectors needs a name of its own in "
                             "embeddings.model)",
                             url, cfg->model, d, *dim);
                goto done;
            }
            *dim = d;
            if (!(*vecs = calloc(total * (size_t)d, sizeof **vecs))) goto oom;
        } else if (d != *dim) {
            rc = lc_errf(err, LC_ERR, "embeddings (%s): vectors of %d and %d dimensions in one answer", url, *dim, d);
            goto done;
        }
        float *v = *vecs + (first + (size_t)row) * (size_t)d;
        int i = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, emb) {
            double f = cJSON_IsNumber(x) ? x->valuedouble : NAN;
            if (!isfinite(f) || fabs(f) > FLT_MAX) {
                rc = lc_errf(err, LC_ERR, "embeddings (%s): input %lld's vector holds something that is not a "
                             "finite number (none was stored)", url, (long long)row);
                goto done;
            }
            v[i++] = (float)f;
        }
        embed_normalize(v, d);
    }
    goto done;
oom:
    rc = lc_errf(err, LC_NOMEM, "embeddings: out of memory");
done:
    cJSON_Delete(req);
    cJSON_Delete(resp);
    free(body);
    free(seen);
    sb_free(&r);
    return rc;
}

int embed_texts(const lcm_embeddings *cfg, const char *const *texts, size_t n, float **out, int *dim,
                char **err)
{
    return embed_texts_metered(cfg, texts, n, out, dim, NULL, NULL, err);
}

int embed_texts_metered(const lcm_embeddings *cfg, const char *const *texts, size_t n, float **out, int *dim,
                        long *tokens, long *requests, char **err)
{
    int want = *dim > 0 ? *dim : 0;
    *out = NULL;
    *dim = want;
    if (!cfg || !cfg->enabled) return lc_errf(err, LC_INVALID, "%s", embed_not_configured);
    if (n == 0) return LC_OK;
    llm_http_endpoint ep;
    memset(&ep, 0, sizeof ep);
    ep.kind = LLM_HTTP_OPENAI;
    snprintf(ep.base_url, sizeof ep.base_url, "%s", cfg->url);
    if (cfg->api_key_env) snprintf(ep.key_env, sizeof ep.key_env, "%s", cfg->api_key_env);
    ep.timeout_seconds = cfg->timeout_ms > 0 ? (cfg->timeout_ms + 999) / 1000 : 30;
    char *url = embed_url(cfg->url);
    if (!url) return lc_errf(err, LC_NOMEM, "embeddings: out of memory");
    size_t batch = cfg->batch > 0 ? (size_t)cfg->batch : 16;
    int rc = LC_OK;
    for (size_t i = 0; i < n && rc == LC_OK; i += batch) {
        if (requests) ++*requests;
        rc = embed_batch(cfg, &ep, url, texts + i, n - i < batch ? n - i : batch, out, i, n, dim, tokens, err);
    }
    free(url);
    if (rc != LC_OK) {
        free(*out);
        *out = NULL;
        *dim = 0;
    }
    return rc;
}
