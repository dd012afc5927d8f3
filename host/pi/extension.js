/*
 * extension.js -- the Pi bridge: a Pi coding-agent extension that is the host side of the
 * agent plugin ABI (abi/agent_plugin.h) for build/lossless-context.so.
 *
 * Owns: the mapping of each Pi event to the plugin's callback (what of Pi's event the
 * plugin is handed, what of its answer goes back to Pi). The rest lives beside it:
 * bridge.js (the Bridge: loading, the host functions, calling the plugin), abi.js (the
 * koffi mirror of the ABI), branch_index.js (the per-entry JSON cache that keeps the
 * context event O(new)), completions.js (model calls on Pi's pi-ai), panel.js (the /clm
 * and /lcm panels), pi_packages.js (finding koffi, pi-ai and pi-tui).
 *
 * The repository is a Pi package (package.json's "pi" names this file and the skills):
 * `pi install PATH` or `pi -e PATH` loads it from the checkout, which builds the .so and
 * installs koffi on the first start when they are missing (install.js). Or load this file
 * with `pi -e host/pi/extension.js` after `make`, or copy host/pi/ into Pi's extensions
 * folder. The .so is ../../build/lossless-context.so relative to this file unless
 * LOSSLESS_CONTEXT_SO names another. koffi comes from host/pi/node_modules (npm ci here),
 * the repository's node_modules (a git install), NODE_PATH, or the copy Pi 0.x ships.
 */
import { Bridge } from "./bridge.js";
import { loadKoffi } from "./pi_packages.js";
import { DEFAULT_SO, ensureBuilt, ensureKoffi } from "./install.js";

export { AP_ABI_VERSION, AP_API_LEVEL, abiTypes, abiLayout } from "./abi.js";
export { loadKoffi, piAiEntry, piPackageEntry, loadPiAi, loadPiAiLayer, loadPiTui, piInstall, piPackageNames, piDescription } from "./pi_packages.js";
export { BranchIndex } from "./branch_index.js";
export { Bridge } from "./bridge.js";
export { PANEL_ZOOMS, panelKeyOf, PanelModel } from "./panel.js";

function compactReason(event) {
    /* Pi's event does not say why it compacts; custom instructions only come with /compact. */
    return event.customInstructions !== undefined ? "manual" : "threshold";
}

/* A checkout Pi loads as a package (pi install PATH|git URL, pi -e PATH): the .so built and
 * koffi installed first when they are not there yet (install.js). */
function prepareCheckout() {
    const say = (msg) => process.stderr.write(`${msg}\n`);
    const built = ensureBuilt(process.env.LOSSLESS_CONTEXT_SO || DEFAULT_SO, say);
    if (built) throw new Error(built);
    try { loadKoffi(); } catch {
        const k = ensureKoffi(say);
        if (k) throw new Error(k);
    }
}

export default function losslessContext(pi) {
    let bridge;
    try {
        prepareCheckout();
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
