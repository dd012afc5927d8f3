#!/bin/sh
# Turn-wait benchmark inside the real Pi (issue 13): how long Pi's agent loop waits between
# a model answer and its next request when the plugin's summarizer is Pi's own model.
# The real Pi 0.73.1 (BUILD/e2e-node, installed by tests/e2e/run.sh) runs one prompt in
# RPC mode with the real plugin (host/pi/extension.js + BUILD/lossless-context.so) against
# the loopback model tests/contract/fake_openai.py: 120 tool rounds, each a `bash` call printing
# ~8000 bytes (~2k tokens), agent answers after 0.5 s, summarizer answers after 1.5 s, a
# 64k window, lcm.json {"summarizer": "auto"} (every other setting at its default) and
# Pi's own settings at their defaults (its threshold compaction included). While the
# prompt runs, get_state is polled every 0.2 s (the event loop's responsiveness).
# tests/e2e/check_summ.py prints the figures (turn wait median / p95 / max / turns over
# 1 s, the summarizer requests Pi's model received and answered, the metrics' calls and
# fallbacks, the polls answered while a call was in flight). No figure is judged here;
# exit 1 only when the run fails. Skips (exit 0) when BUILD/e2e-node has no Pi.
# Usage: sh tests/bench/bench_turn_wait_pi.sh [BUILD]
# BENCH_TWP_ROUNDS (120), BENCH_TWP_BYTES (8000), BENCH_TWP_WINDOW (64000),
# BENCH_TWP_AGENT_DELAY (0.5), BENCH_TWP_SUMMARY_DELAY (1.5) change the run; KEEP=1 keeps
# the folder.
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case "$BUILD" in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
PI="$BUILD/e2e-node/node_modules/.bin/pi"
if [ ! -x "$PI" ] || ! command -v node >/dev/null 2>&1; then
    echo "SKIP: no Pi in $BUILD/e2e-node (tests/e2e/run.sh, run by make test, installs it)"
    exit 0
fi
ROUNDS=${BENCH_TWP_ROUNDS:-120}
BYTES=${BENCH_TWP_BYTES:-8000}
WINDOW=${BENCH_TWP_WINDOW:-64000}
ADELAY=${BENCH_TWP_AGENT_DELAY:-0.5}
SDELAY=${BENCH_TWP_SUMMARY_DELAY:-1.5}
E2E="$ROOT/tests/e2e"
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-twp.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home" "$T/agent" "$T/work" "$T/tmp"
printf '# demo project\n' >"$T/work/README.md"
printf '{"summarizer": "auto"}\n' >"$T/agent/lcm.json"
printf '[]\n' >"$T/script.json"
cat >"$T/steps.json" <<EOF
[{"prompt": "Run the checks, one round at a time, until they are all done.",
  "poll": "get_state", "interval": 0.2, "timeout": $((ROUNDS * 5 + 60))},
 {"idle": 3, "poll": "get_state", "interval": 0.2},
 "/lcm status"]
EOF
echo "run: real Pi $(node -p "require('$BUILD/e2e-node/node_modules/@mariozechner/pi-coding-agent/package.json').version" 2>/dev/null), $ROUNDS tool rounds of ~$BYTES bytes, window $WINDOW, agent answers ${ADELAY}s, summarizer answers ${SDELAY}s"
status=0
t0=$(date +%s%N)
HOME="$T/home" TMPDIR="$T/tmp" LOSSLESS_CONTEXT_SO="$BUILD/lossless-context.so" \
    NODE_PATH="$BUILD/e2e-node/node_modules" python3 "$E2E/pi_session.py" --pi "$PI" \
    --extension "$ROOT/host/pi/extension.js" --work "$T/work" --agent-dir "$T/agent" \
    --script "$T/script.json" --steps "$T/steps.json" --out "$T/out" \
    --fake-arg=--record-answers --fake-arg=--summary-tag=PI-SCRIPTED-SUMMARY \
    --fake-arg=--agent-delay="$ADELAY" --fake-arg=--summary-delay="$SDELAY" \
    --fake-arg=--tool-rounds="$ROUNDS" --fake-arg=--tool-bytes="$BYTES" --context-window "$WINDOW" ||
    { echo "the Pi run failed"; tail -n 5 "$T/out/pi-stderr.txt" 2>/dev/null; status=1; }
t1=$(date +%s%N)
echo "pi run wall time: $(( (t1 - t0) / 1000000 )) ms"
python3 "$E2E/check_summ.py" "$T/out" "$T/agent" --window "$WINDOW" --label "pi" || status=1
echo "pi threshold compactions: $(grep -c '"type":"compaction_start"' "$T/out/events.jsonl" 2>/dev/null || true) compactions"
python3 - "$T/out/notes.json" <<'PY' || true
import json, sys
for s in json.load(open(sys.argv[1])):
    if s["step"] == "/lcm status":
        for n in s["notes"]:
            for line in (n or "").splitlines():
                if line.startswith(("summarizer", "LCM:", "context:")):
                    print("pi /lcm status -> " + line.replace(":", " =", 1))
PY
[ -n "${KEEP:-}" ] && echo "kept: $T"
exit $status
