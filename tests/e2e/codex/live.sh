#!/bin/sh
# live.sh -- lcm's hooks and MCP server inside live sessions of the real Codex CLI
# (`codex exec`), against a loopback scripted model speaking the Responses API
# (fake_responses.py, which records every request).
#
#   sh tests/e2e/codex/live.sh [BUILD]     BUILD defaults to ./build (needs `make` first)
#
# Installs the pinned @openai/codex of package-lock.json into BUILD/e2e-codex once. Nothing
# touches the real home: HOME is a temp folder (kept on failure) whose ~/.codex/config.toml
# names the scripted model as a `wire_api = "responses"` provider. Checks, in order:
#   - `lcm hooks install --agent codex --home DIR`; Codex lists lcm's hooks as untrusted
#     (and `lcm hooks doctor` fails), and after trusting them as /hooks does
#     (trust_hooks.py), as trusted (and doctor passes, naming Codex's keys);
#   - session 1 runs a shell command that prints a value and answers: its messages (the
#     prompt, the call, the printed value, the answer) are in the store under DIR with no
#     manual import (Codex's Stop hook), and nothing else;
#   - session 2 (new, same folder): the model's first request carries the bundle
#     (SessionStart) naming session 1 and its value; its model calls the MCP tool lcm_grep
#     and the next request carries the tool's output: session 1's value, from session 1;
#     session 2's store holds that call and its result as text;
#   - `lcm hooks uninstall` after the trust leaves Codex without lcm's hooks and server.
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
. "$ROOT/tests/e2e/lib.sh"
e2e_begin "${1:-}" codex e2e-codex codex "Codex" lcm
LCM="$BUILD/lcm"
CODEX=$NODE_BIN
e2e_tmp codex-live
fail() {
    echo "FAIL: $*"
    for f in "$T/err1.txt" "$T/err2.txt" "$T/store/lcm/hooks.log"; do
        [ -s "$f" ] && { echo "--- $f:"; tail -n 20 "$f"; }
    done
    exit 1
}
U="$T/home"
S="$T/store"
W="$T/work"
mkdir -p "$U/.codex" "$W"

python3 "$E2E/fake_responses.py" --record "$T/requests.jsonl" >"$T/port" 2>"$T/server.err" &
SERVER_PID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
PORT=$(head -n 1 "$T/port")
[ -n "$PORT" ] || fail "the scripted Responses server did not start: $(cat "$T/server.err")"

export HOME="$U" LCM_E2E_KEY=sk-e2e-test
unset CODEX_HOME OPENAI_API_KEY OPENAI_BASE_URL 2>/dev/null || true
# The user's own config: the scripted model as their provider (Codex sends
# POST <base_url>/responses, streamed, with the key of env_key as the bearer).
cat >"$U/.codex/config.toml" <<C
model = "scripted-model"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:$PORT/v1"
wire_api = "responses"
env_key = "LCM_E2E_KEY"

[analytics]
enabled = false
C

"$LCM" hooks install --agent codex --home "$S" >"$T/install.txt" || fail "lcm hooks install: $(cat "$T/install.txt")"
doctor() {
    rc=0
    PATH="$BUILD:$PATH" "$LCM" hooks doctor --agent codex --home "$S" >"$T/doctor$1.txt" 2>&1 || rc=$?
    echo $rc
}
[ "$(doctor 1)" = 1 ] && grep -q "^FAIL Codex trusts the Stop hook" "$T/doctor1.txt" ||
    fail "lcm hooks doctor does not say the hooks are untrusted: $(cat "$T/doctor1.txt")"
python3 "$E2E/trust_hooks.py" "$CODEX" "$W" "$LCM" >"$T/trust.json" ||
    fail "Codex does not list lcm's hooks untrusted, then trusted: $(cat "$T/trust.json")"
