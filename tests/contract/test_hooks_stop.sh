#!/bin/sh
# lcm hook stop with the real build/lcm: the first call reads the transcript whole, the
# next ones only what was appended (resumed from the remembered offset); the rows equal
# those of a whole `lcm import` of the final file (a fork included); a transcript that
# shrank is read again; an incomplete last line waits for the next call; bad input, a
# missing transcript and a stuck stdin all exit 0 with a line in hooks.log.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H="$T/h"
LOG="$H/lcm/hooks.log"
export LCM_HOOK_VERBOSE=1
input() { printf '{"session_id":"%s","transcript_path":"%s","cwd":"%s","hook_event_name":"Stop"}' "$1" "$2" "$3"; }
stop() { input "$@" | "$LCM" hook stop --home "$H"; }
# rows PATH: the store's rows as a comparable text
rows() { PYTHONPATH="$ROOT/tests/contract" python3 - "$1" <<'PY'
import sqlite3, sys
import store_raw
db = sqlite3.connect(sys.argv[1])
for r in store_raw.rows(db, ["entry_id", "ordinal", "removed", "raw_json"], "ORDER BY entry_id"):
    print(r)
PY
}
SID=5e551011-0000-4000-8000-00000000c0de
TR="$T/t.jsonl"
python3 "$ROOT/tests/contract/claude_transcript.py" "$TR" --messages 40 --session "$SID" --cwd /proj/a
out=$(stop "$SID" "$TR" /proj/a); rc=$?
assert_eq "$rc" "0" "stop exits 0"
assert_eq "$out" "" "stop prints nothing"
DB="$H/lcm/claude-$SID.sqlite"
[ -f "$DB" ] || fail "no store after the first stop"
assert_grep "$LOG" "read whole $TR: 40 lines read, 40 messages, 40 new" "the first call reads the whole transcript"
python3 "$ROOT/tests/contract/claude_transcript.py" "$TR" --messages 6 --session "$SID" --cwd /proj/a --append --tag SECONDCALL
stop "$SID" "$TR" /proj/a || fail "second stop exit"
assert_grep "$LOG" "resumed $TR: 6 lines read, 6 messages, 6 new" "the second call reads only the 6 new lines"
"$LCM" grep --home "$H" SECONDCALL >"$T/g.txt"
assert_grep "$T/g.txt" "request 10 SECONDCALL" "the new request is searchable"
stop "$SID" "$TR" /proj/a || fail "third stop exit"
assert_grep "$LOG" "resumed $TR: 0 lines read, 0 messages, 0 new" "nothing new: nothing read"
"$LCM" import --home "$T/full" "$TR" >/dev/null || fail "full import"
rows "$DB" >"$T/hook.rows"; rows "$T/full/lcm/claude-$SID.sqlite" >"$T/full.rows"
cmp -s "$T/hook.rows" "$T/full.rows" || fail "rows after resumed imports differ from a whole import"
assert_eq "$(wc -l <"$T/hook.rows" | tr -d ' ')" "46" "46 rows"

# many small calls, a tool call and its result split across them: still a whole import's rows
S2=c4c4c4c4-0000-4000-8000-000000000002
for k in 1 3 2 5 1 1 4 2 1; do
    python3 "$ROOT/tests/contract/claude_transcript.py" "$T/chunks.jsonl" --messages "$k" --session "$S2" --cwd /proj/c --append
    stop "$S2" "$T/chunks.jsonl" /proj/c || fail "chunked stop"
done
assert_eq "$(grep -c "read whole $T/chunks.jsonl" "$LOG")" "1" "only the first of the chunked calls reads whole"
"$LCM" import --home "$T/full" "$T/chunks.jsonl" >/dev/null || fail "chunks import"
rows "$H/lcm/claude-$S2.sqlite" >"$T/c1.rows"; rows "$T/full/lcm/claude-$S2.sqlite" >"$T/c2.rows"
cmp -s "$T/c1.rows" "$T/c2.rows" || { diff "$T/c1.rows" "$T/c2.rows" | head -5; fail "chunked rows differ from a whole import"; }
assert_grep "$T/c1.rows" '"toolName":"Bash"' "a result names its tool when its call came in an earlier call"

