#!/bin/sh
# Two hosts on one agent home, different sessions, replaying at once, while a third keeps
# running cross-session lcm_grep (scope all_sessions) and `/lcm gc --apply`: no "database
# is locked" (or any busy error) reaches the user, every message of both sessions is stored
# (the same count a lone replay stores), both stores are doctor-clean, and a search never
# writes: the stores' bytes are identical before and after a cross-session grep.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/tmp"
export TMPDIR="$T/tmp"
"$HOST" gen --seed 21 --tokens 80000 "$T/a.jsonl" >/dev/null || fail "gen a"
"$HOST" gen --seed 22 --tokens 80000 "$T/b.jsonl" >/dev/null || fail "gen b"
printf '{"leafChunkTokens":2000,"summaryTokens":200}\n' > "$HOME_DIR/lcm.json"
# reference counts from lone replays in another home
mkdir -p "$T/ref"; cp "$HOME_DIR/lcm.json" "$T/ref/"
for s in a b; do
    "$HOST" --home "$T/ref" --plugin-dir "$PLUGINS" --session "$T/ref-$s.jsonl" --window 16000 \
        replay "$T/$s.jsonl" >/dev/null 2>&1 || fail "lone replay $s"
done
count() { python3 -c "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute('select count(*) from messages').fetchone()[0])" "$1"; }

run_replay() { "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out-$1.jsonl" \
    --window 16000 replay "$T/$1.jsonl" > "$T/replay-$1.out" 2>&1; echo $? > "$T/replay-$1.rc"; }
run_replay a & PA=$!
run_replay b & PB=$!
# a third session searches every store and collects garbage while both write
i=0
while kill -0 $PA 2>/dev/null || kill -0 $PB 2>/dev/null; do
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/c.jsonl" \
        --tool lcm_grep '{"query":"store","scope":"all_sessions"}' >> "$T/side.out" 2>&1 || echo "grep rc $?" >> "$T/side.out"
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/c.jsonl" \
        --command "/lcm gc --apply" >> "$T/side.out" 2>&1 || echo "gc rc $?" >> "$T/side.out"
    i=$((i+1))
done
wait $PA; wait $PB
[ "$i" -ge 1 ] || fail "the side searches ran while the replays did"; ok
assert_eq "$(cat "$T/replay-a.rc")$(cat "$T/replay-b.rc")" "00" "both concurrent replays exit 0"
cat "$T/replay-a.out" "$T/replay-b.out" "$T/side.out" > "$T/all.out"
assert_nogrep "$T/all.out" "database is locked" "no 'database is locked' reaches the user"
assert_nogrep "$T/all.out" "SQLITE_BUSY\|database table is locked" "no busy error reaches the user"
assert_nogrep "$T/all.out" "grep rc\|gc rc" "every side search and gc exits 0"
assert_grep "$T/side.out" "lcm_grep query \"store\"" "the cross-session searches answered"
for s in a b; do
    SID=$(head -1 "$T/$s.jsonl" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
    assert_eq "$(count "$HOME_DIR/lcm/$SID.sqlite")" "$(count "$T/ref/lcm/$SID.sqlite")" "session $s: every message stored, as a lone replay stores"
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out-$s.jsonl" --command "/lcm doctor" > "$T/doc-$s" 2>&1
    assert_grep "$T/doc-$s" "^faults: 0" "session $s: doctor clean after the concurrent run"
done
# searches are read-only: checkpoint everything, then a cross-session grep changes no byte
python3 - "$HOME_DIR/lcm" <<'PY'
import glob, sqlite3, sys
for f in glob.glob(sys.argv[1] + "/*.sqlite"):
    c = sqlite3.connect(f); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.close()
PY
sums() { for f in "$HOME_DIR"/lcm/*.sqlite; do [ "$(basename "$f" .sqlite)" = "$CSID" ] || sha256sum "$f"; done; }
CSID=$(head -1 "$T/c.jsonl" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
sums > "$T/before"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/c.jsonl" \
    --tool lcm_grep '{"query":"buffer","scope":"all_sessions"}' > "$T/g" 2>&1 || fail "grep exits 0"
sums > "$T/after"
cmp -s "$T/before" "$T/after" || { diff "$T/before" "$T/after"; fail "a cross-session search wrote to another session's store"; }
ok
done_ok
