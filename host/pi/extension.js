/*
 * extension.js -- the Pi bridge: a Pi coding-agent extension that is the host side of the
 * agent plugin ABI (abi/agent_plugin.h) for build/lossless-context.so.
 *
 * Owns: the koffi mirror of the ABI structs, the ap_host_api table it hands the plugin
 * (host functions mapped onto Pi's session manager -- getBranch, getEntry, getEntries --,
 * appendEntry, registerCommand, registerTool, sendUserMessage, ui.notify, the model and
 * Pi's model registry; API level 3), the completions it runs with Pi's own pi-ai (pending
 * complete_async requests, the worker behind the blocking complete), the per-entry JSON
 * cache that keeps the context event O(new), and the mapping of each Pi event to its
 * callback.
 *
 * Load it with `pi -e host/pi/extension.js` after `make`, or copy host/pi/ into Pi's
 * extensions folder. The .so is ../../build/lossless-context.so relative to this file unless
 * LOSSLESS_CONTEXT_SO names another. koffi comes from host/pi/node_modules (npm ci here),
 * NODE_PATH, or the copy Pi itself ships.
 */
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Worker, MessageChannel, receiveMessageOnPort } from "node:worker_threads";

const HERE = path.dirname(fileURLToPath(import.meta.url));

export const AP_ABI_VERSION = 1;
export const AP_API_LEVEL = 3;
const AP_OK = 0, AP_ERROR = 1, AP_INVALID = 3, AP_NOTFOUND = 4, AP_UNSUPPORTED = 5, AP_BUSY = 7;
const LEVELS = ["debug", "info", "warning", "error"];
const STATUS_NAMES = ["AP_OK", "AP_ERROR", "AP_NOMEM", "AP_INVALID", "AP_NOTFOUND",
    "AP_UNSUPPORTED", "AP_ABI_MISMATCH", "AP_BUSY"];
/* A completion whose request names no timeoutMs is abandoned after this, so a stuck
 * provider cannot hold a request forever. */
const COMPLETE_TIMEOUT_MS = 10 * 60 * 1000;

/* ---- koffi and the ABI types ------------------------------------------------------------ */

function piInstallFile() {
    try { return process.argv[1] ? fs.realpathSync(process.argv[1]) : null; } catch { return null; }
}

/* koffi is looked up next to this file (and NODE_PATH) first; a Pi install carries its own
 * copy under pi-tui, which serves when the user never ran npm ci in host/pi. */
export function loadKoffi() {
    const errors = [];
    const bases = [path.join(HERE, "extension.js")];
    const pi = piInstallFile();
    if (pi) {
        bases.push(pi);
        try { bases.push(createRequire(pi).resolve("@mariozechner/pi-tui")); } catch { /* not Pi */ }
    }
    for (const base of bases) {
        try { return createRequire(base)("koffi"); } catch (e) { errors.push(`${base}: ${e.message}`); }
    }
    throw new Error(`lossless-context: koffi not found (run npm ci in ${HERE}):\n${errors.join("\n")}`);
}

/* ---- pi-ai: Pi's model layer, an ES module ----------------------------------------------- */

const PI_AI = "@mariozechner/pi-ai";

/* The file a package's `import` condition names (the "." export, conditions nested or not). */
function importEntry(pkg) {
    if (pkg.exports === undefined) return pkg.module || pkg.main || "index.js";
    let e = pkg.exports;
    if (e && typeof e === "object" && !Array.isArray(e) && "." in e) e = e["."];
    while (e && typeof e === "object" && !Array.isArray(e)) e = e.import ?? e.node ?? e.default;
    return typeof e === "string" ? e : null;
}

/* pi-ai's package.json `exports` offers only an `import` condition, so createRequire cannot
 * resolve it (ERR_PACKAGE_PATH_NOT_EXPORTED), and import.meta.resolve resolves from this
 * file, which does not sit in Pi's install. So the package folder is looked up along Node's
 * lookup paths from Pi's own install first (the copy Pi runs with), then from here and
 * NODE_PATH, and its `import` entry is read from its package.json. */
export function piAiEntry() {
    return piPackageEntry(PI_AI);
}

