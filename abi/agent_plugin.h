/*
 * agent_plugin.h -- the plugin ABI between an agent host and a plugin shared object.
 *
 * This header is the whole contract. A host implements `ap_host_api` and calls the one
 * symbol a plugin exports, `agent_plugin_init`; the plugin fills an `ap_plugin`
 * descriptor with its callbacks. Payloads cross as UTF-8 JSON text in the shapes that
 * abi/ABI.md documents (session entries, AgentMessages, tool results).
 *
 * Two version numbers:
 *   AP_ABI_VERSION  bumped only when an existing field, slot or meaning changes. Host
 *                   and plugin must agree exactly, or loading fails.
 *   AP_API_LEVEL    bumped when slots are appended to a table. A plugin may run on a
 *                   host of a lower level: a slot past the host's `struct_size`, or
 *                   NULL, is absent. Use AP_HOST_HAS(host, slot) before calling one.
 *
 * Ownership, in one rule per direction (details per function below and in ABI.md):
 *   - Inputs are borrowed for the duration of the call; copy what you keep.
 *   - A buffer the host returns (char **out) is released with host->free.
 *   - A buffer the plugin returns (char **out, ap_context_result *) is released by
 *     the host through plugin->release / plugin->release_context.
 *   - Error strings follow the buffer rule of whoever allocated them.
 *
 * Threading: the host calls every plugin callback, command and tool handler from one
 * thread (the "host thread"). A plugin worker thread may call only the slots marked
 * [any thread]: log, complete, complete_async, free.
 *
 * API levels: 1 = everything up to register_tool / session_tree. 2 appends the host slots
 * send_user_message and get_entries and the plugin callback agent_end. 3 appends the host
 * slot complete_async.
 */
#ifndef AGENT_PLUGIN_H
#define AGENT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AP_ABI_VERSION 1
#define AP_API_LEVEL 3

/* The layout a plugin is built against. A plugin that must also build with the level-1
 * layout (or a test that proves level-1 plugins still load) defines it as 1 before
 * including this header; the level-2 fields then do not exist at compile time. */
#ifndef AP_TARGET_API_LEVEL
#define AP_TARGET_API_LEVEL AP_API_LEVEL
#endif

/* The exported entry symbol's name, for dlsym. */
#define AP_ENTRY_SYMBOL "agent_plugin_init"

/* Status codes returned by every fallible function on either side. */
typedef enum ap_status {
    AP_OK = 0,
    AP_ERROR = 1,         /* generic failure; the error string says why */
    AP_NOMEM = 2,         /* allocation failed */
    AP_INVALID = 3,       /* bad argument or malformed JSON */
    AP_NOTFOUND = 4,      /* no such entry, command, tool */
    AP_UNSUPPORTED = 5,   /* the host (or plugin) does not offer this */
    AP_ABI_MISMATCH = 6,  /* versions disagree; the error names both */
    AP_BUSY = 7           /* try again later */
} ap_status;

typedef enum ap_level {
    AP_LEVEL_DEBUG = 0,
    AP_LEVEL_INFO = 1,
    AP_LEVEL_WARNING = 2,
    AP_LEVEL_ERROR = 3
} ap_level;

/* ---------------------------------------------------------------------------------
 * Handlers a plugin registers with the host.
 * ------------------------------------------------------------------------------- */

/* A slash command. `args` is the text after the command name (borrowed, never NULL,
 * possibly ""). On AP_OK *out_text is plugin-allocated text shown to the user (or
 * NULL for nothing), released with plugin->release. On failure *err may be set
 * (plugin-allocated, released with plugin->release). */
typedef int (*ap_command_fn)(void *userdata, const char *args, char **out_text, char **err);

/* A model-callable tool. `call_json` is {"toolCallId":"...","arguments":{...}}
 * (borrowed). On AP_OK *out_result_json is plugin-allocated JSON
 * {"content":[{"type":"text","text":"..."}], "details":{...}?, "isError":false?},
 * released with plugin->release. A failure status is reported to the model as an
 * error result carrying *err. */
typedef int (*ap_tool_fn)(void *userdata, const char *call_json, char **out_result_json,
                          char **err);

/* ---------------------------------------------------------------------------------
 * The host function table. Append-only: new slots go at the end and raise
 * AP_API_LEVEL. `host_ctx` is passed back as the first argument of every slot.
 * ------------------------------------------------------------------------------- */
