// bridge.test.mjs -- unit tests of the Pi bridge (host/pi/extension.js) without Pi: a
// stand-in ExtensionAPI and session manager drive the real koffi layer against the probe
// plugin (tests/e2e/probe_plugin.c) and the real build of lossless-context.so; completions
// go through Pi's real pi-ai to the scripted model (tests/contract/fake_openai.py).
// Run by tests/e2e/run.sh with PROBE_SO, LC_SO, LAYOUT_BIN and NODE_PATH set.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import losslessContext, { Bridge, loadKoffi, loadPiAi, abiLayout, PanelModel, panelKeyOf } from "../../host/pi/extension.js";

const PROBE_SO = process.env.PROBE_SO;
const LC_SO = process.env.LC_SO;
const LAYOUT_BIN = process.env.LAYOUT_BIN;
const FAKE_MODEL = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "contract", "fake_openai.py");

/* A session manager with Pi's read methods over an in-memory tree. */
class FakeSession {
    constructor() { this.byId = new Map(); this.leaf = null; this.n = 0; this.t = Date.parse("2025-11-29T17:00:00.000Z"); }
    add(entry) {
        const id = (0x10000000 + ++this.n).toString(16);
        const e = { id, parentId: this.leaf, timestamp: new Date(this.t += 1000).toISOString(), ...entry };
        this.byId.set(id, e);
        this.leaf = id;
        return e;
    }
    message(role, text, extra = {}) {
        const content = role === "user" ? text : [{ type: "text", text }];
        return this.add({ type: "message", message: { role, content, timestamp: this.t + 1000, ...extra } });
    }
    getLeafId() { return this.leaf; }
    getEntry(id) { return this.byId.get(id); }
    getBranch() {
        const out = [];
        for (let e = this.byId.get(this.leaf); e; e = e.parentId ? this.byId.get(e.parentId) : undefined) out.unshift(e);
        return out;
    }
    getEntries() { return [...this.byId.values()]; }
    getSessionId() { return "11111111-2222-3333-4444-555555555555"; }
    getSessionFile() { return undefined; }
    getCwd() { return "/tmp/project"; }
    appendCustomEntry(customType, data) { return this.add({ type: "custom", customType, data }).id; }
    /* What Pi sends: the branch's messages, cloned (Pi structuredClones before `context`). */
    contextMessages() {
        return structuredClone(this.getBranch().filter((e) => e.type === "message").map((e) => e.message));
    }
}

function fakePi(sm) {
    const api = {
        commands: new Map(), tools: new Map(), handlers: new Map(), notes: [], sent: [], idle: true,
        sendUserMessage(text, opts) { this.sent.push({ text, opts }); },
        registerCommand(name, o) { this.commands.set(name, o); },
        registerTool(def) { this.tools.set(def.name, def); },
        appendEntry(type, data) { sm.appendCustomEntry(type, data); },
        on(ev, fn) { this.handlers.set(ev, fn); },
    };
    api.ctx = {
        sessionManager: sm, cwd: "/tmp/project", hasUI: true,
        model: { provider: "fake", id: "fake-model", contextWindow: 32000, maxTokens: 2048 },
        ui: { notify: (msg, type) => api.notes.push({ msg, type }) },
        getSystemPrompt: () => api.systemPrompt || "You are a test.",
        isIdle: () => api.idle,
    };
    return api;
}

function newBridge(so, sm, logs = []) {
    const pi = fakePi(sm);
    const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "lc-bridge-"));
    const b = new Bridge(pi, { soPath: so, agentDir, log: (level, msg) => logs.push([level, msg]) });
    b.ctx = pi.ctx;
    b.load();
    return { b, pi, logs, agentDir };
}

test("koffi struct layout matches the C compiler's sizeof and offsetof", () => {
    const c = JSON.parse(execFileSync(LAYOUT_BIN, { encoding: "utf8" }));
    assert.deepEqual(abiLayout(loadKoffi()), c);
});

