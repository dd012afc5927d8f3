#!/bin/sh
# `lcm import` beside its reference, in one run: a generated session of TOKENS tokens
# (default 20M; `agent-host gen --seed 3`), written also as a Claude Code transcript of the
# same texts (pi_to_claude.py), then ROUNDS times (default 3) in turn:
#   reference   bench_sqlite_fts5_ref: the raw SQLite + FTS5 insert of the same derived
#               texts in one transaction (texts read before its clock starts), in WAL
#   rollback    the same insert through a rollback journal, the journal `lcm import` writes
#               a new store with (each page once; WAL writes it twice): the import's share
#               of it is printed too, so neither journal flatters the ratio
#   claude      `lcm import` of the Claude Code transcript (the whole process)
#   pi          `lcm import` of the Pi session file (the whole process)
# Rates are text MB (10^6 bytes of the derived texts) per second of wall time and per
# second of CPU (user + system; a shared machine disturbs it least); the medians of the
# rounds are printed with each import's share of the reference. Then `lcm compact` of
# the imported Claude store (extractive), once, and each store's bytes per message and size
# beside its derived text, and import + compact beside issue 28's reference figure for
# lossless-code (80.7 s; quoted, not run here).
# Prints the figures; asserts nothing about time (make bench reports, never judges).
# Usage: sh tests/bench/bench_import.sh [BUILD] [TOKENS] [ROUNDS]
BUILD=${1:-build}
TOKENS=${2:-20000000}
ROUNDS=${3:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-import.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$BUILD/agent-host" gen --seed 3 --tokens "$TOKENS" "$T/pi.jsonl" >/dev/null || exit 1
python3 "$ROOT/tests/bench/pi_to_claude.py" "$T/pi.jsonl" "$T/cc.jsonl" || exit 1
# One timed command: "WALL CPU" seconds on stdout, its own output in $T/out.
timed() {
    python3 - "$T/out" "$@" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
with open(sys.argv[1], "w") as out:
    rc = subprocess.call(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %.3f" % (wall, ru.ru_utime + ru.ru_stime))
sys.exit(rc)
PY
}
# One reference insert (bench_sqlite_fts5_ref with ARGS): "WALL CPU" seconds on stdout, its
# output line in $T/ref.txt.
reference() {
    rm -f "$T/ref.db"*
    "$BUILD/bench/bench_sqlite_fts5_ref" "$T/pi.jsonl" "$T/ref.db" "$@" >"$T/ref.txt" || { cat "$T/ref.txt" >&2; return 1; }
    sed -n 's/.*bytes, \([0-9.]*\) s wall.*, \([0-9.]*\) s CPU.*/\1 \2/p' "$T/ref.txt"
}
: >"$T/rounds"
for r in $(seq "$ROUNDS"); do
    ref=$(reference) || exit 1
    refr=$(reference rollback) || exit 1
    rm -rf "$T/hc" "$T/hp"
    cc=$(timed "$BUILD/lcm" import --home "$T/hc" "$T/cc.jsonl") || { cat "$T/out"; exit 1; }
    pi=$(timed "$BUILD/lcm" import --home "$T/hp" "$T/pi.jsonl") || { cat "$T/out"; exit 1; }
    echo "$ref $refr $cc $pi" >>"$T/rounds"
    echo "round $r: reference $ref, rollback $refr, lcm import claude $cc, lcm import pi $pi (s wall, s CPU)"
done
head -1 "$T/ref.txt" | sed 's/, [0-9.]* s wall.*//; s/^reference: /texts: /'
msgs=$(sed -n 's/^reference: \([0-9]*\) texts.*/\1/p' "$T/ref.txt")
bytes=$(sed -n 's/.* texts, \([0-9]*\) bytes.*/\1/p' "$T/ref.txt")
python3 - "$T/rounds" "$bytes" "$ROUNDS" "$T/claude_median" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
mb = int(sys.argv[2]) / 1e6
med = [statistics.median(r[i] for r in rows) for i in range(8)]
names = ["reference (raw SQLite + FTS5, one transaction)", "reference, rollback journal",
         "lcm import, Claude Code transcript", "lcm import, Pi session file"]
print("median of %s rounds, %.1f MB of text:" % (sys.argv[3], mb))
for k, name in enumerate(names):
    w, c = med[2 * k], med[2 * k + 1]
    line = "  %-48s %7.2f s wall %6.1f MB/s   %6.2f s CPU %6.1f MB/s" % (name, w, mb / w, c, mb / c)
    if k >= 2:
        line += "   = %3.0f%% of the reference (wall), %3.0f%% (CPU); of the rollback one %3.0f%%, %3.0f%%" % (
            100 * med[0] / w, 100 * med[1] / c, 100 * med[2] / w, 100 * med[3] / c)
    print(line)
open(sys.argv[4], "w").write("%.3f %.3f\n" % (med[4], med[5]))
PY
SID=$(sed -n 's/.*session \(claude-[^,]*\),.*/\1/p' "$T/out" | head -1)
[ -n "$SID" ] || SID=claude-$(sed -n 's/.*"sessionId": "\([^"]*\)".*/\1/p' "$T/cc.jsonl" | head -1)
# Each store's size beside the derived text it holds (issue 17: at most 2x), and where its
# bytes go (SQLite's dbstat, when the library has it).
for h in hc hp; do
    store=$(ls "$T/$h/lcm/"*.sqlite)
    sz=$(stat -c %s "$store")
    echo "store ($( [ $h = hc ] && echo Claude Code || echo Pi )): $sz bytes for $msgs messages, $(( sz / msgs )) bytes a message;" \
        "derived text $bytes bytes ($(( bytes / msgs )) a message): the store is $(echo "$sz $bytes" | awk '{printf "%.2f", $1 / $2}')x the text"
done
python3 - "$(ls "$T/hc/lcm/"*.sqlite)" "$msgs" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
try:
    rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
except sqlite3.Error:
    sys.exit(0)
total = sum(r[1] for r in rows) or 1
big = [r for r in rows if r[1] * 50 >= total]
rest = total - sum(r[1] for r in big)
print("  where its bytes go: " + ", ".join("%s %.1f MB (%d B/msg)" % (n, b / 1e6, b // int(sys.argv[2])) for n, b in big)
      + ", the other %d objects %.1f MB" % (len(rows) - len(big), rest / 1e6))
PY
ct=$(timed "$BUILD/lcm" compact --home "$T/hc" --session "$SID") || { cat "$T/out"; exit 1; }
sed 's/^/  /' "$T/out"
it=$(cat "$T/claude_median")
echo "lcm compact (extractive) of the imported Claude store: $ct (s wall, s CPU)"
echo "lcm import (median) + lcm compact, Claude Code transcript: $(echo "$it $ct" | awk '{printf "%.2f s wall, %.2f s CPU", $1 + $3, $2 + $4}')"
# Issue 28's reference: lossless-code's backfill + compaction of the same generated session
# took 80.7 s (the issue's figure, not run here); the goal is at least 8x that.
echo "$it $ct" | awk '{w = $1 + $3; c = $2 + $4;
    printf "beside lossless-code backfill + compaction (80.7 s, the issue'"'"'s reference figure, not run here): %.1fx by wall, %.1fx by CPU (goal: 8x)\n", 80.7 / w, 80.7 / c}'

