#!/bin/sh
# Offline with summaries already applied: a session past its swap line has a pinned cut when
# the store's writes start failing (RLIMIT_FSIZE lowered under the running host, SIGXFSZ
# ignored). Every request made while the store is offline is still built from what is
# known -- the applied cut, held in memory -- so it carries the pointer block instead of the
# raw history and stays under the window; once the limit is lifted the store reconnects.
. "$(dirname "$0")/lib.sh"
command -v prlimit >/dev/null || fail "prlimit (util-linux) is needed"
mkdir -p "$T/work"
printf '{"summarizer":["extractive"],"summaryWorker":false,"leafChunkTokens":1000,"keepRecentTokens":1000,"summaryTokens":100}\n' \
    > "$HOME_DIR/lcm.json"
agents() { python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l).get("_fake",{}).get("kind","agent")=="agent"))' "$1"; }
N=0
prompt() { N=$((N+1)); echo "$1" >&3
    i=0; while [ "$(grep -c '^done\.' "$OUT" 2>/dev/null)" -lt "$N" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
    [ "$(grep -c '^done\.' "$OUT")" -ge "$N" ] || { tail -5 "$ERR"; fail "prompt $N was not answered"; }; }
S="$T/s.jsonl" OUT="$T/out" ERR="$T/err" REC="$T/rec.jsonl" LOG="$T/req.jsonl"
start_fake "$REC"
mkfifo "$T/in"
LCM_REQUEST_LOG="$LOG" sh -c "trap '' XFSZ; exec \"$HOST\" --home \"$HOME_DIR\" --plugin-dir \"$PLUGINS\" --session \"$S\" \
    --cwd \"$T/work\" --base-url \"http://127.0.0.1:$PORT/v1\" --model fake --window 16000" <"$T/in" >"$OUT" 2>"$ERR" &
HOST_PID=$!
exec 3>"$T/in"
k=0
while [ $k -lt 14 ]; do
    k=$((k+1))
    prompt "part $k: $(python3 -c "import sys; print(' '.join('p%sw%d' % (sys.argv[1], i) for i in range(600)))" $k)"
done
CUT=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; print(r[-1]["cut"])' "$LOG")
[ "$CUT" -gt 0 ] || { tail -3 "$LOG"; fail "the session swapped to a cut before the fault"; }; ok
SID=$(head -1 "$S" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
DB="$HOME_DIR/lcm/$SID.sqlite"
SZ=$(stat -c %s "$S"); WAL=$(stat -c %s "$DB-wal")
LIMIT=$((SZ + 40000))
[ "$WAL" -gt "$LIMIT" ] || fail "the store's log ($WAL bytes) outgrows the limit ($LIMIT) for the fault to bite"
BEFORE=$(wc -l < "$LOG")
prlimit --pid "$HOST_PID" --fsize="$LIMIT:unlimited" || fail "prlimit lowers the host's file-size limit"
for j in 1 2 3 4 5 6; do prompt "short offline prompt $j"; done
assert_grep "$ERR" "the store is offline (" "the notice says the store is offline"
python3 - "$LOG" "$BEFORE" "$CUT" <<'PY' || fail "offline requests are built from the applied cut, within the window"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][int(sys.argv[2]):]
cut = int(sys.argv[3])
# the first of them is the request whose write failed: the ones after it are offline
off = rows[1:]
assert len(off) >= 4, len(off)
for r in off:
    assert r["cut"] >= cut > 0, r
    assert r["tokens"] < r["raw"], r
    assert r["tokens"] < r["window"], r
print("offline requests", len(off), "tokens", [r["tokens"] for r in off], "raw", [r["raw"] for r in off])
PY
ok
prlimit --pid "$HOST_PID" --fsize=unlimited:unlimited || fail "prlimit restores the limit"
for j in $(seq 1 9); do prompt "after $j"; done
assert_grep "$ERR" "back online after" "the store reconnects once writes work again"
exec 3>&-; wait "$HOST_PID"; rc=$?; HOST_PID=""
assert_eq "$rc" 0 "the host exits 0"
assert_eq "$(agents "$REC")" "$N" "every prompt's request reached the model"
done_ok
