#!/bin/sh
# The host's model loop against a scripted loopback model (fake_openai.py): the model
# calls write, read, edit, bash, then answers. Checks the session file, the files on
# disk, what the host sent back to the model, and that a provider 500 fails clearly.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/work"
cat > "$T/script.json" <<'EOF'
[
 {"content": "I will write the file.",
  "tool_calls": [{"name": "write", "arguments": {"path": "notes/a.txt", "content": "alpha\nbeta\ngamma\n"}}]},
 {"tool_calls": [{"name": "read", "arguments": {"path": "notes/a.txt"}}]},
 {"tool_calls": [{"name": "edit", "arguments": {"path": "notes/a.txt", "oldText": "beta", "newText": "BETA-EDITED"}}]},
 {"tool_calls": [{"name": "bash", "arguments": {"command": "cat notes/a.txt; echo BASH_MARK"}}],
  "usage": {"prompt_tokens": 900, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 400}}},
 {"content": "All four tools ran. FINAL_ANSWER"}
]
EOF
start_server "$T/script.json" "$T/record.jsonl"

"$HOST" --home "$HOME_DIR" --session "$T/s.jsonl" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "exercise the tools" \
    > "$T/out.txt" 2> "$T/err.txt" || { cat "$T/out.txt" "$T/err.txt"; fail "host run failed"; }
ok

# Files on disk: written, then edited.
[ -f "$T/work/notes/a.txt" ] || fail "write did not create notes/a.txt under --cwd"; ok
assert_eq "$(cat "$T/work/notes/a.txt")" "$(printf 'alpha\nBETA-EDITED\ngamma')" "edited file content"
assert_grep "$T/out.txt" "FINAL_ANSWER" "the final answer is printed"

# Session: the assistant tool calls and the four tool results, linked by id.
S="$T/s.jsonl"
assert_jsonl "$S" "rows[0]['type'] == 'session'" "session header first"
assert_jsonl "$S" "[b['name'] for r in rows if r.get('type') == 'message' and r['message'].get('role') == 'assistant' for b in r['message'].get('content', []) if b.get('type') == 'toolCall'] == ['write', 'read', 'edit', 'bash']" "assistant toolCalls write, read, edit, bash in order"
assert_jsonl "$S" "[r['message']['toolName'] for r in rows if r.get('type') == 'message' and r['message'].get('role') == 'toolResult'] == ['write', 'read', 'edit', 'bash']" "four toolResults in order"
assert_jsonl "$S" "set(b['id'] for r in rows if r.get('type') == 'message' and r['message'].get('role') == 'assistant' for b in r['message'].get('content', []) if b.get('type') == 'toolCall') == set(r['message']['toolCallId'] for r in rows if r.get('type') == 'message' and r['message'].get('role') == 'toolResult')" "toolResults answer the toolCall ids"
assert_jsonl "$S" "not any(r['message'].get('isError') for r in rows if r.get('type') == 'message' and r['message'].get('role') == 'toolResult')" "no tool failed"
assert_jsonl "$S" "any('BASH_MARK' in c.get('text', '') and 'BETA-EDITED' in c.get('text', '') for r in rows if r.get('type') == 'message' and r['message'].get('role') == 'toolResult' and r['message']['toolName'] == 'bash' for c in r['message']['content'])" "bash result holds the edited file and its output"
assert_jsonl "$S" "[r['message'] for r in rows if r.get('type') == 'message' and r['message'].get('role') == 'assistant'][-1]['stopReason'] == 'stop'" "last assistant message stops"
assert_jsonl "$S" "any(r['message'].get('usage', {}).get('cacheRead') == 400 and r['message']['usage'].get('input') == 500 for r in rows if r.get('type') == 'message' and r['message'].get('role') == 'assistant')" "usage maps cached tokens to cacheRead"

# Requests: five model calls; tools offered; results carried back as tool messages.
R="$T/record.jsonl"
assert_jsonl "$R" "len(rows) == 5" "five model requests"
assert_jsonl "$R" "all({'read', 'write', 'edit', 'bash'} <= set(t['function']['name'] for t in r.get('tools', [])) for r in rows)" "every request offers read/write/edit/bash"
assert_jsonl "$R" "all(r['model'] == 'fake' and r.get('stream') is False for r in rows)" "model id and stream:false sent"
assert_jsonl "$R" "any(m['role'] == 'user' and 'exercise the tools' in str(m['content']) for m in rows[0]['messages'])" "the prompt reaches the model"
assert_jsonl "$R" "[m['role'] for m in rows[1]['messages'] if m['role'] != 'system'][-2:] == ['assistant', 'tool']" "the second request ends with the call and its result"
assert_jsonl "$R" "rows[1]['messages'][-1]['tool_call_id'] == rows[1]['messages'][-2]['tool_calls'][0]['id'] and 'Wrote' in rows[1]['messages'][-1]['content']" "the write result goes back under its call id"
assert_jsonl "$R" "json.loads(rows[1]['messages'][-2]['tool_calls'][0]['function']['arguments'])['path'] == 'notes/a.txt'" "tool call arguments go back as a JSON string"
assert_jsonl "$R" "'alpha' in rows[2]['messages'][-1]['content']" "the read result carries the file text"
assert_jsonl "$R" "sum(1 for m in rows[4]['messages'] if m['role'] == 'tool') == 4" "the last request carries all four tool results"

# The same loop with a plugin loaded (the minimal example plugin): tools still run and
# their results still reach the model.
EXAMPLE="$BUILD/tests/example-plugin.so"
if [ -f "$EXAMPLE" ]; then
    rm -rf "$T/work2"; mkdir -p "$T/work2"
    start_server "$T/script.json" "$T/record_p.jsonl"
    "$HOST" --home "$HOME_DIR" --plugin "$EXAMPLE" --session "$T/sp.jsonl" --cwd "$T/work2" \
        --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "exercise the tools" \
        > "$T/outp.txt" 2> "$T/errp.txt" || { cat "$T/outp.txt" "$T/errp.txt"; fail "host run with a plugin failed"; }
    ok
    assert_eq "$(cat "$T/work2/notes/a.txt")" "$(printf 'alpha\nBETA-EDITED\ngamma')" "edited file content with a plugin"
    assert_jsonl "$T/record_p.jsonl" "len(rows) == 5 and sum(1 for m in rows[4]['messages'] if m['role'] == 'tool') == 4" "with a plugin, all four results reach the model"
fi

# A provider failure: non-zero exit, and the status and message are shown.
cat > "$T/fail.json" <<'EOF'
[{"status": 500, "error": "fake upstream exploded"}]
EOF
start_server "$T/fail.json" "$T/record2.jsonl"
if "$HOST" --home "$HOME_DIR" --session "$T/s2.jsonl" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "hello" > "$T/out2.txt" 2> "$T/err2.txt"; then
    fail "a 500 from the model must give a non-zero exit"
fi
ok
cat "$T/out2.txt" "$T/err2.txt" > "$T/all2.txt"
assert_grep "$T/all2.txt" "HTTP 500" "the HTTP status is reported"
assert_grep "$T/all2.txt" "fake upstream exploded" "the provider's message is reported"

# An unreachable server: non-zero exit naming the failure.
kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
if "$HOST" --home "$HOME_DIR" --session "$T/s3.jsonl" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "hello" > "$T/out3.txt" 2> "$T/err3.txt"; then
    fail "an unreachable model must give a non-zero exit"
fi
ok
cat "$T/out3.txt" "$T/err3.txt" > "$T/all3.txt"
assert_grep "$T/all3.txt" "127.0.0.1:$PORT" "the connection failure names the server"

done_ok
