/*
 * completions.js -- model calls on Pi's own pi-ai for the plugin: the default timeout, the
 * reading of pi-ai's answer (a failed provider call resolves, it must reach the plugin as a
 * failure), the call on Pi's event loop behind complete_async, and the worker thread
 * behind the blocking complete. An answer is {message} or {error}; {error, unreachable}
 * when Pi's model layer could not be imported at all (no call was made).
 */
import { pathToFileURL } from "node:url";
import { Worker, MessageChannel, receiveMessageOnPort } from "node:worker_threads";
import { piAiEntry, loadPiAi } from "./pi_packages.js";

/* A completion whose request names no timeoutMs is abandoned after this, so a stuck
 * provider cannot hold a request forever. */
export const COMPLETE_TIMEOUT_MS = 10 * 60 * 1000;

/* pi-ai resolves rather than rejects when the provider fails: the message's stopReason
 * says so, and the failure must reach the plugin as one. */
export function answerOf(message) {
    if (!message) return { error: "the provider gave no answer" };
    if (message.stopReason === "error" || message.stopReason === "aborted")
        return { error: message.errorMessage || `the provider's answer ended with stopReason "${message.stopReason}"` };
    return { message };
}

/* The worker behind the blocking complete: Pi's pi-ai (an ES module, imported by URL) does
 * the provider call, abandoned at abortMs; the answer goes back through the
 * port, tagged with the request's id, and the flag wakes the waiting thread. */
const COMPLETE_WORKER = `
const { workerData } = require("node:worker_threads");
const { port, flag, piAi } = workerData;
port.on("message", async (req) => {
    let answer, ai;
    try {
        ai = await import(piAi);
    } catch (e) {
        answer = { id: req.id, error: "Pi's model layer cannot be loaded: " + String(e && e.message || e), unreachable: true };
    }
    if (!answer) try {
        const message = await ai.completeSimple(req.model, req.context, { apiKey: req.apiKey,
            headers: req.headers, maxTokens: req.maxTokens, signal: AbortSignal.timeout(req.abortMs) });
        answer = { id: req.id, message };
    } catch (e) {
        answer = { id: req.id, error: String(e && e.message || e) };
    }
    port.postMessage(answer);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
});
`;

/* complete_async's call: started on Pi's event loop, settled with {message} or {error}. */
export async function completeOnLoop({ auth, req }, signal) {
    let ai;
    try {
        ai = await loadPiAi();
    } catch (e) {
        return { error: String(e && e.message || e), unreachable: true };
    }
    try {
        return answerOf(await ai.completeSimple(auth.model,
            { systemPrompt: req.systemPrompt, messages: req.messages || [] },
            { apiKey: auth.apiKey, headers: auth.headers, maxTokens: req.maxTokens, signal }));
    } catch (e) {
        return { error: String(e && e.message || e) };
    }
}

/* The worker abandons a call this long after the caller's deadline, so that a timed-out call
 * is always answered by the deadline ("timed out after N ms") and never by the worker's
 * abort, which under load could arrive first; the late abort is then skipped like any late
 * answer. */
const ABORT_AFTER_DEADLINE_MS = 1000;

/* The blocking complete: the calling thread posts the request to the worker and waits on
 * a shared flag until the answer with its id arrives or the timeout passes. */
export class BlockingCompleter {
    constructor() {
        const { port1, port2 } = new MessageChannel();
        this.flag = new Int32Array(new SharedArrayBuffer(4));
        this.worker = new Worker(COMPLETE_WORKER, {
            eval: true, workerData: { port: port2, flag: this.flag, piAi: pathToFileURL(piAiEntry()).href },
            transferList: [port2],
        });
        this.worker.unref();
        this.port = port1;
        this.seq = 0;
    }

    complete({ auth, req, timeoutMs }) {
        const id = ++this.seq;
        Atomics.store(this.flag, 0, 0);
        this.port.postMessage({
            id, model: auth.model, apiKey: auth.apiKey, headers: auth.headers,
            context: { systemPrompt: req.systemPrompt, messages: req.messages || [] },
            maxTokens: req.maxTokens, abortMs: Math.min(timeoutMs + ABORT_AFTER_DEADLINE_MS, 2 ** 31 - 1),
        });
        const deadline = Date.now() + timeoutMs;
        for (;;) {
            /* The late answer of an earlier call that timed out here may come first: skipped. */
            for (let m; (m = receiveMessageOnPort(this.port));)
                if (m.message.id === id)
                    return m.message.error ? { error: m.message.error, unreachable: !!m.message.unreachable }
                                           : answerOf(m.message.message);
            const left = deadline - Date.now();
            if (left <= 0) return { error: `complete: timed out after ${timeoutMs} ms` };
            Atomics.wait(this.flag, 0, 0, left);
            Atomics.store(this.flag, 0, 0);
        }
    }

    terminate() { this.worker.terminate(); }
}
