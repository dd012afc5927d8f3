#!/bin/sh
# /clm-compact through the real host and the real plugin (API level 2): the command sends
# its prompt as an ordinary user message (send_user_message), the host runs it as the next
# prompt against the scripted model, the model's edit of LIVE_CONTEXT.md in that turn is
# accepted; agent_end is traced; a level-1 host (AGENT_HOST_API_LEVEL=1) keeps the notice
# fallback and never fires agent_end; a plugin built against the level-1 layout still
# loads and runs. The waiting state (busy -> refused -> sent at agent_end, and cancelled
# by a tree move) cannot be reached through this single-threaded host: the Pi bridge
# test (tests/e2e/bridge.test.mjs) drives it through the real .so.
. "$(dirname "$0")/lib.sh"

. "$ROOT/tests/contract/clm/check.sh"

clm_session clmcompact-0001
run_host() { # host arguments
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --cwd "$T/work" \
        --base-url "http://127.0.0.1:$PORT/v1" --model fake "$@"
}
# compact_run N SCRIPT WHY [ARGS...]: the fake model answers from the script SCRIPT (a JSON
# text; its requests recorded to T/rN.jsonl) and the host runs once with ARGS, tracing to
# T/traceN.jsonl; stdout T/outN, stderr T/errN. A failed run shows both and fails saying WHY.
compact_run() {
    _n=$1 _why=$3
    printf '%s' "$2" > "$T/script$_n.json"
    shift 3
    start_server "$T/script$_n.json" "$T/r$_n.jsonl"
    run_host --trace "$T/trace$_n.jsonl" "$@" >"$T/out$_n" 2>"$T/err$_n" ||
        { cat "$T/out$_n" "$T/err$_n"; fail "$_why"; }
    ok
}

# 1. A first prompt builds some history.
compact_run 1 '[{"tool_calls":[{"name":"bash","arguments":{"command":"echo BULKY_TOOL_OUTPUT"}}]},{"content":"FIRST_DONE"}]' \
    "first prompt failed" -p "start the task KEEP_ME_42"
assert_grep "$T/out1" "FIRST_DONE" "first prompt answered"

# 2. /clm-compact with instructions, the agent idle: the prompt goes out as a user message
# right after the command returns, and the model's rewrite of the mirror is accepted.
compact_run 2 "$(printf '[{"tool_calls":[{"name":"write","arguments":{"path":"%s","content":"COMPACTED_NOTES: task KEEP_ME_42, keep X.\\n"}}]},{"content":"COMPACT_DONE"}]' "$MIRROR")" \
    "/clm-compact run failed" --command "/clm-compact keep X"
assert_grep "$T/out2" "/clm-compact: the compaction prompt was sent as a user message" "the command says it sent the prompt"
assert_grep "$T/out2" "COMPACT_DONE" "the compaction turn ran to the model's final answer"
assert_grep "$T/err2" "plugin 'lossless-context' sends a prompt" "the host reports the delivery"
R="$T/r2.jsonl"
check "len(rows) == 2" "two model requests in the compaction turn"
check "body(rows[0])[-1]['role'] == 'user' and text(body(rows[0])[-1]).startswith('[CLM COMPACT] Compact your live context now by editing $MIRROR') and text(body(rows[0])[-1]).endswith('Also: keep X')" \
    "the request carries the compaction prompt (with the instructions) as the last user message"
check "has(rows[0], 'KEEP_ME_42') and has(rows[0], 'BULKY_TOOL_OUTPUT')" "the first request still holds the raw history"
check "has(rows[1], 'accepted as revision 1') and has(rows[1], 'COMPACTED_NOTES') and not has(rows[1], 'BULKY_TOOL_OUTPUT')" \
    "the model's edit of LIVE_CONTEXT.md in that turn was accepted and is the next context"
assert_jsonl "$S" "any(r.get('type')=='message' and r['message']['role']=='user' and 'Also: keep X' in json.dumps(r['message']) for r in rows)" \
    "the prompt is an ordinary user message in the session file"
