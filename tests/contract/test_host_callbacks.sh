#!/bin/sh
# Every callback through the real lossless-context.so (and the example plugin beside
# it), checked from the host's --trace: which events fired, in which order, with which
# payloads -- for a replay, a tool call, /compact and /tree.
. "$(dirname "$0")/lib.sh"
FX="$ROOT/tests/contract/fixtures/branch.jsonl"
P="$T/plugins"
mkdir -p "$P/example"
cp -rL "$PLUGINS/lossless-context" "$P/lossless-context"
cp "$BUILD/tests/example-plugin.so" "$P/example/example-plugin.so"
printf '{"name":"example","version":"1.0.0","abiVersion":1,"library":"example-plugin.so"}\n' >"$P/example/plugin.json"
TR="$T/trace.jsonl"

"$HOST" --home "$HOME_DIR" --plugin-dir "$P" --session "$T/s.jsonl" --trace "$TR" \
    replay "$FX" --window 1200 >"$T/out" 2>"$T/err"
assert_eq "$?" "0" "replay exits 0"

python3 - "$TR" <<'PY' || fail "replay trace"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
lc = [r for r in rows if r["plugin"] == "lossless-context"]
ex = [r for r in rows if r["plugin"] == "example"]
ev = [r["event"] for r in lc]
def check(cond, what):
    if not cond:
        print("FAIL:", what); print(ev); sys.exit(1)
ALL = ["session_start", "session_shutdown", "before_agent_start", "context",
       "before_provider_request", "turn_end", "tool_call", "tool_result",
       "session_before_compact", "session_compact", "session_tree", "agent_end"]
for name in ALL:
    check(any(r["event"] == name and r["handled"] for r in lc), "lossless-context handled " + name)
    check(any(r["event"] == name for r in ex), "example plugin saw " + name + " fired (handled or not)")
check(ev[0] == "session_start" and lc[0]["input"]["reason"] == "startup", "session_start first, reason startup")
check(ev[-1] == "session_shutdown", "session_shutdown last")
bas = [r for r in lc if r["event"] == "before_agent_start"]
check(len(bas) == 4, "one before_agent_start per user prompt (4)")
check(bas[0]["input"]["prompt"].startswith("Set N07=4821"), "prompt text")
# agent_end (API level 2): once per recorded prompt, when its loop is over -- before the
# next prompt, before a tree move, and after the last one -- never inside a turn.
ae = [i for i, e in enumerate(ev) if e == "agent_end"]
check(len(ae) == 4 and all(lc[i]["input"] == {"status": "done"} for i in ae), "one agent_end {status: done} per prompt (4)")
bai = [i for i, e in enumerate(ev) if e == "before_agent_start"]
check(all(bai[k] < ae[k] < bai[k + 1] for k in range(3)) and bai[3] < ae[3], "agent_end closes each prompt before the next starts")
check(ev.index("session_tree") > ae[1] and ev.index("session_tree") < bai[2], "the loop ends before the tree move")
check(all(isinstance(r["input"]["systemPrompt"], str) for r in bas), "systemPrompt given")
ctx = [i for i, e in enumerate(ev) if e == "context"]
check(len(ctx) == 6, "one context per assistant message (6), got %d" % len(ctx))
check(all(ev[i + 1] == "before_provider_request" for i in ctx), "before_provider_request follows context")
check(lc[ctx[0]]["input"]["n_messages"] == 1, "first request sees the one user message")
check(lc[ctx[1]]["input"]["n_messages"] == 4, "second request: user, assistant, two results")
calls = [r["input"] for r in lc if r["event"] == "tool_call"]
check([c["toolName"] for c in calls] == ["read", "bash", "edit"], "tool_call per recorded call")
check(calls[0]["input"] == {"path": "src/handlers.c"}, "tool_call input is the arguments")
res = [r["input"] for r in lc if r["event"] == "tool_result"]
check(len(res) == 3 and res[1]["toolCallId"] == "call_2" and res[1]["isError"] is True, "tool_result carries isError")
check(res[0]["input"] == {"path": "src/handlers.c"} and res[0]["content"][0]["type"] == "text", "tool_result carries input and content")
te = [i for i, e in enumerate(ev) if e == "turn_end"]
check(len(te) == 6, "turn_end once per assistant message (6), got %d" % len(te))
first = lc[te[0]]["input"]
check(first["turnIndex"] == 0 and len(first["toolResults"]) == 2, "first turn_end carries both results")
check(first["message"]["content"][2]["type"] == "toolCall", "turn_end carries the assistant message")
tr_idx = [i for i, e in enumerate(ev) if e == "tool_result"]
check(tr_idx[1] < te[0] < ctx[1], "turn_end after the results, before the next context")
tree = [r["input"] for r in lc if r["event"] == "session_tree"]
check(len(tree) == 1 and tree[0]["newLeafId"] == "b0000002" and tree[0]["oldLeafId"], "session_tree on the abandoned branch")
bc = [r["input"] for r in lc if r["event"] == "session_before_compact"]
check(bc and bc[0]["reason"] == "threshold", "threshold compaction reason")
prep = bc[0]["preparation"]
check(prep["firstKeptEntryId"] and prep["tokensBefore"] > 900 and prep["messagesToSummarize"], "compaction preparation")
sc = [i for i, e in enumerate(ev) if e == "session_compact"]
check(sc and ev.index("session_before_compact") < sc[0], "session_compact after session_before_compact")
entry = lc[sc[0]]["input"]["compactionEntry"]
check(entry["type"] == "compaction" and entry["firstKeptEntryId"] == prep["firstKeptEntryId"], "compactionEntry")
print("replay trace ok:", len(rows), "lines")
PY
ok

