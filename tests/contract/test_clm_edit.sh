#!/bin/sh
# Live context through the real host and the real plugin: a scripted model (fake_openai.py)
# edits LIVE_CONTEXT.md with the host's bash / edit / write tools -- deletes a tool group,
# inserts a new-* note, reorders, edits a tool result and a user turn, rewrites the whole
# context -- and every NEXT recorded request carries exactly the edited context. Each
# rejection path's notice reaches the next request. The session file holds the
# live-context-state entries; a resumed session and a /tree move restore the right revision.
. "$(dirname "$0")/lib.sh"


. "$ROOT/tests/contract/clm/check.sh"

clm_session clmtest-0001

edit() { printf '{"tool_calls":[{"name":"bash","arguments":{"command":"python3 %s/edits.py %s"}}]}' "$CLMPY" "$1"; }
{
    echo '['
    echo ' {"tool_calls":[{"name":"bash","arguments":{"command":"echo MARK_A_OUTPUT"}}]},'
    for step in drop-and-note reorder-and-edit-result; do echo " $(edit $step),"; done
    echo " {\"tool_calls\":[{\"name\":\"edit\",\"arguments\":{\"path\":\"$MIRROR\",\"oldText\":\"USER_ONE\",\"newText\":\"USER_ONE_EDITED\"}}]},"
    for step in stale-meta unknown-id duplicate-id illegal-sequence injected-header stale-nonce; do
        echo " $(edit $step),"
    done
    printf ' {"tool_calls":[{"name":"write","arguments":{"path":"%s","content":"REWRITE_NOTES: counting task, nothing else matters.\\n"}}]},\n' "$MIRROR"
    echo ' {"content":"FIRST_RUN_DONE"}'
    echo ']'
} > "$T/script.json"
start_server "$T/script.json" "$T/r1.jsonl"
run_prompt "$S" "$T/out1.txt" "$T/err1.txt" "first run failed" "start the task USER_ONE"
assert_grep "$T/out1.txt" "FIRST_RUN_DONE" "the scripted run finishes"
R="$T/r1.jsonl"
check "len(rows) == 12" "twelve model requests"

# The protocol with the mirror path is in the system prompt of every request.
check "all('$MIRROR' in r['messages'][0]['content'] and 'CTX_TURN' in r['messages'][0]['content'] for r in rows)" "system prompt carries the protocol and mirror path"
# Request 2 still has the MARK_A group; request 3 (after drop-and-note) has not, and the
# note sits right after the first user turn, as user-role text.
check "has(rows[1], 'MARK_A_OUTPUT')" "request 2 carries the bash output"
check "not has(rows[2], 'MARK_A_OUTPUT')" "request 3: the deleted tool group is gone"
check "body(rows[2])[0]['role'] == 'user' and 'USER_ONE' in text(body(rows[2])[0]) and 'NOTE_ONE' in text(body(rows[2])[1]) and body(rows[2])[1]['role'] == 'user'" "request 3: the inserted note follows the first user turn as user-role text"
check "'accepted as revision 1' in text(body(rows[2])[-1])" "request 3: the accept notice is the last message"
check "[m['role'] for m in body(rows[2])][2:4] == ['assistant', 'tool']" "request 3: the raw suffix (the edit call and its result) follows the revision"
# Request 4: the note moved before the user turn; the edited tool result is plain text and
# its call lost its structure.
check "'NOTE_ONE' in text(body(rows[3])[0]) and 'USER_ONE' in text(body(rows[3])[1])" "request 4: reordered (note first)"
check "has(rows[3], 'EDITED_RESULT_TWO') and not has(rows[3], 'edited: drop-and-note')" "request 4: the tool result body was edited"
check "sum(1 for m in body(rows[3]) if m.get('tool_calls')) == 1 and sum(1 for m in body(rows[3]) if m['role'] == 'tool') == 1" "request 4: only the newest call stays structured"
check "has(rows[3], 'accepted as revision 2')" "request 4: accept notice for revision 2"
# Request 5: the user turn was edited with the edit tool.
check "any(m['role'] == 'user' and 'USER_ONE_EDITED' in text(m) for m in body(rows[4]))" "request 5: the user turn carries the edit"
check "has(rows[4], 'accepted as revision 3')" "request 5: accept notice for revision 3"
# The rejection paths: each notice reaches the next request, and the context is unchanged.
check "has(rows[5], 'was rejected') and has(rows[5], 'metadata line is stale or altered') and has(rows[5], 'the first line must be exactly: [[LIVE_CONTEXT version=1 revision=3')" "request 6: stale metadata rejected with the expected first line"
check "has(rows[6], 'unknown id=99-deadbeefdead')" "request 7: unknown id rejected"
check "has(rows[7], 'duplicate id=')" "request 8: duplicate id rejected"
check "has(rows[8], 'illegal sequence')" "request 9: illegal sequence rejected"
check "has(rows[9], 'injected block header with a foreign document=0123456789abcdef')" "request 10: injected header rejected"
check "has(rows[10], '(stale nonce)')" "request 11: stale block nonce rejected"
check "all(has(rows[i], 'USER_ONE_EDITED') and has(rows[i], 'EDITED_RESULT_TWO') for i in range(5, 11))" "rejected edits leave revision 3 in force"
check "all(len(idx(rows[i], 'was rejected')) == 1 for i in range(5, 11)) and not has(rows[11], 'was rejected')" "a notice is shown for one request only"
# Request 12: the whole-context rewrite: first user turn + notes, then the raw suffix.
check "'USER_ONE' in text(body(rows[11])[0]) and 'REWRITE_NOTES' in text(body(rows[11])[1]) and not has(rows[11], 'NOTE_ONE') and not has(rows[11], 'EDITED_RESULT_TWO')" "request 12: the rewrite replaced the context"
check "has(rows[11], 'whole-context rewrite')" "request 12: rewrite notice"

