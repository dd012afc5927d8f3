/*
 * llm_http.h -- the summarizer's own model clients over libcurl: OpenAI-compatible chat
 * completions and the Anthropic Messages API, for `provider/id` entries of the summarizer
 * chain. Owns provider routing (built-in base URLs, configured overrides, API keys from
 * environment variables) and the request/response mapping to summ_completion.
 * Safe from any thread (one curl easy handle per call; global init once).
 */
#ifndef LC_LLM_HTTP_H
#define LC_LLM_HTTP_H

#include <stddef.h>

#include "config.h"
#include "summarize.h"

typedef enum llm_http_kind { LLM_HTTP_OPENAI = 1, LLM_HTTP_ANTHROPIC = 2 } llm_http_kind;

typedef struct llm_http_endpoint {
    llm_http_kind kind;
    char base_url[512];    /* ends before "/chat/completions" or "/messages", e.g. .../v1 */
    char key_env[96];      /* the environment variable holding the key */
    long timeout_seconds;  /* whole request; 0 = 120 */
} llm_http_endpoint;

/* Route a provider. Built in: "openai" (https://api.openai.com/v1, OPENAI_API_KEY),
 * "anthropic" (https://api.anthropic.com/v1, ANTHROPIC_API_KEY, Messages API),
 * "openrouter" (https://openrouter.ai/api/v1, OPENROUTER_API_KEY). Any other provider is
 * OpenAI-compatible and needs a base URL; its key is <PROVIDER>_API_KEY (upper case,
 * other characters as '_'). base_url (may be NULL) overrides the built-in one.
 * LC_NOTFOUND: unknown provider with no base URL, or a built-in URL with no key set
 * (a configured URL may run keyless, e.g. a local server). */
int llm_http_resolve(const char *provider, const char *base_url, llm_http_endpoint *out,
                     char **err);

/* One completion: system + one user message, max_tokens, no streaming. Fills *out
 * (text, stop_reason "stop" / "length" / "error" / the provider's own, billed tokens).
 * Non-2xx -> LC_ERR with "HTTP <status>: <provider message>"; transport -> curl's text. */
int llm_http_complete(const llm_http_endpoint *ep, const char *model, const char *system,
                      const char *prompt, long max_tokens, summ_completion *out, char **err);

/* POST a JSON body to `url` with the endpoint's headers (its key as a bearer token when
 * the variable is set) and timeout; *resp receives the body (the caller frees it with
 * sb_free). Non-2xx -> LC_ERR "HTTP <status>: <provider message>". For the other clients
 * of an OpenAI-compatible server (embed.h). */
struct sbuf;
int llm_http_post_json(const llm_http_endpoint *ep, const char *url, const char *body,
                       struct sbuf *resp, char **err);

/* Routing table handed to llm_http_summarizer as its `ud`. */
typedef struct llm_http_routes {
    const lcm_base_url *base_urls;  /* e.g. lcm_config.base_urls (borrowed) */
    size_t n_base_urls;
    long timeout_seconds;           /* 0 = 120 */
} llm_http_routes;

/* A summ_model_fn: resolve `provider` through the routes (ud: const llm_http_routes *),
 * then llm_http_complete. */
int llm_http_summarizer(void *ud, const char *provider, const char *model,
                        const char *system_prompt, const char *prompt, long max_tokens,
                        summ_completion *out, char **err);

#endif
