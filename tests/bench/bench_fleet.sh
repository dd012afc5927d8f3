#!/bin/sh
# tests/bench/bench_fleet.sh BUILD [AGENTS] [MESSAGES]: a fleet on one PostgreSQL server
# (tests/pg/pg.sh). AGENTS reference hosts (default 32, BENCH_FLEET_AGENTS), each with its
# own agent home and the plugin, replay their own generated session of MESSAGES messages
# (default 400, BENCH_FLEET_MESSAGES) at once into the one database, while `lcm grep
# --scope fleet` runs in a loop over every session. Prints the p50 / p99 of the plugin's
# `context` hook (the host's --trace records each call's microseconds) and of the grep's
# wall time, each beside its reference measured in the same run: the context hook of one
# agent replaying the same size of session alone, and the grep over the whole fleet's rows
# with no writer. Skipped, with a line saying so, when the server binaries are missing.
BUILD=${1:-build}
N=${2:-${BENCH_FLEET_AGENTS:-32}}
M=${3:-${BENCH_FLEET_MESSAGES:-400}}
HOST="$BUILD/agent-host"
LCM="$BUILD/lcm"
PLUGINS="$BUILD/plugins"
. tests/pg/pg.sh
pg_available || { echo "skipped: no PostgreSQL server binaries (the postgresql package)"; exit 0; }
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-fleet.XXXXXX")
pg_start >/dev/null || { echo "the PostgreSQL server did not start"; rm -rf "$T"; exit 1; }
trap 'pg_stop; rm -rf "$T"' EXIT
now_ns() { date +%s%N; }
QUERY="parser queue"

replay() { # replay K: agent K's own session, its context hooks timed in its trace
    "$HOST" --home "$T/h-$1" --plugin-dir "$PLUGINS" --session "$T/out-$1.jsonl" --trace "$T/trace-$1.jsonl" \
        --window 16000 replay "$T/in-$1.jsonl" >"$T/replay-$1.txt" 2>&1
}
grep_once() { # one fleet-wide grep; its wall time in ms appended to FILE
    g0=$(now_ns)
    "$LCM" grep --home "$T/g" --scope fleet "$QUERY" >"$T/grep-out.txt" 2>&1 || { cat "$T/grep-out.txt"; return 1; }
    g1=$(now_ns)
    echo $(( (g1 - g0) / 1000 )) >>"$1"
}
for k in $(seq 0 "$N"); do
    mkdir -p "$T/h-$k"
    "$HOST" gen --seed "$((k + 100))" --messages "$M" "$T/in-$k.jsonl" >/dev/null || exit 1
done
mkdir -p "$T/g"
printf '{"fleetRecall":true}\n' >"$T/g/lcm.json"

# The reference: agent 0 alone on the server.
replay 0 || { tail -5 "$T/replay-0.txt"; exit 1; }
# The fleet: agents 1..N at once, and the grep looping until the last of them is done.
pids=""
t0=$(now_ns)
for k in $(seq 1 "$N"); do
    replay "$k" &
    pids="$pids $!"
done
: >"$T/grep-busy.txt"
while :; do
    alive=0
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 1 ] || break
    grep_once "$T/grep-busy.txt" || exit 1
done
failed=0
for p in $pids; do wait "$p" || failed=$((failed + 1)); done
t1=$(now_ns)
[ "$failed" = 0 ] || { echo "$failed of $N replays failed"; tail -5 "$T"/replay-1.txt; exit 1; }
# The grep's reference: the same query over the same rows, nothing writing.
: >"$T/grep-idle.txt"
for i in $(seq 1 20); do grep_once "$T/grep-idle.txt" || exit 1; done
grep -q "$(echo "$QUERY" | cut -d' ' -f1)" "$T/grep-out.txt" || { echo "the fleet grep found nothing"; exit 1; }

python3 - "$T" "$N" "$M" "$(( (t1 - t0) / 1000000 ))" <<'PY'
import json, sys
t, n, m, wall = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")
def hooks(ks):
    out = []
    for k in ks:
        for line in open("%s/trace-%d.jsonl" % (t, k)):
            r = json.loads(line)
            if r.get("event") == "context" and r.get("plugin") == "lossless-context" and "us" in r:
                out.append(r["us"] / 1000.0)
    return out
def ms(f):
    return [int(x) / 1000.0 for x in open("%s/%s" % (t, f)) if x.strip()]
alone, fleet = hooks([0]), hooks(range(1, n + 1))
busy, idle = ms("grep-busy.txt"), ms("grep-idle.txt")
stored = n * m
print("%d agents on one PostgreSQL server, each replaying its own %d-message session: %d context hooks in %d ms"
      % (n, m, len(fleet), wall))
print("context hook, %d agents at once: p50 %.1f ms, p99 %.1f ms; one agent alone (reference): p50 %.1f ms,"
      " p99 %.1f ms; ratio p50 %.2fx, p99 %.2fx" % (n, pct(fleet, .5), pct(fleet, .99), pct(alone, .5),
      pct(alone, .99), pct(fleet, .5) / max(pct(alone, .5), 1e-9), pct(fleet, .99) / max(pct(alone, .99), 1e-9)))
print("lcm grep --scope fleet while they write (%d runs): p50 %.1f ms, p99 %.1f ms; with no writer over the same"
      " %d sessions (reference, %d runs): p50 %.1f ms, p99 %.1f ms; ratio p50 %.2fx, p99 %.2fx"
      % (len(busy), pct(busy, .5), pct(busy, .99), n + 1, len(idle), pct(idle, .5), pct(idle, .99),
         pct(busy, .5) / max(pct(idle, .5), 1e-9), pct(busy, .99) / max(pct(idle, .99), 1e-9)))
PY