# an incomplete last line is left for the next call
printf '{"parentUuid":"5e551011-00000045","isSidechain":false,"type":"user","message":{"role":"user","content":"torn TAILWORD"},"uuid":"torn-1","sessionId":"%s","cwd":"/proj/a"' "$SID" >>"$TR"
stop "$SID" "$TR" /proj/a || fail "torn stop exit"
assert_grep "$LOG" "incomplete last line left for later" "the torn line is left"
printf '}\n' >>"$TR"
stop "$SID" "$TR" /proj/a || fail "completed stop exit"
"$LCM" grep --home "$H" TAILWORD >"$T/g2.txt"
assert_grep "$T/g2.txt" "torn TAILWORD" "the completed line is imported"
assert_eq "$(tail -n 1 "$LOG" | grep -c 'resumed .*: 1 lines read, 1 messages, 1 new')" "1" "completed line read on resume"

# a transcript rewritten shorter is read again from the start
python3 "$ROOT/tests/contract/claude_transcript.py" "$TR" --messages 8 --session "$SID" --cwd /proj/a --tag REWRITTEN
stop "$SID" "$TR" /proj/a || fail "shrunk stop exit"
assert_eq "$(tail -n 1 "$LOG" | grep -c "read whole $TR: 8 lines read")" "1" "a shrunk transcript is read whole"

