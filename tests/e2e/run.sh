#!/bin/sh
# run.sh -- the Pi bridge's tests: the bridge unit tests (node:test, no Pi), the
# end-to-end session with the real Pi coding agent against a scripted fake provider, and a
# real Pi session with the probe plugin (complete_async from a plugin thread).
#
#   sh tests/e2e/run.sh [BUILD]          BUILD defaults to ./build (needs `make` first)
#   LC_E2E_FULL=0 sh tests/e2e/run.sh    skip issue 9's live-context and store claims
#
# Installs the pinned packages of tests/e2e/package-lock.json (Pi, koffi) into
# BUILD/e2e-node once (re-installed when the lock file changes). Nothing touches the real
# home: HOME and PI_CODING_AGENT_DIR point into a temp folder, kept on failure.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-${BUILD:-$ROOT/build}}
BUILD=$(cd "$BUILD" && pwd)
E2E="$ROOT/tests/e2e"
NODE_DIR="$BUILD/e2e-node"
OUT="$BUILD/e2e"
SO="$BUILD/lossless-context.so"
[ -f "$SO" ] || { echo "FAIL: $SO is missing (run make)"; exit 1; }
mkdir -p "$NODE_DIR" "$OUT"

# -- pinned packages, cached in the build folder -------------------------------------------
stamp=$(cat "$E2E/package.json" "$E2E/package-lock.json" | sha256sum | cut -c1-16)
if [ "$(cat "$NODE_DIR/.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -x "$NODE_DIR/node_modules/.bin/pi" ]; then
    echo "installing pinned Pi and koffi into $NODE_DIR"
    cp "$E2E/package.json" "$E2E/package-lock.json" "$NODE_DIR/"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) >"$OUT/npm.log" 2>&1 ||
        { cat "$OUT/npm.log"; echo "FAIL: npm ci of the pinned packages failed"; exit 1; }
    echo "$stamp" >"$NODE_DIR/.stamp"
fi
PI="$NODE_DIR/node_modules/.bin/pi"
export NODE_PATH="$NODE_DIR/node_modules"

# -- the bridge against the C compiler's layout and a probe plugin -------------------------
CC=${CC:-cc}
$CC -std=c11 -Wall -Wextra -Werror -I"$ROOT/abi" -o "$OUT/layout" "$E2E/layout.c"
$CC -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -I"$ROOT/abi" -fPIC -fvisibility=hidden -shared \
    -o "$OUT/probe-plugin.so" "$E2E/probe_plugin.c"
PROBE_SO="$OUT/probe-plugin.so" LC_SO="$SO" LAYOUT_BIN="$OUT/layout" \
    node --test "$E2E/bridge.test.mjs"

# -- the real Pi over a scripted multi-turn session ---------------------------------------
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-pi-e2e.XXXXXX")
mkdir -p "$T/home" "$T/agent" "$T/work" "$T/tmp"
printf '# demo project\n' >"$T/work/README.md"
status=0
HOME="$T/home" TMPDIR="$T/tmp" LOSSLESS_CONTEXT_SO="$SO" python3 "$E2E/pi_session.py" --pi "$PI" \
    --extension "$ROOT/host/pi/extension.js" --work "$T/work" --agent-dir "$T/agent" \
    --script "$E2E/fixtures/script.json" --steps "$E2E/fixtures/steps.json" --out "$T/out" || status=$?
if [ "$status" -eq 0 ]; then
    full=""
    [ "${LC_E2E_FULL:-1}" = "1" ] && full="--full"
    python3 "$E2E/check_session.py" "$T/out" "$T/agent" $full || status=$?
fi
if [ "$status" -ne 0 ]; then
    echo "--- pi stderr:"; tail -n 20 "$T/out/pi-stderr.txt" 2>/dev/null || true
    echo "--- bridge log:"; tail -n 20 "$T/agent/lcm/pi-bridge.log" 2>/dev/null || true
    echo "FAIL: Pi end-to-end session (kept in $T)"
    exit 1
fi
rm -rf "$T"

# -- the real Pi with the probe plugin: complete_async from a plugin thread -----------------
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-pi-probe.XXXXXX")
mkdir -p "$T/home" "$T/agent" "$T/work" "$T/tmp"
HOME="$T/home" TMPDIR="$T/tmp" LOSSLESS_CONTEXT_SO="$OUT/probe-plugin.so" python3 "$E2E/pi_session.py" \
    --pi "$PI" --extension "$ROOT/host/pi/extension.js" --work "$T/work" --agent-dir "$T/agent" \
    --script "$E2E/fixtures/probe_script.json" --steps "$E2E/fixtures/probe_steps.json" --out "$T/out" &&
    python3 "$E2E/check_probe.py" "$T/out" "$T/agent" || status=$?
if [ "$status" -ne 0 ]; then
    echo "--- pi stderr:"; tail -n 20 "$T/out/pi-stderr.txt" 2>/dev/null || true
    echo "--- bridge log:"; tail -n 20 "$T/agent/lcm/pi-bridge.log" 2>/dev/null || true
    echo "FAIL: Pi session with the probe plugin (kept in $T)"
    exit 1
fi
rm -rf "$T"
echo "pi e2e: passed"
