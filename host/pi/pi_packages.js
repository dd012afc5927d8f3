/*
 * pi_packages.js -- finding what the bridge borrows: koffi (next to the bridge, NODE_PATH,
 * or the copy Pi ships), the Pi that runs it (its package name and version), and Pi's own
 * ES modules pi-ai (the model layer the completions run on) and pi-tui (key decoding and
 * width-safe truncation for the panels), each imported once from the install Pi runs with.
 *
 * Pi has been published under two scopes: @mariozechner (0.x) and @earendil-works (1.x).
 * Its packages are looked up under the scope Pi's own package.json depends on first, then
 * under both.
 */
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as fs from "node:fs";
import * as path from "node:path";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SCOPES = ["@earendil-works", "@mariozechner"];

function piInstallFile() {
    try { return process.argv[1] ? fs.realpathSync(process.argv[1]) : null; } catch { return null; }
}

function readPackage(dir) {
    try { return JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")); } catch { return null; }
}

/* ---- the Pi that runs the bridge -------------------------------------------------------- */

let piInstallMemo;

/* The pi-coding-agent package whose CLI this process runs ({name, version, dir,
 * dependencies}: the first package.json above the script whose name ends in pi-coding-agent), or null
 * outside Pi (a test, another host). */
export function piInstall() {
    if (piInstallMemo !== undefined) return piInstallMemo;
    piInstallMemo = null;
    const file = piInstallFile();
    for (let dir = file && path.dirname(file); dir;) {
        const pkg = readPackage(dir);
        if (pkg && /(^|\/)pi-coding-agent$/.test(pkg.name || "")) {
            piInstallMemo = { name: pkg.name, version: pkg.version || "?", dir, dependencies: pkg.dependencies || {} };
            break;
        }
        const up = path.dirname(dir);
        dir = up === dir ? null : up;
    }
    return piInstallMemo;
}

/* The names one of Pi's packages ("pi-ai") goes by, the one Pi depends on first. */
export function piPackageNames(short) {
    const names = [];
    const pi = piInstall();
    if (pi) for (const dep of Object.keys(pi.dependencies)) if (dep.endsWith(`/${short}`)) names.push(dep);
    for (const scope of SCOPES) if (!names.includes(`${scope}/${short}`)) names.push(`${scope}/${short}`);
    return names;
}

/* ---- koffi ------------------------------------------------------------------------------ */

/* koffi is looked up next to this file (and NODE_PATH) first; a Pi install may carry its own
 * copy under pi-tui, which serves when the user never ran npm ci in host/pi. */
export function loadKoffi() {
    const errors = [];
    const bases = [path.join(HERE, "extension.js")];
    const pi = piInstallFile();
    if (pi) {
        bases.push(pi);
        try { bases.push(path.join(findPiPackage("pi-tui").dir, "package.json")); } catch { /* not Pi */ }
    }
    for (const base of bases) {
        try { return createRequire(base)("koffi"); } catch (e) { errors.push(`${base}: ${e.message}`); }
    }
    throw new Error(`lossless-context: koffi not found (run npm ci in ${HERE}):\n${errors.join("\n")}`);
}

/* ---- Pi's packages on disk ---------------------------------------------------------------- */

/* The file a package's `import` condition names for the export `sub` ("." or "./compat";
 * conditions nested or not), or null when the package does not export it. */
function importEntry(pkg, sub = ".") {
    if (pkg.exports === undefined) return sub === "." ? pkg.module || pkg.main || "index.js" : null;
    let e = pkg.exports;
    if (e && typeof e === "object" && !Array.isArray(e) && Object.keys(e).some((k) => k.startsWith(".")))
        e = e[sub];
    else if (sub !== ".")
        e = null;
    while (e && typeof e === "object" && !Array.isArray(e)) e = e.import ?? e.node ?? e.default;
    return typeof e === "string" ? e : null;
}

/* One of Pi's packages on disk ({name, version, dir, pkg}). Pi's packages offer only an
 * `import` condition, so createRequire cannot resolve them (ERR_PACKAGE_PATH_NOT_EXPORTED),
 * and import.meta.resolve resolves from this file, which does not sit in Pi's install. So
 * the folder is looked up along Node's lookup paths from Pi's own install first (the copy
 * Pi runs with), then from here and NODE_PATH, under each of the package's names. */
export function findPiPackage(short) {
    const tried = [];
    const pi = piInstall();
    const bases = [pi && path.join(pi.dir, "package.json"), piInstallFile(), path.join(HERE, "extension.js")].filter(Boolean);
    for (const name of piPackageNames(short)) {
        for (const base of bases) {
            for (const dir of createRequire(base).resolve.paths(name) || []) {
                const pkgDir = path.join(dir, name);
                if (tried.includes(pkgDir)) continue;
                tried.push(pkgDir);
                const pkg = readPackage(pkgDir);
                if (pkg) return { name, version: pkg.version || "?", dir: fs.realpathSync(pkgDir), pkg };
            }
        }
    }
    throw new Error(`${piPackageNames(short).join(" or ")} not found (is this Pi?); looked in:\n${tried.join("\n")}`);
}

/* The real path of a package's entry: the URL Pi itself imported, so Node's module cache
 * serves it. */
function entryFile(p, sub) {
    const entry = importEntry(p.pkg, sub);
    if (!entry) throw new Error(`${p.name} ${p.version} (${p.dir}) exports no ${sub} entry to import`);
    return fs.realpathSync(path.join(p.dir, entry));
}

/* pi-ai's file with completeSimple (the session's model, given explicitly): 1.x keeps
 * that API in its "./compat" entry, 0.x in its main entry. The blocking completion's worker
 * thread imports this file (a worker cannot share the main thread's modules). */
function piAiSub(p) {
    return importEntry(p.pkg, "./compat") ? "./compat" : ".";
}

export function piAiEntry() {
    const p = findPiPackage("pi-ai");
    return entryFile(p, piAiSub(p));
}

/* The same lookup for any of Pi's ES-module packages ("pi-tui" or a full name). */
export function piPackageEntry(name) {
    return entryFile(findPiPackage(name.replace(/^@[^/]+\//, "")), ".");
}

/* ---- importing them ------------------------------------------------------------------------ */

/* One of Pi's modules, imported from the file found on disk. (By name it cannot be: this
 * extension is an ES module, which Pi's loader imports natively, so its bare imports do
 * not see the aliases or bundled copies Pi offers extensions it transpiles.) `usable(module)`
 * says the module has what the bridge calls. Resolves {module, name, version, via}. */
async function importPiModule(short, usable, subOf) {
    let p, file;
    try {
        p = findPiPackage(short);
        file = entryFile(p, subOf(p));
    } catch (e) {
        throw new Error(`Pi's ${short} cannot be loaded: ${String(e && e.message || e)}`);
    }
    const m = await import(pathToFileURL(file).href);
    if (!usable(m)) throw new Error(`Pi's ${short} cannot be used: ${file} (${p.name} ${p.version}) lacks what the bridge calls`);
    return { module: m, name: p.name, version: p.version, via: file };
}

let piAiLoad = null;

/* pi-ai, imported once ({module, name, via}); a failed import is retried by the next call. */
export function loadPiAiLayer() {
    if (!piAiLoad) {
        piAiLoad = importPiModule("pi-ai", (m) => typeof m.completeSimple === "function", piAiSub);
        piAiLoad.catch(() => { piAiLoad = null; });
    }
    return piAiLoad;
}

/* The pi-ai module itself (what the completions call). */
export function loadPiAi() {
    return loadPiAiLayer().then((l) => l.module);
}

let piTuiLoad = null;

/* Pi's TUI helpers (key decoding, width-safe truncation). Pi 0.x imports this very file, so
 * its keyboard-protocol state is the one Pi set; Pi 1.x runs a bundled copy, so the panel
 * tells this one the protocol (bridge.js, from Pi's terminal). */
export function loadPiTui() {
    if (!piTuiLoad) {
        piTuiLoad = importPiModule("pi-tui", (m) => typeof m.parseKey === "function", () => ".");
        piTuiLoad.catch(() => { piTuiLoad = null; });
    }
    return piTuiLoad.then((l) => l.module);
}

/* ---- what the bridge says it runs on -------------------------------------------------------- */

/* "Pi NAME VERSION on Node.js V; model layer NAME VERSION" (or why there is none), said at
 * load in pi-bridge.log and, as the host's name, in /lcm status. Synchronous: the files on
 * disk, not yet the import. */
export function piDescription() {
    const pi = piInstall();
    const who = pi ? `Pi ${pi.name} ${pi.version}` : "not Pi's CLI";
    let layer;
    try {
        const p = findPiPackage("pi-ai");
        layer = `model layer ${p.name} ${p.version}`;
    } catch {
        layer = `no model layer (${piPackageNames("pi-ai").join(" or ")} not found)`;
    }
    return `${who} on Node.js ${process.version}; ${layer}`;
}
