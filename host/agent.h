/*
 * agent.h -- the lifecycle the reference host drives, as an agent does: firing plugin
 * events (chained across plugins, traced to --trace), the context request on the hot
 * path, tool calls with tool_call/tool_result, turn_end, threshold and manual
 * compaction, tree moves, slash commands, and the live prompt loop against a model.
 * The replay (replay.c) drives the same functions from a recorded session.
 */
#ifndef HOST_AGENT_H
#define HOST_AGENT_H

#include <cjson/cJSON.h>

#include "hostapi.h"

typedef struct agent {
    host *h;
    char *system_prompt;  /* the base system prompt of every request */
    char *run_prompt;     /* this prompt's system prompt when a plugin replaced it */
    const char *overflow_error; /* during an overflow compaction: the provider's error text */
    long turn_index;
    long requests;        /* context events fired */
    long tree_moves;
    long compactions;
    long custom_added;    /* entries appended by plugins (counted by the replay) */
    /* New messages plugins returned lately, measured once: a summary pointer comes back
     * byte for byte request after request, and parsing it each time is O(block). */
    struct agent_memo { char *json; size_t len, tokens; } memo[4];
    unsigned memo_next;
} agent;

/* The context a request sends after every plugin's `context` ran. */
typedef struct agent_context {
    const ap_message_in *msgs;
    size_t n;
    /* internal: arrays built when a plugin changed the context, results to release */
    ap_message_in *bufs[2];
    size_t *tok_bufs[2];      /* tokens of each message of bufs[k], carried from the inputs */
    size_t cap[2];
    struct agent_held { host_plugin *p; ap_context_result *r; } *held;
    size_t n_held;
} agent_context;

void agent_init(agent *a, host *h);
void agent_destroy(agent *a);

/* Fire a notification-or-chain event to every plugin that handles it. `event` is
 * borrowed; *result (optional) receives the merged result as the event defines it
 * (ABI.md), caller-owned, NULL when no plugin answered. */
int agent_fire(agent *a, const char *name, const cJSON *event, cJSON **result);

/* before_agent_start {prompt, systemPrompt}; a replaced system prompt holds for the
 * requests of this prompt (a->run_prompt). */
void agent_before_agent_start(agent *a, const char *prompt);

/* agent_end {status: done|error|interrupted} (API level 2; not fired when the host
 * plays a level-1 host). agent_prompt fires it when its loop ends; the replay fires it
 * when a recorded prompt's turns are over. */
void agent_agent_end(agent *a, const char *status);

/* session_start {reason} and session_shutdown {}. */
void agent_session_start(agent *a, const char *reason);
void agent_session_shutdown(agent *a);

/* Run `context` through every plugin over the session's context. */
int agent_context_build(agent *a, agent_context *out, char **err);
void agent_context_release(agent *a, agent_context *c);

/* One request's worth of hooks without a model (replay): context, then
 * before_provider_request with a payload that describes the request. */
int agent_request_hooks(agent *a, char **err);

/* tool_call for one toolCall block. *blocked_reason (malloc'd) is set when a plugin
 * blocked it. */
int agent_tool_call_event(agent *a, const cJSON *call, char **blocked_reason);
/* tool_result: applies plugin patches to `result` ({content, details, isError}). */
void agent_tool_result_event(agent *a, const cJSON *call, cJSON *result);
/* Run a tool (built-in or plugin) for a toolCall block; the result object is caller-owned. */
cJSON *agent_run_tool(agent *a, const cJSON *call);
/* turn_end {turnIndex, message, toolResults} (borrowed). */
void agent_turn_end(agent *a, const cJSON *assistant, const cJSON *tool_results);

/* Compaction. reason "threshold" compacts only above window - reserve; "manual" and
 * "overflow" always try. *did is set to 1 when a compaction entry was appended. */
int agent_compact(agent *a, const char *reason, const char *instructions, int *did, char **err);

/* Move the leaf (NULL = before the first entry) and fire session_tree. */
int agent_move_leaf(agent *a, const char *id, char **err);

/* Run "/name args" (plugin or host command). *out_text malloc'd (may be NULL). */
int agent_command(agent *a, const char *line, char **out_text, char **err);

/* Call a tool as the model would, recorded as an assistant toolCall + toolResult. */
int agent_call_tool(agent *a, const char *name, const char *args_json, char **out_text,
                    char **err);

/* One user prompt against the model, running tool calls until the model stops.
 * *final_text is the last assistant text (malloc'd). */
int agent_prompt(agent *a, const char *prompt, char **final_text, char **err);

#endif
