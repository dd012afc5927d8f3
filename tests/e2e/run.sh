#!/bin/sh
# run.sh -- the Pi bridge's tests: the bridge unit tests (node:test, no Pi), the
# end-to-end session with the real Pi coding agent against a scripted fake provider, a
# real Pi session with the probe plugin (complete_async from a plugin thread), and a real
# Pi session long enough that the plugin's background worker has Pi's model summarize
# (tests/contract/fake_openai.py answers summarizer requests after 1.5 s, agent requests
# after 0.3 s; check_summ.py checks that they arrived and succeeded, that a summary holds the
# model's text, and that Pi answered get_state polls promptly while a call was in flight).
#
# Two Pis: everything runs on the current one (@earendil-works/pi-coding-agent 1.6.0 under
# the pinned Node.js 22 of tests/e2e/package-lock.json); the oldest supported one
# (@mariozechner/pi-coding-agent 0.73.1 of tests/e2e/pi-0.73, on the machine's node) runs a
# short smoke: the summarized session with fewer rounds, whose summaries are Pi's model's.
#
#   sh tests/e2e/run.sh [BUILD]          BUILD defaults to ./build (needs `make` first)
#   LC_E2E_FULL=0 sh tests/e2e/run.sh    skip issue 9's live-context and store claims
#   LC_E2E_SUMM_ROUNDS=120 LC_E2E_OLD_ROUNDS=120 LC_E2E_SUMM_WINDOW=64000 sh tests/e2e/run.sh
#                                        the summarized session longer, on both Pis (a measurement)
#
# Installs the pinned packages (Pi and node; Pi 0.73.1 and its koffi; the bridge's koffi)
# into BUILD/e2e-node, BUILD/e2e-node-pi073 and BUILD/e2e-koffi once each (re-installed when
# a lock file changes). Nothing touches the real home: HOME
# and PI_CODING_AGENT_DIR point into a temp folder, kept on failure.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/e2e/lib.sh"
PATH0=$PATH
# -- pinned packages, cached in the build folder -------------------------------------------
e2e_begin "${1:-}" "" e2e-node pi "Pi 1.6.0 and Node.js 22" lossless-context.so
PI=$NODE_BIN
e2e_koffi
SO="$BUILD/lossless-context.so"
OUT="$BUILD/e2e"
mkdir -p "$OUT"
# koffi for the bridge, Pi's packages for the bridge tests' lookups outside Pi.
export NODE_PATH="$KOFFI_PATH:$NODE_DIR/node_modules"
echo "pi e2e: Pi $("$PI" --version 2>&1 | tail -n 1) on node $(node --version)"

# -- the bridge against the C compiler's layout and a probe plugin -------------------------
CC=${CC:-cc}
$CC -std=c11 -Wall -Wextra -Werror -I"$ROOT/abi" -o "$OUT/layout" "$E2E/layout.c"
$CC -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -I"$ROOT/abi" -fPIC -fvisibility=hidden -shared \
    -o "$OUT/probe-plugin.so" "$E2E/probe_plugin.c"
PROBE_SO="$OUT/probe-plugin.so" LC_SO="$SO" LAYOUT_BIN="$OUT/layout" \
    node --test "$E2E/bridge.test.mjs"

# pi_begin NAME: a fresh temporary folder T for one Pi session (home, agent dir, work, tmp).
pi_begin() {
    T=$(mktemp -d "${TMPDIR:-/tmp}/lc-pi-$1.XXXXXX")
    mkdir -p "$T/home" "$T/agent" "$T/work" "$T/tmp"
}

# pi_session SO ARGS...: the real Pi in T with the bridge loading SO; ARGS go to pi_session.py.
pi_session() {
    _so=$1
    shift
    HOME="$T/home" TMPDIR="$T/tmp" LOSSLESS_CONTEXT_SO="$_so" python3 "$E2E/pi_session.py" --pi "$PI" \
        --extension "$ROOT/host/pi/extension.js" --work "$T/work" --agent-dir "$T/agent" --out "$T/out" "$@"
}

# pi_end WHAT: on a non-zero $status, the ends of Pi's stderr and the bridge log and a FAIL
# naming WHAT (T is kept); else T is removed.
pi_end() {
    if [ "$status" -ne 0 ]; then
        echo "--- pi stderr:"; tail -n 20 "$T/out/pi-stderr.txt" 2>/dev/null || true
        echo "--- bridge log:"; tail -n 20 "$T/agent/lcm/pi-bridge.log" 2>/dev/null || true
        echo "FAIL: $1 (kept in $T)"
        exit 1
    fi
    rm -rf "$T"
}

# -- the real Pi over a scripted multi-turn session ---------------------------------------
pi_begin e2e
printf '# demo project\n' >"$T/work/README.md"
status=0
pi_session "$SO" --script "$E2E/fixtures/script.json" --steps "$E2E/fixtures/steps.json" || status=$?
if [ "$status" -eq 0 ]; then
    full=""
    [ "${LC_E2E_FULL:-1}" = "1" ] && full="--full"
    python3 "$E2E/check_session.py" "$T/out" "$T/agent" $full || status=$?
