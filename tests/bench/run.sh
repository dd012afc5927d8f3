#!/bin/sh
# The benchmarks (`make bench`): each figure is printed under the command that produced it.
# Usage: sh tests/bench/run.sh [BUILD]   (BUILD defaults to build; binaries must be built)
# Exit status: 1 when the replay's per-request cost is not flat (bench_replay.sh decides)
# or when a benchmark fails to run; the other figures are reported, not judged.
# BENCH_REPLAY_SIZES overrides the replay sizes (default 5000 10000 20000 40000).
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
# shellcheck disable=SC2086
run sh tests/bench/bench_replay.sh "$BUILD" $SIZES
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