# a fork (an edited prompt) falls back to a whole read: the same rows and marks as import
cat >"$T/fork.jsonl" <<'J'
{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"find the zebra bug"},"uuid":"u1","timestamp":"2025-06-01T10:00:00.000Z","sessionId":"f0f0f0f0-1111-2222-3333-444455556666","cwd":"/proj/f"}
{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"parse.c"}}],"stop_reason":"tool_use"},"uuid":"u2","timestamp":"2025-06-01T10:00:01.000Z","sessionId":"f0f0f0f0-1111-2222-3333-444455556666","cwd":"/proj/f"}
{"parentUuid":"u2","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"int parse(void);"}]},"uuid":"u3","timestamp":"2025-06-01T10:00:02.000Z","sessionId":"f0f0f0f0-1111-2222-3333-444455556666","cwd":"/proj/f"}
J
stop f0f0f0f0-1111-2222-3333-444455556666 "$T/fork.jsonl" /proj/f || fail "fork stop 1"
cat >>"$T/fork.jsonl" <<'J'
{"parentUuid":"u3","isSidechain":false,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Found it."}],"stop_reason":"end_turn"},"uuid":"u4","timestamp":"2025-06-01T10:00:03.000Z","sessionId":"f0f0f0f0-1111-2222-3333-444455556666","cwd":"/proj/f"}
{"parentUuid":"u1","isSidechain":false,"type":"user","message":{"role":"user","content":"actually look at lexer.c"},"uuid":"u5","timestamp":"2025-06-01T10:01:00.000Z","sessionId":"f0f0f0f0-1111-2222-3333-444455556666","cwd":"/proj/f"}
J
stop f0f0f0f0-1111-2222-3333-444455556666 "$T/fork.jsonl" /proj/f || fail "fork stop 2"
assert_eq "$(tail -n 1 "$LOG" | grep -c "read whole $T/fork.jsonl")" "1" "a fork into older entries is read whole"
"$LCM" import --home "$T/full" "$T/fork.jsonl" >/dev/null || fail "fork import"
rows "$H/lcm/claude-f0f0f0f0-1111-2222-3333-444455556666.sqlite" >"$T/fh.rows"
rows "$T/full/lcm/claude-f0f0f0f0-1111-2222-3333-444455556666.sqlite" >"$T/ff.rows"
cmp -s "$T/fh.rows" "$T/ff.rows" || { diff "$T/fh.rows" "$T/ff.rows" | head; fail "fork rows differ from import"; }
assert_eq "$(grep -c ", 1, '" "$T/fh.rows")" "3" "the abandoned branch is marked removed"

# Codex: ids count lines, so a resumed read must count from the offset's line
CX="$T/rollout.jsonl"
{
printf '{"timestamp":"2025-07-01T09:00:00.000Z","type":"session_meta","payload":{"id":"0199aaaa-bbbb-cccc-dddd-eeeeffff0000","timestamp":"2025-07-01T09:00:00.000Z","cwd":"/proj/cx"}}\n'
printf '{"timestamp":"2025-07-01T09:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}}\n'
printf '{"timestamp":"2025-07-01T09:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\\"command\\":[\\"ls\\"]}","call_id":"call_1"}}\n'
} >"$CX"
stop x "$CX" /proj/cx || fail "codex stop 1"
{
printf '{"timestamp":"2025-07-01T09:00:03.000Z","type":"event_msg","payload":{"type":"token_count"}}\n'
printf '{"timestamp":"2025-07-01T09:00:04.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"a.c b.c CODEXWORD"}}\n'
printf '{"timestamp":"2025-07-01T09:00:05.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"two files"}]}}\n'
} >>"$CX"
stop x "$CX" /proj/cx || fail "codex stop 2"
assert_eq "$(tail -n 1 "$LOG" | grep -c "resumed $CX: 3 lines read, 2 messages, 2 new")" "1" "codex resumed"
"$LCM" import --home "$T/full" "$CX" >/dev/null || fail "codex import"
rows "$H/lcm/codex-0199aaaa-bbbb-cccc-dddd-eeeeffff0000.sqlite" >"$T/ch.rows"
rows "$T/full/lcm/codex-0199aaaa-bbbb-cccc-dddd-eeeeffff0000.sqlite" >"$T/cf.rows"
cmp -s "$T/ch.rows" "$T/cf.rows" || { diff "$T/ch.rows" "$T/cf.rows"; fail "codex rows differ from import"; }
assert_grep "$T/ch.rows" '"toolName":"shell"' "the result names its tool across calls"

# the store deleted: the next call rebuilds it whole
rm -f "$DB" "$DB-wal" "$DB-shm"
python3 "$ROOT/tests/contract/claude_transcript.py" "$TR" --messages 2 --session "$SID" --cwd /proj/a --append
stop "$SID" "$TR" /proj/a || fail "stop after store loss"
assert_eq "$(tail -n 1 "$LOG" | grep -c "read whole $TR: 10 lines read, 10 messages, 10 new")" "1" "a lost store is rebuilt whole"

# never fails the agent
unset LCM_HOOK_VERBOSE
n0=$(wc -l <"$LOG")
printf 'not json at all' | "$LCM" hook stop --home "$H"; rc=$?
assert_eq "$rc" "0" "bad stdin exits 0"
assert_eq "$(tail -n 1 "$LOG" | grep -c 'not a JSON object')" "1" "bad stdin is logged"
input "$SID" "$T/missing.jsonl" /proj/a | "$LCM" hook stop --home "$H"; rc=$?
assert_eq "$rc" "0" "missing transcript exits 0"
assert_grep "$LOG" "cannot read the transcript $T/missing.jsonl" "missing transcript is logged"
: | "$LCM" hook subagent-stop --home "$H"; rc=$?
assert_eq "$rc" "0" "empty stdin exits 0"
(sleep 3; echo '{}') | LCM_HOOK_TIMEOUT_MS=300 "$LCM" hook stop --home "$H"; rc=$?
assert_eq "$rc" "0" "a stuck call exits 0"
assert_eq "$(tail -n 1 "$LOG" | grep -c 'timed out after 300 ms')" "1" "the alarm is logged"
"$LCM" hook no-such-event --home "$H" </dev/null 2>/dev/null; rc=$?
assert_eq "$rc" "0" "an unknown event exits 0"
[ "$(stat -c %a "$LOG")" = "600" ] || fail "hooks.log mode"
ok
# a log past 1 MiB moves aside (one old log kept) instead of growing without end
head -c 1100000 /dev/zero | tr '\0' 'x' >>"$LOG"
printf 'bad' | "$LCM" hook stop --home "$H"
[ -f "$LOG.1" ] && [ "$(wc -c <"$LOG")" -lt 1000 ] || fail "hooks.log is rotated past 1 MiB"
assert_grep "$LOG" "not a JSON object" "the new log has the new line"
done_ok