python3 - "$T/trust.json" <<'PY' || fail "not every lcm hook is trusted: $(cat "$T/trust.json")"
import json, sys
t = json.load(open(sys.argv[1]))
events = sorted(k.split(":")[-3] for k in t["after"])
assert events == ["session_start", "stop"], events
PY
# doctor reads the trust where Codex recorded it, under Codex's own keys
[ "$(doctor 2)" = 0 ] || fail "lcm hooks doctor fails after Codex trusted the hooks: $(cat "$T/doctor2.txt")"
python3 - "$T/trust.json" "$T/doctor2.txt" <<'PY' || fail "doctor's keys are not Codex's: $(cat "$T/doctor2.txt")"
import json, sys
keys, doc = json.load(open(sys.argv[1]))["after"], open(sys.argv[2]).read()
for k in keys:
    assert "(%s in " % k in doc, k
PY
echo "ok: install; Codex lists lcm's SessionStart and Stop hooks untrusted, then trusted; lcm hooks doctor agrees"

# codex exec: --json prints its events (the first names the thread, the session's id). The
# command runs outside Codex's sandbox, which needs user namespaces a CI box may not give
# (what is tested here is lcm's hooks and MCP server, not the sandbox).
codex_exec() {
    (cd "$W" && timeout 120 "$CODEX" exec --skip-git-repo-check --sandbox danger-full-access --json "$1") \
        >"$T/out$2.jsonl" 2>"$T/err$2.txt" ||
        fail "session $2 (codex exec) failed: $(tail -c 1500 "$T/out$2.jsonl")"
}
thread_of() {
    python3 -c 'import json,sys; print(next(e["thread_id"] for e in map(json.loads, open(sys.argv[1])) if e.get("type") == "thread.started"))' "$1"
}

codex_exec 'RUN-SHELL:echo CODEX-E2E-$((6*7))' 1
SID1=codex-$(thread_of "$T/out1.jsonl")
python3 - "$T/out1.jsonl" <<'PY' || fail "session 1 did not run the command: $(tail -c 1500 "$T/out1.jsonl")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
runs = [e["item"] for e in ev if e.get("type") == "item.completed" and e["item"].get("type") == "command_execution"]
assert runs and "CODEX-E2E-42" in runs[0]["aggregated_output"] and runs[0]["exit_code"] == 0, runs
PY
"$LCM" export --home "$S" --session "$SID1" --out "$T/export1.jsonl" >"$T/export1.txt" 2>&1 ||
    fail "session 1 is not in the store (no manual import was run): $(cat "$T/export1.txt"; ls "$S/lcm" 2>&1)"
python3 - "$T/export1.jsonl" "$W" <<'PY' || fail "session 1's messages in the store"
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
msgs = sorted((r["row"] for r in rows if r.get("table") == "messages"), key=lambda m: m["ordinal"])
meta = {r["row"]["key"]: r["row"]["value"] for r in rows if r.get("table") == "meta"}
said = [(m["role"], m["text"]) for m in msgs if not m["removed"]]
assert ("user", "RUN-SHELL:echo CODEX-E2E-$((6*7))") in said, said
assert any(r == "assistant" and t.startswith("[toolCall exec_command]") and "echo CODEX-E2E-" in t for r, t in said), said
assert any(r == "toolResult" and "CODEX-E2E-42" in t for r, t in said), said
assert said[-1][0] == "assistant" and "The tool returned:" in said[-1][1] and "CODEX-E2E-42" in said[-1][1], said[-1]
# only the conversation: no line of Codex's own bookkeeping read as a message
assert not [t for _, t in said if t.startswith(("[world_state]", "[token_usage_record]", "[event_msg]"))], said
assert os.path.realpath(meta["cwd"]) == os.path.realpath(sys.argv[2]), meta
PY
"$LCM" grep --home "$S" '"CODEX-E2E-42"' >"$T/grep1.txt" || fail "lcm grep"
grep -q "past session $SID1" "$T/grep1.txt" || fail "lcm grep does not find the value in session 1: $(cat "$T/grep1.txt")"
echo "ok: session 1 ($SID1) is in the store with no manual import: prompt, call, output, answer"