typedef struct ap_host_api {
    uint32_t struct_size;   /* sizeof(ap_host_api) as the host was compiled */
    uint32_t abi_version;   /* AP_ABI_VERSION of the host */
    uint32_t api_level;     /* AP_API_LEVEL of the host */
    uint32_t reserved0;
    void *host_ctx;         /* opaque; first argument to every slot */
    const char *host_name;  /* e.g. "agent-host 0.1.0"; borrowed for the plugin's life */

    /* [any thread] Release a buffer the host returned. NULL is a no-op. */
    void (*free)(void *ptr);

    /* [any thread] Append a line to the host's log. `msg` borrowed. */
    void (*log)(void *host_ctx, int level, const char *msg);

    /* Show a message to the user (a toast, a status line, stderr). `msg` borrowed. */
    void (*notify)(void *host_ctx, int level, const char *msg);

    /* Session facts as JSON: {"id","sessionFile","cwd","agentHome","tmpDir"}.
     * *out_json host-allocated (host->free). */
    int (*session_info)(void *host_ctx, char **out_json, char **err);

    /* The active branch, root to leaf, as a JSON array of session entries (the session
     * header excluded). O(branch): meant for session_start and tree moves, not for
     * every request. *out_json host-allocated. */
    int (*get_branch)(void *host_ctx, char **out_json, char **err);

    /* One entry by id as JSON; AP_NOTFOUND when absent. *out_json host-allocated. */
    int (*get_entry)(void *host_ctx, const char *entry_id, char **out_json, char **err);

    /* Append {"type":"custom","customType":custom_type,"data":<data_json>} to the active
     * branch (the leaf moves to it). The entry is durable (written and flushed) before
     * AP_OK returns. *out_id host-allocated (may be NULL if the caller does not want it).
     * Custom entries never reach the model. */
    int (*append_custom)(void *host_ctx, const char *custom_type, const char *data_json,
                         char **out_id, char **err);

    /* The current model: {"provider","id","contextWindow","maxTokens"}. host-allocated. */
    int (*get_model)(void *host_ctx, char **out_json, char **err);

    /* [any thread] Run one completion with the session's model (or the model the
     * request names). request_json: {"systemPrompt"?,"messages":[AgentMessage...],
     * "maxTokens"?,"model"?,"timeoutMs"?}. *out_json: the assistant AgentMessage
     * (host-allocated). AP_UNSUPPORTED when the host has no model (e.g. replay). Blocking;
     * a host answers AP_ERROR once "timeoutMs" has passed, and aborts calls still in
     * flight when it shuts the session down. */
    int (*complete)(void *host_ctx, const char *request_json, char **out_json, char **err);

    /* Register a slash command `/name`. name/description are copied. The handler is
     * called on the host thread with `userdata`. AP_INVALID if the name is taken. */
    int (*register_command)(void *host_ctx, const char *name, const char *description,
                            ap_command_fn handler, void *userdata, char **err);

    /* Register a tool offered to the model beside the host's own. parameters_json is a
     * JSON Schema object. All strings copied. */
    int (*register_tool)(void *host_ctx, const char *name, const char *description,
                         const char *parameters_json, ap_tool_fn handler, void *userdata,
                         char **err);

#if AP_TARGET_API_LEVEL >= 2
    /* ---- API level 2 ---- */

    /* Queue `text` (borrowed, copied; non-empty UTF-8) as an ordinary user prompt. The host
     * delivers it once the agent is idle: right after the calling command or callback
     * returns when it is idle now, else after the running agent loop ends (after
     * agent_end). It starts a turn like a prompt the user typed (before_agent_start, the
     * model, tools, turn_end, agent_end). Host thread only. AP_BUSY when a message from this
     * plugin is already queued and not yet delivered; AP_UNSUPPORTED when the host cannot
     * run a prompt now (no model, e.g. replay). *err host-allocated. */
    int (*send_user_message)(void *host_ctx, const char *text, char **err);

    /* Every entry of the session -- all branches, in file order, the session header
     * excluded -- as a JSON array of entries shaped as get_branch returns them. O(session):
     * meant for session_start, not for every request. *out_json host-allocated. */
    int (*get_entries)(void *host_ctx, char **out_json, char **err);
#endif

#if AP_TARGET_API_LEVEL >= 3
    /* ---- API level 3 ---- */

    /* [any thread] Start one completion (request_json as for `complete`, borrowed) and
     * return at once. On AP_OK the host calls done(done_ud, status, out_json, err) exactly
     * once, later or before this returns, from any thread of its own (a host whose model
     * runs on an event loop calls it there): status AP_OK with out_json the assistant
     * AgentMessage, or a failure status with err saying why; both strings are borrowed for
     * the duration of `done`. On any other status `done` is never called and *err
     * (host-allocated) says why. Because `done` may need the host thread, a plugin never
     * holds the host thread waiting for one. A host calls no `done` after the plugin's
     * unload has begun: requests still pending then are dropped (the plugin owns
     * done_ud and frees it in unload). */
    int (*complete_async)(void *host_ctx, const char *request_json,
                          void (*done)(void *done_ud, int status, const char *out_json,
                                       const char *err),
                          void *done_ud, char **err);
#endif
} ap_host_api;

/* True when the host table has a usable `slot` (present in its layout and non-NULL). */
#define AP_HOST_HAS(host, slot)                                                     \
    ((host) != NULL &&                                                              \
     (host)->struct_size >= offsetof(ap_host_api, slot) + sizeof((host)->slot) &&  \
     (host)->slot != NULL)

/* ---------------------------------------------------------------------------------
 * The `context` event: the hot path. Messages cross as per-entry JSON texts that the
 * host serialized once; the result refers to unchanged inputs by index.
 * ------------------------------------------------------------------------------- */
