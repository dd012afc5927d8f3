#!/bin/sh
# runner: alone (holds the store's lock for a measured time while the host writes)
# LCM is never silently off because the store was busy (issue 14.4), through the real host
# and the real .so:
#   (a) a store held by another process with BEGIN EXCLUSIVE for 7 s at session start: the
#       user is told LCM is not active (and what the requests are meanwhile), the plugin
#       retries on later `context` calls, and by the end of the same run the store is in
#       use: /lcm status in that run reads it, it holds every message of the session, and
#       the user is told LCM is back;
#   (b) two processes creating the same new store at once (host + `lcm import`, 10 rounds):
#       no "already exists" / "database is locked", both see the store.
# Before the fix, (a) ended with "the store is not open (store: ...: database is locked)"
# for the whole run, and (b) failed with "table meta already exists" in some rounds.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
mkdir -p "$T/work"
# ---- (a) a store locked for 7 s at session start --------------------------------------
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --cwd "$T/work" \
    --command "/lcm status" >"$T/first.txt" 2>&1 || { cat "$T/first.txt"; fail "first run"; }
DB=$(ls "$HOME_DIR"/lcm/*.sqlite)
[ -f "$DB" ] || fail "the first run created the store"
ok
python3 - "$DB" "$T/locked" <<'PY' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
time.sleep(7)
db.execute("ROLLBACK")
PY
LOCKER=$!
i=0; while [ ! -f "$T/locked" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -f "$T/locked" ] || fail "the locker did not take the lock"
start_fake "$T/rec.jsonl" --agent-delay 0.5 --tool-rounds 18 --tool-bytes 2000
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake --max-turns 40 \
    -p "Run the checks, one round at a time, until they are all done." \
    --command "/lcm status" >"$T/out.txt" 2>"$T/err.txt" || { tail -n 20 "$T/err.txt"; fail "the host run failed"; }
wait $LOCKER
ok
assert_grep "$T/err.txt" "LCM is not active" "the user is told LCM is not active"
assert_grep "$T/err.txt" "retried" "the notice says the store is retried"
assert_grep "$T/err.txt" "LCM is active again" "the user is told LCM is back"
[ "$(grep -c 'LCM is not active' "$T/err.txt")" = 1 ] || fail "told once that LCM is not active"
ok
assert_nogrep "$T/out.txt" "store is not open" "/lcm status in the same run reads the store"
assert_grep "$T/out.txt" "messages" "/lcm status in the same run shows the store"
python3 - "$DB" "$T/s.jsonl" <<'PY' || fail "the store holds every message of the session"
import json, sqlite3, sys
ids = {e["id"] for e in map(json.loads, open(sys.argv[2])) if e.get("type") == "message"}
got = {r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT entry_id FROM messages")}
if len(ids) < 30 or ids - got:
    print("session messages", len(ids), "stored", len(got), "missing", sorted(ids - got)[:5])
    sys.exit(1)
PY
ok

# ---- (b) two processes creating the same new store at once ----------------------------
"$HOST" gen --seed 3 --messages 60 "$T/g.jsonl" >/dev/null || fail "gen"
r=0
while [ $r -lt 10 ]; do
    H="$T/race$r"
    "$LCM" import --home "$H" "$T/g.jsonl" >"$T/imp$r.txt" 2>&1 &
    A=$!
    "$HOST" --home "$H" --plugin-dir "$PLUGINS" --session "$T/g.jsonl" --cwd "$T/work" \
        --command "/lcm status" >"$T/host$r.txt" 2>&1 &
    B=$!
    wait $A || { cat "$T/imp$r.txt"; fail "round $r: lcm import failed"; }
    wait $B || { cat "$T/host$r.txt"; fail "round $r: the host failed"; }
    for f in "$T/imp$r.txt" "$T/host$r.txt"; do
        assert_nogrep "$f" "already exists" "round $r: no schema race"
        assert_nogrep "$f" "database is locked" "round $r: no lock failure"
        assert_nogrep "$f" "not open" "round $r: the store opened"
    done
    r=$((r+1))
done
done_ok
