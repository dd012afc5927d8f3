#!/bin/sh
# Messages of an abandoned branch that are missing from the store (the store could not be
# written when the branch was left: simulated by deleting their rows) are stored again at
# the next session start through get_entries (API level 2) -- present, marked removed, byte
# for byte as the session file holds them -- and only once. A level-1 host (no
# get_entries) cannot see them: they stay missing there, which is the gap this closes.
. "$(dirname "$0")/lib.sh"
FX="$ROOT/tests/contract/fixtures/branch.jsonl"
S="$T/s.jsonl"
SID="0f1e2d3c-4b5a-4697-8a8b-9c0d1e2f3a4b"
DB="$HOME_DIR/lcm/$SID.sqlite"

"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" replay "$FX" >"$T/out" 2>"$T/err" ||
    { cat "$T/err"; fail "replay failed"; }
ok
[ -f "$DB" ] || fail "the store $DB was not created"
ok

# store PY: run python with `db` (sqlite3 connection), `rows(ids)` -> {id: (removed, raw)},
# and `span(id)`: the exact bytes of the entry's "message" member in the session file.
store() {
    PYTHONPATH="$ROOT/tests/contract" python3 - "$DB" "$S" "$1" <<'PY'
import json, sqlite3, sys
import store_raw
db = sqlite3.connect(sys.argv[1])
lines = open(sys.argv[2], "rb").read().split(b"\n")
def span(eid):
    for l in lines:
        if l.strip() and json.loads(l).get("id") == eid:
            start = l.index(b'"message":') + len(b'"message":')
            dec = json.JSONDecoder()
            text = l.decode("utf-8")
            s = len(l[:start].decode("utf-8"))
            _, end = dec.raw_decode(text, s)
            return text[s:end].encode("utf-8")
    raise KeyError(eid)
def rows(ids):
    q = "WHERE entry_id IN (%s)" % ",".join("?" * len(ids))
    return {r[0]: (r[1], r[2]) for r in store_raw.rows(db, ["entry_id", "removed", "raw_bytes"], q, ids)}
exec(sys.argv[3])
PY
}
OFF="['u0000002', 'b0000003']"

# The replay stored the abandoned branch and marked it removed.
store "r = rows($OFF); assert set(r) == {'u0000002', 'b0000003'}, r; assert all(v[0] == 1 for v in r.values()), r" ||
    fail "after replay: the abandoned branch is stored and marked removed"
ok
# Lose them, as a store that could not be written at the tree move would have.
store "
for eid in $OFF:
    rid, text = db.execute('SELECT id, text FROM messages WHERE entry_id = ?', (eid,)).fetchone()
    # The index's tokenizer is the store's own (python's sqlite3 cannot load it): its
    # per-row record goes, so a later insert of the same rowid is not refused.
    db.execute('DELETE FROM messages_fts_docsize WHERE id = ?', (rid,))
    db.execute('DELETE FROM messages WHERE entry_id = ?', (eid,))
db.commit()
assert rows($OFF) == {}
" || fail "deleting the abandoned branch's rows"
ok
N0=$(store "print(db.execute('SELECT count(*) FROM messages').fetchone()[0])")

# A level-1 host lists only the active branch: the lost messages stay lost.
AGENT_HOST_API_LEVEL=1 "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" \
    --command "/lcm status" >"$T/out1" 2>"$T/err1" || { cat "$T/err1"; fail "level-1 restart failed"; }
ok
store "assert rows($OFF) == {}" || fail "level 1: nothing can bring the off-branch messages back"
ok

# Level 2: session start finds them through get_entries and stores them, marked removed,
# byte for byte.
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --log "$T/log2" \
    --command "/lcm status" >"$T/out2" 2>"$T/err2" || { cat "$T/err2"; fail "level-2 restart failed"; }
ok
store "
r = rows($OFF)
assert set(r) == {'u0000002', 'b0000003'}, r
for eid, (removed, raw) in r.items():
    assert removed == 1, (eid, removed)
    assert raw == span(eid), (eid, raw, span(eid))
" || fail "level 2: the off-branch messages are back, marked removed, byte for byte"
ok
assert_grep "$T/log2" "lcm: 2 message(s) of abandoned branches were missing from the store" "the restore is logged"
store "assert rows(['u0000004'])['u0000004'][0] == 0" || fail "the active branch stays unmarked"
ok
N1=$(store "print(db.execute('SELECT count(*) FROM messages').fetchone()[0])")
assert_eq "$N1" "$((N0 + 2))" "exactly the two missing rows were written"

# Idempotent: another start writes nothing.
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --log "$T/log3" \
    --command "/lcm status" >"$T/out3" 2>"$T/err3" || { cat "$T/err3"; fail "third start failed"; }
ok
assert_nogrep "$T/log3" "abandoned branches were missing" "a second start finds nothing missing"
N2=$(store "print(db.execute('SELECT count(*) FROM messages').fetchone()[0])")
assert_eq "$N2" "$N1" "no rows added on the second start"
done_ok
