#!/bin/sh
# Turn-wait benchmark (issue 13): how long the agent waits between a model answer and its
# next request when the plugin's summarizer is the session model. The reference host runs
# one prompt live against the loopback scripted model (tests/contract/fake_openai.py):
# 120 tool rounds, each a `bash` call printing ~8000 bytes (~2k tokens), agent answers
# taking 0.5 s and summarizer answers 1.5 s, a 64k window, LCM's summarizer chain "auto"
# (the session model, through the host's completion service). The fake's record gives
# each request's kind, arrival and answer time; tests/bench/turn_wait.py turns it into one
# line per figure. A value planted in the first tool output must still be found by
# lcm_grep at the end (a second host run on the same session). The same run without the
# plugin is the reference: the waits of the host alone, and their ratio.
# No figure is judged here (wall-clock numbers are not test assertions); exit 1 only when a
# run fails. Usage: sh tests/bench/bench_turn_wait.sh [BUILD]
# BENCH_TW_ROUNDS (120), BENCH_TW_BYTES (8000), BENCH_TW_WINDOW (64000),
# BENCH_TW_AGENT_DELAY (0.5), BENCH_TW_SUMMARY_DELAY (1.5) change the run;
# BENCH_TW_VARIANTS ("plugin alone") picks the runs; KEEP=1 keeps the folder.
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case "$BUILD" in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
ROUNDS=${BENCH_TW_ROUNDS:-120}
BYTES=${BENCH_TW_BYTES:-8000}
WINDOW=${BENCH_TW_WINDOW:-64000}
ADELAY=${BENCH_TW_AGENT_DELAY:-0.5}
SDELAY=${BENCH_TW_SUMMARY_DELAY:-1.5}
VARIANTS=${BENCH_TW_VARIANTS:-plugin alone}
NEEDLE="TW_NEEDLE_FIRST_OUTPUT=7d41c9"
HOST="$BUILD/agent-host"
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-tw.XXXXXX")
SERVER_PID=""
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"; }
trap cleanup EXIT
status=0
echo "the run -- $ROUNDS tool rounds of ~$BYTES bytes, window $WINDOW, agent answers ${ADELAY} s, summarizer answers ${SDELAY} s"

start_fake() { # RECORD
    : >"$T/port"
    python3 "$ROOT/tests/contract/fake_openai.py" --port 0 --record "$1" --record-answers \
        --agent-delay "$ADELAY" --summary-delay "$SDELAY" --tool-rounds "$ROUNDS" \
        --tool-bytes "$BYTES" --plant "$NEEDLE" >"$T/port" 2>"$T/server.err" &
    SERVER_PID=$!
    i=0
    while [ ! -s "$T/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
    PORT=$(head -n 1 "$T/port")
    [ -n "$PORT" ] || { cat "$T/server.err"; echo "the fake model did not start"; exit 1; }
}

stop_fake() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
}

for v in $VARIANTS; do
    D="$T/$v"
    mkdir -p "$D/home" "$D/work"
    # The default chain, written out so a user's own default cannot change the run.
    printf '{"summarizer": "auto"}\n' >"$D/home/lcm.json"
    if [ "$v" = plugin ]; then PLUG="--plugin-dir $BUILD/plugins"; LABEL="with plugin"; else PLUG=""; LABEL="host alone"; fi
    start_fake "$D/rec.jsonl"
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    "$HOST" --home "$D/home" $PLUG --session "$D/s.jsonl" --cwd "$D/work" \
        --base-url "http://127.0.0.1:$PORT/v1" --model fake --window "$WINDOW" \
        --max-turns $((ROUNDS + 10)) -p "Run the checks, one round at a time, until they are all done." \
        >"$D/out.txt" 2>"$D/err.txt" || { echo "$LABEL: the host run failed:"; tail -n 5 "$D/err.txt"; status=1; }
    t1=$(date +%s%N)
    stop_fake
    echo "$LABEL host run wall time: $(( (t1 - t0) / 1000000 )) ms"
    GREP=""
    # The figures count this run's summarizer calls only: the grep run below opens the
    # session without a model, and its own pass would add "no session model" fallbacks.
    cp "$D/home/lcm/metrics.jsonl" "$D/metrics.jsonl" 2>/dev/null || : >"$D/metrics.jsonl"
    if [ "$v" = plugin ]; then
        "$HOST" --home "$D/home" $PLUG --session "$D/s.jsonl" --cwd "$D/work" \
            --tool lcm_grep "{\"pattern\":\"$NEEDLE\"}" >"$D/grep.txt" 2>&1 || status=1
        GREP="--grep-output $D/grep.txt --needle $NEEDLE"
    fi
    # shellcheck disable=SC2086
    python3 "$ROOT/tests/bench/turn_wait.py" --record "$D/rec.jsonl" --window "$WINDOW" \
        --label "$LABEL" --metrics "$D/metrics.jsonl" $GREP --json "$D/fig.json" || status=1
done
if [ -s "$T/plugin/fig.json" ] && [ -s "$T/alone/fig.json" ]; then
    python3 - "$T/plugin/fig.json" "$T/alone/fig.json" <<'PY'
import json, sys
p, h = (json.load(open(f)) for f in sys.argv[1:3])
for k, name in (("wait_median", "median"), ("wait_p95", "p95")):
    base = max(h[k], 0.001)  # a host-alone wait under 1 ms is counted as 1 ms
    print("turn wait %s ratio (with plugin / host alone): %.1f x (%.3f s / %.3f s)" % (name, p[k] / base, p[k], h[k]))
PY
fi
[ -n "${KEEP:-}" ] && echo "kept: $T"
exit $status
