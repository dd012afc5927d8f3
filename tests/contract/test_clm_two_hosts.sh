#!/bin/sh
# Two processes on one session (issue 14.5). The mirror folder belongs to the process that
# holds its owner lock: a second process on the same session (a live host B, a
# `--command "/lcm status"` C) is told which process owns the session's folder, uses its own
# (BASE.PID), and removes only that at shutdown. Host A's edit, made while B and C ran and
# exited, is accepted as revision 1; B's edit of its own mirror never reaches A, and A's
# never reaches B. A folder of a dead process is swept at the next start; a folder a live
# process holds is left alone.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/contract/clm/check.sh"

clm_session clmtwo-0001
BASE="$T/tmp/lossless-context-$SID"

# --- A edits while B (a live host) and C (/lcm status) run on the same session and exit ---
cat > "$T/second.sh" <<EOF
MIRROR_GLOB="$BASE/LIVE_CONTEXT.md" python3 "$CLMPY/edits.py" drop-and-note || exit 1
ls -a "$BASE" > "$T/a_folder_before.txt"
MIRROR_GLOB="$BASE.*/LIVE_CONTEXT.md" "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" \
    --session "$S" --cwd "$T/work" --base-url "http://127.0.0.1:\$FAKE_PORT/v1" --model fake \
    -p "PROMPT_B" > "$T/b.out" 2> "$T/b.err"
echo "B_EXIT=\$?"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --cwd "$T/work" \
    --command "/lcm status" > "$T/c.out" 2> "$T/c.err"
echo "C_EXIT=\$?"
ls -a "$T/tmp" > "$T/tmp_after.txt"
EOF
edit_b() { printf '{"tool_calls":[{"name":"bash","arguments":{"command":"python3 %s/edits.py note:NOTE_B"}}]}' "$CLMPY"; }
cat > "$T/script.json" <<EOF
[
 {"tool_calls":[{"name":"bash","arguments":{"command":"echo MARK_A_OUTPUT"}}]},
 {"tool_calls":[{"name":"bash","arguments":{"command":"sh $T/second.sh"}}]},
 $(edit_b),
 {"content":"B_DONE"},
 {"content":"A_DONE"}
]
EOF
start_server "$T/script.json" "$T/r.jsonl"
export FAKE_PORT="$PORT"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "PROMPT_A USER_ONE" \
    > "$T/a.out" 2> "$T/a.err" &
APID=$!
wait "$APID" || { cat "$T/a.out" "$T/a.err"; fail "host A failed"; }
ok
assert_grep "$T/a.out" "A_DONE" "host A finishes"
assert_grep "$T/b.out" "B_DONE" "host B finishes"
R="$T/r.jsonl"
check "len(rows) == 5" "five model requests (A, A, B, B, A)"
# A: the edit made while B and C ran and exited is in force.
check "has(rows[4], 'accepted as revision 1') and has(rows[4], 'NOTE_ONE') and not has(rows[4], 'MARK_A_OUTPUT')" "A's edit is accepted as revision 1 after the other processes exited"
check "not has(rows[4], 'NOTE_B') and not has(rows[4], 'was rejected')" "A never reads B's mirror"
# B: its own mirror, its own edit.
check "'$BASE.' in rows[2]['messages'][0]['content'] and '$BASE/' not in rows[2]['messages'][0]['content']" "B's system prompt names its own mirror folder"
check "has(rows[3], 'NOTE_B') and has(rows[3], 'accepted as revision') and not has(rows[3], 'NOTE_ONE')" "B's edit of its own mirror is accepted and A's is not in it"
check "'$BASE/' in rows[0]['messages'][0]['content']" "A owns the session's folder"
# Both second processes were told who owns the session's folder.
assert_grep "$T/b.err" "this session is open in another process (process $APID)" "host B is told which process has the session open"
assert_grep "$T/c.err" "this session is open in another process (process $APID)" "the /lcm status run is told which process has the session open"
assert_grep "$T/c.out" "messages" "the /lcm status run still answers"
assert_grep "$T/a_folder_before.txt" ".owner" "A's folder holds its owner file"
assert_nogrep "$T/tmp_after.txt" "lossless-context-$SID\." "B and C removed their own folders at shutdown"
assert_grep "$T/tmp_after.txt" "lossless-context-$SID\$" "A's folder outlived B and C"
assert_nogrep "$T/a.err" "this session is open in another process" "A, the first, is not told"
[ ! -d "$BASE" ] || fail "A removes its folder at shutdown"; ok
# --- the sweep: a dead process's folder goes, a live one's stays --------------------------
mkdir -m 700 "$T/tmp/lossless-context-dead-0001" "$T/tmp/lossless-context-live-0001"
printf '999999999\n' > "$T/tmp/lossless-context-dead-0001/.owner"
echo "old conversation" > "$T/tmp/lossless-context-dead-0001/LIVE_CONTEXT.md"
python3 -c "
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, b'%d\n' % os.getpid())
open(sys.argv[2], 'w').write('locked')
time.sleep(60)" "$T/tmp/lossless-context-live-0001/.owner" "$T/locked" &
LOCKER=$!
i=0; while [ ! -s "$T/locked" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/other.jsonl" --cwd "$T/work" \
    --command "/clm status" > "$T/sweep.out" 2> "$T/sweep.err" || { cat "$T/sweep.err"; fail "sweep run"; }
ok
[ ! -d "$T/tmp/lossless-context-dead-0001" ] || fail "the folder of a dead process is swept"; ok
[ -f "$T/tmp/lossless-context-live-0001/.owner" ] || fail "a folder a live process holds is left alone"; ok
kill "$LOCKER"; wait "$LOCKER" 2>/dev/null
rm -rf "$T/tmp/lossless-context-live-0001"

done_ok
