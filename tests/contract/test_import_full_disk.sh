#!/bin/sh
# `lcm import` when the disk fills in the middle (RLIMIT_FSIZE with SIGXFSZ ignored, so a
# write returns EFBIG as on a full disk): the store's writer thread fails inside its second
# bulk transaction. The import says so and exits non-zero (it does not hang waiting on the
# writer, nor report success); the store is whole (integrity_check ok, back in WAL, no hot
# journal left) and holds the messages of the first commit exactly as a clean import stores
# them; the same import run again with room completes the store, row for row as the clean one.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
"$HOST" gen --seed 5 --messages 30000 "$T/in.jsonl" >/dev/null || fail "gen"
"$LCM" import --home "$T/clean" "$T/in.jsonl" >"$T/clean.txt" 2>&1 || { cat "$T/clean.txt"; fail "clean import"; }
# The clean store is about 63 MB, its first commit (16,384 messages) about 33 MB: a limit
# between them (in 512-byte blocks) lets the first commit in and not the second.
sh -c "trap '' XFSZ; ulimit -f 90000; exec \"$LCM\" import --home \"$T/full\" \"$T/in.jsonl\"" \
    >"$T/full.txt" 2>&1 &
PID=$!
i=0
while kill -0 $PID 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
kill -0 $PID 2>/dev/null && { kill -9 $PID; fail "the import hung after its writer failed"; }
ok
wait $PID && { cat "$T/full.txt"; fail "the import reported success on a full disk"; }
ok
assert_grep "$T/full.txt" "lcm import: .*disk I/O error" "the import names the failed write"
assert_nogrep "$T/full.txt" "^imported " "no success line for the failed import"
DB=$(ls "$T"/full/lcm/*.sqlite)
[ ! -e "$DB-journal" ] || fail "a hot journal is left behind"
ok
cat >"$T/compare.py" <<'PY'
import glob, sqlite3, sys
sys.path.insert(0, sys.argv[4])
import store_raw
def rows(home):
    (path,) = glob.glob(home + "/lcm/*.sqlite")
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", home + ": integrity_check"
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal", home + ": not back in WAL"
    return {r[0]: r[1:] for r in store_raw.rows(db, ["entry_id", "ordinal", "role", "text", "raw_json", "tokens"])}
clean, full = rows(sys.argv[1]), rows(sys.argv[2])
mode = sys.argv[3]
if mode == "partial":
    # what the first commit wrote: a real part, every row as the clean import stores it
    if not (10000 < len(full) < len(clean)):
        sys.exit("kept %d of %d rows" % (len(full), len(clean)))
    bad = [k for k in full if full[k] != clean.get(k)]
    if bad:
        sys.exit("%d kept rows differ from the clean import's, e.g. %s" % (len(bad), bad[0]))
else:
    if full != clean:
        sys.exit("after the second import: %d rows, the clean import has %d" % (len(full), len(clean)))
PY
python3 "$T/compare.py" "$T/clean" "$T/full" partial "$ROOT/tests/contract" || fail "the store after the failed import"
ok
"$LCM" import --home "$T/full" "$T/in.jsonl" >"$T/again.txt" 2>&1 || { cat "$T/again.txt"; fail "the import run again"; }
python3 "$T/compare.py" "$T/clean" "$T/full" complete "$ROOT/tests/contract" || fail "the store after the import run again"
done_ok
