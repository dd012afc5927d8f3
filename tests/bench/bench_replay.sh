#!/bin/sh
# Replay benchmark: generated sessions of 5k, 10k, 20k and 40k messages replayed through
# the plugins by the reference host; prints the cost per request (one `context` +
# `before_provider_request` per assistant message). The hot path is O(new), so the cost
# per request must stay flat as the history grows; exits 1 when the 40k cost exceeds
# 3x the 5k cost. The last column is the replaying host's peak RSS (BUILD/bench/bench_rss
# reads it from wait4). Usage: sh tests/bench/bench_replay.sh [BUILD] [SIZES...]
# BENCH_PLUGINS=DIR replays through another plugin directory (e.g. one holding only the
# example plugin, to measure the host alone).
BUILD=${1:-build}
[ $# -gt 0 ] && shift
SIZES=${*:-5000 10000 20000 40000}
HOST="$BUILD/agent-host"
RSS="$BUILD/bench/bench_rss"
PLUGINS=${BENCH_PLUGINS:-$BUILD/plugins}
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
now_ns() { date +%s%N; }
printf '%-9s %-9s %-10s %-12s %-10s %s\n' messages requests seconds us/request bytes peak_rss_kB
first=""; last=""
for n in $SIZES; do
    "$HOST" gen --seed 11 --messages "$n" "$T/in-$n.jsonl" >/dev/null || exit 1
    t0=$(now_ns)
    out=$("$RSS" -o "$T/rss-$n" "$HOST" --home "$T/home-$n" --plugin-dir "$PLUGINS" --session "$T/out-$n.jsonl" \
        replay "$T/in-$n.jsonl" --window 1000000000) || { echo "replay of $n failed"; exit 1; }
    t1=$(now_ns)
    req=$(echo "$out" | sed -n 's/.*: \([0-9]*\) requests.*/\1/p')
    us=$(( (t1 - t0) / 1000 / (req > 0 ? req : 1) ))
    printf '%-9s %-9s %-10s %-12s %-10s %s\n' "$n" "$req" "$(( (t1 - t0) / 1000000 ))ms" "$us" \
        "$(wc -c <"$T/in-$n.jsonl")" "$(tail -n 1 "$T/rss-$n")"
    [ -z "$first" ] && first=$us
    last=$us
done
if [ "$first" -gt 0 ] && [ "$last" -gt $((first * 3)) ]; then
    echo "per-request cost grew from ${first}us to ${last}us: not flat"
    exit 1
fi
echo "per-request cost: ${first}us at the smallest size, ${last}us at the largest (flat)"
