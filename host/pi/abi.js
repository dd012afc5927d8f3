/*
 * abi.js -- the Pi bridge's mirror of the agent plugin ABI (abi/agent_plugin.h): the
 * status and level numbers, the structs field by field, the koffi types and prototypes
 * defined from them once per koffi instance, the layout the e2e test compares with the C
 * compiler's, and libc's allocator that host-allocated strings come from.
 */

export const AP_ABI_VERSION = 1;
export const AP_API_LEVEL = 3;
export const AP_OK = 0, AP_ERROR = 1, AP_INVALID = 3, AP_NOTFOUND = 4, AP_UNSUPPORTED = 5, AP_BUSY = 7;
export const LEVELS = ["debug", "info", "warning", "error"];
export const STATUS_NAMES = ["AP_OK", "AP_ERROR", "AP_NOMEM", "AP_INVALID", "AP_NOTFOUND",
    "AP_UNSUPPORTED", "AP_ABI_MISMATCH", "AP_BUSY"];

/* The ABI structs field by field, in header order. Every pointer is `void *` so that koffi
 * never converts (or copies) what it points to behind our back. */
export const STRUCTS = {
    ap_host_api: {
        struct_size: "uint32_t", abi_version: "uint32_t", api_level: "uint32_t",
        reserved0: "uint32_t", host_ctx: "void *", host_name: "void *",
        free: "void *", log: "void *", notify: "void *", session_info: "void *",
        get_branch: "void *", get_entry: "void *", append_custom: "void *",
        get_model: "void *", complete: "void *", register_command: "void *",
        register_tool: "void *",
        /* API level 2 */
        send_user_message: "void *", get_entries: "void *",
        /* API level 3 */
        complete_async: "void *",
    },
    ap_plugin: {
        struct_size: "uint32_t", abi_version: "uint32_t", api_level: "uint32_t",
        reserved0: "uint32_t", name: "void *", version: "void *", state: "void *",
        release: "void *", release_context: "void *", unload: "void *",
        session_start: "void *", session_shutdown: "void *", before_agent_start: "void *",
        context: "void *", before_provider_request: "void *", turn_end: "void *",
        tool_call: "void *", tool_result: "void *", session_before_compact: "void *",
        session_compact: "void *", session_tree: "void *",
        /* API level 2 */
        agent_end: "void *",
    },
    ap_message_in: { entry_id: "void *", json: "void *", json_len: "size_t" },
    ap_context_event: {
        struct_size: "uint32_t", reserved0: "uint32_t", n_messages: "size_t",
        messages: "void *", system_prompt: "void *",
    },
    ap_context_item: { input_index: "int64_t", json: "void *" },
    ap_context_result: { n_items: "size_t", items: "void *" },
};

const TYPE_CACHE = Symbol.for("lossless-context.pi-bridge.abi-types");

/* koffi type names are global to one koffi instance and a reload evaluates this module
 * again, so the types are defined once per koffi instance and kept on it. */
export function abiTypes(koffi) {
    if (koffi[TYPE_CACHE]) return koffi[TYPE_CACHE];
    const p = "lcpi_";
    const t = {
        host: koffi.struct(`${p}ap_host_api`, STRUCTS.ap_host_api),
        plugin: koffi.struct(`${p}ap_plugin`, STRUCTS.ap_plugin),
        messageIn: koffi.struct(`${p}ap_message_in`, STRUCTS.ap_message_in),
        contextEvent: koffi.struct(`${p}ap_context_event`, STRUCTS.ap_context_event),
        contextItem: koffi.struct(`${p}ap_context_item`, STRUCTS.ap_context_item),
        contextResult: koffi.struct(`${p}ap_context_result`, STRUCTS.ap_context_result),
        /* Host slots the plugin calls (we implement them as registered callbacks). Out
         * parameters arrive as raw pointers: we store host-allocated (malloc) strings there. */
        logFn: koffi.proto(`void ${p}log_fn(void *host_ctx, int level, const char *msg)`),
        outFn: koffi.proto(`int ${p}out_fn(void *host_ctx, void *out_json, void *err)`),
        getEntryFn: koffi.proto(`int ${p}get_entry_fn(void *host_ctx, const char *id, void *out_json, void *err)`),
        appendFn: koffi.proto(`int ${p}append_fn(void *host_ctx, const char *custom_type, const char *data_json, void *out_id, void *err)`),
        completeFn: koffi.proto(`int ${p}complete_fn(void *host_ctx, const char *request_json, void *out_json, void *err)`),
        completeAsyncFn: koffi.proto(`int ${p}complete_async_fn(void *host_ctx, const char *request_json, void *done, void *done_ud, void *err)`),
        regCommandFn: koffi.proto(`int ${p}reg_command_fn(void *host_ctx, const char *name, const char *description, void *handler, void *userdata, void *err)`),
        sendFn: koffi.proto(`int ${p}send_fn(void *host_ctx, const char *text, void *err)`),
        regToolFn: koffi.proto(`int ${p}reg_tool_fn(void *host_ctx, const char *name, const char *description, const char *parameters_json, void *handler, void *userdata, void *err)`),
        /* Plugin functions we call. */
        commandFn: koffi.proto(`int ${p}command_fn(void *userdata, const char *args, _Out_ void **out_text, _Out_ void **err)`),
        toolFn: koffi.proto(`int ${p}tool_fn(void *userdata, const char *call_json, _Out_ void **out_json, _Out_ void **err)`),
        eventFn: koffi.proto(`int ${p}event_fn(void *state, const char *event_json, _Out_ void **out_json, _Out_ void **err)`),
        contextFn: koffi.proto(`int ${p}context_fn(void *state, void *event, _Out_ void **out, _Out_ void **err)`),
        releaseFn: koffi.proto(`void ${p}release_fn(void *state, void *ptr)`),
        doneFn: koffi.proto(`void ${p}done_fn(void *done_ud, int status, const char *out_json, const char *err)`),
        unloadFn: koffi.proto(`void ${p}unload_fn(void *state)`),
    };
    koffi[TYPE_CACHE] = t;
    return t;
}

/* Sizes and offsets as koffi lays the structs out; tests/e2e compares them with the C
 * compiler's sizeof/offsetof so a header change cannot silently skew the JS mirror. */
export function abiLayout(koffi) {
    const t = abiTypes(koffi);
    const out = {};
    const names = { ap_host_api: t.host, ap_plugin: t.plugin, ap_message_in: t.messageIn,
        ap_context_event: t.contextEvent, ap_context_item: t.contextItem,
        ap_context_result: t.contextResult };
    for (const [name, type] of Object.entries(names)) {
        const fields = {};
        for (const f of Object.keys(STRUCTS[name])) fields[f] = koffi.offsetof(type, f);
        out[name] = { size: koffi.sizeof(type), offsets: fields };
    }
    return out;
}

/* ---- libc: host-allocated buffers -------------------------------------------------------- */

export function libcFor(koffi) {
    const lib = koffi.load("libc.so.6");
    const dlsym = lib.func("void *dlsym(void *handle, const char *name)");
    return {
        strdup: lib.func("void *strdup(const char *s)"),
        free: lib.func("void free(void *ptr)"),
        /* host->free is libc's free itself, not a JS callback: the ABI lets any thread call
         * it, and a JS callback from a plugin worker would have to wait for Pi's main thread. */
        freePtr: dlsym(null, "free"),
    };
}