test("probe command reaches every host function and frees what they return", () => {
    const sm = new FakeSession();
    sm.message("user", "hello");
    const { b, pi, logs } = newBridge(PROBE_SO, sm);
    assert.deepEqual([...pi.commands.keys()], ["probe", "probe-count", "probe-last-end", "probe-async",
        "probe-async-result", "probe-complete"]);
    const r = b.runCommand("probe", '{"k":"v"}', pi.ctx);
    assert.equal(r.ok, true);
    const lines = Object.fromEntries(r.text.trim().split("\n").map((l) => { const i = l.indexOf("="); return [l.slice(0, i), l.slice(i + 1)]; }));
    const info = JSON.parse(lines.session_info.slice(2));
    assert.equal(info.id, sm.getSessionId());
    assert.equal(info.cwd, "/tmp/project");
    assert.equal(info.agentHome, b.agentDir);
    assert.deepEqual(JSON.parse(lines.get_model.slice(2)), { provider: "fake", id: "fake-model", contextWindow: 32000, maxTokens: 2048 });
    const newId = lines.append_custom.slice(2);
    assert.equal(sm.getLeafId(), newId);
    assert.deepEqual(sm.getEntry(newId).data, { k: "v" });
    assert.equal(JSON.parse(lines.get_entry.slice(2)).customType, "probe-state");
    assert.match(lines.get_missing, /^4:no entry ffffffff/);
    assert.equal(JSON.parse(lines.get_branch.slice(2)).length, 2);
    assert.deepEqual(JSON.parse(lines.get_entries.slice(2)).map((e) => e.id), sm.getEntries().map((e) => e.id));
    assert.ok(logs.some(([lvl, m]) => lvl === 1 && m === "probe: logged"));
    assert.equal(pi.notes.at(-1).msg, r.text);
    b.unload();
});

test("agent_end tells the plugin how Pi's run ended, from the last assistant's stopReason", () => {
    const sm = new FakeSession();
    const { b, pi } = newBridge(PROBE_SO, sm);
    const ended = (messages) => {
        b.agentEnd(pi.ctx, { type: "agent_end", messages });
        return b.runCommand("probe-last-end", "", pi.ctx).text;
    };
    const user = { role: "user", content: "go" };
    const asst = (stopReason) => ({ role: "assistant", content: [], stopReason });
    assert.equal(ended([user, asst("stop")]), '{"status":"done"}');
    assert.equal(ended([user, asst("aborted")]), '{"status":"interrupted"}');
    assert.equal(ended([user, asst("error"), { role: "toolResult", content: [] }]), '{"status":"error"}');
    assert.equal(ended([user, asst("error"), asst("toolUse")]), '{"status":"done"}');
    assert.equal(ended([]), '{"status":"done"}');
    b.unload();
});

test("append_custom refuses data that is not JSON", () => {
    const sm = new FakeSession();
    const { b, pi } = newBridge(PROBE_SO, sm);
    const r = b.runCommand("probe", "{not json", pi.ctx);
    assert.match(r.text, /append_custom=3:append_custom: data is not JSON/);
    assert.equal(sm.getBranch().length, 0);
    b.unload();
});

test("context result is applied by index, reusing Pi's message objects", () => {
    const sm = new FakeSession();
    const first = sm.message("user", "one");
    sm.message("assistant", "two");
    sm.message("user", "three");
    const { b, pi } = newBridge(PROBE_SO, sm);
    const msgs = sm.contextMessages();
    const out = b.context(msgs, pi.ctx);
    assert.equal(out.length, 3);
    assert.equal(out[0].content, `[probe replaced ${first.id}; 3 in]`);
    assert.equal(out[1], msgs[1]);
    assert.equal(out[2], msgs[2]);
    b.unload();
});

test("context result with an out-of-range index is rejected and the input sent unchanged", () => {
    const sm = new FakeSession();
    sm.message("user", "one");
    sm.message("assistant", "two");
    const { b, pi, logs } = newBridge(PROBE_SO, sm);
    pi.systemPrompt = "PROBE-BAD-INDEX";
    assert.equal(b.context(sm.contextMessages(), pi.ctx), undefined);
    assert.ok(logs.some(([lvl, m]) => lvl === 3 && /refers to input 7 of 2/.test(m)));
    b.unload();
});

test("context serializes each session entry once across requests", () => {
    const sm = new FakeSession();
    for (let i = 0; i < 20; i++) sm.message(i % 2 ? "assistant" : "user", `m${i}`);
    const { b, pi } = newBridge(PROBE_SO, sm);
    b.context(sm.contextMessages(), pi.ctx);
    assert.equal(b.index.serializations, 20);
    sm.message("user", "m20");
    sm.message("assistant", "m21");
    b.context(sm.contextMessages(), pi.ctx);
    assert.equal(b.index.serializations, 22);
    b.unload();
});

test("context keeps entry ids right after the leaf moves back in the tree", () => {
    const sm = new FakeSession();
    const a = sm.message("user", "a");
    sm.message("assistant", "b");
    const { b, pi } = newBridge(PROBE_SO, sm);
    b.context(sm.contextMessages(), pi.ctx);
    sm.leaf = a.id;                       /* /tree back to the first message */
    const c = sm.message("assistant", "c");
    sm.message("user", "d");
    const out = b.context(sm.contextMessages(), pi.ctx);
    assert.equal(out.length, 3);
    assert.equal(out[0].content, `[probe replaced ${a.id}; 3 in]`);
    assert.deepEqual(b.index.entries.map((e) => e.id), [a.id, c.id, sm.getLeafId()]);
    b.unload();
});