assert_jsonl "$S" "any(r.get('customType')=='live-context-state' for r in rows)" "the revision is persisted"
# agent_end fires once the compaction prompt's loop is over, after its turn_ends.
assert_jsonl "$T/trace2.jsonl" "[r['input'] for r in rows if r['event']=='agent_end' and r['plugin']=='lossless-context' and r['handled']] == [{'status':'done'}]" \
    "agent_end fired once with status done"
assert_jsonl "$T/trace2.jsonl" "(lambda ev: ev.index('agent_end') > max(i for i, e in enumerate(ev) if e == 'turn_end'))([r['event'] for r in rows if r['plugin']=='lossless-context'])" \
    "agent_end comes after the last turn_end"

# 3. Replay has no model: the slot answers AP_UNSUPPORTED and the plugin falls back to the
# notice, saying why.
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/replayed.jsonl" \
    replay "$S" --command "/clm-compact" >"$T/out3" 2>"$T/err3" || { cat "$T/err3"; fail "replay run failed"; }
ok
assert_grep "$T/out3" "goes out with the next request (.*cannot run a prompt: it has no model" "replay: notice fallback names the reason"

# 4. A level-1 host: no send_user_message, no agent_end. /clm-compact keeps the notice
# behaviour: nothing reaches the model until the user sends a prompt, which then carries
# the compaction prompt as a notice. Interactive mode runs both in one process.
printf '/clm-compact keep Y\n/clm-compact again\ngo on\n' > "$T/in4"
AGENT_HOST_API_LEVEL=1 compact_run 4 '[{"content":"LEVEL1_DONE"}]' "level-1 run failed" <"$T/in4"
assert_grep "$T/out4" "goes out with the next request (this host is below API level 2" "level 1: the notice fallback says why"
assert_grep "$T/out4" "refused, a compaction request is already waiting for the next request" "level 1: a second /clm-compact is refused"
assert_grep "$T/out4" "LEVEL1_DONE" "level 1: the user's prompt ran"
R="$T/r4.jsonl"
check "len(rows) == 1" "level 1: one request, started by the user"
check "text(body(rows[0])[-1]).find('[CLM COMPACT]') >= 0 and has(rows[0], 'Also: keep Y') and any(m['role'] == 'user' and text(m) == 'go on' for m in body(rows[0]))" \
    "level 1: the user's request carries the compaction prompt as a notice"
assert_jsonl "$T/trace4.jsonl" "not any(r['event']=='agent_end' for r in rows)" "level 1: agent_end is never fired"
assert_jsonl "$S" "not any(r.get('type')=='message' and r['message']['role']=='user' and 'Also: keep Y' in json.dumps(r['message']) for r in rows)" \
    "level 1: no user message was sent for the plugin"

# 5. A plugin built against the level-1 layout (AP_TARGET_API_LEVEL=1: no level-2 fields
# in either struct) loads on this level-2 host, and a prompt with agent_end runs past it.
CC=${CC:-cc}
$CC -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -DAP_TARGET_API_LEVEL=1 -I"$ROOT/abi" -fPIC \
    -fvisibility=hidden -shared -o "$T/level1.so" "$ROOT/tests/example_plugin.c" ||
    fail "the example plugin does not build against the level-1 layout"
ok
printf '[{"content":"L1_PLUGIN_DONE"}]' > "$T/script5.json"
start_server "$T/script5.json" "$T/r5.jsonl"
"$HOST" --home "$HOME_DIR" --plugin "$T/level1.so" --session "$T/s5.jsonl" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake --trace "$T/trace5.jsonl" -p "hi" \
    --command "/example" >"$T/out5" 2>"$T/err5" || { cat "$T/out5" "$T/err5"; fail "level-1 plugin run failed"; }
ok
assert_grep "$T/out5" "L1_PLUGIN_DONE" "level-1 plugin: the prompt ran"
assert_grep "$T/out5" "example plugin: 1 context calls" "level-1 plugin: its callbacks and command work"
assert_jsonl "$T/trace5.jsonl" "any(r['event']=='agent_end' and not r['handled'] for r in rows)" \
    "level-1 plugin: agent_end is fired but the plugin has no slot for it"
done_ok
