#!/bin/sh
# The reference host's turn cap (issue 17 item 7): no cap by default, as Pi. A scripted model
# asks for 60 rounds of `bash` and then answers: with no --max-turns the prompt runs all 60
# and reaches the final answer; with --max-turns 5 it stops after 5 model turns with the
# existing message. Ctrl-C still stops an uncapped prompt: interrupted while a tool runs,
# the loop makes no further model request.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/work"
agents() { python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l).get("_fake",{}).get("kind","agent")=="agent"))' "$1"; }

"$HOST" --help >"$T/help.txt" 2>&1
assert_grep "$T/help.txt" "unlimited" "--help states the default: unlimited"

# 1. no --max-turns: 60 tool rounds, then the final answer
start_fake "$T/rec1.jsonl" --tool-rounds 60 --tool-bytes 200
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s1.jsonl" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "Run the checks until they are all done." \
    >"$T/out1.txt" 2>"$T/err1.txt" || { tail -n 20 "$T/err1.txt"; fail "the uncapped run failed"; }
ok
assert_grep "$T/out1.txt" "done." "the uncapped run reached the model's final answer"
assert_nogrep "$T/err1.txt" "stopped after" "no cap stopped the uncapped run"
n=$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l).get("type")=="message" and json.loads(l)["message"]["role"]=="toolResult"))' "$T/s1.jsonl")
assert_eq "$n" "60" "all 60 tool rounds ran"
assert_eq "$(agents "$T/rec1.jsonl")" "61" "61 agent requests (60 rounds + the answer)"

# 2. --max-turns 5: stops after 5 model turns with the existing message
start_fake "$T/rec2.jsonl" --tool-rounds 60 --tool-bytes 200
if "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s2.jsonl" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake --max-turns 5 -p "Run the checks." \
    >"$T/out2.txt" 2>"$T/err2.txt"; then fail "the capped run claimed success"; fi
ok
assert_grep "$T/err2.txt" "stopped after 5 model turns without a final answer" "the cap's message"
assert_eq "$(agents "$T/rec2.jsonl")" "5" "exactly 5 agent requests under --max-turns 5"

# 3. Ctrl-C during a tool of an uncapped prompt (interactive): no next model request
cat >"$T/script.json" <<'J'
[
 {"content": "one", "tool_calls": [{"name": "bash", "arguments": {"command": "echo R1"}}]},
 {"content": "two", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 2; echo R2"}}]},
 {"content": "three", "tool_calls": [{"name": "bash", "arguments": {"command": "echo R3"}}]},
 {"content": "NEVER_REACHED"}
]
J
start_server "$T/script.json" "$T/rec3.jsonl"
start_host_fifo "$T/s3.jsonl" "$T/out3.txt" "$T/err3.txt"
echo "go" >&3
i=0; while [ "$(cat "$T/rec3.jsonl" 2>/dev/null | wc -l)" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
sleep 0.5 # the second answer's `sleep 2` is running
kill -INT "$HOST_PID"
sleep 2.5
echo "/quit" >&3
exec 3>&-
wait "$HOST_PID"; st=$?; HOST_PID=""
assert_eq "$st" "0" "the host survives Ctrl-C and exits on /quit"
assert_grep "$T/out3.txt" "interrupted" "the interrupt is reported"
assert_nogrep "$T/out3.txt" "NEVER_REACHED" "the interrupted prompt went no further"
assert_eq "$(wc -l <"$T/rec3.jsonl" | tr -d ' ')" "2" "no model request after Ctrl-C"
done_ok
