/*
 * install.js -- what loading the bridge from a checkout needs and nobody ran yet: after
 * `pi install <path or git URL>` (or `pi -e <path>`) Pi loads host/pi/extension.js straight
 * from the repository, where the plugin's .so may not be built (make) and koffi may not be
 * installed (npm ci here). Each is done once, on Pi's start, the way a user would run it;
 * a failure is one sentence naming the command to run.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as fs from "node:fs";
import * as path from "node:path";

const HERE = path.dirname(fileURLToPath(import.meta.url));
/* The repository this file sits in (host/pi/ of it). */
export const REPO = path.resolve(HERE, "..", "..");
export const DEFAULT_SO = path.join(REPO, "build", "lossless-context.so");

/* A build takes a minute or two on a small machine; a hung one is given up after this. */
const BUILD_TIMEOUT_MS = 15 * 60 * 1000;

function lastLines(text, n) {
    return String(text || "").trim().split("\n").filter((l) => l.trim()).slice(-n);
}

/* Builds SO with the repository's Makefile when SO is the checkout's own default and is
 * missing. Returns null when there is nothing to do or the build made it, else the
 * sentence to show (after "lossless-context is not active: "). say(msg) reports progress (the build is slow enough to be announced). */
export function ensureBuilt(soPath, say = () => {}) {
    if (fs.existsSync(soPath)) return null;
    if (path.resolve(soPath) !== DEFAULT_SO || !fs.existsSync(path.join(REPO, "Makefile")))
        return `${soPath} does not exist; build it (make in the repository) or point LOSSLESS_CONTEXT_SO at a built lossless-context.so`;
    say(`lossless-context: building ${path.relative(REPO, DEFAULT_SO)} in ${REPO} (make, once; a minute or two)`);
    /* The checkout's own build folder, whatever make Pi itself may run under (a parent
     * make's MAKEFLAGS would carry its variables into this one). */
    const env = { ...process.env };
    for (const v of ["MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "BUILD"]) delete env[v];
    const r = spawnSync("make", ["-C", REPO, "-j2", "BUILD=build", path.relative(REPO, DEFAULT_SO)],
        { encoding: "utf8", env, timeout: BUILD_TIMEOUT_MS, maxBuffer: 64 << 20 });
    if (r.error && r.error.code === "ENOENT")
        return "the plugin is not built and make is not installed; run: sudo apt-get install -y make gcc, then restart Pi";
    if (r.status === 0 && fs.existsSync(soPath)) return null;
    const out = `${r.stdout || ""}\n${r.stderr || ""}`;
    /* tests/deps.sh, which make runs first, names the packages a build lacks. */
    const missing = out.split("\n").find((l) => l.startsWith("missing packages; run:"));
    if (missing)
        return `the plugin is not built: the build needs packages; run: ${missing.slice("missing packages; run:".length).trim()}, then restart Pi`;
    const why = r.error ? r.error.message : lastLines(out, 1)[0] || `make exited with ${r.status}`;
    return `the plugin is not built: make failed (${why}); run: make -C ${REPO} to see the whole error`;
}

/* Installs the pinned koffi beside the bridge (npm ci in host/pi) when no copy was found.
 * Returns null when it did, else the sentence to show. */
export function ensureKoffi(say = () => {}) {
    if (!fs.existsSync(path.join(HERE, "package-lock.json"))) return "koffi is not installed; run: npm install koffi";
    say(`lossless-context: installing koffi in ${HERE} (npm ci, once)`);
    const r = spawnSync("npm", ["ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"],
        { cwd: HERE, encoding: "utf8", timeout: BUILD_TIMEOUT_MS, maxBuffer: 16 << 20 });
    if (r.error && r.error.code === "ENOENT")
        return `koffi is not installed and npm is not on PATH; run: cd ${HERE} && npm ci`;
    if (r.status === 0) return null;
    const why = r.error ? r.error.message : lastLines(`${r.stdout || ""}\n${r.stderr || ""}`, 1)[0] || `npm exited with ${r.status}`;
    return `koffi is not installed: npm ci failed (${why}); run: cd ${HERE} && npm ci`;
}