# A tool call as the model would make it: tool_call, tool_result, turn_end in order.
rm -f "$TR"
"$HOST" --home "$HOME_DIR" --plugin-dir "$P" --session "$T/s.jsonl" --trace "$TR" \
    --tool example_echo '{"x":1}' >"$T/tool" 2>"$T/tool.err"
assert_eq "$?" "0" "--tool exits 0"
assert_jsonl "$TR" "[r['event'] for r in rows if r['plugin']=='lossless-context' and r['event'] in ('tool_call','tool_result','turn_end')] == ['tool_call','tool_result','turn_end']" \
    "tool_call, tool_result, turn_end in order"
assert_jsonl "$TR" "[r for r in rows if r.get('handled')][0]['event']=='session_start' and [r for r in rows if r.get('handled')][0]['input']['reason']=='resume'" "reopening fires session_start resume"
assert_jsonl "$TR" "any(r['event']=='tool_call' and r.get('handled') and r['input']['toolName']=='example_echo' and r['input']['input']=={'x':1} for r in rows)" \
    "tool_call input for a plugin tool"

# /compact (manual) and /tree.
rm -f "$TR"
TARGET=u0000003
"$HOST" --home "$HOME_DIR" --plugin-dir "$P" --session "$T/s.jsonl" --trace "$TR" --window 1024 \
    --command "/tree $TARGET" --command "/compact keep the handlers" >"$T/cmd" 2>"$T/cmd.err"
assert_eq "$?" "0" "commands exit 0"
assert_grep "$T/cmd" "leaf moved to $TARGET" "/tree output"
assert_jsonl "$TR" "any(r['event']=='session_tree' and r.get('handled') and r['input']['newLeafId']=='$TARGET' for r in rows)" "/tree fires session_tree"
assert_jsonl "$TR" "any(r['event']=='session_before_compact' and r.get('handled') and r['input']['reason']=='manual' and r['input']['customInstructions']=='keep the handlers' for r in rows)" \
    "/compact fires session_before_compact with reason manual and the instructions"
assert_grep "$T/cmd" "compacted: context now" "/compact output"
done_ok
