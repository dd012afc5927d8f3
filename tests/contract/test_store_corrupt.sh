#!/bin/sh
# A corrupt or truncated store has a way out inside the product (issue 14.9): a store cut
# to half its size is named at session start (a warning), by `/lcm doctor` (not "store not
# open") and by `lcm status` / `lcm sessions` (damaged, not "older-generation ... migrate");
# `/lcm doctor --repair` moves it aside (kept, renamed with a timestamp) and rebuilds the
# store from the session file: every message is back, byte for byte, and the next doctor
# is clean. The same for a store overwritten with bytes that are no database at all.
# Before the fix doctor answered "the store is not open" and --repair could not help.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
"$HOST" gen --seed 11 --messages 400 "$T/in.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" \
    replay "$T/in.jsonl" >"$T/replay.txt" 2>&1 || { cat "$T/replay.txt"; fail "replay"; }
DB=$(ls "$HOME_DIR"/lcm/*.sqlite)
[ ! -s "$DB-wal" ] || fail "a clean shutdown leaves no log"
ok
check_all_back() { # every message of the session file is in the store, byte for byte
    PYTHONPATH="$ROOT/tests/contract" python3 - "$DB" "$T/s.jsonl" <<'PY' || fail "$1"
import json, sqlite3, sys
import store_raw
want = {}
for l in open(sys.argv[2], encoding="utf-8"):
    e = json.loads(l)
    if e.get("type") == "message": want[e["id"]] = e["message"]
got = {r[0]: json.loads(r[1]) for r in store_raw.rows(sqlite3.connect(sys.argv[1]), ["entry_id", "raw_json"])}
bad = [k for k in want if got.get(k) != want[k]]
if len(want) < 300 or bad or set(got) - set(want):
    print("session messages", len(want), "stored", len(got), "missing/different", bad[:5]); sys.exit(1)
PY
    ok
}
for how in truncate garbage; do
    if [ $how = truncate ]; then
        python3 -c "import os,sys; os.truncate(sys.argv[1], os.path.getsize(sys.argv[1]) // 2)" "$DB"
    else
        python3 -c "import sys; open(sys.argv[1], 'wb').write(b'not a database, just text\n' * 4000)" "$DB"
    fi
    size=$(stat -c %s "$DB")
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" \
        --command "/lcm doctor" >"$T/doc.txt" 2>"$T/doc.err" || { cat "$T/doc.txt" "$T/doc.err"; fail "$how: doctor run"; }
    assert_grep "$T/doc.err" "not a readable SQLite database" "$how: the run warns"
    assert_grep "$T/doc.txt" "not a readable SQLite database" "$how: doctor recognises the damaged store"
    assert_nogrep "$T/doc.txt" "store is not open" "$how: doctor says more than 'not open'"
    "$LCM" status --home "$HOME_DIR" >"$T/st.txt" 2>&1
    "$LCM" sessions --home "$HOME_DIR" >>"$T/st.txt" 2>&1
    assert_nogrep "$T/st.txt" "older-generation store" "$how: lcm sessions does not call it older-generation"
    assert_grep "$T/st.txt" "1 damaged" "$how: lcm status counts it damaged"
    assert_grep "$T/st.txt" "damaged store: not a readable SQLite database" "$how: lcm sessions names it damaged"
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" \
        --command "/lcm doctor --repair" --command "/lcm status" >"$T/rep.txt" 2>&1 || { cat "$T/rep.txt"; fail "$how: repair run"; }
    assert_grep "$T/rep.txt" "moved aside to .*corrupt-" "$how: repair says where the damaged store went"
    kept=$(ls "$DB".corrupt-* 2>/dev/null | while read f; do [ "$(stat -c %s "$f")" = "$size" ] && echo "$f"; done | head -n 1)
    [ -n "$kept" ] || fail "$how: the damaged store is kept, renamed with a timestamp"
    ok
    assert_grep "$T/rep.txt" "rebuilt from the session file" "$how: repair rebuilds"
    assert_nogrep "$T/rep.txt" "store is not open" "$how: LCM is active after the repair in the same run"
    check_all_back "$how: every message is back after the repair"
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" \
        --command "/lcm doctor" >"$T/doc2.txt" 2>&1 || fail "$how: doctor after repair"
    assert_grep "$T/doc2.txt" "^faults: 0" "$how: doctor is clean after the repair"
done
done_ok
