#!/bin/sh
# A home that does not exist is said plainly, exit 1, by every verb that reads one: never
# "0 stores" and exit 0, never "online". Import (which creates it) still works.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
NOPE="$T/nope"
for cmd in "grep rust" "sessions" "status" "expand abc def" "describe abc #1" "status --json" "sessions --json" \
           "doctor" "report" "handoff"; do
    # shellcheck disable=SC2086
    "$LCM" $cmd --home "$NOPE" >"$T/o" 2>"$T/e"; rc=$?
    assert_eq "$rc" "1" "lcm $cmd on a missing home exits 1"
    assert_grep "$T/e" "no agent home at $NOPE" "lcm $cmd says the home does not exist"
    assert_nogrep "$T/o" "online" "lcm $cmd does not call a missing home online"
    [ ! -e "$NOPE" ] || fail "lcm $cmd created the missing home"
done
python3 "$ROOT/tests/contract/claude_transcript.py" "$T/a.jsonl" --messages 4
"$LCM" import --home "$NOPE" "$T/a.jsonl" >"$T/o" 2>&1 || { cat "$T/o"; fail "import creates a new home"; }
"$LCM" status --home "$NOPE" >"$T/o" 2>&1 || { cat "$T/o"; fail "status of the imported home exits 0"; }
ok
done_ok