# The session file: full accept entries, slim rejections; raw history intact.
assert_jsonl "$S" "[r['data']['kind'] for r in rows if r.get('customType') == 'live-context-state'] == ['accept']*3 + ['reject']*6 + ['accept']" "live-context-state entries in order"
assert_jsonl "$S" "all('messages' in r['data'] for r in rows if r.get('customType') == 'live-context-state' and r['data']['kind'] == 'accept') and not any('messages' in r['data'] for r in rows if r.get('customType') == 'live-context-state' and r['data']['kind'] == 'reject')" "accepts are full, rejections slim"
assert_jsonl "$S" "any('MARK_A_OUTPUT' in json.dumps(r['message']) for r in rows if r.get('type') == 'message' and r['message']['role'] == 'toolResult')" "the raw transcript keeps the deleted tool output"
assert_jsonl "$S" "[r['data']['revision'] for r in rows if r.get('customType') == 'live-context-state' and r['data']['kind'] == 'accept'] == [1, 2, 3, 4]" "revision numbers 1..4"
[ ! -d "$T/tmp/lossless-context-$SID" ] || fail "the mirror folder is removed at shutdown"; ok

# Resume: /clm status on the same file shows revision 4; a second prompt carries it.
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --cwd "$T/work" \
    --command "/clm status" > "$T/status.txt" 2> "$T/status.err" || { cat "$T/status.err"; fail "status on resume"; }
ok
assert_grep "$T/status.txt" "revision 4 in force" "resumed status shows revision 4"
assert_eq "$(grep -c . "$T/status.txt")" "3" "/clm status prints three lines"
printf '[{"content":"SECOND_DONE"}]' > "$T/script2.json"
start_server "$T/script2.json" "$T/r2.jsonl"
run_prompt "$S" "$T/out2.txt" "$T/err2.txt" "second run" "second prompt SECOND_Q"
R="$T/r2.jsonl"
check "has(rows[0], 'REWRITE_NOTES') and not has(rows[0], 'MARK_A_OUTPUT') and 'SECOND_Q' in text(body(rows[0])[-1])" "resumed request carries revision 4 plus the new prompt"

# /tree back to the entry of revision 1: revision 1 is restored for the next request.
REV1=$(python3 -c "
import json
rows = [json.loads(l) for l in open('$S') if l.strip()]
print([r['id'] for r in rows if r.get('customType') == 'live-context-state' and r['data']['kind'] == 'accept'][0])")
printf '[{"content":"THIRD_DONE"}]' > "$T/script3.json"
start_server "$T/script3.json" "$T/r3.jsonl"
printf '/tree %s\n/clm status\nthird prompt THIRD_Q\n/quit\n' "$REV1" | \
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --cwd "$T/work" \
    --log "$T/tree.log" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake > "$T/out3.txt" 2> "$T/err3.txt" \
    || { cat "$T/out3.txt" "$T/err3.txt"; fail "tree run"; }
ok
assert_grep "$T/out3.txt" "revision 1 in force" "after /tree the status shows revision 1"
# The move walked only the entries between the two leaves, not the whole branch.
assert_grep "$T/tree.log" "live context restored (tree move, incremental: [0-9]* entries left, 0 came)" "the /tree move is incremental"
R="$T/r3.jsonl"
check "has(rows[0], 'NOTE_ONE') and not has(rows[0], 'MARK_A_OUTPUT') and not has(rows[0], 'REWRITE_NOTES') and not has(rows[0], 'USER_ONE_EDITED') and 'THIRD_Q' in text(body(rows[0])[-1])" "after /tree the request carries revision 1"

done_ok
