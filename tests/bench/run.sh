#!/bin/sh
# The benchmarks (`make bench`): each figure is printed under the command that produced it.
# Usage: sh tests/bench/run.sh [BUILD]   (BUILD defaults to build; binaries must be built)
# Exit status: 1 when the replay's per-request cost is not flat (bench_replay.sh decides)
# or when a benchmark fails to run; the other figures are reported, not judged.
# BENCH_REPLAY_SIZES overrides the replay sizes (default 5000 10000 20000 40000);
# BENCH_CONTEXT_SIZES the context hook's history sizes (default 1000 10000 100000).
# Every figure group reports the peak RSS of the process that produced it.
# BENCH_TW_* size the turn-wait run (tests/bench/bench_turn_wait.sh; ~4 minutes at the
# default 120 rounds).
# BENCH_HYBRID_SIZES sizes the hybrid recall runs (default 100000; 1000000 takes minutes).
# BENCH_FLEET_AGENTS / BENCH_FLEET_MESSAGES size the fleet run (default 32 agents, 400 messages each).
# BENCH_HOOK_MESSAGES sizes the Stop hook's transcript (default 10000).
# BENCH_IMPORT_TOKENS / BENCH_IMPORT_ROUNDS size the import bench (default 20M tokens, 3).
# BENCH_SVG=FILE also draws the replay's cost per request against history size there.
# The whole output also lands in BUILD/bench/report.txt and, parsed, BUILD/bench/report.json.
# BENCH_TWP_* size the turn-wait run inside the real Pi (tests/bench/bench_turn_wait_pi.sh;
# ~75 s at the default 120 rounds; skipped when BUILD/e2e-node has no Pi).
BUILD=${1:-build}
if [ -z "${BENCH_TEE:-}" ]; then
    mkdir -p "$BUILD/bench"
    { BENCH_TEE=1 sh "$0" "$@"; echo $? >"$BUILD/bench/status"; } | tee "$BUILD/bench/report.txt"
    rc=$(cat "$BUILD/bench/status")
    python3 tests/bench/report.py "$BUILD/bench/report.txt" "$BUILD/bench/report.json"
    exit "$rc"
fi
SIZES=${BENCH_REPLAY_SIZES:-5000 10000 20000 40000}
CONTEXT_SIZES=${BENCH_CONTEXT_SIZES:-1000 10000 100000}
status=0
START=$(date +%s%N)

run() {
    echo "\$ $*"
    t0=$(date +%s%N)
    "$@" || { echo "FAILED (exit $?): $*"; status=1; }
    t1=$(date +%s%N)
    echo "section wall time: $(( (t1 - t0) / 1000000 )) ms"
    echo
}

echo "# lossless-context benchmarks on $(uname -sm), $(nproc 2>/dev/null || echo '?') cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "## replay: per-request cost through the real host + plugin (must be flat)"
REPLAY_OUT=$(mktemp "${TMPDIR:-/tmp}/lc-bench-replay.XXXXXX")
# shellcheck disable=SC2086
run sh -c 'out=$1; shift; sh tests/bench/bench_replay.sh "$@" >"$out"; rc=$?; cat "$out"; exit $rc' \
    sh "$REPLAY_OUT" "$BUILD" $SIZES
if [ -n "${BENCH_SVG:-}" ]; then
    python3 tests/eval/svg.py bench "$BENCH_SVG" <"$REPLAY_OUT" || status=1
    echo
fi
rm -f "$REPLAY_OUT"
echo "## store: ingest throughput, one more turn at 1k/10k/100k, query/pattern latency"
run "$BUILD/bench/bench_store"
echo "## the shared store: the same figures on PostgreSQL beside SQLite"
run sh tests/bench/bench_pg.sh "$BUILD"
echo "## a fleet on one PostgreSQL server: 32 agents replaying at once, the context hook and lcm grep --scope fleet"
run sh tests/bench/bench_fleet.sh "$BUILD"
echo "## lcm_grep ranked queries beside raw FTS5 (count, bm25 order, rowid order) on the same index"
run "$BUILD/bench/bench_recall" 100000
# lcm_grep across every session of a home of 1,000 stores of 1,000 messages each, beside the
# raw per-file FTS5 search of the same stores (building the home takes a few minutes).
run "$BUILD/bench/bench_sessions" "${BENCH_SESSIONS:-1000}" "${BENCH_SESSION_MESSAGES:-1000}" 3
echo "## hybrid recall: the cached int8 scan and the fused query beside the exact scans and FTS5-only lcm_grep"
# BENCH_HYBRID_SIZES="100000 1000000" adds the 1M-vector run (about 6 GB in TMPDIR, minutes to build).
for n in ${BENCH_HYBRID_SIZES:-100000}; do
    run "$BUILD/bench/bench_hybrid" "$n" 384
