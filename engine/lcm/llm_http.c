/*
 * llm_http.c -- OpenAI-compatible and Anthropic clients for summarizer entries
 * (see llm_http.h).
 */
#include "llm_http.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "util.h"

static pthread_once_t llm_http_once = PTHREAD_ONCE_INIT;
static void llm_http_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static const struct {
    const char *provider;
    llm_http_kind kind;
    const char *url;
    const char *key_env;
} llm_http_builtin[] = {
    {"openai", LLM_HTTP_OPENAI, "https://api.openai.com/v1", "OPENAI_API_KEY"},
    {"anthropic", LLM_HTTP_ANTHROPIC, "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"},
    {"openrouter", LLM_HTTP_OPENAI, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"},
};

int llm_http_resolve(const char *provider, const char *base_url, llm_http_endpoint *out,
                     char **err)
{
    memset(out, 0, sizeof *out);
    out->kind = LLM_HTTP_OPENAI;
    const char *url = NULL;
    for (size_t i = 0; i < sizeof llm_http_builtin / sizeof llm_http_builtin[0]; i++) {
        if (strcmp(provider, llm_http_builtin[i].provider) != 0) continue;
        out->kind = llm_http_builtin[i].kind;
        url = llm_http_builtin[i].url;
        snprintf(out->key_env, sizeof out->key_env, "%s", llm_http_builtin[i].key_env);
    }
    if (!out->key_env[0]) {
        size_t n = 0;
        for (const char *p = provider; *p && n + 9 < sizeof out->key_env; p++)
            out->key_env[n++] = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
        snprintf(out->key_env + n, sizeof out->key_env - n, "_API_KEY");
    }
    if (base_url && *base_url) {
        snprintf(out->base_url, sizeof out->base_url, "%s", base_url);
    } else if (url) {
        const char *key = getenv(out->key_env);
        if (!key || !*key)
            return lc_errf(err, LC_NOTFOUND, "provider %s: %s is not set", provider,
                           out->key_env);
        snprintf(out->base_url, sizeof out->base_url, "%s", url);
    } else {
        return lc_errf(err, LC_NOTFOUND, "provider %s has no base URL (set baseUrls.%s)",
                       provider, provider);
    }
    size_t n = strlen(out->base_url);
    while (n > 0 && out->base_url[n - 1] == '/') out->base_url[--n] = '\0';
    return LC_OK;
}

static size_t llm_http_sink(char *data, size_t size, size_t nmemb, void *ud)
{
    sbuf *b = ud;
    return sb_append(b, data, size * nmemb) == LC_OK ? size * nmemb : 0;
}

/* A server's sentence as it may reach a terminal or a log: control bytes (ESC, CR, BEL...)
 * and the C1 controls (U+0080..U+009F, CSI among them) become '?', so an answer cannot
 * move the cursor, retitle the pane or clear the screen; clipped to 300 bytes at a
 * character's start. */
static char *llm_http_neutral(const char *s)
{
    sbuf b = {0};
    size_t n = strlen(s), i = 0;
    while (i < n && b.len < 300) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            sb_putc(&b, '?');
            i++;
        } else if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 && (unsigned char)s[i + 1] <= 0x9f) {
            sb_putc(&b, '?');
            i += 2;
        } else {
            size_t k = i + 1;
            while (k < n && ((unsigned char)s[k] & 0xc0) == 0x80) k++;
            sb_append(&b, s + i, k - i);
            i = k;
        }
    }
    if (i < n) sb_puts(&b, "...");
    return sb_detach(&b);
}

/* The provider's own error sentence when the body is JSON with error.message (OpenAI and
 * Anthropic both use that shape), else a clipped body; neutralised either way. */
static char *llm_http_error_text(const char *body)
{
    cJSON *j = cJSON_Parse(body);
    char *msg = NULL;
    const cJSON *e = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
    const cJSON *m = e ? cJSON_GetObjectItemCaseSensitive(e, "message") : NULL;
    if (cJSON_IsString(m)) msg = llm_http_neutral(m->valuestring);
    else if (cJSON_IsString(e)) msg = llm_http_neutral(e->valuestring);
    else msg = llm_http_neutral(body);
    cJSON_Delete(j);
    return msg;
}