typedef struct ap_message_in {
    const char *entry_id;  /* the session entry this message came from; NULL if none */
    const char *json;      /* one AgentMessage as JSON, NUL-terminated */
    size_t json_len;       /* strlen(json) */
} ap_message_in;

typedef struct ap_context_event {
    uint32_t struct_size;          /* sizeof(ap_context_event) as the host compiled it */
    uint32_t reserved0;
    size_t n_messages;
    const ap_message_in *messages; /* borrowed array of n_messages */
    const char *system_prompt;     /* the system prompt of this request; may be NULL */
} ap_context_event;

typedef struct ap_context_item {
    int64_t input_index;  /* >= 0: reuse event->messages[input_index] unchanged */
    char *json;           /* when input_index < 0: a new AgentMessage (plugin-owned) */
} ap_context_item;

typedef struct ap_context_result {
    size_t n_items;
    ap_context_item *items;  /* plugin-owned; released with plugin->release_context */
} ap_context_result;

/* A generic event: `event_json` borrowed. On AP_OK *out_json is either NULL ("no
 * change") or plugin-allocated JSON whose meaning the event defines (ABI.md),
 * released with plugin->release. *err on failure likewise. */
typedef int (*ap_event_fn)(void *state, const char *event_json, char **out_json,
                           char **err);

/* The context callback. On AP_OK *out is either NULL (send the input unchanged) or a
 * plugin-allocated result released with plugin->release_context. */
typedef int (*ap_context_fn)(void *state, const ap_context_event *event,
                             ap_context_result **out, char **err);

/* ---------------------------------------------------------------------------------
 * The plugin descriptor. The host zero-fills it and sets struct_size before calling
 * agent_plugin_init; the plugin sets abi_version/api_level and what it handles.
 * Append-only like the host table; a NULL callback means "not handled".
 * ------------------------------------------------------------------------------- */
typedef struct ap_plugin {
    uint32_t struct_size;   /* set by the host: sizeof(ap_plugin) as the host compiled */
    uint32_t abi_version;   /* set by the plugin */
    uint32_t api_level;     /* set by the plugin */
    uint32_t reserved0;
    const char *name;       /* static strings owned by the plugin */
    const char *version;
    void *state;            /* passed as the first argument of every callback */

    /* Release a buffer the plugin returned (text, JSON, error strings). */
    void (*release)(void *state, void *ptr);
    /* Release a context result. */
    void (*release_context)(void *state, ap_context_result *result);
    /* Called once before dlclose; the plugin frees `state`. No host call after it
     * returns may reach the plugin. */
    void (*unload)(void *state);

    /* Lifecycle events (ABI.md has each event's JSON and result). */
    ap_event_fn session_start;           /* {"reason":"startup|resume|fork|reload|new"} */
    ap_event_fn session_shutdown;        /* {} */
    ap_event_fn before_agent_start;      /* {"prompt","systemPrompt"} -> {"systemPrompt"} */
    ap_context_fn context;               /* messages in, messages out */
    ap_event_fn before_provider_request; /* {"payload"} -> {"payload"} */
    ap_event_fn turn_end;                /* {"turnIndex","message","toolResults"} */
    ap_event_fn tool_call;               /* {"toolCallId","toolName","input"} -> {"block","reason"} */
    ap_event_fn tool_result;             /* {..,"content","isError"} -> {"content","isError"} */
    ap_event_fn session_before_compact;  /* {"preparation","reason"} -> {"cancel"}|{"compaction"} */
    ap_event_fn session_compact;         /* {"compactionEntry","fromExtension"} */
    ap_event_fn session_tree;            /* {"newLeafId","oldLeafId"} */

#if AP_TARGET_API_LEVEL >= 2
    /* ---- API level 2: a host of level 1 never calls these (the slot is past its
     * struct_size or NULL); write them only when plugin->struct_size covers them. ---- */
    ap_event_fn agent_end;               /* {"status":"done|error|interrupted"}: the agent
                                          * loop of one prompt finished; the host is idle */
#endif
} ap_plugin;

/* True when the host's descriptor has room for `field` (a plugin checks before it writes a
 * callback of a level above 1). */
#define AP_PLUGIN_HAS_ROOM(plugin, field) \
    ((plugin) != NULL && (plugin)->struct_size >= offsetof(ap_plugin, field) + sizeof((plugin)->field))

/* The one exported symbol. Returns AP_OK and fills *plugin, or a failure status with a
 * sentence in errbuf (host-provided, errbuf_len bytes, always NUL-terminated by the
 * plugin). A plugin must refuse a host whose abi_version differs from its own with
 * AP_ABI_MISMATCH and a sentence naming both numbers. `host` stays valid until
 * plugin->unload returns. */
typedef int (*ap_init_fn)(const ap_host_api *host, ap_plugin *plugin, char *errbuf,
                          size_t errbuf_len);

#if defined(__GNUC__)
#define AP_EXPORT __attribute__((visibility("default")))
#else
#define AP_EXPORT
#endif

AP_EXPORT int agent_plugin_init(const ap_host_api *host, ap_plugin *plugin, char *errbuf,
                                size_t errbuf_len);

#ifdef __cplusplus
}
#endif

#endif /* AGENT_PLUGIN_H */
