#!/bin/sh
# `lcm migrate --to postgresql://...` moves an agent home's embedded SQLite stores into a
# real PostgreSQL database: the dry run copies nothing and says what would move (exit 1),
# --apply copies every message, a second --apply adds no message, and with LCM_STORE_URL
# set the home's past session is searchable and doctor-clean in the database. A store
# that never embedded has empty vector tables, which a backend without them does not need.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/pg/pg.sh"
pg_available || { echo "no PostgreSQL server binaries (tests/deps.sh installs postgresql)"; exit 1; }
trap 'pg_stop; cleanup' EXIT
pg_start || fail "a PostgreSQL server starts in a temporary folder"
URL=$LCM_STORE_URL; unset LCM_STORE_URL
LCM="$BUILD/lcm"
"$HOST" gen --seed 5 --tokens 30000 "$T/a.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/o.jsonl" --window 16000 \
    replay "$T/a.jsonl" >/dev/null 2>&1 || fail "replay into the embedded store"
SID=$(head -1 "$T/a.jsonl" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
msgs=$(python3 -c "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute('select count(*) from messages').fetchone()[0])" "$HOME_DIR/lcm/$SID.sqlite")
pgcount() { _n=$(pg_sql "select count(*) from lcm.messages" 2>/dev/null); echo "${_n:-0}"; }

"$LCM" migrate --home "$HOME_DIR" --to "$URL" > "$T/dry" 2>&1; rc=$?
assert_eq "$rc" "1" "the dry run exits 1 (something would be copied)"
assert_grep "$T/dry" "$SID: .* row(s) would be copied ($msgs message(s))" "the dry run names the store and its messages"
assert_eq "$(pgcount)" "0" "the dry run copies nothing"
"$LCM" migrate --home "$HOME_DIR" --to "$URL" --apply > "$T/apply" 2>&1 || { cat "$T/apply"; fail "--apply exits 0"; }
assert_eq "$(pgcount)" "$msgs" "--apply copies every message into the database"
"$LCM" migrate --home "$HOME_DIR" --to "$URL" --apply > "$T/again" 2>&1 || { cat "$T/again"; fail "a second --apply exits 0"; }
assert_eq "$(pgcount)" "$msgs" "a second --apply adds no message"
assert_nogrep "$T/apply" "not copied" "no store is left behind"
# The embedded store keeps a message's JSON packed; the database gets the original bytes.
pg_sql "select entry_id || ' ' || md5(raw_json) from lcm.messages" | LC_ALL=C sort >"$T/pg.md5"
PYTHONPATH="$ROOT/tests/contract" python3 - "$HOME_DIR/lcm/$SID.sqlite" <<'PY' | LC_ALL=C sort >"$T/sq.md5"
import hashlib, sqlite3, sys
import store_raw
db = sqlite3.connect(sys.argv[1])
for e, raw in store_raw.rows(db, ["entry_id", "raw_bytes"]):
    print(e, hashlib.md5(raw).hexdigest())
PY
assert_eq "$(wc -l <"$T/pg.md5")" "$msgs" "the database holds every message's JSON"
cmp -s "$T/pg.md5" "$T/sq.md5" || fail "every message's JSON reaches the database byte for byte"
export LCM_STORE_URL=$URL
kv=$(python3 - "$T/a.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    m = r.get("message") or {}
    if m.get("role") == "user":
        c = m.get("content")
        t = c if isinstance(c, str) else " ".join(b.get("text", "") for b in c if isinstance(b, dict))
        w = [x for x in t.split() if x.isalpha() and len(x) > 6]
        if w: print(w[0]); break
PY
)
[ -n "$kv" ] || fail "a word of the session to search for"
"$LCM" grep --home "$HOME_DIR" "$kv" > "$T/grep" 2>&1 || { cat "$T/grep"; fail "lcm grep over the database"; }
assert_grep "$T/grep" "past session $SID" "the migrated session is searchable in the database"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/o.jsonl" --command "/lcm doctor" > "$T/doc" 2>&1
assert_grep "$T/doc" "^LCM doctor: postgresql://" "doctor reads the database"
assert_grep "$T/doc" "^faults: 0" "the migrated store is doctor-clean in the database"
assert_nogrep "$T/dry" "password" "no password is printed"
done_ok