static int llm_http_post(const llm_http_endpoint *ep, const char *url, struct curl_slist *hdr,
                         const char *body, sbuf *resp, char **err)
{
    pthread_once(&llm_http_once, llm_http_global_init);
    int rc = LC_OK;
    long status = 0;
    CURL *c = curl_easy_init();
    if (!c) return lc_errf(err, LC_NOMEM, "curl_easy_init failed");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, llm_http_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, ep->timeout_seconds > 0 ? ep->timeout_seconds : 120L);
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        rc = lc_errf(err, LC_ERR, "%s: %s", url, curl_easy_strerror(cc));
        goto done;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status >= 300) {
        char *msg = llm_http_error_text(resp->p ? resp->p : "");
        rc = lc_errf(err, LC_ERR, "HTTP %ld: %s", status, msg ? msg : "");
        free(msg);
    }
done:
    curl_easy_cleanup(c);
    return rc;
}

static struct curl_slist *llm_http_headers(const llm_http_endpoint *ep)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    const char *key = getenv(ep->key_env);
    char line[1024];
    if (ep->kind == LLM_HTTP_ANTHROPIC) {
        h = curl_slist_append(h, "anthropic-version: 2023-06-01");
        if (key && *key) {
            snprintf(line, sizeof line, "x-api-key: %s", key);
            h = curl_slist_append(h, line);
        }
    } else if (key && *key) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", key);
        h = curl_slist_append(h, line);
    }
    return h;
}

static char *llm_http_stop(const char *raw, llm_http_kind kind)
{
    if (!raw) return lc_strdup("stop");
    if (kind == LLM_HTTP_ANTHROPIC) {
        if (!strcmp(raw, "end_turn") || !strcmp(raw, "stop_sequence")) return lc_strdup("stop");
        if (!strcmp(raw, "max_tokens")) return lc_strdup("length");
        if (!strcmp(raw, "refusal")) return lc_strdup("error");
        return lc_strdup(raw);
    }
    if (!strcmp(raw, "content_filter")) return lc_strdup("error");
    return lc_strdup(raw);
}

static long llm_http_num(const cJSON *o, const char *k)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

static int llm_http_parse(const llm_http_endpoint *ep, const char *body, summ_completion *out,
                          char **err)
{
    int rc = LC_OK;
    cJSON *j = cJSON_Parse(body);
    sbuf text = {0};
    const char *stop = NULL;
    if (!j) {
        rc = lc_errf(err, LC_ERR, "provider answered with something that is not JSON");
        goto done;
    }
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(j, "usage");
    if (ep->kind == LLM_HTTP_ANTHROPIC) {
        const cJSON *blk;
        cJSON_ArrayForEach(blk, cJSON_GetObjectItemCaseSensitive(j, "content")) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(blk, "type");
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(blk, "text");
            if (cJSON_IsString(t) && !strcmp(t->valuestring, "text") && cJSON_IsString(s))
                sb_puts(&text, s->valuestring);
        }
        const cJSON *sr = cJSON_GetObjectItemCaseSensitive(j, "stop_reason");
        stop = cJSON_IsString(sr) ? sr->valuestring : NULL;
        /* Anthropic counts cache reads and writes apart from input_tokens; the ledger's
         * input includes what was cached. */
        out->cached_tokens = llm_http_num(usage, "cache_read_input_tokens");
        out->input_tokens = llm_http_num(usage, "input_tokens") + out->cached_tokens +
                            llm_http_num(usage, "cache_creation_input_tokens");
        out->output_tokens = llm_http_num(usage, "output_tokens");
    } else {
        const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(ch, "message");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
        if (cJSON_IsString(content)) sb_puts(&text, content->valuestring);
        const cJSON *fr = cJSON_GetObjectItemCaseSensitive(ch, "finish_reason");
        stop = cJSON_IsString(fr) ? fr->valuestring : NULL;
        if (!ch) stop = "error";
        out->input_tokens = llm_http_num(usage, "prompt_tokens");
        out->output_tokens = llm_http_num(usage, "completion_tokens");
        out->cached_tokens = llm_http_num(cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens_details"),
                                          "cached_tokens");
        /* OpenRouter's usage carries what the call cost. */
        const cJSON *cost = cJSON_GetObjectItemCaseSensitive(usage, "cost");
        if (cJSON_IsNumber(cost) && cost->valuedouble >= 0) {
            out->has_cost = 1;
            out->cost = cost->valuedouble;
        }
    }
    const cJSON *mo = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (cJSON_IsString(mo) && !(out->model = lc_strdup(mo->valuestring))) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    out->stop_reason = llm_http_stop(stop, ep->kind);
    out->text = sb_detach(&text);
    if (!out->text || !out->stop_reason) rc = lc_errf(err, LC_NOMEM, "out of memory");
