/*
 * pi_packages.js -- finding the packages the bridge borrows: koffi (next to the bridge,
 * NODE_PATH, or the copy Pi ships), and Pi's own ES modules pi-ai (the model layer the
 * completions run on) and pi-tui (key decoding and width-safe truncation for the panels),
 * each imported once from the install Pi runs with.
 */
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as fs from "node:fs";
import * as path from "node:path";

const HERE = path.dirname(fileURLToPath(import.meta.url));

/* ---- koffi ------------------------------------------------------------------------------ */

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

let piTuiModule = null;

/* Pi's TUI helpers (key decoding with the keyboard protocol Pi negotiated, width-safe
 * truncation): the copy Pi runs with, so its protocol state is the one Pi set. */
export function loadPiTui() {
    if (!piTuiModule) {
        piTuiModule = import(pathToFileURL(piPackageEntry("@mariozechner/pi-tui")).href);
        piTuiModule.catch(() => { piTuiModule = null; });
    }
    return piTuiModule;
}
