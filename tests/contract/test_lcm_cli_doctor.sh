#!/bin/sh
# `lcm doctor [--repair]` (engine/lcm/admin.c, the /lcm doctor body): clean and exit 0 on a
# sound store; a broken DAG (a summary's span names a message the store lacks) is a fault,
# exit 1, that --repair fixes; a store file that is not a database is named (exit 1,
# "damaged" in --json) and --repair moves it aside, kept.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H="$T/h"
"$HOST" gen --seed 9 --messages 300 "$T/a.jsonl" >/dev/null || fail "gen"
"$LCM" import --home "$H" "$T/a.jsonl" >/dev/null 2>&1 || fail "import"
DB=$(ls "$H"/lcm/*.sqlite | head -1)
S=$(basename "$DB" .sqlite)
"$LCM" compact --home "$H" --session "$S" >/dev/null 2>&1 || fail "compact"

"$LCM" doctor --home "$H" >"$T/d1.txt" 2>&1
assert_eq "$?" "0" "doctor on a sound store exits 0"
assert_grep "$T/d1.txt" "^faults: 0" "no faults"
assert_grep "$T/d1.txt" "^spans: ok" "the checks are listed"
"$LCM" doctor --home "$H" --session "$S" --json >"$T/d1.json" || fail "doctor --json"
assert_jsonl "$T/d1.json" "rows[0]['faults'] == 0 and rows[0]['damaged'] is False and rows[0]['session'] == '$S' and {'name','count','info'} <= set(rows[0]['checks'][0]) and 'schema' in rows[0] and 'messages' in rows[0] and 'summaries' in rows[0]" "doctor --json fields"

# a summary's span names an entry the store lacks: a spans fault
python3 - "$DB" <<'PY' || fail "break a span"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE summary_spans SET first_entry = 'gone-entry' WHERE summary_id = (SELECT min(summary_id) FROM summary_spans)")
c.commit()
PY
ok
"$LCM" doctor --home "$H" --json >"$T/d2.json"
assert_eq "$?" "1" "a fault exits 1"
assert_jsonl "$T/d2.json" "rows[0]['stores'][0]['faults'] > 0 and any(c['name'] == 'spans' and c['count'] > 0 for c in rows[0]['stores'][0]['checks'])" "the spans check names the broken summary"
"$LCM" doctor --home "$H" --session "$S" --repair >"$T/d3.txt" 2>&1
assert_eq "$?" "0" "--repair fixes it (exit 0)"
assert_grep "$T/d3.txt" "^repair: full-text index rebuilt; [1-9][0-9]* summaries dropped" "--repair says what it dropped"
assert_grep "$T/d3.txt" "^faults: 0" "after --repair no faults"

# a damaged store file: named, exit 1; --repair moves it aside, kept
cp "$DB" "$T/keep.sqlite"
printf 'this is not a database, it was cut short' >"$H/lcm/broken.sqlite"
"$LCM" doctor --home "$H" >"$T/d4.txt" 2>&1
assert_eq "$?" "1" "a damaged store exits 1"
assert_grep "$T/d4.txt" "broken.sqlite is not a readable SQLite database" "the damaged file is named"
assert_grep "$T/d4.txt" "lcm doctor --repair moves it aside" "the fix is named"
"$LCM" doctor --home "$H" --session broken --json >"$T/d4.json"
assert_eq "$?" "1" "--session on the damaged one exits 1"
assert_jsonl "$T/d4.json" "rows[0]['damaged'] is True and rows[0]['faults'] == 1 and 'why' in rows[0]" "--json says damaged"
"$LCM" doctor --home "$H" --session broken --repair >"$T/d5.txt" 2>&1
assert_eq "$?" "0" "--repair on the damaged file exits 0"
assert_grep "$T/d5.txt" "moved aside to" "it is moved aside"
[ ! -e "$H/lcm/broken.sqlite" ] || fail "the damaged file is gone from the store folder"; ok
ls "$H"/lcm/broken.sqlite.corrupt-* >/dev/null 2>&1 || fail "the damaged file is kept"; ok
"$LCM" doctor --home "$H" >"$T/d6.txt" 2>&1
assert_eq "$?" "0" "afterwards the home is clean"
"$LCM" doctor --home "$H" --session nosuch >"$T/d7.txt" 2>&1
assert_eq "$?" "1" "a session with no store exits 1"
done_ok
