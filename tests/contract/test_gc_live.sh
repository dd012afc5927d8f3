#!/bin/sh
# `/lcm gc --apply` keeps the store of every session whose file still exists, wherever it
# lives (issue 14.7): sessions in projA/a.jsonl and projB/b.jsonl (outside HOME/sessions,
# each in its own folder); gc run from B must keep A's store, and still retire the store
# of a session whose file was deleted (projC/c.jsonl) or moved away from its name. Before
# the fix gc run from B exported and deleted A's store.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/projA" "$T/projB" "$T/projC"
for x in A:1 B:2 C:3; do
    d=${x%%:*}; seed=${x##*:}; f=$(echo "$d" | tr ABC abc)
    "$HOST" gen --seed "$seed" --messages 40 "$T/in$d.jsonl" >/dev/null || fail "gen $d"
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/proj$d/$f.jsonl" \
        replay "$T/in$d.jsonl" >"$T/replay$d.txt" 2>&1 || { cat "$T/replay$d.txt"; fail "replay $d"; }
done
sid() { head -n 1 "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])"; }
SA=$(sid "$T/projA/a.jsonl"); SB=$(sid "$T/projB/b.jsonl"); SC=$(sid "$T/projC/c.jsonl")
for s in "$SA" "$SB" "$SC"; do [ -f "$HOME_DIR/lcm/$s.sqlite" ] || fail "store $s exists"; done
ok
python3 - "$HOME_DIR/lcm/$SA.sqlite" "$T/projA/a.jsonl" <<'PY' || fail "the store records its session file"
import os, sqlite3, sys
v = sqlite3.connect(sys.argv[1]).execute("SELECT value FROM meta WHERE key='session_file'").fetchone()
sys.exit(0 if v and v[0] == os.path.realpath(sys.argv[2]) else 1)
PY
ok
rm "$T/projC/c.jsonl"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/projB/b.jsonl" \
    --command "/lcm gc" --command "/lcm gc --apply" >"$T/gc.txt" 2>&1 || { cat "$T/gc.txt"; fail "gc"; }
[ -f "$HOME_DIR/lcm/$SA.sqlite" ] || { cat "$T/gc.txt"; fail "gc from B kept A's store (its session file exists)"; }
ok
[ -f "$HOME_DIR/lcm/$SB.sqlite" ] || fail "gc kept the current session's store"
ok
[ ! -f "$HOME_DIR/lcm/$SC.sqlite" ] || { cat "$T/gc.txt"; fail "gc retired C's store (its session file is gone)"; }
ok
assert_grep "$T/gc.txt" "exported 1 stores" "gc exported exactly the retired store"
assert_nogrep "$T/gc.txt" "$SA" "A's store is not listed as retired"
# A session file replaced by another session's file at the same path: A's store retires.
cp "$T/projB/b.jsonl" "$T/projA/a.jsonl"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/projB/b.jsonl" \
    --command "/lcm gc" >"$T/gc2.txt" 2>&1 || { cat "$T/gc2.txt"; fail "gc 2"; }
assert_grep "$T/gc2.txt" "$SA" "a recorded file that now holds another session does not keep the store"
done_ok
