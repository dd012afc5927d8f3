#!/bin/sh
# What the host does with plugin answers, using a probe plugin placed before
# lossless-context: context results by index (chained into the next plugin), a replaced
# system prompt, a blocked call, a patched tool result, custom entries appended at
# turn_end (the replay continues the branch through them) and a plugin-supplied
# compaction.
. "$(dirname "$0")/lib.sh"
FX="$ROOT/tests/contract/fixtures/branch.jsonl"
P="$T/plugins"
mkdir -p "$P/00-probe"
cc -std=c11 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -I"$ROOT/abi" \
    -o "$P/00-probe/probe.so" "$ROOT/tests/contract/fixtures/probe_plugin.c" || fail "probe plugin builds"
printf '{"name":"probe","version":"1","abiVersion":1,"library":"probe.so"}\n' >"$P/00-probe/plugin.json"
cp -rL "$PLUGINS/lossless-context" "$P/lossless-context"
TR="$T/trace.jsonl"

"$HOST" --home "$HOME_DIR" --plugin-dir "$P" --session "$T/s.jsonl" --trace "$TR" \
    replay "$FX" --window 1024 >"$T/out" 2>"$T/err"
assert_eq "$?" "0" "replay with the probe exits 0"
assert_grep "$T/out" "6 plugin entries added" "one probe entry per turn_end counted"

python3 - "$FX" "$T/s.jsonl" "$TR" <<'PY' || fail "host applied the plugin answers"
import json, sys
inp = [json.loads(l) for l in open(sys.argv[1]) if l.strip().endswith("}")]
out = [json.loads(l) for l in open(sys.argv[2])]
tr = [json.loads(l) for l in open(sys.argv[3])]
def check(c, what):
    if not c: print("FAIL:", what); sys.exit(1)
ob = {r["id"]: r for r in out[1:]}
ib = {r["id"]: r for r in inp[1:]}
probe = [r for r in out if r.get("customType") == "probe-turn"]
check(len(probe) == 6, "six probe-turn custom entries, got %d" % len(probe))
for i in inp[1:]:
    o = ob[i["id"]]; p = o["parentId"]
    while p is not None and p not in ib: p = ob[p]["parentId"]
    check(p == i["parentId"], "tree shape of %s through plugin entries" % i["id"])
check(any(ob[i["id"]]["parentId"] != i["parentId"] for i in inp[1:]), "some input entry was re-linked after a plugin entry")
check(ob["r0000001"]["message"]["content"][0]["text"] == "[probe patched]", "tool_result patch recorded in the replayed entry")
check(ob["r0000002"]["message"]["content"][0]["text"].startswith("FAIL"), "unpatched result kept")
comp = [r for r in out if r["type"] == "compaction"]
check(comp and comp[0]["summary"] == "probe summary" and comp[0]["fromHook"] is True and comp[0]["details"] == {"probe": True}, "plugin-supplied compaction written")
check(comp[0]["tokensBefore"] == 7 and comp[0]["firstKeptEntryId"] in ob, "compaction fields from the plugin")
lc = [r for r in tr if r["plugin"] == "lossless-context" and r.get("handled")]
pr = [r for r in tr if r["plugin"] == "probe" and r.get("handled")]
pc = [r for r in pr if r["event"] == "context"]
lcc = [r for r in lc if r["event"] == "context"]
check(len(pc) == len(lcc) == 6, "both plugins saw every request")
for a, b in zip(pc, lcc):
    if a["output"] is None:
        check(b["input"]["n_messages"] == a["input"]["n_messages"], "unchanged context passed on")
    else:
        check(a["output"]["new"] == 1 and a["output"]["reused"] == a["input"]["n_messages"], "probe result by index")
        check(b["input"]["n_messages"] == a["output"]["n_items"], "the next plugin gets the probe's output")
bas = [r for r in lc if r["event"] == "before_agent_start"]
check(bas and all(r["input"]["systemPrompt"] == "probe system prompt" for r in bas), "replaced systemPrompt chained to the next plugin")
check(not any(r["event"] == "tool_call" and r["input"]["toolName"] == "bash" for r in lc), "a block stops the tool_call chain")
check(any(r["event"] == "tool_call" and r["input"]["toolName"] == "read" for r in lc), "unblocked calls reach the next plugin")
check(not any(r["event"] == "session_before_compact" for r in lc), "a supplied compaction stops the chain")
sc = [r for r in lc if r["event"] == "session_compact"]
check(sc and sc[0]["input"]["fromExtension"] is True, "session_compact says fromExtension")
print("results ok")
PY
ok

# Live tool path: a blocked call is answered with the block reason and recorded.
"$HOST" --home "$HOME_DIR" --plugin-dir "$P" --session "$T/s.jsonl" \
    --tool bash '{"command":"echo should-not-run > '"$T"'/ran"}' >"$T/tool" 2>"$T/tool.err"
[ "$?" -ne 0 ] || fail "a blocked tool call reports an error"; ok
[ ! -e "$T/ran" ] || fail "the blocked command did not run"; ok
assert_grep "$T/tool" "Tool call blocked: probe blocks bash" "the block reason is the result"
assert_jsonl "$T/s.jsonl" "any(r.get('message',{}).get('role')=='toolResult' and r['message']['isError'] and 'probe blocks bash' in r['message']['content'][0]['text'] for r in rows)" \
    "the blocked result is recorded"
done_ok