test("a message that is not a session entry crosses without an entry id", () => {
    const sm = new FakeSession();
    sm.message("user", "persisted");
    const { b, pi } = newBridge(PROBE_SO, sm);
    const msgs = [{ role: "user", content: "not persisted", timestamp: 42 }, ...sm.contextMessages()];
    const out = b.context(msgs, pi.ctx);
    assert.equal(out[0].content, "[probe replaced no-entry; 2 in]");
    b.unload();
});

test("event results come back parsed and failures are notified, not thrown", () => {
    const sm = new FakeSession();
    const { b, pi } = newBridge(PROBE_SO, sm);
    assert.deepEqual(b.event("before_agent_start", { prompt: "PROBE-REWRITE", systemPrompt: "x" }, pi.ctx), { systemPrompt: "rewritten by probe" });
    assert.equal(b.event("turn_end", { turnIndex: 0, message: {}, toolResults: [] }, pi.ctx), undefined);
    assert.equal(b.event("before_agent_start", { prompt: "PROBE-FAIL" }, pi.ctx), undefined);
    assert.match(pi.notes.at(-1).msg, /before_agent_start failed \(AP_ERROR\): probe event failed on purpose/);
    assert.equal(b.event("session_tree", {}, pi.ctx), undefined, "an unhandled event is a no-op");
    b.unload();
});

test("tool results map to Pi's shape and a failing tool throws its error", () => {
    const sm = new FakeSession();
    const { b, pi } = newBridge(PROBE_SO, sm);
    const tool = pi.tools.get("probe_tool");
    assert.deepEqual(tool.parameters, { type: "object" });
    const r = b.runTool("probe_tool", "call_1", { x: 1 }, pi.ctx);
    assert.deepEqual(r, { content: [{ type: "text", text: "probed" }], details: { toolCallId: "call_1", arguments: { x: 1 } } });
    assert.throws(() => b.runTool("probe_tool", "call_2", { fail: true }, pi.ctx), /probe tool failed on purpose/);
    b.unload();
    assert.throws(() => b.runTool("probe_tool", "call_3", {}, pi.ctx), /not loaded/);
});

test("the extension wires Pi events to the plugin and unloads at shutdown", async () => {
    const sm = new FakeSession();
    sm.message("user", "hi");
    const pi = fakePi(sm);
    process.env.LOSSLESS_CONTEXT_SO = PROBE_SO;
    try { losslessContext(pi); } finally { delete process.env.LOSSLESS_CONTEXT_SO; }
    for (const ev of ["session_start", "session_shutdown", "before_agent_start", "context",
        "before_provider_request", "turn_end", "tool_call", "tool_result",
        "session_before_compact", "session_compact", "session_tree", "agent_end"])
        assert.ok(pi.handlers.has(ev), `handler for ${ev}`);
    await pi.handlers.get("session_start")({ reason: "startup" }, pi.ctx);
    const r = await pi.handlers.get("before_agent_start")({ prompt: "PROBE-REWRITE", systemPrompt: "s" }, pi.ctx);
    assert.deepEqual(r, { systemPrompt: "rewritten by probe" });
    pi.handlers.get("session_shutdown")({}, pi.ctx);
    await pi.commands.get("probe-count").handler("", pi.ctx);
    assert.match(pi.notes.at(-1).msg, /not loaded/);
});

test("a missing library leaves Pi running and says why at session start", async () => {
    const pi = fakePi(new FakeSession());
    process.env.LOSSLESS_CONTEXT_SO = "/nonexistent/lossless-context.so";
    try { losslessContext(pi); } finally { delete process.env.LOSSLESS_CONTEXT_SO; }
    await pi.handlers.get("session_start")({ reason: "startup" }, pi.ctx);
    assert.match(pi.notes.at(-1).msg, /lossless-context is not active/);
});

test("lossless-context.so loads and registers its commands and tools", () => {
    const sm = new FakeSession();
    sm.message("user", "find the needle");
    const { b, pi } = newBridge(LC_SO, sm);
    for (const c of ["clm", "lcm"]) assert.ok(pi.commands.has(c), `command /${c}`);
    assert.ok(pi.tools.has("lcm_grep"), "tool lcm_grep");
    b.event("session_start", { reason: "startup" }, pi.ctx);
    b.context(sm.contextMessages(), pi.ctx);
    const st = b.runCommand("lcm", "status", pi.ctx);
    assert.equal(st.ok, true, st.text);
    assert.ok(st.text && st.text.length > 0);
    b.event("session_shutdown", {}, pi.ctx);
    b.unload();
});

const tick = () => new Promise((r) => setImmediate(r));

