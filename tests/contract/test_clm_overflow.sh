#!/bin/sh
# runner: alone (bounds the huge edit's validation at 60 s, a linear-time guard)
# An edit far over the window must not make every later request fail (issue 14.6). The model
# inserts 100,000 new- blocks (~13 MB, under the 16 MB mirror cap): the edit is accepted
# (there is deliberately no size gate) and validated in linear time. The provider (the fake
# model with --context-limit) refuses the next request as context_length_exceeded; the host's
# overflow path tells the plugin even though the transcript has nothing to cut, the plugin
# drops the revision back to the raw transcript (recorded as a reset entry), and the host's
# retry of the same request is answered. The next prompt (a new process) stays raw until the
# model edits again; that edit becomes the next revision.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/contract/clm/check.sh"

clm_session clmover-0001
edit() { printf '{"tool_calls":[{"name":"bash","arguments":{"command":"python3 %s/edits.py %s"}}]}' "$CLMPY" "$1"; }
printf '[%s, {"content":"RECOVERED_A"}]\n' "$(edit many:100000)" > "$T/script1.json"
start_server "$T/script1.json" "$T/r1.jsonl" --context-limit 30000
t0=$(date +%s)
run_prompt "$S" "$T/out1.txt" "$T/err1.txt" "the prompt after the huge edit fails" "start the task USER_ONE"
t1=$(date +%s)
echo "first run (edit of 100,000 blocks, overflow, retry): $((t1 - t0)) s"
[ $((t1 - t0)) -lt 60 ] || fail "the huge edit is validated in linear time (took $((t1 - t0)) s)"; ok
assert_grep "$T/out1.txt" "RECOVERED_A" "the refused request is retried and answered"
R="$T/r1.jsonl"
check "len(rows) == 3" "three requests: the edit, the refused one, the retry"
check "has(rows[1], 'MANY_NOTE 99999') and has(rows[1], 'accepted as revision 1')" "the huge revision was accepted and sent"
check "not has(rows[2], 'MANY_NOTE') and 'USER_ONE' in text(body(rows[2])[0])" "the retry is the raw transcript"
check "has(rows[2], 'provider refused a request as over the model') and has(rows[2], 'revision 1 stays in the session file')" "the model is told why"
assert_grep "$T/err1.txt" "reported a context overflow.*revision 1 in force.*back to the raw transcript" "the user is told"
assert_jsonl "$S" "[r['data']['kind'] for r in rows if r.get('customType') == 'live-context-state'] == ['accept', 'reset']" "the fallback is recorded as a reset after the accept"
assert_jsonl "$S" "'provider overflow' in [r['data'] for r in rows if r.get('customType') == 'live-context-state'][-1].get('reason', '')" "the reset names the overflow"

# A new process: still raw; a new (small) edit becomes revision 3 and is used.
printf '[%s, {"content":"SECOND_DONE"}]\n' "$(edit note:NOTE_AFTER)" > "$T/script2.json"
start_server "$T/script2.json" "$T/r2.jsonl" --context-limit 30000
run_prompt "$S" "$T/out2.txt" "$T/err2.txt" "the next prompt fails" "second prompt SECOND_Q"
assert_grep "$T/out2.txt" "SECOND_DONE" "the next prompt is answered"
R="$T/r2.jsonl"
check "len(rows) == 2 and not has(rows[0], 'MANY_NOTE')" "the next prompt starts from the raw transcript"
check "has(rows[1], 'NOTE_AFTER') and has(rows[1], 'accepted as revision 3') and not has(rows[1], 'MANY_NOTE')" "a new edit is the next revision"
done_ok
