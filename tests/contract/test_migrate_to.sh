#!/bin/sh
# `lcm migrate --to URL` copies this home's stores into the store the URL names, here
# another agent home (file:///path): a dry run lists each store with the rows it would copy
# and changes nothing; --apply copies them (searchable there, doctor clean, the session's
# date kept); a second --apply copies 0 rows (idempotent); the source is untouched; a URL no
# backend of this build takes is refused with its password masked; `lcm migrate` without
# --to keeps its meaning (older-schema stores upgraded in place).
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H2="$T/home2"
mkdir -p "$H2"
replay_hellos mig-000 MIGNEEDLE /work/p
sums() { for f in "$HOME_DIR"/lcm/*.sqlite; do sha256sum "$f"; done; }
before=$(sums)
"$LCM" migrate --home "$HOME_DIR" --to "file://$H2" >"$T/dry.out" 2>&1
assert_eq "$?" 1 "a dry run with something to copy exits 1 (something to do)"
for n in 1 2 3; do assert_grep "$T/dry.out" "mig-000$n: [1-9][0-9]* row(s) would be copied (2 message(s))" "the dry run counts store $n"; done
assert_grep "$T/dry.out" "dry run" "the dry run says so"
[ ! -d "$H2/lcm" ] || [ -z "$(ls "$H2/lcm")" ] || fail "a dry run writes nothing into the target"; ok
"$LCM" migrate --home "$HOME_DIR" --to "file://$H2" --apply >"$T/a1.out" 2>&1 || { cat "$T/a1.out"; fail "apply exits 0"; }
ok
for n in 1 2 3; do assert_grep "$T/a1.out" "mig-000$n: [1-9][0-9]* row(s) copied" "store $n copied with its count"; done
"$LCM" migrate --home "$HOME_DIR" --to "file://$H2" --apply --json >"$T/a2.json" 2>&1 || { cat "$T/a2.json"; fail "second apply exits 0"; }
python3 - "$T/a2.json" <<'PY' || fail "a second --apply copies 0 rows of every store"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["copied"] == 0 and len(d["stores"]) == 3, d
assert all(s["copied"] == 0 and s["rows"] > 0 for s in d["stores"]), d
PY
ok
assert_eq "$(sums)" "$before" "the source stores are untouched"
"$LCM" grep --home "$H2" --scope all_sessions MIGNEEDLE_3 >"$T/g.out" 2>&1 || { cat "$T/g.out"; fail "grep in the target"; }
assert_grep "$T/g.out" "past session mig-0003" "the copied store is searchable in the target home"
PYTHONPATH="$ROOT/tests/contract" python3 - "$HOME_DIR/lcm" "$H2/lcm" <<'PY' || fail "every message and the session's meta are in the target"
import sqlite3, sys, os
import store_raw
for n in (1, 2, 3):
    a = sqlite3.connect(os.path.join(sys.argv[1], "mig-000%d.sqlite" % n))
    b = sqlite3.connect(os.path.join(sys.argv[2], "mig-000%d.sqlite" % n))
    q = ["entry_id", "raw_bytes"]
    assert store_raw.rows(a, q, "order by ordinal") == store_raw.rows(b, q, "order by ordinal"), n
    m = "select value from meta where key=?"
    for k in ("session_id", "cwd", "created"):
        assert a.execute(m, (k,)).fetchone() == b.execute(m, (k,)).fetchone(), (n, k)
PY
ok
"$LCM" doctor --home "$H2" >"$T/doc.out" 2>&1
assert_eq "$?" 0 "doctor over the target home is clean"
# refusals
"$LCM" migrate --home "$HOME_DIR" --to "postgresql://agent:s3cret@db.invalid/lcm" >"$T/pg.out" 2>&1
assert_eq "$?" 1 "a URL no backend of this build takes is refused"
assert_grep "$T/pg.out" "agent:\*\*\*@db.invalid" "the refusal names the URL with its password masked"
assert_nogrep "$T/pg.out" "s3cret" "the password is never printed"
"$LCM" migrate --home "$HOME_DIR" --to "file://$HOME_DIR" --apply >"$T/self.out" 2>&1
assert_eq "$?" 1 "a copy onto this home itself is refused"
"$LCM" migrate --home "$HOME_DIR" --to >"$T/usage.out" 2>&1
assert_eq "$?" 2 "--to without a URL is a usage error"
"$LCM" migrate --home "$HOME_DIR" >"$T/plain.out" 2>&1
assert_eq "$?" 0 "lcm migrate without --to: nothing older to upgrade"
assert_grep "$T/plain.out" "every store is at schema" "lcm migrate without --to keeps its meaning"
done_ok
