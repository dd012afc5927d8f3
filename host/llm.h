/*
 * llm.h -- the reference host's model client: one OpenAI-compatible chat-completions
 * call over libcurl. Converts the context (AgentMessage JSON texts) and the offered
 * tools into the provider payload, and the provider's answer back into an assistant
 * AgentMessage with usage. llm_complete asks for one JSON answer ("stream": false);
 * llm_complete_stream asks for server-sent events, hands text deltas to a callback as they
 * arrive, assembles tool-call deltas, takes usage from the final chunk, and can be
 * cancelled mid-answer (a flag the transfer's progress callback checks).
 */
#ifndef HOST_LLM_H
#define HOST_LLM_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct llm_config {
    const char *base_url;   /* e.g. http://127.0.0.1:8080/v1 ; "/chat/completions" appended */
    const char *model;      /* model id sent as "model" */
    const char *api_key;    /* may be NULL: no Authorization header */
    long timeout_seconds;   /* whole-request timeout; 0 = 600 */
    long timeout_ms;        /* when > 0, the whole-request timeout in ms instead (a plugin's
                             * "timeoutMs"); its expiry says "timed out after N ms" */
    const atomic_int *abort_flag; /* may be NULL: polled during the transfer, non-zero
                             * aborts it with LLM_SHUTDOWN (the host shuts the session
                             * down while a worker's completion is in flight) */
} llm_config;

/* Build the provider payload (a cJSON object the caller owns): model, messages
 * (system prompt first; user/assistant/tool roles; custom, compactionSummary,
 * branchSummary and bashExecution messages become user-role text; thinking dropped;
 * images as image_url data URIs), tools (array of {name, description, parameters}
 * JSON, may be NULL), max_tokens when max_tokens > 0. */
cJSON *llm_build_payload(const llm_config *cfg, const char *system_prompt,
                         const char *const *message_jsons, size_t n_messages,
                         const cJSON *tools, long max_tokens);

/* The usage object of an assistant AgentMessage: {input, output, cacheRead, cacheWrite: 0,
 * totalTokens, cost: {input, output, cacheRead, cacheWrite, total: all 0}} (the caller owns
 * it). */
cJSON *llm_usage_json(double input, double output, double cache_read, double total);

/* POST a payload (JSON text, possibly replaced by a plugin's before_provider_request)
 * and convert the response into an assistant AgentMessage JSON text (malloc'd):
 * {"role":"assistant","content":[text / toolCall{id,name,arguments}],"api":
 * "openai-completions","provider":"openai-compatible","model":...,"usage":{input,
 * output,cacheRead,cacheWrite,totalTokens,cost{...}},"stopReason":"stop|toolUse|length|
 * error","timestamp":ms}. Returns 0 or non-zero with *err (malloc'd): HTTP status and
 * the provider's error message, or the curl error. */
int llm_complete(const llm_config *cfg, const char *payload_json, char **out_message_json,
                 char **err);

/* Streaming: on_delta (may be NULL) gets each piece of answer text as it arrives, kind
 * "text" or "thinking" (borrowed for the call). `cancel` (may be NULL) is polled during
 * the transfer: non-zero stops it. A cancelled answer that already produced text or
 * thinking is returned as an assistant message with stopReason "aborted" (its partial
 * text kept, unfinished tool calls dropped); cancelled before any, it is an error
 * (LLM_CANCELLED). */
typedef void (*llm_delta_fn)(void *ud, const char *kind, const char *text, size_t len);

typedef struct llm_stream {
    llm_delta_fn on_delta;
    void *ud;
    volatile sig_atomic_t *cancel;
} llm_stream;

#define LLM_CANCELLED 8
/* cfg->abort_flag was set: the call was abandoned ("the host is shutting down"). */
#define LLM_SHUTDOWN 9
/* cfg->timeout_ms passed before the answer was complete. */
#define LLM_TIMEDOUT 10

/* The same as llm_complete with "stream": true (and stream_options.include_usage) set in
 * the payload. stream == NULL is exactly llm_complete. */
int llm_complete_stream(const llm_config *cfg, const char *payload_json, const llm_stream *stream,
                        char **out_message_json, char **err);

/* The process's interactive stream (NULL when none was set): the agent loop streams its
 * own model requests through it, plugins' completion requests never do. */
void llm_set_default_stream(const llm_stream *stream);
const llm_stream *llm_default_stream(void);

#endif
