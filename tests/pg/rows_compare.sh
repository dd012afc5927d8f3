#!/bin/sh
# tests/pg/rows_compare.sh OLD_BUILD NEW_BUILD: what two builds store on PostgreSQL from the
# same input, compared (a change to the ingest's statements or the schema's steps must not
# change a stored value). For each build, on a private server of its own (tests/pg/pg.sh):
#   - test_pg_ingest's fingerprints of a generated history (every column of every message,
#     the tsvector as text, the file handles, the DAG progress numbers);
#   - a generated session imported with that build's `lcm import` and written back with its
#     `lcm export`, and each message's tsvector read from the database.
# Each must match byte for byte. Exit 0 when all three are equal.
# Run from the repository's root: sh tests/pg/rows_compare.sh /tmp/old/build build
OLD=${1:?usage: rows_compare.sh OLD_BUILD NEW_BUILD}
NEW=${2:?usage: rows_compare.sh OLD_BUILD NEW_BUILD}
. tests/pg/pg.sh
pg_available || { echo "skipped: no PostgreSQL server binaries"; exit 0; }
W=$(mktemp -d "${TMPDIR:-/tmp}/lc-rows.XXXXXX")
trap 'pg_stop; rm -rf "$W"' EXIT
"$NEW/agent-host" gen --seed 11 --tokens 60000 "$W/in.jsonl" >/dev/null || exit 1
# The generated input as a session file (what `lcm import` reads): the host replays it once.
mkdir -p "$W/gen-home"
"$NEW/agent-host" --home "$W/gen-home" --plugin-dir "$NEW/plugins" --session "$W/session.jsonl" --window 16000 \
    replay "$W/in.jsonl" >/dev/null 2>&1 || { echo "the replay that writes the session file failed"; exit 1; }
SID=$(head -1 "$W/session.jsonl" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")

rows() { # rows BUILD OUTDIR
    mkdir -p "$2/home"
    pg_start >/dev/null || return 1
    "$1/tests/test_pg_ingest" 2>&1 | grep -o 'fingerprints: .*' >"$2/fingerprints.txt"
    "$1/lcm" import --home "$2/home" "$W/session.jsonl" >/dev/null 2>&1 || { echo "import with $1 failed"; return 1; }
    "$1/lcm" export --home "$2/home" --session "$SID" --out "$2/export.jsonl" >/dev/null 2>&1 ||
        { echo "export with $1 failed"; return 1; }
    pg_sql "SELECT m.entry_id || ' ' || m.tsv::text FROM lcm.messages m JOIN lcm.sessions s ON s.sid = m.sid
            WHERE s.session_id = '$SID' ORDER BY m.id" >"$2/tsv.txt"
    pg_stop
}
rows "$OLD" "$W/old" || exit 1
rows "$NEW" "$W/new" || exit 1
rc=0
for f in fingerprints.txt export.jsonl tsv.txt; do
    if cmp -s "$W/old/$f" "$W/new/$f"; then
        echo "same: $f ($(wc -l <"$W/new/$f") lines)"
    else
        echo "DIFFERENT: $f"
        diff "$W/old/$f" "$W/new/$f" | head -20
        rc=1
    fi
done
[ -s "$W/new/fingerprints.txt" ] && [ -s "$W/new/tsv.txt" ] || { echo "nothing was compared"; rc=1; }
exit $rc
