#!/bin/sh
# `lcm export | backup | gc | migrate | heal | report` (engine/lcm/admin.c, the /lcm bodies):
# export writes every message (counted against the store); backup is a readable copy; the
# dry runs of gc, migrate and heal change no store byte (hashes) and exit 1 when there is
# something to do, --apply does it; --json documents carry their fields.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H="$T/h"
hashes() { for f in "$H"/lcm/*.sqlite; do cat "$f" "$f-wal" 2>/dev/null | sha256sum; done | sort | sha256sum; }
"$HOST" gen --seed 9 --messages 400 "$T/a.jsonl" >/dev/null || fail "gen a"
"$HOST" gen --seed 13 --messages 200 "$T/b.jsonl" >/dev/null || fail "gen b"
"$LCM" import --home "$H" "$T/a.jsonl" >"$T/ia.txt" 2>&1 || fail "import a"
"$LCM" import --home "$H" "$T/b.jsonl" >"$T/ib.txt" 2>&1 || fail "import b"
A=$(sed -n 's/.*session \([^,]*\),.*/\1/p' "$T/ia.txt")
B=$(sed -n 's/.*session \([^,]*\),.*/\1/p' "$T/ib.txt")
[ -n "$A" ] && [ -n "$B" ] && [ "$A" != "$B" ] || fail "two sessions"; ok

# export: every message, counted against the store
"$LCM" export --home "$H" --session "$A" --out "$T/a.export.jsonl" --json >"$T/ex.json" 2>"$T/ex.err" || { cat "$T/ex.err"; fail "export"; }
N=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from messages').fetchone()[0])" "$H/lcm/$A.sqlite")
assert_eq "$(grep -c '"table":"messages"' "$T/a.export.jsonl")" "$N" "export writes every message"
assert_jsonl "$T/ex.json" "rows[0]['messages'] == $N and rows[0]['rows'] >= $N and rows[0]['path'] == '$T/a.export.jsonl' and rows[0]['session'] == '$A'" "export --json fields"
assert_eq "$(stat -c %a "$T/a.export.jsonl")" "600" "the export is 0600"

# backup: one copy per store, readable
"$LCM" backup --home "$H" --json >"$T/bk.json" || fail "backup"
assert_jsonl "$T/bk.json" "len(rows[0]['stores']) == 2 and all(s['bytes'] > 0 and s['path'].endswith('.db') for s in rows[0]['stores'])" "backup --json: a copy per store"
BK=$(ls "$H"/lcm/lcm-backup-"$A"-*.db | head -1)
assert_eq "$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from messages').fetchone()[0])" "$BK")" "$N" "the backup holds every message"

# gc: b's transcript gone -> its store is retired; dry run changes nothing, --apply deletes
rm "$T/b.jsonl"
before=$(hashes)
"$LCM" gc --home "$H" --json >"$T/gc.json"
assert_eq "$?" "1" "gc dry run with a retired store exits 1"
assert_jsonl "$T/gc.json" "rows[0]['apply'] is False and [s['session'] for s in rows[0]['stores']] == ['$B'] and rows[0]['deleted'] == 0" "gc --json lists the retired store"
assert_eq "$(hashes)" "$before" "gc dry run changes no store"
"$LCM" gc --home "$H" --apply >"$T/gc2.txt" 2>&1
assert_eq "$?" "0" "gc --apply exits 0"
assert_grep "$T/gc2.txt" "gc: exported 1 stores to" "gc --apply exports"
[ ! -e "$H/lcm/$B.sqlite" ] || fail "gc --apply deleted the retired store"; ok
[ -e "$H/lcm/$A.sqlite" ] || fail "gc --apply kept the live one"; ok
ls "$H"/lcm/lcm-export-gc-*.jsonl >/dev/null 2>&1 || fail "the gc export is written"; ok
"$LCM" gc --home "$H" >/dev/null 2>&1
assert_eq "$?" "0" "nothing left to gc: exit 0"

# migrate: an older-schema store is listed by the dry run (no byte changed), --apply upgrades
python3 -c "import sqlite3,sys;c=sqlite3.connect(sys.argv[1]);c.execute('create table legacy(x)');c.commit()" "$H/lcm/old.sqlite"
before=$(hashes)
"$LCM" migrate --home "$H" --json >"$T/mg.json"
assert_eq "$?" "1" "migrate dry run with an old store exits 1"
assert_jsonl "$T/mg.json" "rows[0]['apply'] is False and len(rows[0]['stores']) == 1 and rows[0]['migrated'] == 0 and rows[0]['schema'] >= 1" "migrate --json lists it"
assert_eq "$(hashes)" "$before" "migrate dry run changes no store"
"$LCM" migrate --home "$H" --apply --json >"$T/mg2.json"
assert_eq "$?" "0" "migrate --apply exits 0"
assert_jsonl "$T/mg2.json" "rows[0]['migrated'] == 1" "migrate --apply upgrades it"
[ "$(hashes)" != "$before" ] || fail "migrate --apply changed the store"; ok
"$LCM" migrate --home "$H" >"$T/mg3.txt" 2>&1
assert_eq "$?" "0" "nothing left to migrate: exit 0"

# heal: a truncated summary; the dry run finds it and changes nothing, --apply works on it
rm -f "$H/lcm/old.sqlite"
"$LCM" compact --home "$H" --session "$A" >/dev/null 2>&1 || fail "compact"
python3 - "$H/lcm/$A.sqlite" <<'PY' || fail "plant a truncated summary"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
row = c.execute("SELECT id FROM summaries ORDER BY id LIMIT 1").fetchone()
c.execute("UPDATE summaries SET text = '[lcm:truncated] ' || substr(text, 1, 80) WHERE id = ?", row)
c.commit()
PY
ok
before=$(hashes)
"$LCM" heal --home "$H" --session "$A" --json >"$T/hl.json"
assert_eq "$?" "1" "heal dry run with a mechanical node exits 1"
assert_jsonl "$T/hl.json" "rows[0]['apply'] is False and rows[0]['candidates'] == 1 and rows[0]['healed'] == 0 and rows[0]['billedTokens'] == 0 and 'budgetStopped' in rows[0]" "heal --json finds it"
assert_eq "$(hashes)" "$before" "heal dry run changes no store"
"$LCM" heal --home "$H" --session "$A" --apply >"$T/hl2.txt" 2>&1
assert_eq "$?" "0" "heal --apply exits 0"
assert_grep "$T/hl2.txt" "heal (apply): 1 mechanical node(s)" "heal --apply works on it"
[ "$(hashes)" != "$before" ] || fail "heal --apply wrote the store"; ok

# report: JSON with the row tally (the CLI itself records no session metrics)
"$LCM" report --home "$H" --json >"$T/rp.json" || fail "report"
assert_jsonl "$T/rp.json" "'rows' in rows[0] and isinstance(rows[0]['kinds'], dict) and rows[0]['session'] is None" "report --json fields"
done_ok