test("/clm-compact waits for agent_end while busy, refuses a second, then sends the prompt", async () => {
    const sm = new FakeSession();
    sm.message("user", "task KEEP_ME");
    sm.message("assistant", "working");
    const { b, pi } = newBridge(LC_SO, sm);
    b.event("session_start", { reason: "startup" }, pi.ctx);
    b.event("before_agent_start", { prompt: "go", systemPrompt: "s" }, pi.ctx);
    const first = b.runCommand("clm-compact", "keep X", pi.ctx);
    assert.match(first.text, /the agent is busy; the compaction prompt is sent when it finishes/);
    const second = b.runCommand("clm-compact", "again", pi.ctx);
    assert.match(second.text, /refused, a compaction request is already waiting for the agent to finish/);
    await tick();
    assert.equal(pi.sent.length, 0, "nothing is sent while the agent runs");
    pi.idle = false;                    /* Pi still streams while agent_end handlers run */
    b.agentEnd(pi.ctx);
    pi.idle = true;
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(pi.sent.length, 1);
    assert.match(pi.sent[0].text, /^\[CLM COMPACT\] Compact your live context now/);
    assert.ok(pi.sent[0].text.endsWith("Also: keep X"), pi.sent[0].text);
    assert.equal(pi.sent[0].opts, undefined, "delivered as a prompt once Pi is idle, not as a follow-up");

    /* A tree move while it waits cancels it; agent_end then sends nothing. */
    b.event("before_agent_start", { prompt: "go on", systemPrompt: "s" }, pi.ctx);
    b.runCommand("clm-compact", "", pi.ctx);
    b.event("session_tree", { newLeafId: sm.getBranch()[0].id, oldLeafId: sm.getLeafId() }, pi.ctx);
    assert.ok(pi.notes.some((n) => /\/clm-compact: not sent, the live context changed \(tree move/.test(n.msg)),
        JSON.stringify(pi.notes.map((n) => n.msg)));
    b.agentEnd(pi.ctx);
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(pi.sent.length, 1, "a cancelled request is never sent");

    /* Idle: sent at once (after the command returns). */
    const now = b.runCommand("clm-compact", "", pi.ctx);
    assert.match(now.text, /sent as a user message/);
    await tick();
    assert.equal(pi.sent.length, 2);
    b.event("session_shutdown", {}, pi.ctx);
    b.unload();
});

test("send_user_message: one message at a time, a follow-up while Pi streams", async () => {
    const sm = new FakeSession();
    const { b, pi } = newBridge(LC_SO, sm);
    assert.equal(b.hSendUserMessage(null, "one", null), 0);
    assert.equal(b.hSendUserMessage(null, "two", null), 7, "AP_BUSY while one is queued");
    pi.idle = false;
    await tick();
    assert.deepEqual(pi.sent, [{ text: "one", opts: { deliverAs: "followUp" } }]);
    assert.equal(b.hSendUserMessage(null, "", null), 3);
    b.unload();
});

/* ---- completions: complete_async from a thread of the plugin's, and the blocking complete */

/* The scripted model on loopback, and the pi-ai model object Pi would hand the bridge for it. */
async function startModel(script) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lc-bridge-model-"));
    const scriptFile = path.join(dir, "script.json"), record = path.join(dir, "requests.jsonl");
    fs.writeFileSync(scriptFile, JSON.stringify(script));
    const proc = spawn("python3", [FAKE_MODEL, "--port", "0", "--script", scriptFile, "--record", record],
        { stdio: ["ignore", "pipe", "ignore"] });
    const port = await new Promise((resolve, reject) => {
        let buf = "";
        proc.stdout.on("data", (d) => { buf += d; if (buf.includes("\n")) resolve(Number(buf.split("\n")[0])); });
        proc.on("exit", (code) => reject(new Error(`the scripted model exited (${code}) before it listened`)));
    });
    return {
        model: { id: "fake-model", name: "fake-model", api: "openai-completions", provider: "fake",
            baseUrl: `http://127.0.0.1:${port}/v1`, reasoning: false, input: ["text"],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 32000, maxTokens: 2048,
            compat: { supportsDeveloperRole: false, supportsReasoningEffort: false } },
        requests: () => (fs.existsSync(record) ? fs.readFileSync(record, "utf8") : "")
            .split("\n").filter(Boolean).map((l) => JSON.parse(l)),
        stop: () => { proc.kill(); fs.rmSync(dir, { recursive: true, force: true }); },
    };
}

/* A bridge on the probe plugin whose session model is the scripted one. */
async function modelBridge(script) {
    const fake = await startModel(script);
    const sm = new FakeSession();
    const nb = newBridge(PROBE_SO, sm);
    nb.pi.ctx.model = fake.model;
    nb.pi.ctx.modelRegistry = { getApiKeyAndHeaders: async () => ({ ok: true, apiKey: "fake-key", headers: {} }) };
    await nb.b.refreshAuth(nb.pi.ctx);
    /* refreshAuth started pi-ai's import; a cold one evaluates its modules on the main thread
     * once (Pi has them loaded already), which is not the in-flight call under test. */
    await loadPiAi();
    return { ...nb, fake };
}