fi
pi_end "Pi end-to-end session"

# -- the real Pi with the probe plugin: complete_async from a plugin thread -----------------
pi_begin probe
pi_session "$OUT/probe-plugin.so" --script "$E2E/fixtures/probe_script.json" \
    --steps "$E2E/fixtures/probe_steps.json" &&
    python3 "$E2E/check_probe.py" "$T/out" "$T/agent" || status=$?
pi_end "Pi session with the probe plugin"

# -- the real Pi, the real plugin, summaries by Pi's own model ------------------------------
# A 32k window, leaf chunks of 8k tokens and ROUNDS tool rounds of ~750 tokens: summaries
# are due after about 16 rounds, and one 1.5-s call covers more than the rounds of those
# 1.5 s add, so the worker keeps up (when it cannot, the plugin covers the request with
# truncation and drops the call in flight, which metrics count as a failed call). Pi's own
# threshold compaction (default reserve 16384 tokens, i.e. at 15.6k of 32k) is moved past
# the plugin's swap line (70%), so it is the plugin's worker that summarizes, not the
# host's compaction (which invalidates the worker and its call in flight too).
# summ_scenario LABEL ROUNDS: that session in the Pi of $PI, checked by check_summ.py.
SUMM_WINDOW=${LC_E2E_SUMM_WINDOW:-32000}
summ_scenario() {
    pi_begin summ
    printf '# demo project\n' >"$T/work/README.md"
    cp "$E2E/fixtures/summ_lcm.json" "$T/agent/lcm.json"
    status=0
    pi_session "$SO" --script "$E2E/fixtures/summ_script.json" --steps "$E2E/fixtures/summ_steps.json" \
        --fake-arg=--record-answers --fake-arg=--summary-tag=PI-SCRIPTED-SUMMARY \
        --fake-arg=--agent-delay=0.3 --fake-arg=--summary-delay=1.5 \
        --fake-arg=--tool-rounds="$2" --fake-arg=--tool-bytes=3000 --context-window "$SUMM_WINDOW" \
        --settings '{"compaction": {"reserveTokens": 4000}}' &&
        python3 "$E2E/check_summ.py" "$T/out" "$T/agent" --window "$SUMM_WINDOW" --check --label "$1" ||
        status=$?
    pi_end "$1: Pi session summarized by Pi's model"
}
summ_scenario "pi 1.6.0 summaries" "${LC_E2E_SUMM_ROUNDS:-36}"

# -- pi install: the repository as a Pi package, from a local path --------------------------
# A copy of the checkout with no .so and no node_modules, as a fresh clone has; its object
# files are copied along, so the `make` the extension runs only links the .so (a fresh
# clone compiles first: the same make, minutes on a small machine). `pi install PKG`, then a
# Pi session with no -e, no LOSSLESS_CONTEXT_SO and no NODE_PATH: the extension builds the
# .so and installs koffi itself, and the plugin's tools, the package's skill, the store and
# /lcm status all work.
pi_begin install
PKG="$T/pkg"
mkdir -p "$PKG/build"
tar -C "$ROOT" --exclude=./build --exclude=./.git --exclude=node_modules --exclude=__pycache__ -cf - . |
    tar -C "$PKG" -xf -
cp -pR "$BUILD/obj" "$BUILD/libengine.a" "$PKG/build/"
[ ! -f "$BUILD/.deps-ok" ] || cp -p "$BUILD/.deps-ok" "$PKG/build/"
status=0
HOME="$T/home" PI_CODING_AGENT_DIR="$T/agent" PI_OFFLINE=1 "$PI" install "$PKG" >"$T/install.txt" 2>&1 ||
    { cat "$T/install.txt"; status=1; }
if [ "$status" -eq 0 ]; then
    printf '# demo project\n' >"$T/work/README.md"
    (unset NODE_PATH LOSSLESS_CONTEXT_SO
     HOME="$T/home" TMPDIR="$T/tmp" python3 "$E2E/pi_session.py" --pi "$PI" --extension "" \
        --work "$T/work" --agent-dir "$T/agent" --out "$T/out" \
        --script "$E2E/fixtures/install_script.json" --steps "$E2E/fixtures/install_steps.json") &&
        python3 "$E2E/check_install.py" "$PKG" "$T/out" "$T/agent" || status=$?
fi
pi_end "Pi with lossless-context installed by pi install from a local path"

# -- the oldest supported Pi: the same session, shorter ------------------------------------
# 24 rounds: summaries are due after about 16, so Pi 0.73.1's model answers one or two calls.
PATH=$PATH0
e2e_begin "$BUILD" pi-0.73 e2e-node-pi073 pi "Pi 0.73.1 and koffi" lossless-context.so
PI=$NODE_BIN
export NODE_PATH="$NODE_DIR/node_modules"
E2E="$ROOT/tests/e2e"
echo "pi e2e: Pi $("$PI" --version 2>&1 | tail -n 1) on node $(node --version)"
summ_scenario "pi 0.73.1 summaries" "${LC_E2E_OLD_ROUNDS:-24}"
echo "pi e2e: passed"
