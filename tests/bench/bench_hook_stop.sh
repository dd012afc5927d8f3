#!/bin/sh
# The Stop hook's cost on a long transcript: a Claude Code transcript of N messages
# (default 10000), read whole once by `lcm hook stop` (the first call) and by `lcm import`,
# then one turn (4 messages) appended and `lcm hook stop` again, which reads only those.
# Prints the figures; asserts nothing about time (make bench reports, never judges).
# Usage: sh tests/bench/bench_hook_stop.sh [BUILD] [N]
BUILD=${1:-build}
N=${2:-10000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LCM="$BUILD/lcm"
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-hook.XXXXXX")
trap 'rm -rf "$T"' EXIT
SID=be4c0000-0000-4000-8000-000000000000
TR="$T/t.jsonl"
ms() { echo $(( ($2 - $1) / 1000000 )); }
python3 "$ROOT/tests/contract/claude_transcript.py" "$TR" --messages "$N" --session "$SID" --cwd "$T" || exit 1
IN="{\"session_id\":\"$SID\",\"transcript_path\":\"$TR\",\"cwd\":\"$T\",\"hook_event_name\":\"Stop\"}"
echo "transcript: $N messages, $(stat -c %s "$TR") bytes"
t0=$(date +%s%N); "$LCM" import --home "$T/full" "$TR" >/dev/null || exit 1; t1=$(date +%s%N)
echo "lcm import (whole file): $(ms "$t0" "$t1") ms"
t0=$(date +%s%N); echo "$IN" | "$LCM" hook stop --home "$T/h" || exit 1; t1=$(date +%s%N)
echo "first Stop (reads the whole file): $(ms "$t0" "$t1") ms"
best=""
for i in 1 2 3 4 5; do
    python3 "$ROOT/tests/contract/claude_transcript.py" "$TR" --messages 4 --session "$SID" --cwd "$T" --append || exit 1
    t0=$(date +%s%N); echo "$IN" | "$LCM" hook stop --home "$T/h" || exit 1; t1=$(date +%s%N)
    x=$(ms "$t0" "$t1")
    all="${all:+$all }$x"
    [ -z "$best" ] || [ "$x" -lt "$best" ] && best=$x
done
echo "incremental Stop (one turn of 4 messages appended), 5 runs: $all ms (best $best ms)"
n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from messages').fetchone()[0])" "$T/h/lcm/claude-$SID.sqlite")
echo "store rows after the incremental calls: $n (expected $((N + 20)))"
[ "$n" -eq $((N + 20)) ]
