#!/bin/sh
# `lcm gc --apply` over a shared PostgreSQL store (issue 24.18): a session whose session
# file is gone is exported, then its rows are deleted from the database (before: the export
# was written, then gc tried to unlink the store's address as a file and failed with "No
# such file or directory"). The session whose file still exists keeps every row; a second
# gc finds nothing retired.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/pg/pg.sh"
pg_begin
LCM="$BUILD/lcm"
mkdir -p "$T/work"
for n in 1 2; do
    hello_session "$T/in$n.jsonl" "gc-session-$n" "$T/work" "GCWORD$n planted here"
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out$n.jsonl" replay "$T/in$n.jsonl" \
        >"$T/replay$n.txt" 2>&1 || { cat "$T/replay$n.txt"; fail "replay $n into PostgreSQL"; }
done
ok
SID1=$(head -1 "$T/out1.jsonl" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
SID2=$(head -1 "$T/out2.jsonl" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
count() { pg_sql "SELECT count(*) FROM lcm.messages m JOIN lcm.sessions s ON s.sid = m.sid WHERE s.session_id = '$1'"; }
[ "$(count "$SID1")" -gt 0 ] && [ "$(count "$SID2")" -gt 0 ] || fail "both sessions are in the database"
ok
N2=$(count "$SID2")
rm "$T/out1.jsonl"
"$LCM" gc --home "$HOME_DIR" >"$T/dry.txt" 2>&1
assert_grep "$T/dry.txt" "1 retired stores" "the dry run names the session whose file is gone"
"$LCM" gc --home "$HOME_DIR" --apply >"$T/gc.txt" 2>&1 || { cat "$T/gc.txt"; fail "lcm gc --apply exits 0 on PostgreSQL"; }
assert_grep "$T/gc.txt" "exported 1 stores" "gc says what it exported and deleted"
X=$(ls "$HOME_DIR"/lcm/lcm-export-gc-*.jsonl 2>/dev/null | head -1)
[ -n "$X" ] && [ -f "$X" ] || fail "the export file is written"
ok
assert_grep "$X" "GCWORD1" "the export holds the retired session's messages"
assert_eq "$(count "$SID1")" "0" "the retired session's messages are deleted from the database"
assert_eq "$(pg_sql "SELECT count(*) FROM lcm.sessions WHERE session_id = '$SID1'")" "0" "the retired session's row is deleted"
assert_eq "$(count "$SID2")" "$N2" "the live session keeps every message"
"$LCM" gc --home "$HOME_DIR" >"$T/again.txt" 2>&1
assert_grep "$T/again.txt" "no retired stores" "a second gc finds nothing retired"
"$LCM" grep --home "$HOME_DIR" GCWORD2 >"$T/g2.txt" 2>&1
assert_grep "$T/g2.txt" "GCWORD2" "the live session is still found"
done_ok
