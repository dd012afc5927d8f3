/*
 * message.h -- the session-message model: AgentMessage JSON (roles user / assistant /
 * toolResult / custom / compactionSummary / branchSummary / bashExecution; blocks text /
 * thinking / image / toolCall), the text the engine derives from it, and the token
 * estimate. Pure functions over cJSON; owns nothing beyond what it returns.
 */
#ifndef LC_MESSAGE_H
#define LC_MESSAGE_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef enum msg_role {
    MSG_ROLE_UNKNOWN = 0,
    MSG_ROLE_USER,
    MSG_ROLE_ASSISTANT,
    MSG_ROLE_TOOL_RESULT,
    MSG_ROLE_CUSTOM,
    MSG_ROLE_COMPACTION_SUMMARY,
    MSG_ROLE_BRANCH_SUMMARY,
    MSG_ROLE_BASH_EXECUTION
} msg_role;

msg_role msg_role_of(const cJSON *message);
/* The wire name of a role ("user", "toolResult", ...); "unknown" for MSG_ROLE_UNKNOWN. */
const char *msg_role_name(msg_role role);
msg_role msg_role_parse(const char *name);

/* The searchable/readable text of a message, malloc'd (never NULL unless OOM):
 * user/custom: string content or the concatenated text blocks; assistant: text blocks,
 * then one line per tool call "[toolCall NAME] {arguments}"; toolResult: text blocks;
 * summaries: the summary; bashExecution: "$ command\noutput". Images become
 * "[image MIME]" and thinking blocks are left out of the text.
 * *complete (if not NULL) is set to 1 when the message can be rebuilt from the text
 * alone (no thinking, images, signatures or unknown blocks/fields that matter), 0 when
 * the original blocks must be kept beside it. */
char *msg_derive_text(const cJSON *message, int *complete);

/* The words a person reads in a message, for the full-text index. *body: the derived text
 * with each tool call as "[toolCall NAME]" and its arguments as "key: value" lines, the
 * values decoded (the derived text's JSON escapes glue "\n" to the word after it);
 * NULL when the message has no tool call (its derived text is the body). *thinking: its
 * thinking blocks' text, one after the other; NULL when it has none. Both malloc'd.
 * LC_OK, or LC_NOMEM with both NULL. */
int msg_index_text(const cJSON *message, char **body, char **thinking);
/* All a stored row derives, in one walk: the derived text (returned, malloc'd; NULL on
 * OOM, with *body and *thinking NULL), *complete as msg_derive_text sets it, *tokens (when
 * not NULL) msg_estimate_tokens's figure, and *body and *thinking as msg_index_text's. */
char *msg_derive_all(const cJSON *message, int *complete, size_t *tokens, char **body, char **thinking);

/* Whether a user message's derived text is what a person typed: not a harness tag such as
 * <command-name> or <system-reminder>, not a "Caveat:" note, not Claude Code's compaction
 * summary (stored as a user message). */
int msg_typed_by_person(const char *text);

/* Provider-independent token estimate: ceil(chars / 4) over the text, thinking and
 * tool-call arguments, plus a fixed 1,200 per image (the reference host's estimator). */
size_t msg_estimate_tokens(const cJSON *message);
/* Estimate straight from a JSON text (parses it). 0 on malformed input. */
size_t msg_estimate_tokens_json(const char *json);

/* For toolResult messages: toolCallId / toolName (borrowed from the message); NULL
 * otherwise. For assistant messages, msg_tool_calls counts toolCall blocks. */
const char *msg_tool_call_id(const cJSON *message);
const char *msg_tool_name(const cJSON *message);
int msg_tool_call_count(const cJSON *message);

/* Assistant usage.totalTokens (or input+output+cacheRead+cacheWrite), 0 when absent. */
long msg_usage_total(const cJSON *message);

/* A branch's model-visible messages, counted once (a resumed session's status before any
 * request has run). */
typedef struct msg_branch_count {
    size_t messages;
    size_t tokens;
    size_t occupancy; /* last provider-reported request + estimates after it */
} msg_branch_count;
void msg_count_branch(const cJSON *branch, msg_branch_count *out);

/* The shapes built everywhere a message or a tool result is made, in their one key order:
 * a text block {"type":"text","text":text} appended to the array `content` (returned;
 * NULL on OOM); a message {"role","content":[that block],"timestamp"}; a tool result
 * {"content":[that block],"details"?,"isError"}, which takes `details` (may be NULL). */
cJSON *msg_add_text(cJSON *content, const char *text);
/* Put `item` (owned) under `key`: in place of the member of that name (its position
 * kept, the old one freed), else at the end. 0 when out of memory, the item then freed. */
int msg_set_member(cJSON *obj, const char *key, cJSON *item);
cJSON *msg_text_message(const char *role, const char *text, double timestamp);
cJSON *msg_tool_result(const char *text, cJSON *details, int is_error);

#endif
