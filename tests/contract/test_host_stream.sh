#!/bin/sh
# The interactive agent loop streams: requests ask for server-sent events, answer text is
# printed as it arrives (once), tool-call deltas are assembled into a call the host runs,
# and usage comes from the final chunk. Ctrl-C during a request stops that turn, keeps the
# session (the prompt already appended stays), and the loop takes the next prompt.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/work"
cat > "$T/script.json" <<'J'
[
 {"content": "Running it.", "tool_calls": [{"name": "bash", "arguments": {"command": "echo STREAM_TOOL_RAN_$((6*7))"}}],
  "usage": {"prompt_tokens": 700, "completion_tokens": 30}},
 {"content": "The command printed STREAM_TOOL_RAN_42, and this sentence is long enough to arrive in several chunks. STREAMED_END",
  "usage": {"prompt_tokens": 800, "completion_tokens": 40}},
 {"delay": 30, "content": "never shown"},
 {"content": "AFTER_INTERRUPT_OK"}
]
J
start_server "$T/script.json" "$T/rec.jsonl"
start_host_fifo "$T/s.jsonl" "$T/out.txt" "$T/err.txt"
echo "run the command" >&3
# the third request is the slow one: interrupt it once the server has it
echo "now wait" >&3
i=0; while [ "$(cat "$T/rec.jsonl" 2>/dev/null | wc -l)" -lt 3 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
[ "$(wc -l <"$T/rec.jsonl")" -ge 3 ] || { cat "$T/out.txt" "$T/err.txt"; fail "the third request never arrived"; }
kill -INT "$HOST_PID"
echo "after" >&3
echo "/quit" >&3
exec 3>&-
wait "$HOST_PID"; st=$?; HOST_PID=""
assert_eq "$st" "0" "the host survives Ctrl-C and exits 0 on /quit"
assert_jsonl "$T/rec.jsonl" "all(r.get('stream') is True and r.get('stream_options', {}).get('include_usage') for r in rows)" "every request asks for a stream with usage"
n=$(grep -c "STREAMED_END" "$T/out.txt")
assert_eq "$n" "1" "the streamed answer is printed once"
assert_grep "$T/out.txt" "interrupted" "the interrupt is reported"
assert_grep "$T/out.txt" "AFTER_INTERRUPT_OK" "the next prompt runs after the interrupt"
assert_jsonl "$T/s.jsonl" "any(r.get('type') == 'message' and r['message']['role'] == 'toolResult' and 'STREAM_TOOL_RAN_42' in json.dumps(r['message']) for r in rows)" "the assembled tool call ran"
assert_jsonl "$T/s.jsonl" "any(r.get('type') == 'message' and r['message']['role'] == 'assistant' and any(b.get('type') == 'toolCall' and b['arguments'] == {'command': 'echo STREAM_TOOL_RAN_\$((6*7))'} for b in r['message']['content']) and r['message']['usage']['totalTokens'] > 0 for r in rows)" "tool-call deltas assembled, usage from the final chunk"
assert_jsonl "$T/s.jsonl" "any(r.get('type') == 'message' and r['message']['role'] == 'user' and 'now wait' in json.dumps(r['message']) for r in rows)" "the interrupted turn's prompt stays in the session"
done_ok
