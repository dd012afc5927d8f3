#!/bin/sh
# The store offline, with a real fault, through the real host, plugin and a loopback model:
# the host's file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: write() fails with EFBIG as on
# a full disk) is lowered under the running host so the store's writes fail, then raised
# again with prlimit. (1) Mid-run: the plugin says the store is offline, every prompt is
# still answered, /lcm status says offline with the reason, the failing store is retried on
# a bounded cadence, and once the limit is lifted a later request reconnects and stores
# every message of the branch it missed -- checked while the host still runs, before its
# session end could store them. (2) At session start: a store that cannot be created is
# offline from the first request and caught up the same way.
. "$(dirname "$0")/lib.sh"
command -v prlimit >/dev/null || fail "prlimit (util-linux) is needed"
mkdir -p "$T/work"
# the branch's message entries missing from the store (0 = all stored); read-only, live.
# With a third argument "live" the branch's last entry is left out: the answer just given,
# which the next request carries to the store (turn_end stores nothing).
missing() {
    python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sqlite3, sys
ents = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][1:]
byid = {e["id"]: e for e in ents}
x, want = ents[-1]["id"], set()
if sys.argv[3] == "live": x = byid[x].get("parentId")
while x:
    if byid[x]["type"] == "message": want.add(x)
    x = byid[x].get("parentId")
try:
    have = {r[0] for r in sqlite3.connect("file:%s?mode=ro" % sys.argv[2], uri=True).execute("select entry_id from messages")}
except sqlite3.Error:
    have = set()
print(len(want - have))
PY
}
agents() { python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l).get("_fake",{}).get("kind","agent")=="agent"))' "$1"; }
# wait_agents REC N: until the model has been asked N times (each prompt is one request)
wait_agents() { i=0; while [ "$(agents "$1")" -lt "$2" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
    [ "$(agents "$1")" -ge "$2" ] || fail "request $2 never reached the model"; }
# prompt TEXT: send one prompt, wait until the model answered it and the host read it back
N=0
prompt() { N=$((N+1)); echo "$1" >&3; wait_agents "$REC" "$N"
    i=0; while [ "$(grep -c '^done\.' "$OUT" 2>/dev/null)" -lt "$N" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
    [ "$(grep -c '^done\.' "$OUT")" -ge "$N" ] || { tail -5 "$ERR"; fail "prompt $N was not answered"; }; }
# start_host SESSION: the host on the fifo T/in (fd 3), SIGXFSZ ignored so a limit is EFBIG
start_host() {
    rm -f "$T/in"; mkfifo "$T/in"
    sh -c "trap '' XFSZ; exec \"$HOST\" --home \"$HOME_DIR\" --plugin-dir \"$PLUGINS\" --session \"$1\" \
        --cwd \"$T/work\" --base-url \"http://127.0.0.1:$PORT/v1\" --model fake" <"$T/in" >"$OUT" 2>"$ERR" &
    HOST_PID=$!
    exec 3>"$T/in"
}
stop_host() { exec 3>&-; wait "$HOST_PID"; rc=$?; HOST_PID=""; [ $rc -eq 0 ] || { tail "$ERR"; fail "the host exits 0 (status $rc)"; }; ok; }
big=$(python3 -c 'print(" ".join("word%d" % i for i in range(4000)))')

# ---- (1) offline mid-run -------------------------------------------------------------
S1="$T/s1.jsonl" OUT="$T/out1" ERR="$T/err1" REC="$T/rec1.jsonl"
start_fake "$REC"
start_host "$S1"
for k in 1 2 3; do prompt "fat prompt $k $big"; done
SID=$(head -1 "$S1" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
DB="$HOME_DIR/lcm/$SID.sqlite"
assert_eq "$(missing "$S1" "$DB" live)" "0" "online, every message is stored as it comes"
# Lower the limit under the store's write-ahead log (which only grows here) but above the
# session file and what it gains below: the store's next write fails, the session's do not.
SZ=$(stat -c %s "$S1"); WAL=$(stat -c %s "$DB-wal")
LIMIT=$((SZ + 40000))
[ "$WAL" -gt "$LIMIT" ] || fail "the store's log ($WAL bytes) outgrows the limit ($LIMIT) for the fault to bite"
prlimit --pid "$HOST_PID" --fsize="$LIMIT:unlimited" || fail "prlimit lowers the host's file-size limit"
for k in $(seq 1 10); do prompt "offline prompt $k"; done
assert_grep "$ERR" "the store is offline (" "the notice says the store is offline, with the reason"
assert_grep "$ERR" "built within the window from what is known" "the notice says how requests are built meanwhile"
[ "$(missing "$S1" "$DB" live)" -gt 0 ] || fail "the fault kept messages out of the store"; ok
echo "/lcm status" >&3
i=0; while ! grep -q "^store: .*offline" "$OUT" && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
assert_grep "$OUT" "^store: sqlite.*offline for [0-9]* s (" "/lcm status says offline with the reason"
tries=$(sed -n 's/^store: .* \([0-9]*\) reconnect attempt(s) failed.*/\1/p' "$OUT" | head -1)
[ -n "$tries" ] && [ "$tries" -ge 1 ] || fail "a reconnect was tried while the store kept failing (${tries:-none})"; ok
[ "$tries" -le 2 ] || fail "reconnects are bounded, not one per request ($tries in 11 calls)"; ok
prlimit --pid "$HOST_PID" --fsize=unlimited:unlimited || fail "prlimit restores the limit"
for k in $(seq 1 9); do prompt "after prompt $k"; done
assert_grep "$ERR" "back online after" "the notice says the store is back online"
assert_eq "$(missing "$S1" "$DB" live)" "0" "the reconnect stored every message the store missed (before the session ended)"
echo "/lcm status" >&3
i=0; while ! grep -q "^store: .*online" "$OUT" && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
assert_grep "$OUT" "^store: sqlite.*online" "/lcm status says online again"
stop_host
assert_eq "$(agents "$REC")" "$N" "every prompt's request reached the model, offline included"
assert_eq "$(missing "$S1" "$DB")" "0" "every message is in the store at the end"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S1" --command "/lcm doctor" > "$T/doc1" 2>&1
assert_grep "$T/doc1" "^faults: 0" "the store is consistent after the fault"

# ---- (2) offline from session start ------------------------------------------------------
S2="$T/s2.jsonl" OUT="$T/out2" ERR="$T/err2" REC="$T/rec2.jsonl" N=0
start_fake "$REC"
rm -f "$T/in"; mkfifo "$T/in"
sh -c "trap '' XFSZ; ulimit -S -f 16; exec \"$HOST\" --home \"$HOME_DIR\" --plugin-dir \"$PLUGINS\" --session \"$S2\" \
    --cwd \"$T/work\" --base-url \"http://127.0.0.1:$PORT/v1\" --model fake" <"$T/in" >"$OUT" 2>"$ERR" &
HOST_PID=$!
exec 3>"$T/in"
for k in 1 2 3; do prompt "early prompt $k"; done
assert_grep "$ERR" "the store is offline (" "a store that cannot be created at start is offline"
prlimit --pid "$HOST_PID" --fsize=unlimited:unlimited || fail "prlimit restores the limit"
for k in $(seq 1 9); do prompt "later prompt $k"; done
assert_grep "$ERR" "back online after" "the store comes online at a later request"
SID2=$(head -1 "$S2" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
assert_eq "$(missing "$S2" "$HOME_DIR/lcm/$SID2.sqlite" live)" "0" "the catch-up stored the messages of the offline start"
stop_host
assert_eq "$(agents "$REC")" "$N" "every prompt was answered"
done_ok