done
echo "## context hook: cost per call at growing history, JSON parse and serialization apart"
# shellcheck disable=SC2086
run "$BUILD/bench/bench_context" "$BUILD/lossless-context.so" $CONTEXT_SIZES
echo "## live context: render, parse + apply"
run "$BUILD/bench/bench_clm"
echo "## DAG: one compaction pass"
run "$BUILD/bench/bench_dag"
echo "## extractive summarizer"
run "$BUILD/bench/bench_summarize"
echo "## turn wait: answer to next request with the session model as summarizer (1.5 s a call), plugin vs host alone"
run sh tests/bench/bench_turn_wait.sh "$BUILD"
echo "## host thread: what the plugin costs the agent's own thread over a 20M-token session at a 128k window (worker / inline passes / host alone)"
run sh tests/bench/bench_host_thread.sh "$BUILD" "${BENCH_HT_TOKENS:-20000000}"
echo "## Claude Code Stop hook: an incremental Stop on a 10,000-message transcript beside a whole import"
run sh tests/bench/bench_hook_stop.sh "$BUILD" "${BENCH_HOOK_MESSAGES:-10000}"
echo "## lcm import beside the raw SQLite + FTS5 insert of the same texts (20M tokens, median of 3), then lcm compact"
run sh tests/bench/bench_import.sh "$BUILD" "${BENCH_IMPORT_TOKENS:-20000000}" "${BENCH_IMPORT_ROUNDS:-3}"
echo "## plugin: .so size and load time (20 host runs with and without it)"
run sh -c 'b=$1; h=$(mktemp -d); s=$(stat -c %s "$b/lossless-context.so");
    t0=$(date +%s%N); for i in $(seq 20); do "$b/agent-host" --home "$h" --session "$h/a.jsonl" --command "/help" >/dev/null 2>&1; done
    t1=$(date +%s%N); for i in $(seq 20); do "$b/agent-host" --home "$h" --plugin-dir "$b/plugins" --session "$h/b.jsonl" --command "/lcm help" >/dev/null 2>&1; done
    t2=$(date +%s%N)
    "$b/bench/bench_rss" -o "$h/rss" "$b/agent-host" --home "$h" --session "$h/c.jsonl" --command "/help" >/dev/null 2>&1
    "$b/bench/bench_rss" -o "$h/rss" "$b/agent-host" --home "$h" --plugin-dir "$b/plugins" --session "$h/d.jsonl" --command "/lcm help" >/dev/null 2>&1
    r0=$(sed -n 1p "$h/rss"); r1=$(sed -n 2p "$h/rss"); rm -rf "$h"
    echo "so size: $s bytes"; echo "host run without plugin: $(( (t1 - t0) / 20000 )) us"
    echo "host run with plugin (load, session start, a command, unload): $(( (t2 - t1) / 20000 )) us"
    echo "host peak RSS without plugin: $r0 kB"
    echo "host peak RSS with plugin: $r1 kB (+$(( r1 - r0 )) kB)"' sh "$BUILD"
echo "## turn wait inside the real Pi: answer to next request with Pi's model as summarizer (1.5 s a call)"
if [ -x "$BUILD/e2e-node/node_modules/.bin/pi" ]; then
    run sh tests/bench/bench_turn_wait_pi.sh "$BUILD"
else
    echo "skipped: no Pi in $BUILD/e2e-node (make test installs it through tests/e2e/run.sh)"
    echo
fi
echo "benchmarks total wall time: $(( ($(date +%s%N) - START) / 1000000 )) ms"
[ "$status" -eq 0 ] && echo "benchmarks: all ran" || echo "benchmarks: some failed (see above)"
exit "$status"
