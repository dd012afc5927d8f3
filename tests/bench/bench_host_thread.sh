#!/bin/sh
# What the plugin costs the agent's own thread over a long session: a generated session of
# TOKENS tokens (default 20M, ~38k messages) replayed at a 128k window with the extractive
# summarizer, through the full lifecycle, three ways in one run:
#   worker   the default: summaries on the background worker
#   inline   summaryWorker false: every pass on the host thread between turns (the design
#            before the worker)
#   host     the host alone with the example plugin (the floor)
# Prints, per way, the host thread's CPU per request (the replay's own clock,
# CLOCK_THREAD_CPUTIME_ID), the other threads' CPU, the wall time per request and the
# summaries made. Usage: sh tests/bench/bench_host_thread.sh [BUILD] [TOKENS]
BUILD=${1:-build}
TOKENS=${2:-20000000}
HOST="$BUILD/agent-host"
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-ht.XXXXXX")
trap 'rm -rf "$T"' EXIT
now_ns() { date +%s%N; }
"$HOST" gen --seed 3 --tokens "$TOKENS" "$T/in.jsonl" >/dev/null || exit 1
mkdir -p "$T/example/example"
cp "$BUILD/tests/example-plugin.so" "$T/example/example/"
printf '{"name":"example","version":"1.0.0","abiVersion":1,"library":"example-plugin.so"}\n' \
    >"$T/example/example/plugin.json"
msgs=$(grep -c '"type":"message"' "$T/in.jsonl")
printf 'session: %s tokens, %s messages, %s bytes; window 128000\n' "$TOKENS" "$msgs" "$(wc -c <"$T/in.jsonl")"
printf '%-8s %-9s %-22s %-20s %-14s %s\n' way requests host_thread_ms/request other_threads_cpu_ms wall_ms/request summaries
for way in worker inline host; do
    h="$T/home-$way"
    mkdir -p "$h"
    plugins="$BUILD/plugins"
    case $way in
        inline) printf '{"summaryWorker":false}\n' >"$h/lcm.json" ;;
        host) plugins="$T/example" ;;
    esac
    t0=$(now_ns)
    out=$("$HOST" --home "$h" --plugin-dir "$plugins" --session "$T/out-$way.jsonl" --window 128000 \
        replay "$T/in.jsonl") || { echo "replay ($way) failed"; exit 1; }
    t1=$(now_ns)
    req=$(echo "$out" | sed -n 's/.*: \([0-9]*\) requests.*/\1/p')
    ht=$(echo "$out" | sed -n 's/^host thread: .* CPU, \([0-9.]*\) ms a request.*/\1/p')
    other=$(echo "$out" | sed -n 's/.*other threads: \([0-9]*\) ms CPU.*/\1/p')
    db=$(ls "$h"/lcm/*.sqlite 2>/dev/null | head -n 1)
    sums=$([ -n "$db" ] && sqlite3 "$db" "SELECT count(*) FROM summaries" 2>/dev/null || echo 0)
    wall=$(awk -v a="$t0" -v b="$t1" -v r="$req" 'BEGIN { printf "%.3f", (b - a) / 1e6 / (r > 0 ? r : 1) }')
    printf '%-8s %-9s %-22s %-20s %-14s %s\n' "$way" "$req" "$ht" "$other" "$wall" "$sums"
done
