#!/bin/sh
# A backup killed mid-copy leaves lcm-backup-*.tmp.PID (and its -journal): the next session
# start removes those of a dead process (issue 14.10) and leaves a live process's alone.
. "$(dirname "$0")/lib.sh"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --command "/lcm status" \
    > /dev/null 2>&1 || fail "first run"
ok
L="$HOME_DIR/lcm"
[ -d "$L" ] || fail "the store folder exists"; ok
DEAD=999999999
for f in "lcm-backup-s-20260101.db.tmp.$DEAD" "lcm-backup-s-20260101.db.tmp.$DEAD-journal" \
         "lcm-backup-s-20260102.db.tmp.$$"; do
    printf 'partial copy' > "$L/$f"
done
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --log "$T/log" \
    --command "/lcm status" > "$T/out" 2>&1 || { cat "$T/out"; fail "second run"; }
ok
[ ! -e "$L/lcm-backup-s-20260101.db.tmp.$DEAD" ] || fail "the partial backup of a dead process is removed at start"; ok
[ ! -e "$L/lcm-backup-s-20260101.db.tmp.$DEAD-journal" ] || fail "its journal too"; ok
[ -e "$L/lcm-backup-s-20260102.db.tmp.$$" ] || fail "a live process's partial backup stays"; ok
assert_grep "$T/log" "removed 2 partial backup file(s) of a killed backup" "the log names the sweep"
done_ok