before=$(wc -l <"$T/requests.jsonl")
codex_exec 'RUN-TOOL:mcp__lcm__lcm_grep {"query":"\"CODEX-E2E-42\"","scope":"all_sessions"}' 2
SID2=codex-$(thread_of "$T/out2.jsonl")
[ "$SID2" != "$SID1" ] || fail "session 2 is session 1 again"
python3 - "$T/requests.jsonl" "$before" "$SID1" <<'PY' || fail "session 2's first request does not carry the bundle"
import json, sys
path, before, sid1 = sys.argv[1], int(sys.argv[2]), sys.argv[3]
reqs = [json.loads(l)["body"] for l in open(path)][before:]
main = [b for b in reqs if isinstance(b, dict) and b.get("input")]
assert main, "no model request in session 2"
msgs = [i for i in main[0]["input"] if i.get("type") == "message"]
text = lambda i: "".join(c.get("text", "") for c in i.get("content") or [])
bundle = [text(i) for i in msgs if "[lossless-context]" in text(i)]
assert len(bundle) == 1, [text(i)[:200] for i in msgs]
for want in ["Previous session in this folder: " + sid1, "CODEX-E2E-42", "lcm_grep", "lcm_expand"]:
    assert want in bundle[0], (want, bundle[0])
assert "RUN-TOOL:mcp__lcm__lcm_grep" in text(msgs[-1]), text(msgs[-1])
ns = [t for t in main[0].get("tools") or [] if t.get("type") == "namespace" and t.get("name") == "mcp__lcm"]
assert ns and any(f.get("name") == "lcm_grep" for f in ns[0]["tools"]), "the request does not offer lcm's MCP tools"
PY
echo "ok: session 2's first model request carries the bundle of session 1 and offers lcm's MCP tools"
python3 - "$T/requests.jsonl" "$before" "$SID1" <<'PY' || fail "session 2's MCP lcm_grep did not return session 1's value"
import json, sys
path, before, sid1 = sys.argv[1], int(sys.argv[2]), sys.argv[3]
reqs = [json.loads(l)["body"] for l in open(path)][before:]
items = [i for b in reqs if isinstance(b, dict) for i in b.get("input") or []]
calls = {i["call_id"]: i for i in items if i.get("type") == "function_call" and i.get("name") == "lcm_grep"
         and i.get("namespace") == "mcp__lcm"}
assert calls, "the model's call of lcm_grep is not in any later request"
def out(i):
    o = i.get("output")
    return o if isinstance(o, str) else "".join(c.get("text", "") for c in o or [] if isinstance(c, dict))
res = [out(i) for i in items if i.get("type") == "function_call_output" and i.get("call_id") in calls]
assert res, "no output of lcm_grep reached the model"
assert any("CODEX-E2E-42" in r and "past session " + sid1 in r for r in res), res[:1]
PY
echo "ok: session 2's model called lcm_grep over MCP and got session 1's value back"
"$LCM" export --home "$S" --session "$SID2" --out "$T/export2.jsonl" >"$T/export2.txt" 2>&1 ||
    fail "session 2 is not in the store: $(cat "$T/export2.txt")"
python3 - "$T/export2.jsonl" "$SID1" <<'PY' || fail "session 2's MCP call in the store"
import json, sys
said = [(m["role"], m["text"]) for m in sorted((json.loads(l)["row"] for l in open(sys.argv[1])
        if json.loads(l).get("table") == "messages"), key=lambda m: m["ordinal"]) if not m["removed"]]
assert any(r == "assistant" and t.startswith("[toolCall lcm_grep]") for r, t in said), said
res = [t for r, t in said if r == "toolResult"]
assert res and "past session " + sys.argv[2] in res[0] and "input_text" not in res[0], res
PY
echo "ok: session 2's store holds the MCP call and its result as text"

"$LCM" hooks uninstall --agent codex --home "$S" >"$T/uninstall.txt" || fail "uninstall: $(cat "$T/uninstall.txt")"
timeout 60 "$CODEX" mcp list >"$T/mcp.txt" 2>&1 || true
! grep -q "^lcm " "$T/mcp.txt" || fail "codex still lists lcm after uninstall: $(cat "$T/mcp.txt")"
! grep -q "lcm hook" "$U/.codex/hooks.json" 2>/dev/null || fail "lcm's hooks are left in hooks.json"
echo "ok: uninstall after the trust removes lcm's hooks and MCP server"
status=0
echo "codex live e2e: passed"