done:
    sb_free(&text);
    cJSON_Delete(j);
    return rc;
}

int llm_http_complete(const llm_http_endpoint *ep, const char *model, const char *system,
                      const char *prompt, long max_tokens, summ_completion *out, char **err)
{
    int rc = LC_OK;
    memset(out, 0, sizeof *out);
    cJSON *req = cJSON_CreateObject();
    cJSON *msgs = NULL, *m = NULL;
    char *body = NULL, *url = NULL;
    struct curl_slist *hdr = NULL;
    sbuf resp = {0};
    if (!req) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    cJSON_AddStringToObject(req, "model", model);
    cJSON_AddNumberToObject(req, "max_tokens", (double)(max_tokens > 0 ? max_tokens : 1024));
    msgs = cJSON_AddArrayToObject(req, "messages");
    if (ep->kind == LLM_HTTP_ANTHROPIC) {
        if (system && *system) cJSON_AddStringToObject(req, "system", system);
    } else {
        cJSON_AddBoolToObject(req, "stream", 0);
        if (system && *system && (m = cJSON_CreateObject())) {
            cJSON_AddStringToObject(m, "role", "system");
            cJSON_AddStringToObject(m, "content", system);
            cJSON_AddItemToArray(msgs, m);
        }
    }
    if ((m = cJSON_CreateObject())) {
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", prompt);
        cJSON_AddItemToArray(msgs, m);
    }
    body = cJSON_PrintUnformatted(req);
    url = lc_asprintf("%s%s", ep->base_url,
                      ep->kind == LLM_HTTP_ANTHROPIC ? "/messages" : "/chat/completions");
    hdr = llm_http_headers(ep);
    if (!body || !url || !hdr || !m) {
        rc = lc_errf(err, LC_NOMEM, "out of memory");
        goto done;
    }
    if ((rc = llm_http_post(ep, url, hdr, body, &resp, err)) != LC_OK) goto done;
    rc = llm_http_parse(ep, resp.p ? resp.p : "", out, err);
done:
    if (rc != LC_OK) summ_completion_free(out);
    cJSON_Delete(req);
    curl_slist_free_all(hdr);
    free(body);
    free(url);
    sb_free(&resp);
    return rc;
}

int llm_http_summarizer(void *ud, const char *provider, const char *model,
                        const char *system_prompt, const char *prompt, long max_tokens,
                        summ_completion *out, char **err)
{
    const llm_http_routes *r = ud;
    const char *base = NULL;
    for (size_t i = 0; r && i < r->n_base_urls; i++)
        if (strcmp(r->base_urls[i].provider, provider) == 0) base = r->base_urls[i].url;
    llm_http_endpoint ep;
    int rc = llm_http_resolve(provider, base, &ep, err);
    if (rc != LC_OK) return rc;
    ep.timeout_seconds = r ? r->timeout_seconds : 0;
    return llm_http_complete(&ep, model, system_prompt, prompt, max_tokens, out, err);
}

int llm_http_post_json(const llm_http_endpoint *ep, const char *url, const char *body, sbuf *resp,
                       char **err)
{
    struct curl_slist *hdr = llm_http_headers(ep);
    if (!hdr) return lc_errf(err, LC_NOMEM, "out of memory");
    int rc = llm_http_post(ep, url, hdr, body, resp, err);
    curl_slist_free_all(hdr);
    return rc;
}
