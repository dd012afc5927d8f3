#!/bin/sh
# lockstep_compare.sh -- the same lockstep evaluation on two builds, compared.
#
#   sh tests/eval/lockstep_compare.sh BUILD_A BUILD_B [SIZES]
#   e.g. build a checkout of main into /tmp/main/build, then
#        sh tests/eval/lockstep_compare.sh /tmp/main/build build
#
# Runs tests/eval/eval.py (this checkout's) on each build with the summarizer worker off
# (lcm.json {"summaryWorker": false}: passes run between turns on the host thread, so every
# figure repeats exactly), at a 128k window, seed 1, SIZES (default "32k 128k 512k"); then
# compares, per length, the report's row (every column but the timings and RSS), every
# request as sent (LCM_REQUEST_LOG: action, cut, tokens, the SHA-256 of its bytes; not its
# time stamp), the last request's messages (LCM_REQUEST_DUMP) byte for byte, and each
# needle's result. A refactor that must not change behaviour prints "identical" and exits
# 0; any difference is printed and exits 1. OUT=<dir> keeps the two reports there.
set -u
[ $# -ge 2 ] || { sed -n '2,15p' "$0"; exit 2; }
A=$(cd "$1" && pwd) || exit 2
B=$(cd "$2" && pwd) || exit 2
SIZES=${3:-"32k 128k 512k"}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/lockstep.XXXXXX")}
mkdir -p "$OUT" || exit 2
for side in a b; do
    build=$A; [ "$side" = b ] && build=$B
    echo "== $side: $build"
    python3 "$ROOT/tests/eval/eval.py" --build "$build" --out "$OUT/$side" --sizes "$SIZES" --window 128000 \
        --seed 1 --lcm-config '{"summaryWorker": false}' >"$OUT/$side.log" 2>&1
    rc=$?
    grep -E '^[0-9.]+[kM]?: ' "$OUT/$side.log"
    [ -f "$OUT/$side/report.json" ] || { tail -20 "$OUT/$side.log"; echo "lockstep: eval on $build failed ($rc)"; exit 1; }
done
python3 - "$OUT/a" "$OUT/b" <<'PY'
import json, os, sys
a, b = sys.argv[1], sys.argv[2]
# What varies from run to run on the same build: the clock and the memory use.
VOLATILE = {"replay_s", "probe_s", "wall_s", "peak_rss_mb", "probe_rss_mb", "svg"}

def rows(d):
    return {r["size"]: {k: v for k, v in r.items() if k not in VOLATILE}
            for r in json.load(open(os.path.join(d, "report.json")))["rows"]}

def jsonl(path, drop=()):
    if not os.path.exists(path):
        return None
    out = []
    for line in open(path, encoding="utf-8"):
        if line.strip():
            r = json.loads(line)
            for k in drop:
                r.pop(k, None)
            out.append(r)
    return out

def raw(path):
    return open(path, "rb").read() if os.path.exists(path) else None

ra, rb = rows(a), rows(b)
diffs = []
for size in sorted(set(ra) | set(rb)):
    x, y = ra.get(size), rb.get(size)
    if x is None or y is None:
        diffs.append("%s: only in %s" % (size, "b" if x is None else "a"))
        continue
    for k in sorted(set(x) | set(y)):
        if x.get(k) != y.get(k):
            diffs.append("%s row %s: %r vs %r" % (size, k, x.get(k), y.get(k)))
    qa = jsonl(os.path.join(a, size, "requests.jsonl"), ("ts",))
    qb = jsonl(os.path.join(b, size, "requests.jsonl"), ("ts",))
    if qa != qb:
        n = next((i for i, (p, q) in enumerate(zip(qa or [], qb or [])) if p != q), min(len(qa or []), len(qb or [])))
        diffs.append("%s requests: first difference at request %d of %d/%d" % (size, n + 1, len(qa or []), len(qb or [])))
    if raw(os.path.join(a, size, "last-request.jsonl")) != raw(os.path.join(b, size, "last-request.jsonl")):
        diffs.append("%s last request: the messages sent differ" % size)
    if jsonl(os.path.join(a, size, "needles-result.jsonl")) != jsonl(os.path.join(b, size, "needles-result.jsonl")):
        diffs.append("%s needles: the results differ" % size)
    print("%s: %d requests, %d row columns compared" % (size, len(qa or []), len(x)))
for d in diffs:
    print("DIFF " + d)
print("lockstep: %s" % ("identical" if not diffs else "%d difference(s)" % len(diffs)))
sys.exit(1 if diffs else 0)
PY
