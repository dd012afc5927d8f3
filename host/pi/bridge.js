/*
 * bridge.js -- the Bridge: one loaded build/lossless-context.so bound to one Pi extension
 * runtime. Owns loading and unloading the plugin, the ap_host_api table it hands the
 * plugin (host functions mapped onto Pi's session manager -- getBranch, getEntry,
 * getEntries --, appendEntry, registerCommand, registerTool, sendUserMessage, ui.notify,
 * the model and Pi's model registry; API level 3), the pending complete_async requests and
 * the credentials completions use, and calling the plugin: events, the context hook (with
 * BranchIndex keeping it O(new)), commands (as panels where Pi has a UI) and tools.
 */
import { fileURLToPath } from "node:url";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AP_ABI_VERSION, AP_API_LEVEL, AP_OK, AP_ERROR, AP_INVALID, AP_NOTFOUND, AP_UNSUPPORTED, AP_BUSY,
    LEVELS, STATUS_NAMES, STRUCTS, abiTypes, libcFor } from "./abi.js";
import { loadKoffi, loadPiAiLayer, loadPiTui, piDescription } from "./pi_packages.js";
import { BranchIndex } from "./branch_index.js";
import { COMPLETE_TIMEOUT_MS, BlockingCompleter, completeOnLoop } from "./completions.js";
import { PanelModel, PanelComponent } from "./panel.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));

function agentDirOf(env = process.env) {
    const d = env.PI_CODING_AGENT_DIR;
    if (d) return d === "~" ? os.homedir() : d.startsWith("~/") ? path.join(os.homedir(), d.slice(2)) : d;
    return path.join(os.homedir(), ".pi", "agent");
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
        this.authError = "Pi has not selected a model yet";  /* why auth is null */
        this.layerError = null;     /* why Pi's model layer (pi-ai) cannot be imported */
        this.layerSaid = false;     /* the layer in use was logged */
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
        /* Unsupported (the plugin's "no session model"), with the reason, so that the
         * summarizer's fallback names it in /lcm status. */
        if (!auth || !auth.model)
            return this.hostFail(err, AP_UNSUPPORTED, `Pi's model cannot be reached: ${this.authError}`);
        if (this.layerError)
            return this.hostFail(err, AP_UNSUPPORTED, `Pi's model cannot be reached: ${this.layerError}`);
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
                this.log(answer.unreachable ? 3 : 2, `complete failed: ${answer.error}`);
                return this.hostFail(err, answer.unreachable ? AP_UNSUPPORTED : AP_ERROR, answer.error);
            }
            this.hostString(out, JSON.stringify(answer.message));
            return AP_OK;
        });
    }

    completeSync(r) {
        if (!this.completer) {
            try { this.completer = new BlockingCompleter(); } catch (e) {
                return { error: `Pi's model cannot be reached: ${e && e.message || e}`, unreachable: true };
            }
        }
        return this.completer.complete(r);
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
            completeOnLoop(r, abort.signal).then((answer) => this.settle(id, answer));
            return AP_OK;
        });
    }

    /* Answers one pending complete_async; a request no longer pending (timed out already,
     * or dropped at unload) gets nothing. */
    settle(id, answer) {
        const p = this.pending.get(id);
        if (!p || !this.alive) return;
        this.pending.delete(id);
        clearTimeout(p.timer);
        const ms = Date.now() - p.started;
        if (answer.error) this.log(answer.unreachable ? 3 : 2, `complete_async failed after ${ms} ms: ${answer.error}`);
        else this.log(0, `complete_async answered in ${ms} ms`);
        /* A model that could not be reached at all is "unsupported" (no session model), not
         * a failed call: the plugin then says so in /lcm status. */
        const status = !answer.error ? AP_OK : answer.unreachable ? AP_UNSUPPORTED : AP_ERROR;
        try {
            this.koffi.call(p.done, this.t.doneFn, p.doneUd, status,
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
        if (!m || !ctx.modelRegistry) {
            this.auth = null;
            this.authError = m ? "this Pi has no model registry for extensions" : "Pi has no model selected";
            return;
        }
        if (this.auth && this.auth.model === m) return;
        try {
            const r = await ctx.modelRegistry.getApiKeyAndHeaders(m);
            this.auth = r && r.ok ? { model: m, apiKey: r.apiKey, headers: r.headers } : null;
            if (!this.auth) {
                this.authError = `no credentials for ${m.provider}/${m.id}${r && r.error ? `: ${r.error}` : ""}`;
                this.log(2, this.authError);
            }
        } catch (e) {
            this.auth = null;
            this.authError = `no credentials for ${m.provider}/${m.id}: ${e.message}`;
            this.log(2, this.authError);
        }
        /* Imported now rather than inside the first completion (not awaited: Pi's start does
         * not wait for it); which copy it is, or why there is none, goes to pi-bridge.log. */
        if (this.auth) this.loadModelLayer();
    }

    async loadModelLayer() {
        try {
            const l = await loadPiAiLayer();
            this.layerError = null;
            if (!this.layerSaid)
                this.log(1, `model layer: ${l.name} ${l.version} (completeSimple) from ${l.via}`);
            this.layerSaid = true;
            return l;
        } catch (e) {
            const first = !this.layerError;
            this.layerError = String(e && e.message || e);
            if (first) this.log(3, `summaries cannot use Pi's model: ${this.layerError}`);
            return null;
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
        /* Which Pi and which model layer: the plugin shows it in /lcm status. */
        this.description = piDescription();
        this.hostName = this.libc.strdup(`pi-bridge 0.1.0 (${this.description})`);
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
        this.log(1, `loaded ${this.name} ${this.version} from ${this.soPath}; ${this.description}`);
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
            if (this.completer) { this.completer.terminate(); this.completer = null; }
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
                /* Pi 1.x decodes keys with its bundled pi-tui, not this copy: this one is told
                 * the keyboard protocol Pi's terminal negotiated. */
                const kitty = tui && tui.terminal && tui.terminal.kittyProtocolActive;
                if (lib && typeof lib.setKittyProtocolActive === "function" && typeof kitty === "boolean")
                    lib.setKittyProtocolActive(kitty);
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