/* The same lookup for any of Pi's ES-module packages (pi-tui for the panels). */
export function piPackageEntry(name) {
    const tried = [];
    const bases = [piInstallFile(), path.join(HERE, "extension.js")].filter(Boolean);
    for (const base of bases) {
        for (const dir of createRequire(base).resolve.paths(name) || []) {
            const pkgDir = path.join(dir, name);
            if (tried.includes(pkgDir)) continue;
            tried.push(pkgDir);
            let pkg;
            try { pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8")); } catch { continue; }
            const entry = importEntry(pkg);
            /* The real path: the URL Pi itself imported, so Node's module cache serves it. */
            if (entry) return fs.realpathSync(path.join(pkgDir, entry));
        }
    }
    throw new Error(`${name} not found (is this Pi?); looked in:\n${tried.join("\n")}`);
}

let piAiModule = null;

/* The module, imported once; a failed import is retried by the next call. */
export function loadPiAi() {
    if (!piAiModule) {
        piAiModule = import(pathToFileURL(piAiEntry()).href);
        piAiModule.catch(() => { piAiModule = null; });
    }
    return piAiModule;
}

/* pi-ai resolves rather than rejects when the provider fails: the message's stopReason
 * says so, and the failure must reach the plugin as one. */
function answerOf(message) {
    if (!message) return { error: "the provider gave no answer" };
    if (message.stopReason === "error" || message.stopReason === "aborted")
        return { error: message.errorMessage || `the provider's answer ended with stopReason "${message.stopReason}"` };
    return { message };
}

/* The ABI structs field by field, in header order. Every pointer is `void *` so that koffi
 * never converts (or copies) what it points to behind our back. */
const STRUCTS = {
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

function libcFor(koffi) {
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

function agentDirOf(env = process.env) {
    const d = env.PI_CODING_AGENT_DIR;
    if (d) return d === "~" ? os.homedir() : d.startsWith("~/") ? path.join(os.homedir(), d.slice(2)) : d;
    return path.join(os.homedir(), ".pi", "agent");
}

/* ---- the context cache: one JSON text per session entry, found by key --------------------- */

/* Pi hands `context` a structuredClone of its messages, so the event's objects are new on
 * every request. Session entries are not: the same entry object lives as long as the
 * session, so the serialized text is cached on it (WeakMap) and found again through a key
 * that the cloned message still carries (role, timestamp, toolCallId). */
function messageKey(m) {
    return `${m && m.role}|${m && m.timestamp}|${(m && m.toolCallId) || ""}`;
}

function entryKey(e) {
    switch (e.type) {
        case "message": return messageKey(e.message);
        case "custom_message": return `custom|${new Date(e.timestamp).getTime()}|`;
        case "branch_summary": return `branchSummary|${new Date(e.timestamp).getTime()}|`;
        case "compaction": return `compactionSummary|${new Date(e.timestamp).getTime()}|`;
        default: return null;
    }
}

export class BranchIndex {
    constructor(libc) {
        this.libc = libc;
        this.entries = [];          /* the active branch root -> leaf, as far as synced */
        this.pos = new Map();       /* entry id -> index in entries */
        this.byKey = new Map();     /* message key -> entries carrying it */
        this.texts = new WeakMap(); /* entry object -> {json, cJson, cId, len} */
        this.leaf = undefined;
        this.serializations = 0;    /* how many messages were serialized: tests watch O(new) */
    }

    /* Walks back from the leaf only until a known entry: O(new) as the session grows, O(moved)
     * after a tree move. */
    sync(sm) {
        const leaf = sm.getLeafId();
        if (leaf === this.leaf) return;
        const fresh = [];
        let id = leaf;
        while (id && !this.pos.has(id)) {
            const e = sm.getEntry(id);
            if (!e) break;
            fresh.push(e);
            id = e.parentId;
        }
        this.truncate(id && this.pos.has(id) ? this.pos.get(id) + 1 : 0);
        for (let i = fresh.length - 1; i >= 0; i--) this.push(fresh[i]);
        this.leaf = leaf;
    }

    push(e) {
        this.pos.set(e.id, this.entries.length);
        this.entries.push(e);
        const k = entryKey(e);
        if (k === null) return;
        const list = this.byKey.get(k);
        if (list) list.push(e); else this.byKey.set(k, [e]);
    }

    truncate(n) {
        while (this.entries.length > n) {
            const e = this.entries.pop();
            this.pos.delete(e.id);
            const k = entryKey(e);
            const list = k !== null ? this.byKey.get(k) : null;
            if (list) {
                const i = list.lastIndexOf(e);
                if (i >= 0) list.splice(i, 1);
                if (list.length === 0) this.byKey.delete(k);
            }
            this.dropText(e);
        }
    }

    dropText(e) {
        const t = this.texts.get(e);
        if (!t) return;
        this.libc.free(t.cJson);
        this.libc.free(t.cId);
        this.texts.delete(e);
    }

    /* The entry a cloned context message came from, or null. `used` keeps two messages with
     * the same key (same millisecond) on distinct entries. */
    match(m, used) {
        const list = this.byKey.get(messageKey(m));
        if (!list) return null;
        for (const e of list) if (!used.has(e)) { used.add(e); return e; }
        return null;
    }

    textOf(e, m) {
        let t = this.texts.get(e);
        if (!t) {
            const json = JSON.stringify(m);
            this.serializations++;
            t = { json, len: Buffer.byteLength(json), cJson: this.libc.strdup(json), cId: this.libc.strdup(e.id) };
            this.texts.set(e, t);
        }
        return t;
    }

    dispose() { this.truncate(0); this.leaf = undefined; }
}

/* ---- the bridge: one loaded plugin bound to one Pi extension runtime ---------------------- */

export class Bridge {
    /*
     * pi: Pi's ExtensionAPI (or a stand-in with the same methods, for tests).
     * opts: {soPath, agentDir, log(level, msg), koffi}
     */
    constructor(pi, opts = {}) {
        this.pi = pi;
        this.koffi = opts.koffi || loadKoffi();
        this.t = abiTypes(this.koffi);
        this.libc = libcFor(this.koffi);
        this.soPath = opts.soPath || process.env.LOSSLESS_CONTEXT_SO ||
            path.resolve(HERE, "..", "..", "build", "lossless-context.so");
        this.agentDir = opts.agentDir || agentDirOf();
        this.logSink = opts.log || null;
        this.ctx = null;            /* the latest ExtensionContext Pi gave us */
        this.alive = false;
        this.callbacks = [];        /* registered koffi callbacks, unregistered at unload */
        this.commands = new Map();
        this.tools = new Map();
        this.index = new BranchIndex(this.libc);
        this.auth = null;           /* {model, apiKey, headers} resolved ahead of a completion */
        this.completer = null;      /* the worker behind the blocking `complete` */
        this.pending = new Map();   /* complete_async id -> {done, doneUd, abort, timer, started} */
        this.asyncSeq = 0;
        this.stats = { events: {}, contextCalls: 0 };
        this.outbox = null;         /* the plugin's queued user message, until Pi takes it */
        this.ending = false;        /* inside agent_end: Pi still streams, but its loop is over */
    }

    /* -- small helpers -- */

    log(level, msg) {
        const line = `${new Date().toISOString()} [${LEVELS[level] || level}] ${msg}\n`;
        if (this.logSink) { this.logSink(level, msg); return; }
        const file = process.env.LOSSLESS_CONTEXT_LOG || path.join(this.agentDir, "lcm", "pi-bridge.log");
        try {
            fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
            fs.appendFileSync(file, line, { mode: 0o600 });
        } catch { /* logging must never break the agent */ }
    }

    notify(level, msg) {
        const ctx = this.ctx;
        const type = level >= 3 ? "error" : level === 2 ? "warning" : "info";
        if (ctx && ctx.hasUI && ctx.ui) ctx.ui.notify(msg, type);
        else process.stderr.write(`[${LEVELS[level] || "info"}] ${msg}\n`);
        this.log(level, `notify: ${msg}`);
    }

    hostString(ptrOut, text) {
        if (ptrOut) this.koffi.encode(ptrOut, "void *", this.libc.strdup(text));
    }

    /* Sets *err (host-allocated) and returns the status, the lc_errf pattern. */
    hostFail(errOut, status, msg) {
        this.hostString(errOut, msg);
        return status;
    }

    pluginString(ptr) {
        return ptr ? this.koffi.decode(ptr, "char", -1) : null;
    }

    release(ptr) {
        if (ptr && this.desc.release) this.koffi.call(this.desc.release, this.t.releaseFn, this.desc.state, ptr);
    }

    /* Takes a plugin-returned string and releases the buffer. */
    take(ptr) {
        const s = this.pluginString(ptr);
        this.release(ptr);
        return s;
    }

    register(fn, proto) {
        const cb = this.koffi.register(this, fn, this.koffi.pointer(proto));
        this.callbacks.push(cb);
        return cb;
    }

    sessionManager() {
        return this.ctx && this.ctx.sessionManager;
    }

    /* -- host functions: every one catches, because an exception cannot cross into C -- */

    guard(name, errOut, fn) {
        try {
            return fn();
        } catch (e) {
            this.log(3, `${name}: ${e && e.stack || e}`);
            return this.hostFail(errOut, AP_ERROR, `${name}: ${e && e.message || e}`);
        }
    }

    hSessionInfo(_ctx, out, err) {
        return this.guard("session_info", err, () => {
            const sm = this.sessionManager();
            const info = {
                id: sm ? sm.getSessionId() : "",
                sessionFile: (sm && sm.getSessionFile()) || "",
                cwd: (this.ctx && this.ctx.cwd) || (sm && sm.getCwd()) || process.cwd(),
                agentHome: this.agentDir,
                tmpDir: os.tmpdir(),
            };
            this.hostString(out, JSON.stringify(info));
            return AP_OK;
        });
    }

    hGetBranch(_ctx, out, err) {
        return this.guard("get_branch", err, () => {
            const sm = this.sessionManager();
            if (!sm) return this.hostFail(err, AP_UNSUPPORTED, "no session is open yet");
            this.hostString(out, JSON.stringify(sm.getBranch()));
            return AP_OK;
        });
    }

    hGetEntry(_ctx, id, out, err) {
        return this.guard("get_entry", err, () => {
            const sm = this.sessionManager();
            const e = sm && id ? sm.getEntry(id) : undefined;
            if (!e) return this.hostFail(err, AP_NOTFOUND, `no entry ${id}`);
            this.hostString(out, JSON.stringify(e));
            return AP_OK;
        });
    }

    hAppendCustom(_ctx, customType, dataJson, outId, err) {
        return this.guard("append_custom", err, () => {
            let data;
            try { data = JSON.parse(dataJson); } catch (e) {
                return this.hostFail(err, AP_INVALID, `append_custom: data is not JSON: ${e.message}`);
            }
            const sm = this.sessionManager();
            if (!sm) return this.hostFail(err, AP_UNSUPPORTED, "no session is open yet");
            this.pi.appendEntry(customType, data);
            const id = sm.getLeafId();
            /* Pi appends with appendFileSync; fsync makes it durable as the ABI promises. Pi
             * writes nothing before the first assistant message; the entry then lands with
             * the rest of the session when Pi first flushes. */
            const file = sm.getSessionFile && sm.getSessionFile();
            if (file && fs.existsSync(file)) {
                const fd = fs.openSync(file, "r");
                try { fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
            }
            if (outId && id) this.hostString(outId, id);
            return AP_OK;
        });
    }

    hGetEntries(_ctx, out, err) {
        return this.guard("get_entries", err, () => {
            const sm = this.sessionManager();
            if (!sm || !sm.getEntries) return this.hostFail(err, AP_UNSUPPORTED, "no session is open yet");
            this.hostString(out, JSON.stringify(sm.getEntries()));
            return AP_OK;
        });
    }

    /* send_user_message: queued here and handed to Pi once the calling command or callback
     * has returned. Pi takes it as a prompt when idle and as a follow-up while it streams;
     * inside agent_end Pi still counts as streaming but its loop is over (a follow-up would
     * wait for the next prompt), so then it waits for idle. */
    hSendUserMessage(_ctx, text, err) {
        return this.guard("send_user_message", err, () => {
            if (!text) return this.hostFail(err, AP_INVALID, "send_user_message: the text is empty");
            if (typeof this.pi.sendUserMessage !== "function")
                return this.hostFail(err, AP_UNSUPPORTED, "this Pi cannot send a user message for an extension");
            if (this.outbox !== null)
                return this.hostFail(err, AP_BUSY, "send_user_message: a message from this plugin is already waiting to be delivered");
            this.outbox = text;
            setImmediate(() => this.deliver());
            return AP_OK;
        });
    }

    deliver(waitedMs = 0) {
        const text = this.outbox;
        if (text === null || !this.alive) { this.outbox = null; return; }
        const ctx = this.ctx;
        const idle = !ctx || typeof ctx.isIdle !== "function" || ctx.isIdle();
        if (!idle && this.ending && waitedMs < COMPLETE_TIMEOUT_MS) {
            setTimeout(() => this.deliver(waitedMs + 20), 20);
            return;
        }
        this.outbox = null;
        try {
            if (idle) this.pi.sendUserMessage(text);
            else this.pi.sendUserMessage(text, { deliverAs: "followUp" });
            this.log(1, `delivered a user message for ${this.name} (${text.length} characters${idle ? "" : ", as a follow-up"})`);
        } catch (e) {
            this.failed("send_user_message", AP_ERROR, `Pi refused the message: ${e && e.message || e}`);
        }
    }

    /* Pi's agent_end carries the run's messages; the last assistant's stopReason tells a
     * run that failed ("error") or was stopped ("aborted") from one that finished. */
    static endStatus(event) {
        const msgs = event && Array.isArray(event.messages) ? event.messages : [];
        for (let i = msgs.length - 1; i >= 0; i--) {
            if (!msgs[i] || msgs[i].role !== "assistant") continue;
            if (msgs[i].stopReason === "error") return "error";
            if (msgs[i].stopReason === "aborted") return "interrupted";
            break;
        }
        return "done";
    }

    agentEnd(ctx, event) {
        this.ending = true;
        try { this.event("agent_end", { status: Bridge.endStatus(event) }, ctx); } finally { this.ending = false; }
    }

    hGetModel(_ctx, out, err) {
        return this.guard("get_model", err, () => {
            const m = this.ctx && this.ctx.model;
            if (!m) return this.hostFail(err, AP_UNSUPPORTED, "Pi has no model selected");
            this.hostString(out, JSON.stringify({ provider: m.provider, id: m.id,
                contextWindow: m.contextWindow, maxTokens: m.maxTokens }));
            return AP_OK;
        });
    }

    hLog(_ctx, level, msg) {
        try { this.log(level, msg || ""); } catch { /* never throw into C */ }
    }

    hNotify(_ctx, level, msg) {
        try { this.notify(level, msg || ""); } catch (e) { this.log(3, `notify: ${e}`); }
    }

    hRegisterCommand(_ctx, name, description, handler, userdata, err) {
        return this.guard("register_command", err, () => {
            if (!name || this.commands.has(name)) return this.hostFail(err, AP_INVALID, `command /${name} is taken`);
            this.commands.set(name, { handler, userdata });
            this.pi.registerCommand(name, {
                description: description || "",
                handler: async (args, ctx) => this.command(name, args || "", ctx),
            });
            return AP_OK;
        });
    }

    hRegisterTool(_ctx, name, description, paramsJson, handler, userdata, err) {
        return this.guard("register_tool", err, () => {
            let schema;
            try { schema = JSON.parse(paramsJson); } catch { schema = null; }
            if (!schema || typeof schema !== "object" || Array.isArray(schema))
                return this.hostFail(err, AP_INVALID, `tool ${name}: parameters are not a JSON object`);
            if (!name || this.tools.has(name)) return this.hostFail(err, AP_INVALID, `tool ${name} is taken`);
            this.tools.set(name, { handler, userdata });
            this.pi.registerTool({
                name, label: name, description: description || "", parameters: schema,
                execute: async (toolCallId, params, _signal, _onUpdate, ctx) =>
                    this.runTool(name, toolCallId, params, ctx),
            });
            return AP_OK;
        });
    }

    /* The request both completion slots take, checked against what Pi can serve: the
     * session's model with the credentials refreshAuth resolved. Returns {auth, req,
     * timeoutMs} or, with *err set, a status. */
    completionRequest(what, requestJson, err) {
        const auth = this.auth;
        if (!auth || !auth.model) return this.hostFail(err, AP_UNSUPPORTED, "no model with credentials is available to the bridge");
        let req;
        try { req = JSON.parse(requestJson); } catch (e) {
            return this.hostFail(err, AP_INVALID, `${what}: request is not JSON: ${e.message}`);
        }
        if (!req || typeof req !== "object" || Array.isArray(req))
            return this.hostFail(err, AP_INVALID, `${what}: request is not a JSON object`);
        if (req.model && req.model !== auth.model.id && req.model !== `${auth.model.provider}/${auth.model.id}`)
            return this.hostFail(err, AP_UNSUPPORTED, `${what}: only the session's model ${auth.model.provider}/${auth.model.id} is available, not ${req.model}`);
        const t = req.timeoutMs;
        if (t != null && !(typeof t === "number" && t > 0))
            return this.hostFail(err, AP_INVALID, `${what}: timeoutMs must be a positive number`);
        /* setTimeout's longest delay; past it Node fires at once. */
        return { auth, req, timeoutMs: Math.min(t ?? COMPLETE_TIMEOUT_MS, 2 ** 31 - 1) };
    }

    /* complete is blocking in the ABI (API level 2 plugins call it). A worker thread runs
     * Pi's own pi-ai completion while this thread waits on a shared flag, so the call
     * returns with the answer; Pi's event loop, and its UI, stand still meanwhile, which is
     * why level-3 plugins use complete_async. */
    hComplete(_ctx, requestJson, out, err) {
        return this.guard("complete", err, () => {
            const r = this.completionRequest("complete", requestJson, err);
            if (typeof r === "number") return r;
            const answer = this.completeSync(r);
            if (answer.error) {
                this.log(2, `complete failed: ${answer.error}`);
                return this.hostFail(err, AP_ERROR, answer.error);
            }
            this.hostString(out, JSON.stringify(answer.message));
            return AP_OK;
        });
    }

    completeSync({ auth, req, timeoutMs }) {
        if (!this.completer) {
            const { port1, port2 } = new MessageChannel();
            const flag = new Int32Array(new SharedArrayBuffer(4));
            const worker = new Worker(COMPLETE_WORKER, {
                eval: true, workerData: { port: port2, flag, piAi: pathToFileURL(piAiEntry()).href },
                transferList: [port2],
            });
            worker.unref();
            this.completer = { worker, port: port1, flag, seq: 0 };
        }
        const c = this.completer;
        const id = ++c.seq;
        Atomics.store(c.flag, 0, 0);
        c.port.postMessage({
            id, model: auth.model, apiKey: auth.apiKey, headers: auth.headers,
            context: { systemPrompt: req.systemPrompt, messages: req.messages || [] },
            maxTokens: req.maxTokens, timeoutMs,
        });
        const deadline = Date.now() + timeoutMs;
        for (;;) {
            /* The late answer of an earlier call that timed out here may come first: skipped. */
            for (let m; (m = receiveMessageOnPort(c.port));)
                if (m.message.id === id) return m.message.error ? { error: m.message.error } : answerOf(m.message.message);
            const left = deadline - Date.now();
            if (left <= 0) return { error: `complete: timed out after ${timeoutMs} ms` };
            Atomics.wait(c.flag, 0, 0, left);
            Atomics.store(c.flag, 0, 0);
        }
    }

    /* complete_async: the plugin's worker thread calls it, and koffi runs this handler on
     * Pi's main thread while that thread waits. So it only checks the request and starts
     * pi-ai's promise on the event loop; `done` is called here, on the main thread, once the
     * promise settles or timeoutMs has passed, whichever comes first, and never twice. */
    hCompleteAsync(_ctx, requestJson, done, doneUd, err) {
        return this.guard("complete_async", err, () => {
            if (!done) return this.hostFail(err, AP_INVALID, "complete_async: done is NULL");
            const r = this.completionRequest("complete_async", requestJson, err);
            if (typeof r === "number") return r;
            const id = ++this.asyncSeq;
            const abort = new AbortController();
            const timer = setTimeout(() => {
                abort.abort();
                this.settle(id, { error: `complete_async: timed out after ${r.timeoutMs} ms` });
            }, r.timeoutMs);
            this.pending.set(id, { done, doneUd, abort, timer, started: Date.now() });
            this.completeOnLoop(r, abort.signal).then((answer) => this.settle(id, answer));
            return AP_OK;
        });
    }

    async completeOnLoop({ auth, req }, signal) {
        try {
            const ai = await loadPiAi();
            return answerOf(await ai.completeSimple(auth.model,
                { systemPrompt: req.systemPrompt, messages: req.messages || [] },
                { apiKey: auth.apiKey, headers: auth.headers, maxTokens: req.maxTokens, signal }));
        } catch (e) {
            return { error: String(e && e.message || e) };
        }
    }

    /* Answers one pending complete_async; a request no longer pending (timed out already,
     * or dropped at unload) gets nothing. */
    settle(id, answer) {
        const p = this.pending.get(id);
        if (!p || !this.alive) return;
        this.pending.delete(id);
        clearTimeout(p.timer);
        const ms = Date.now() - p.started;
        if (answer.error) this.log(2, `complete_async failed after ${ms} ms: ${answer.error}`);
        else this.log(0, `complete_async answered in ${ms} ms`);
        try {
            this.koffi.call(p.done, this.t.doneFn, p.doneUd, answer.error ? AP_ERROR : AP_OK,
                answer.error ? null : JSON.stringify(answer.message), answer.error || null);
        } catch (e) {
            this.log(3, `complete_async: done: ${e && e.stack || e}`);
        }
    }

    /* The ABI forbids a `done` once unload has begun; the plugin frees their done_ud. */
    dropPending() {
        for (const p of this.pending.values()) {
            clearTimeout(p.timer);
            p.abort.abort();
        }
        if (this.pending.size) this.log(1, `dropped ${this.pending.size} pending complete_async request(s) at unload`);
        this.pending.clear();
    }

    async refreshAuth(ctx) {
        const m = ctx && ctx.model;
        if (!m || !ctx.modelRegistry) { this.auth = null; return; }
        if (this.auth && this.auth.model === m) return;
        try {
            const r = await ctx.modelRegistry.getApiKeyAndHeaders(m);
            this.auth = r && r.ok ? { model: m, apiKey: r.apiKey, headers: r.headers } : null;
            /* Imported now rather than inside the first completion: inside Pi it is already
             * loaded (the same file), elsewhere the first import evaluates pi-ai's modules on
             * the main thread, and a failure is said at session start. */
            if (this.auth) loadPiAi().catch((e) => this.log(2, `pi-ai cannot be imported, completions will fail: ${e.message}`));
        } catch (e) {
            this.auth = null;
            this.log(2, `no credentials for ${m.provider}/${m.id}: ${e.message}`);
        }
    }

    /* -- loading -- */

    load() {
        const k = this.koffi, t = this.t;
        this.lib = k.load(this.soPath);
        const init = this.lib.func("int agent_plugin_init(void *host, void *plugin, void *errbuf, size_t errbuf_len)");
        const cbs = {
            log: this.register(this.hLog, t.logFn),
            notify: this.register(this.hNotify, t.logFn),
            session_info: this.register(this.hSessionInfo, t.outFn),
            get_branch: this.register(this.hGetBranch, t.outFn),
            get_entry: this.register(this.hGetEntry, t.getEntryFn),
            append_custom: this.register(this.hAppendCustom, t.appendFn),
            get_model: this.register(this.hGetModel, t.outFn),
            complete: this.register(this.hComplete, t.completeFn),
            register_command: this.register(this.hRegisterCommand, t.regCommandFn),
            register_tool: this.register(this.hRegisterTool, t.regToolFn),
            send_user_message: this.register(this.hSendUserMessage, t.sendFn),
            get_entries: this.register(this.hGetEntries, t.outFn),
            complete_async: this.register(this.hCompleteAsync, t.completeAsyncFn),
        };
        /* The table and descriptor live in koffi-allocated memory: the plugin keeps the host
         * pointer until unload, so a call-scoped marshalled copy would not do. */
        this.hostName = this.libc.strdup(`pi-bridge 0.1.0 (pi ${process.env.npm_package_version || ""})`.trim());
        this.hostMem = k.alloc(t.host, 1);
        k.encode(this.hostMem, t.host, {
            struct_size: k.sizeof(t.host), abi_version: AP_ABI_VERSION, api_level: AP_API_LEVEL,
            reserved0: 0, host_ctx: null, host_name: this.hostName, free: this.libc.freePtr, ...cbs,
        });
        this.descMem = k.alloc(t.plugin, 1);
        const zero = {};
        for (const [f, type] of Object.entries(STRUCTS.ap_plugin)) zero[f] = type === "void *" ? null : 0;
        zero.struct_size = k.sizeof(t.plugin);
        k.encode(this.descMem, t.plugin, zero);
        const errbuf = Buffer.alloc(1024);
        const rc = init(this.hostMem, this.descMem, errbuf, errbuf.length);
        const desc = k.decode(this.descMem, t.plugin);
        if (rc !== AP_OK) {
            const msg = errbuf.toString("utf8", 0, Math.max(0, errbuf.indexOf(0)));
            this.dropCallbacks();
            throw new Error(`lossless-context (${this.soPath}) refused to load: ${STATUS_NAMES[rc] || rc}: ${msg}`);
        }
        if (desc.abi_version !== AP_ABI_VERSION || !desc.release) {
            this.dropCallbacks();
            throw new Error(`lossless-context (${this.soPath}) was built for ABI version ${desc.abi_version}; this bridge speaks ABI version ${AP_ABI_VERSION} (API level ${AP_API_LEVEL})`);
        }
        this.desc = desc;
        this.name = this.pluginString(desc.name) || "plugin";
        this.version = this.pluginString(desc.version) || "";
        this.alive = true;
        this.log(1, `loaded ${this.name} ${this.version} from ${this.soPath}`);
        return this;
    }

    dropCallbacks() {
        for (const cb of this.callbacks) this.koffi.unregister(cb);
        this.callbacks = [];
    }

    unload() {
        if (!this.alive) return;
        this.alive = false;
        this.dropPending();
        try {
            if (this.desc.unload) this.koffi.call(this.desc.unload, this.t.unloadFn, this.desc.state);
        } finally {
            this.index.dispose();
            this.dropCallbacks();
            if (this.completer) { this.completer.worker.terminate(); this.completer = null; }
            this.koffi.free(this.hostMem);
            this.koffi.free(this.descMem);
            this.libc.free(this.hostName);
            this.log(1, `unloaded ${this.name}`);
        }
    }

    /* -- calling the plugin -- */

    /* Calls an event callback with `payload` as JSON. Returns the parsed result, or
     * undefined for "no change" and on failure (logged and shown, never thrown: the ABI
     * says a failing plugin does not abort the turn). */
    event(name, payload, ctx) {
        if (ctx) this.ctx = ctx;
        this.stats.events[name] = (this.stats.events[name] || 0) + 1;
        const fn = this.alive ? this.desc[name] : null;
        if (!fn) return undefined;
        const out = [null], err = [null];
        let rc;
        try {
            rc = this.koffi.call(fn, this.t.eventFn, this.desc.state, JSON.stringify(payload ?? {}), out, err);
        } catch (e) {
            this.log(3, `${name}: ${e.stack || e}`);
            return undefined;
        }
        const text = this.take(out[0]);
        const errText = this.take(err[0]);
        if (rc !== AP_OK) {
            this.failed(name, rc, errText);
            return undefined;
        }
        if (text === null) return undefined;
        try { return JSON.parse(text); } catch (e) {
            this.failed(name, AP_INVALID, `the result is not JSON: ${e.message}`);
            return undefined;
        }
    }

    failed(what, rc, errText) {
        const msg = `${this.name || "plugin"}: ${what} failed (${STATUS_NAMES[rc] || rc})${errText ? `: ${errText}` : ""}`;
        this.log(3, msg);
        try { this.notify(2, msg); } catch { /* the UI may be gone at shutdown */ }
    }

    /* The hot path. Returns the new message array, or undefined to send Pi's unchanged. */
    context(messages, ctx) {
        if (ctx) this.ctx = ctx;
        this.stats.contextCalls++;
        if (!this.alive || !this.desc.context) return undefined;
        const k = this.koffi, t = this.t;
        const sm = this.sessionManager();
        if (sm) this.index.sync(sm);
        const used = new Set();
        const temps = [];
        const rows = messages.map((m) => {
            const e = sm ? this.index.match(m, used) : null;
            if (e) {
                const txt = this.index.textOf(e, m);
                return { entry_id: txt.cId, json: txt.cJson, json_len: txt.len };
            }
            /* Not (yet) a session entry, or rewritten by an earlier extension: serialized
             * for this call only. */
            const json = JSON.stringify(m);
            const c = this.libc.strdup(json);
            temps.push(c);
            return { entry_id: null, json: c, json_len: Buffer.byteLength(json) };
        });
        const n = rows.length;
        const arr = n ? k.alloc(t.messageIn, n) : null;
        if (n) k.encode(arr, k.array(t.messageIn, n), rows);
        let sys = null;
        try { sys = ctx && ctx.getSystemPrompt ? ctx.getSystemPrompt() : null; } catch { sys = null; }
        const cSys = sys ? this.libc.strdup(sys) : null;
        const ev = k.alloc(t.contextEvent, 1);
        k.encode(ev, t.contextEvent, { struct_size: k.sizeof(t.contextEvent), reserved0: 0,
            n_messages: n, messages: arr, system_prompt: cSys });
        const out = [null], err = [null];
        let rc;
        try {
            rc = k.call(this.desc.context, t.contextFn, this.desc.state, ev, out, err);
        } finally {
            k.free(ev);
            if (arr) k.free(arr);
            if (cSys) this.libc.free(cSys);
            for (const c of temps) this.libc.free(c);
        }
        const errText = this.take(err[0]);
        if (rc !== AP_OK) {
            if (out[0]) this.releaseContext(out[0]);
            this.failed("context", rc, errText);
            return undefined;
        }
        if (!out[0]) return undefined;
        let result;
        try {
            result = this.applyContext(out[0], messages);
        } finally {
            this.releaseContext(out[0]);
        }
        return result;
    }

    applyContext(resPtr, messages) {
        const k = this.koffi, t = this.t;
        const res = k.decode(resPtr, t.contextResult);
        const n = Number(res.n_items);
        const items = n ? k.decode(res.items, t.contextItem, n) : [];
        const next = [];
        for (let i = 0; i < items.length; i++) {
            const idx = Number(items[i].input_index);
            if (idx >= 0) {
                if (idx >= messages.length) return this.reject(`item ${i} refers to input ${idx} of ${messages.length}`);
                next.push(messages[idx]);
                continue;
            }
            const json = this.pluginString(items[i].json);
            if (json === null) return this.reject(`item ${i} is new but has no JSON`);
            let m;
            try { m = JSON.parse(json); } catch (e) { return this.reject(`item ${i} is not JSON: ${e.message}`); }
            if (!m || typeof m !== "object" || typeof m.role !== "string") return this.reject(`item ${i} is not an AgentMessage`);
            next.push(m);
        }
        return next;
    }

    reject(why) {
        this.failed("context", AP_INVALID, `result rejected, sending the input unchanged: ${why}`);
        return undefined;
    }

    releaseContext(ptr) {
        if (this.desc.release_context) this.koffi.call(this.desc.release_context, this.t.releaseFn, this.desc.state, ptr);
    }

    /* One call of a plugin command: {rc, text, errText}; shows nothing. */
    invoke(name, args) {
        const c = this.commands.get(name);
        if (!this.alive || !c) return { rc: AP_NOTFOUND, text: null, errText: `/${name}: the plugin is not loaded` };
        const out = [null], err = [null];
        const rc = this.koffi.call(c.handler, this.t.commandFn, c.userdata, args, out, err);
        return { rc, text: this.take(out[0]), errText: this.take(err[0]) };
    }

    /* A page command typed in Pi's interactive mode opens a panel over it (PanelModel);
     * anywhere else (RPC, print mode, a page the panel does not steer) it is the one-shot
     * command, its text a notification. */
    async command(name, args, ctx) {
        const model = this.alive && this.commands.has(name) ? PanelModel.open(name, args) : null;
        if (model && ctx && ctx.hasUI && ctx.ui && typeof ctx.ui.custom === "function") {
            this.ctx = ctx;
            let lib = null;
            try { lib = await loadPiTui(); } catch (e) { this.log(2, `panel: pi-tui not loadable, plain keys only: ${e.message}`); }
            let opened = false;
            await ctx.ui.custom((tui, theme, _keys, done) => {
                opened = true;
                return new PanelComponent(this, model, tui, theme, done, lib);
            }, { overlay: true, overlayOptions: { width: "100%", maxHeight: "100%", anchor: "top-left" } });
            /* RPC mode answers custom() without calling the factory. */
            if (opened) return { ok: true, panel: true };
        }
        return this.runCommand(name, args, ctx);
    }

    runCommand(name, args, ctx) {
        if (ctx) this.ctx = ctx;
        if (!this.alive || !this.commands.has(name)) { this.notify(2, `/${name}: the plugin is not loaded`); return undefined; }
        const { rc, text, errText } = this.invoke(name, args);
        if (rc !== AP_OK) {
            this.notify(3, `/${name}: ${errText || STATUS_NAMES[rc] || rc}`);
            return { ok: false, text: errText };
        }
        if (text) this.notify(1, text);
        return { ok: true, text };
    }

    runTool(name, toolCallId, params, ctx) {
        if (ctx) this.ctx = ctx;
        const tool = this.tools.get(name);
        if (!this.alive || !tool) throw new Error(`${name}: the plugin is not loaded`);
        const out = [null], err = [null];
        const rc = this.koffi.call(tool.handler, this.t.toolFn, tool.userdata,
            JSON.stringify({ toolCallId, arguments: params ?? {} }), out, err);
        const text = this.take(out[0]);
        const errText = this.take(err[0]);
        if (rc !== AP_OK) throw new Error(errText || `${name} failed (${STATUS_NAMES[rc] || rc})`);
        let r;
        try { r = JSON.parse(text); } catch { throw new Error(`${name}: the plugin's result is not JSON`); }
        const content = Array.isArray(r.content) ? r.content : [];
        /* Pi reports a tool error by the tool throwing. */
        if (r.isError) throw new Error(content.filter((b) => b.type === "text").map((b) => b.text).join("\n") || `${name} failed`);
        return { content, details: r.details ?? {} };
    }
}

/* The worker behind the blocking complete: Pi's pi-ai (an ES module, imported by URL) does
 * the provider call, abandoned at the request's timeout; the answer goes back through the
 * port, tagged with the request's id, and the flag wakes the waiting thread. */
const COMPLETE_WORKER = `
const { workerData } = require("node:worker_threads");
const { port, flag, piAi } = workerData;
port.on("message", async (req) => {
    let answer;
    try {
        const ai = await import(piAi);
        const message = await ai.completeSimple(req.model, req.context, { apiKey: req.apiKey,
            headers: req.headers, maxTokens: req.maxTokens, signal: AbortSignal.timeout(req.timeoutMs) });
        answer = { id: req.id, message };
    } catch (e) {
        answer = { id: req.id, error: String(e && e.message || e) };
    }
    port.postMessage(answer);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
});
`;

/* ---- panels: the /clm and /lcm pages steered with keys ----------------------------------
 *
 * The plugin keeps rendering: every key that changes what is shown becomes the page
 * arguments the plugin already takes (`/clm overview ZOOM at K`, `/clm edits N`, `/clm
 * config KEY VALUE`, `/lcm settings KEY VALUE`) and the panel redraws the text it answers.
 * What the panel reads back from a page is only where the selectable rows are (the events
 * under the chart, the accepted revisions, the settings rows). host/panel.c is the same
 * model for the reference host's terminal; keep the two in step. */

export const PANEL_ZOOMS = ["fit", "requests", "turns"];

/* The key id of one chunk of terminal input when Pi's own decoder is not at hand: the
 * legacy sequences a terminal (or tmux) sends for the keys the panel uses. */
export function panelKeyOf(data) {
    const named = { "\x1b": "escape", "\r": "enter", "\n": "enter", "\x7f": "backspace", "\b": "backspace",
        "\x1b[A": "up", "\x1b[B": "down", "\x1b[C": "right", "\x1b[D": "left", "\x1bOA": "up",
        "\x1bOB": "down", "\x1bOC": "right", "\x1bOD": "left", "\x1b[5~": "pageUp", "\x1b[6~": "pageDown",
        "\x1b[H": "home", "\x1b[F": "end", "\x03": "ctrl+c", " ": "space", "\t": "tab" };
    if (named[data]) return named[data];
    return data.length === 1 && data >= " " && data <= "~" ? data : undefined;
}

export class PanelModel {
    /* The panel for `/SUITE ARGS`, or null when that command is not a page a panel shows
     * (status, on/off, a settings change...: those stay one-shot commands). */
    static open(suite, args) {
        const w = String(args || "").trim().split(/\s+/).filter(Boolean);
        if (suite === "lcm") return w.length === 1 && w[0] === "settings" ? new PanelModel("lcm", "settings") : null;
        if (suite !== "clm" || !w.length) return null;
        if (w[0] === "settings" || (w[0] === "config" && w.length === 1)) return new PanelModel("clm", "settings");
        if (w[0] === "edits") {
            const m = new PanelModel("clm", "edits");
            if (/^\d+$/.test(w[1] || "")) { m.back = "edits"; m.view = "diff"; m.rev = Number(w[1]); }
            return m;
        }
        if (w[0] !== "overview") return null;
        const m = new PanelModel("clm", "overview");
        for (let i = 1; i < w.length; i++) {
            if (PANEL_ZOOMS.includes(w[i])) m.zoom = PANEL_ZOOMS.indexOf(w[i]);
            else if (w[i] === "at" && /^\d+$/.test(w[i + 1] || "")) m.at = Number(w[++i]);
            else if (w[i] !== "now") return null; /* the page itself says what is wrong */
        }
        return m;
    }

    constructor(suite, view) {
        this.suite = suite;
        this.view = view;       /* overview | edits | diff | settings */
        this.zoom = 0;          /* index into PANEL_ZOOMS */
        this.at = 0;            /* the selected event under the chart, 1-based; 0 = now */
        this.rev = 0;           /* the revision the diff view shows */
        this.back = null;       /* the view Esc returns to from the diff */
        this.sel = 0;           /* the selected row (edits, settings) */
        this.scroll = 0;
        this.edit = null;       /* {key, buf} while a setting's new value is typed */
        this.note = "";         /* the answer of the last change, shown in the footer */
        this.lines = [];
        this.events = [];       /* overview: {rev} per listed event (rev 0: not an edit) */
        this.rows = [];         /* edits: {line, rev}; settings: {line, key, value} */
    }

    /* The command the current view is: [name, args]. */
    request() {
        if (this.suite === "lcm") return ["lcm", "settings"];
        if (this.view === "overview")
            return ["clm", `overview ${PANEL_ZOOMS[this.zoom]}${this.at ? ` at ${this.at}` : ""}`];
        if (this.view === "diff") return ["clm", `edits ${this.rev}`];
        return ["clm", this.view];
    }

    /* Take the page the plugin answered for request(). */
    show(text) {
        this.lines = String(text ?? "").replace(/\n+$/, "").split("\n");
        this.events = [];
        this.rows = [];
        this.lines.forEach((l, i) => {
            let m;
            if (this.view === "overview" && (m = /^  [> ] (\d+)\. (.*)$/.exec(l))) {
                const r = /^revision (\d+) accepted/.exec(m[2]);
                this.events.push({ rev: r ? Number(r[1]) : 0 });
            } else if (this.view === "edits" && (m = /^revision (\d+) accepted/.exec(l))) {
                this.rows.push({ line: i, rev: Number(m[1]) });
            } else if (this.view === "settings" && (m = /^[ *]{1,3}([a-z][A-Za-z0-9]*) {2,}(\S+)/.exec(l))) {
                this.rows.push({ line: i, key: m[1], value: m[2] });
            }
        });
        if (this.view === "overview" && this.at > this.events.length) this.at = 0;
        if (this.sel >= this.rows.length) this.sel = Math.max(0, this.rows.length - 1);
    }

    /* The change one key makes: "close", "load" (ask the plugin for request() again),
     * "apply" (run this.change, then load), "draw", or null (nothing). `ch` is the
     * printable character the key types, if any. */
    key(k, ch) {
        if (this.edit) {
            if (k === "escape") { this.edit = null; return "draw"; }
            if (k === "enter") {
                const e = this.edit;
                this.edit = null;
                this.change = this.suite === "lcm" ? ["lcm", `settings ${e.key} ${e.buf}`] : ["clm", `config ${e.key} ${e.buf}`];
                return "apply";
            }
            if (k === "backspace") { this.edit.buf = this.edit.buf.slice(0, -1); return "draw"; }
            if (ch) { this.edit.buf += ch; return "draw"; }
            return null;
        }
        this.note = ""; /* the answer of a change shows until the next key */
        if (k === "q" || k === "ctrl+c") return "close";
        if (k === "escape") {
            if (this.view !== "diff") return "close";
            return this.go(this.back || "edits");
        }
        const page = 10;
        if (k === "pageUp") { this.scroll = Math.max(0, this.scroll - page); return "draw"; }
        if (k === "pageDown") { this.scroll += page; return "draw"; }
        if ((k === "up" || k === "down") && this.rows.length) {
            this.sel = Math.min(this.rows.length - 1, Math.max(0, this.sel + (k === "up" ? -1 : 1)));
            this.follow = true;
            return "draw";
        }
        if (k === "up" || k === "down") { this.scroll = Math.max(0, this.scroll + (k === "up" ? -1 : 1)); return "draw"; }
        if (this.suite === "clm" && !this.edit) {
            const views = { o: "overview", e: "edits", s: "settings" };
            if (views[k] && views[k] !== this.view) return this.go(views[k]);
        }
        if (this.view === "overview") {
            const n = this.events.length;
            if (k === "z") { this.zoom = (this.zoom + 1) % PANEL_ZOOMS.length; return "load"; }
            if (k === "left" && n) { this.at = this.at === 0 ? n : Math.max(1, this.at - 1); return "load"; }
            if (k === "right" && this.at) { this.at = this.at >= n ? 0 : this.at + 1; return "load"; }
            if (k === "enter") {
                const ev = this.at ? this.events[this.at - 1] : null;
                if (ev && ev.rev) { this.back = "overview"; this.view = "diff"; this.rev = ev.rev; this.scroll = 0; return "load"; }
                this.note = "Enter shows an accepted edit: select one with <- ->";
                return "draw";
            }
        }
        if (this.view === "edits" && k === "enter" && this.rows.length) {
            this.back = "edits"; this.view = "diff"; this.rev = this.rows[this.sel].rev; this.scroll = 0;
            return "load";
        }
        if (this.view === "settings" && k === "enter" && this.rows.length) {
            const r = this.rows[this.sel];
            this.edit = { key: r.key, buf: r.value === "unset" ? "" : r.value };
            return "draw";
        }
        return null;
    }

    go(view) {
        this.view = view;
        this.scroll = 0;
        this.sel = 0;
        return "load";
    }

    /* The panel's lines for a body of `height` rows: title, body, footer (not yet cut to a
     * width). The body scrolls; a selected row is kept in view and marked. */
    frame(height) {
        const h = Math.max(3, height);
        const row = this.rows.length ? this.rows[this.sel].line : -1;
        if (row >= 0 && this.follow) {
            if (row < this.scroll) this.scroll = row;
            if (row >= this.scroll + h) this.scroll = row - h + 1;
        }
        this.follow = false;
        this.scroll = Math.min(this.scroll, Math.max(0, this.lines.length - h));
        const [name, args] = this.request();
        const title = `/${name} ${args} -- lines ${this.scroll + 1}-${Math.min(this.lines.length, this.scroll + h)} of ${this.lines.length}`;
        const body = this.lines.slice(this.scroll, this.scroll + h).map((l, i) =>
            (this.scroll + i === row ? "> " : "  ") + l);
        const help = this.edit ? `${this.edit.key} = ${this.edit.buf}_   (Enter applies, Esc cancels)`
            : this.view === "overview" ? "z zoom  <- -> events  Enter diff of an edit  e edits  s settings  q close"
            : this.view === "edits" ? "up/down select  Enter side-by-side diff  o overview  s settings  q close"
            : this.view === "diff" ? "PgUp/PgDn scroll  Esc back  q close"
            : `up/down select  Enter change the value${this.suite === "clm" ? "  o overview  e edits" : ""}  q close`;
        return { title, body, footer: this.note ? [this.note, help] : [help] };
    }
}

let piTuiModule = null;

/* Pi's TUI helpers (key decoding with the keyboard protocol Pi negotiated, width-safe
 * truncation): the copy Pi runs with, so its protocol state is the one Pi set. */
function loadPiTui() {
    if (!piTuiModule) {
        piTuiModule = import(pathToFileURL(piPackageEntry("@mariozechner/pi-tui")).href);
        piTuiModule.catch(() => { piTuiModule = null; });
    }
    return piTuiModule;
}

/* The Pi component around a PanelModel: asks the bridge for pages, draws them in the
 * overlay, and turns keys into the model's changes. */
class PanelComponent {
    constructor(bridge, model, tui, theme, done, tuiLib) {
        this.bridge = bridge;
        this.model = model;
        this.tui = tui;
        this.theme = theme;
        this.done = done;
        this.lib = tuiLib;
        this.load();
    }

    load() {
        const [name, args] = this.model.request();
        const r = this.bridge.invoke(name, args);
        this.model.show(r.rc === AP_OK ? r.text : `/${name} ${args}: ${r.errText || STATUS_NAMES[r.rc] || r.rc}`);
    }

    handleInput(data) {
        const k = (this.lib && this.lib.parseKey(data)) || panelKeyOf(data);
        /* What the key types (a setting's value): the character itself, with its case. */
        let ch = data.length === 1 && data >= " " && data <= "~" ? data : undefined;
        if (!ch && this.lib && this.lib.decodePrintableKey) ch = this.lib.decodePrintableKey(data);
        const what = this.model.key(k, ch);
        if (what === "close") { this.done(undefined); return; }
        if (what === "apply") {
            const [name, args] = this.model.change;
            const r = this.bridge.invoke(name, args);
            this.model.note = String((r.rc === AP_OK ? r.text : r.errText) || "").split("\n")[0];
        }
        if (what === "apply" || what === "load") this.load();
        if (what) this.tui.requestRender();
    }

    render(width) {
        const rows = (this.tui && this.tui.terminal && this.tui.terminal.rows) || 24;
        const f = this.model.frame(rows - 6);
        const cut = (s) => this.lib ? this.lib.truncateToWidth(s, width) : s.slice(0, width);
        const paint = (color, s) => { try { return this.theme.fg(color, s); } catch { return s; } };
        const rule = "-".repeat(Math.max(0, width));
        return [paint("accent", cut(f.title)), paint("border", rule), ...f.body.map(cut),
            paint("border", rule), ...f.footer.map((l) => paint("dim", cut(l)))];
    }

    invalidate() { /* every render reads the model afresh */ }
}

/* ---- the Pi extension ------------------------------------------------------------------- */

function compactReason(event) {
    /* Pi's event does not say why it compacts; custom instructions only come with /compact. */
    return event.customInstructions !== undefined ? "manual" : "threshold";
}

export default function losslessContext(pi) {
    let bridge;
    try {
        bridge = new Bridge(pi).load();
    } catch (e) {
        /* A missing .so must not stop Pi; say why once, at session start. */
        pi.on("session_start", (_ev, ctx) => {
            const msg = `lossless-context is not active: ${e.message}`;
            if (ctx.hasUI) ctx.ui.notify(msg, "error"); else process.stderr.write(`[error] ${msg}\n`);
        });
        return;
    }
    pi.on("session_start", async (event, ctx) => {
        await bridge.refreshAuth(ctx);
        bridge.event("session_start", { reason: event.reason || "startup" }, ctx);
    });
    pi.on("model_select", async (_event, ctx) => { await bridge.refreshAuth(ctx); });
    pi.on("session_shutdown", (_event, ctx) => {
        bridge.event("session_shutdown", {}, ctx);
        bridge.unload();
    });
    pi.on("before_agent_start", async (event, ctx) => {
        await bridge.refreshAuth(ctx);
        const r = bridge.event("before_agent_start", { prompt: event.prompt, systemPrompt: event.systemPrompt }, ctx);
        return r && typeof r.systemPrompt === "string" ? { systemPrompt: r.systemPrompt } : undefined;
    });
    pi.on("context", (event, ctx) => {
        const messages = bridge.context(event.messages, ctx);
        return messages ? { messages } : undefined;
    });
    pi.on("before_provider_request", (event, ctx) => {
        const r = bridge.event("before_provider_request", { payload: event.payload }, ctx);
        return r && r.payload !== undefined ? r.payload : undefined;
    });
    pi.on("turn_end", (event, ctx) => {
        bridge.event("turn_end", { turnIndex: event.turnIndex, message: event.message, toolResults: event.toolResults || [] }, ctx);
    });
    pi.on("tool_call", (event, ctx) => {
        const r = bridge.event("tool_call", { toolCallId: event.toolCallId, toolName: event.toolName, input: event.input }, ctx);
        return r && r.block ? { block: true, reason: r.reason } : undefined;
    });
    pi.on("tool_result", (event, ctx) => {
        const r = bridge.event("tool_result", { toolCallId: event.toolCallId, toolName: event.toolName,
            input: event.input, content: event.content, details: event.details, isError: event.isError }, ctx);
        if (!r) return undefined;
        const patch = {};
        for (const f of ["content", "details", "isError"]) if (r[f] !== undefined) patch[f] = r[f];
        return patch;
    });
    pi.on("session_before_compact", (event, ctx) => {
        const r = bridge.event("session_before_compact", { reason: compactReason(event),
            preparation: event.preparation, branchEntries: event.branchEntries }, ctx);
        if (!r) return undefined;
        if (r.cancel) return { cancel: true };
        return r.compaction ? { compaction: r.compaction } : undefined;
    });
    pi.on("session_compact", (event, ctx) => {
        bridge.event("session_compact", { compactionEntry: event.compactionEntry, fromExtension: !!event.fromExtension }, ctx);
    });
    pi.on("session_tree", (event, ctx) => {
        bridge.event("session_tree", { newLeafId: event.newLeafId ?? null, oldLeafId: event.oldLeafId ?? null }, ctx);
    });
    pi.on("agent_end", (event, ctx) => { bridge.agentEnd(ctx, event); });
}
