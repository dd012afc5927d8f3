#!/bin/sh
# The benchmarks (`make bench`): each figure is printed under the command that produced it.
# Usage: sh tests/bench/run.sh [BUILD]   (BUILD defaults to build; binaries must be built)
# Exit status: 1 when the replay's per-request cost is not flat (bench_replay.sh decides)
# or when a benchmark fails to run; the other figures are reported, not judged.
# BENCH_REPLAY_SIZES overrides the replay sizes (default 5000 10000 20000 40000).
# BENCH_SVG=FILE also draws the replay's cost per request against history size there.
BUILD=${1:-build}
SIZES=${BENCH_REPLAY_SIZES:-5000 10000 20000 40000}
status=0

run() {
    echo "\$ $*"
    "$@" || { echo "FAILED (exit $?): $*"; status=1; }
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
echo "## live context: render, parse + apply"
run "$BUILD/bench/bench_clm"
echo "## DAG: one compaction pass"
run "$BUILD/bench/bench_dag"
echo "## extractive summarizer"
run "$BUILD/bench/bench_summarize"
[ "$status" -eq 0 ] && echo "benchmarks: all ran" || echo "benchmarks: some failed (see above)"
exit "$status"
