/*
 * llm.h -- the reference host's model client: one OpenAI-compatible chat-completions
 * call over libcurl. Converts the context (AgentMessage JSON texts) and the offered
 * tools into the provider payload, and the provider's answer back into an assistant
 * AgentMessage with usage. No streaming needed; "stream": false.
 */
#ifndef HOST_LLM_H
#define HOST_LLM_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct llm_config {
    const char *base_url;   /* e.g. http://127.0.0.1:8080/v1 ; "/chat/completions" appended */
    const char *model;      /* model id sent as "model" */
    const char *api_key;    /* may be NULL: no Authorization header */
    long timeout_seconds;   /* whole-request timeout; 0 = 600 */
} llm_config;

/* Build the provider payload (a cJSON object the caller owns): model, messages
 * (system prompt first; user/assistant/tool roles; custom, compactionSummary,
 * branchSummary and bashExecution messages become user-role text; thinking dropped;
 * images as image_url data URIs), tools (array of {name, description, parameters}
 * JSON, may be NULL), max_tokens when max_tokens > 0. */
cJSON *llm_build_payload(const llm_config *cfg, const char *system_prompt,
                         const char *const *message_jsons, size_t n_messages,
                         const cJSON *tools, long max_tokens);

/* POST a payload (JSON text, possibly replaced by a plugin's before_provider_request)
 * and convert the response into an assistant AgentMessage JSON text (malloc'd):
 * {"role":"assistant","content":[text / toolCall{id,name,arguments}],"api":
 * "openai-completions","provider":"openai-compatible","model":...,"usage":{input,
 * output,cacheRead,cacheWrite,totalTokens,cost{...}},"stopReason":"stop|toolUse|length|
 * error","timestamp":ms}. Returns 0 or non-zero with *err (malloc'd): HTTP status and
 * the provider's error message, or the curl error. */
int llm_complete(const llm_config *cfg, const char *payload_json, char **out_message_json,
                 char **err);

#endif