/* /probe-async-result as {started, start, calls, status, ud, out, err}. */
function asyncResult(b, pi) {
    const text = b.runCommand("probe-async-result", "", pi.ctx).text;
    const r = {};
    for (const line of text.trim().split("\n")) { const i = line.indexOf("="); r[line.slice(0, i)] = line.slice(i + 1); }
    return { ...r, started: Number(r.started), calls: Number(r.calls), status: Number(r.status) };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* Turns the event loop until the probe's record satisfies pred. */
async function untilResult(b, pi, pred, ms = 15000) {
    const end = Date.now() + ms;
    for (;;) {
        const r = asyncResult(b, pi);
        if (pred(r)) return r;
        if (Date.now() > end) assert.fail(`probe-async never got there: ${JSON.stringify(r)}`);
        await sleep(20);
    }
}

const answerText = (json) => JSON.parse(json).content.filter((c) => c.type === "text").map((c) => c.text).join("");

test("complete_async from a plugin thread: done once with the model's answer, Pi's event loop keeps turning", async () => {
    const { b, pi, fake } = await modelBridge([{ content: "PROBE-ASYNC-PONG", delay: 1.5 }]);
    try {
        let last = Date.now(), maxGap = 0, ticks = 0;
        const timer = setInterval(() => { const now = Date.now(); maxGap = Math.max(maxGap, now - last); last = now; ticks++; }, 50);
        const t0 = Date.now();
        assert.equal(b.runCommand("probe-async", "", pi.ctx).text, "probe-async: started");
        const r = await untilResult(b, pi, (x) => x.calls > 0);
        const took = Date.now() - t0;
        await sleep(300);
        clearInterval(timer);
        assert.equal(r.start, "0:-", "complete_async returned AP_OK at once");
        assert.equal(r.status, 0, r.err);
        assert.equal(r.ud, "ok");
        assert.equal(answerText(r.out), "PROBE-ASYNC-PONG");
        assert.equal(JSON.parse(r.out).role, "assistant");
        assert.ok(took >= 1400, `done came after the model's 1.5 s (${took} ms)`);
        assert.equal(asyncResult(b, pi).calls, 1, "done is called exactly once");
        // A blocked loop shows one gap as long as the model's 1.5 s; a loaded machine only
        // stretches the ticks, so the bound sits between the two.
        assert.ok(maxGap < 1000, `a 50-ms timer kept firing while the call was in flight (longest gap ${maxGap} ms)`);
        assert.ok(ticks >= 10, `${ticks} ticks`);
        const reqs = fake.requests();
        assert.equal(reqs.length, 1);
        assert.match(JSON.stringify(reqs[0].messages), /PROBE-ASYNC-PING/);
        assert.equal(b.pending.size, 0);
    } finally { b.unload(); fake.stop(); }
});

test("complete_async honours timeoutMs: one done, AP_ERROR timed out", async () => {
    const { b, pi, fake } = await modelBridge([{ content: "too late", delay: 1.5 }]);
    try {
        const t0 = Date.now();
        b.runCommand("probe-async", JSON.stringify({ messages: [{ role: "user", content: "slow", timestamp: 1 }], timeoutMs: 300 }), pi.ctx);
        const r = await untilResult(b, pi, (x) => x.calls > 0);
        const took = Date.now() - t0;
        assert.equal(r.start, "0:-");
        assert.equal(r.status, 1, "AP_ERROR");
        assert.equal(r.err, "complete_async: timed out after 300 ms");
        assert.equal(r.out, "-");
        assert.ok(took >= 280 && took < 1000, `answered at the timeout (${took} ms)`);
        await sleep(1800 - took);         /* past the model's answer: the aborted call says nothing */
        assert.equal(asyncResult(b, pi).calls, 1, "done is called exactly once");
        assert.equal(b.pending.size, 0);
    } finally { b.unload(); fake.stop(); }
});

test("complete_async: a failing model call reaches done with its error; a bad request is refused at the start", async () => {
    const { b, pi, fake } = await modelBridge([{ status: 400, error: "scripted bad request" }]);
    try {
        b.runCommand("probe-async", "", pi.ctx);
        const r = await untilResult(b, pi, (x) => x.calls > 0);
        assert.equal(r.status, 1, "AP_ERROR, never a silent success");
        assert.match(r.err, /scripted bad request/);
        assert.equal(fake.requests().length, 1);
        for (const [req, start] of [["{not json", /^3:complete_async: request is not JSON/],
            [JSON.stringify({ messages: [], model: "other/model" }), /^5:complete_async: only the session's model fake\/fake-model/],
            [JSON.stringify({ messages: [], timeoutMs: -1 }), /^3:complete_async: timeoutMs must be a positive number/]]) {
            b.runCommand("probe-async", req, pi.ctx);
            const x = await untilResult(b, pi, (y) => y.started === 1);
            assert.match(x.start, start);
            await sleep(50);
            assert.equal(asyncResult(b, pi).calls, 0, "no done after a refused start");
        }
        /* Pi's model out of reach: refused as unsupported (the plugin's "no session model"),
         * with the reason, which the plugin shows in /lcm status. */
        b.layerError = "Pi's pi-ai cannot be loaded: scripted";
        b.runCommand("probe-async", "", pi.ctx);
        assert.match((await untilResult(b, pi, (y) => y.started === 1)).start, /^5:Pi's model cannot be reached: Pi's pi-ai cannot be loaded: scripted/);
        b.layerError = null;
        b.auth = null;
        b.authError = "no credentials for fake/fake-model: scripted";
        b.runCommand("probe-async", "", pi.ctx);
        assert.match((await untilResult(b, pi, (y) => y.started === 1)).start, /^5:Pi's model cannot be reached: no credentials for fake\/fake-model: scripted/);
    } finally { b.unload(); fake.stop(); }
});

test("complete_async: no done after unload; the pending call is dropped", async () => {
    const { b, pi, fake } = await modelBridge([{ content: "after unload", delay: 2 }]);
    try {
        b.runCommand("probe-async", "", pi.ctx);
        await untilResult(b, pi, (x) => x.started === 1);
        /* Unloaded only once the call is at the model: under load pi-ai may take a while to
         * send it, and a call aborted before it is sent would not test the late answer. */
        for (const end = Date.now() + 15000; fake.requests().length === 0 && Date.now() < end;) await sleep(20);
        assert.equal(fake.requests().length, 1, "the call had reached the model");
        assert.equal(b.pending.size, 1);
        b.unload();
        assert.equal(b.pending.size, 0);
        await sleep(2500);                /* past the model's answer */
        assert.equal(fake.requests().length, 1, "nothing was asked again after unload");
        const calls = loadKoffi().load(PROBE_SO).func("int probe_async_calls(void)");
        assert.equal(calls(), 0, "done was never called");
    } finally { b.unload(); fake.stop(); }
});

test("the blocking complete runs pi-ai as an ES module in its worker and skips a timed-out call's late answer", async () => {
    const { b, pi, fake } = await modelBridge([{ content: "SYNC-PONG" }, { content: "LATE", delay: 1 }, { content: "FRESH" }]);
    try {
        assert.match(b.runCommand("probe-complete", "", pi.ctx).text, /^complete=0:\{.*SYNC-PONG/);
        const slow = JSON.stringify({ messages: [{ role: "user", content: "slow", timestamp: 1 }], timeoutMs: 300 });
        assert.equal(b.runCommand("probe-complete", slow, pi.ctx).text.trim(), "complete=1:complete: timed out after 300 ms");
        await sleep(1200);                /* the late answer lands in the port meanwhile */
        assert.match(b.runCommand("probe-complete", "", pi.ctx).text, /^complete=0:\{.*FRESH/);
        assert.equal(fake.requests().length, 3);
    } finally { b.unload(); fake.stop(); }
});

/* The panel model (PanelModel): which commands open a panel, and the page arguments its keys
 * become; the pages are the plugin's text, read back only for their selectable rows. */
test("panel keys become the plugin's page arguments", () => {
    assert.equal(PanelModel.open("clm", "status"), null, "status stays a one-shot command");
    assert.equal(PanelModel.open("lcm", "settings swapAtRatio 0.6"), null, "a settings change stays a command");
    assert.equal(PanelModel.open("clm", "overview sideways"), null, "an argument the panel does not know goes to the page");
    const m = PanelModel.open("clm", "overview requests");
    assert.deepEqual(m.request(), ["clm", "overview requests"]);
    m.show("overview (requests): ...\nevents (2; /clm overview at K selects one):\n" +
        "    1. compaction after request 3: 900 tokens before\n    2. revision 4 accepted after request 5: 9 -> 5\n");
    assert.equal(m.key("z"), "load");
    assert.deepEqual(m.request(), ["clm", "overview turns"], "z cycles to the next zoom");
    assert.equal(m.key("left"), "load");
    assert.deepEqual(m.request(), ["clm", "overview turns at 2"], "<- from now selects the last event");
    assert.equal(m.key("right"), "load");
    assert.deepEqual(m.request(), ["clm", "overview turns"], "-> past the last event is now again");
    m.key("left");
    assert.equal(m.key("enter"), "load");
    assert.deepEqual(m.request(), ["clm", "edits 4"], "Enter on an accepted edit is its diff page");
    m.show("revision 4 accepted: kept 1\n  edited ...\n");
    assert.equal(m.key("escape"), "load");
    assert.deepEqual(m.request(), ["clm", "overview turns at 2"], "Esc from the diff keeps the selection");
    assert.equal(m.key("escape"), "close");
    const s = PanelModel.open("lcm", "settings");
    s.show("LCM settings\nswap:\n  swapAtRatio        0.70     swap at\n  swapAtTokens       unset    swap at N\n");
    s.key("down");
    assert.equal(s.key("enter"), "draw");
    assert.equal(s.edit.buf, "", "an unset value opens empty");
    for (const c of "5000") s.key(c, c);
    assert.equal(s.key("enter"), "apply");
    assert.deepEqual(s.change, ["lcm", "settings swapAtTokens 5000"]);
    assert.equal(panelKeyOf("\x1b[D"), "left");
    assert.equal(panelKeyOf("\x1b"), "escape");
});

test("/clm overview: a panel where Pi can show one (keys re-ask the plugin), a notification where it cannot", async () => {
    const sm = new FakeSession();
    sm.message("user", "task");
    sm.message("assistant", "ok", { usage: { input: 900, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 910 } });
    const { b, pi } = newBridge(LC_SO, sm);
    b.event("session_start", { reason: "startup" }, pi.ctx);
    const handler = pi.commands.get("clm").handler;
    /* RPC mode: custom() answers without calling the factory. */
    const rpc = { ...pi.ctx, ui: { ...pi.ctx.ui, custom: async () => undefined } };
    await handler("overview", rpc);
    assert.match(pi.notes.at(-1).msg, /^overview \(fit\)/, "the page is notified as text");
    /* Interactive mode: the factory's component is the panel. */
    let panel = null, closed = false, renders = 0;
    const tui = { terminal: { rows: 30 }, requestRender: () => { renders++; } };
    const theme = { fg: (_c, s) => s };
    const shown = new Promise((resolve) => {
        const ui = { ...pi.ctx.ui, custom: (factory) => new Promise((done) => {
            panel = factory(tui, theme, null, (v) => { closed = true; done(v); });
            resolve();
        }) };
        handler("overview", { ...pi.ctx, ui });
    });
    await shown;
    const notes = pi.notes.length;
    assert.ok(panel.render(100).some((l) => l.includes("overview (fit)")), "the panel shows the plugin's page");
    panel.handleInput("z");
    assert.ok(renders > 0, "a key asks Pi to redraw");
    const lines = panel.render(100);
    assert.ok(lines.some((l) => l.includes("overview (requests)")), lines.join("\n"));
    const bare = (l) => l.replace(/\x1b\[[0-9;]*m/g, "");
    assert.ok(lines.every((l) => bare(l).length <= 100), JSON.stringify(lines.filter((l) => bare(l).length > 100)));
    panel.handleInput("\x1b");
    assert.equal(closed, true, "Esc closes the panel");
    assert.equal(pi.notes.length, notes, "a panel's pages are not notified");
    b.event("session_shutdown", {}, pi.ctx);
    b.unload();
});

/* ---- finding Pi's packages under either scope ------------------------------------------------ */

/* A Pi install of SCOPE in ROOT/node_modules: pi-coding-agent (its CLI, depending on SCOPE's
 * pi-ai), and pi-ai laid out as 0.x (completeSimple in the main entry) or 1.x (only in
 * "./compat"), its completeSimple answering TAG. */
function piTree(root, scope, version, layout, tag) {
    const mod = (name) => path.join(root, "node_modules", scope, name);
    const write = (f, text) => { fs.mkdirSync(path.dirname(f), { recursive: true }); fs.writeFileSync(f, text); };
    write(path.join(mod("pi-coding-agent"), "package.json"), JSON.stringify({ name: `${scope}/pi-coding-agent`, version,
        type: "module", bin: { pi: "dist/cli.js" }, dependencies: { [`${scope}/pi-ai`]: version, [`${scope}/pi-tui`]: version } }));
    write(path.join(mod("pi-coding-agent"), "dist", "cli.js"), "");
    const answer = `export function completeSimple() { return ${JSON.stringify(tag)}; }\n`;
    const exports = layout === "1.x"
        ? { ".": { types: "./index.d.ts", import: "./index.js" }, "./compat": { types: "./compat.d.ts", import: "./compat.js" } }
        : { ".": { types: "./index.d.ts", import: "./index.js" } };
    write(path.join(mod("pi-ai"), "package.json"), JSON.stringify({ name: `${scope}/pi-ai`, version, type: "module", exports }));
    write(path.join(mod("pi-ai"), "index.js"), layout === "1.x" ? "export const models = 1;\n" : answer);
    if (layout === "1.x") write(path.join(mod("pi-ai"), "compat.js"), answer);
    return path.join(mod("pi-coding-agent"), "dist", "cli.js");
}

/* What the bridge finds when Pi's CLI is CLI (a fresh node, as Pi runs it: argv[1]). */
function lookupFrom(cli) {
    const lib = new URL("../../host/pi/pi_packages.js", import.meta.url).href;
    const code = `import * as p from ${JSON.stringify(lib)};
        const out = { install: p.piInstall(), description: p.piDescription() };
        try { const l = await p.loadPiAiLayer(); out.name = l.name; out.answer = l.module.completeSimple(); out.via = l.via; }
        catch (e) { out.error = e.message; }
        console.log(JSON.stringify(out));`;
    const env = { ...process.env };
    delete env.NODE_PATH;
    return JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", code, cli], { env, encoding: "utf8" }));
}

test("Pi's packages are found under the scope Pi depends on: 1.x (@earendil-works, pi-ai's ./compat) and 0.x (@mariozechner)", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "lc-pi-scopes-"));
    try {
        /* Pi 1.x, with an old-scope pi-ai beside it that must not be taken. */
        const cli1 = piTree(path.join(root, "one"), "@earendil-works", "1.6.0", "1.x", "EARENDIL-COMPAT");
        piTree(path.join(root, "one"), "@mariozechner", "0.73.1", "0.x", "DECOY");
        fs.writeFileSync(path.join(root, "one", "node_modules", "@mariozechner", "pi-coding-agent", "dist", "cli.js"), "");
        const one = lookupFrom(cli1);
        assert.equal(one.install && one.install.name, "@earendil-works/pi-coding-agent");
        assert.equal(one.install.version, "1.6.0");
        assert.equal(one.name, "@earendil-works/pi-ai");
        assert.equal(one.answer, "EARENDIL-COMPAT", "pi-ai 1.x's completeSimple comes from its ./compat entry");
        assert.match(one.description, /^Pi @earendil-works\/pi-coding-agent 1\.6\.0 on Node\.js v\d+.*; model layer @earendil-works\/pi-ai 1\.6\.0$/);

        const cli0 = piTree(path.join(root, "zero"), "@mariozechner", "0.73.1", "0.x", "MARIOZECHNER-MAIN");
        const zero = lookupFrom(cli0);
        assert.equal(zero.install.name, "@mariozechner/pi-coding-agent");
        assert.equal(zero.name, "@mariozechner/pi-ai");
        assert.equal(zero.answer, "MARIOZECHNER-MAIN");
        assert.match(zero.description, /model layer @mariozechner\/pi-ai 0\.73\.1$/);

        /* A Pi without its pi-ai: the layer cannot be loaded, and both names are said. */
        fs.rmSync(path.join(root, "zero", "node_modules", "@mariozechner", "pi-ai"), { recursive: true });
        const none = lookupFrom(cli0);
        assert.equal(none.answer, undefined);
        assert.match(none.error, /^Pi's pi-ai cannot be loaded: @mariozechner\/pi-ai or @earendil-works\/pi-ai not found/);
        assert.match(none.description, /no model layer \(@mariozechner\/pi-ai or @earendil-works\/pi-ai not found\)$/);
    } finally { fs.rmSync(root, { recursive: true, force: true }); }
});

/* ---- a checkout Pi loads as a package: the .so built on first start (install.js) ---------- */

/* A copy of the repository's sources and Makefile (no build/) in a temp folder; what
 * install.js's ensureBuilt says there, run in a fresh node with ENV added. */
function buildFrom(env) {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "lc-pi-build-"));
    const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
    try {
        for (const d of ["abi", "engine", "plugin", "host/pi"]) fs.cpSync(path.join(repo, d), path.join(root, d),
            { recursive: true, filter: (src) => !src.includes("node_modules") });
        fs.mkdirSync(path.join(root, "tests"));
        fs.copyFileSync(path.join(repo, "tests", "deps.sh"), path.join(root, "tests", "deps.sh"));
        fs.copyFileSync(path.join(repo, "Makefile"), path.join(root, "Makefile"));
        const lib = new URL(`file://${path.join(root, "host", "pi", "install.js")}`).href;
        const code = `import { ensureBuilt, DEFAULT_SO } from ${JSON.stringify(lib)};
            console.log(JSON.stringify({ said: ensureBuilt(DEFAULT_SO) }));`;
        return JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", code],
            { env: { ...process.env, ...env }, encoding: "utf8" })).said;
    } finally { fs.rmSync(root, { recursive: true, force: true }); }
}

test("a checkout without its .so: a build that lacks packages or make is one sentence with the command to run", () => {
    /* tests/deps.sh, which make runs before compiling, as on a machine without SQLite's headers. */
    assert.equal(buildFrom({ DEPS_MISSING: "libsqlite3-dev", DEPS_UID: "1000" }),
        "the plugin is not built: the build needs packages; run: sudo apt-get install -y libsqlite3-dev, then restart Pi");
    assert.equal(buildFrom({ PATH: "/nonexistent" }),
        "the plugin is not built and make is not installed; run: sudo apt-get install -y make gcc, then restart Pi");
});
