#!/bin/sh
# plugin.sh -- the repository as a Claude Code plugin marketplace, installed with Claude Code's
# own plugin commands from the local path, inside the real pinned CLI (headless `claude -p`)
# against the loopback scripted model (fake_anthropic.py).
#
#   sh tests/e2e/claude-code/plugin.sh [BUILD]     BUILD defaults to ./build (needs `make`)
#
# HOME is a temp folder (kept on failure); the store is the plugin's default, ~/.agent in it.
# lcm is found as a user's would be: BUILD on PATH. Checks, in order:
#   - `claude plugin validate ROOT` passes; `claude plugin marketplace add ROOT` then `claude plugin install
#     lossless-context@lossless-context` succeed; `lcm hooks doctor` names the plugin as the
#     active install and passes;
#   - session 1 runs a Bash tool printing a value made for this run: the store holds the
#     printed value (a toolResult), put there by the plugin's hooks (no import);
#   - session 2 (new): its first model request carries the bundle of session 1 (the plugin's
#     SessionStart hook); its model calls the plugin's MCP lcm_grep and the tool result it
#     receives holds the value and names session 1;
#   - with `lcm hooks install` as well, doctor warns that both are active.
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
. "$ROOT/tests/e2e/lib.sh"
e2e_begin "${1:-}" claude-code e2e-claude claude "Claude Code" lcm
CLAUDE=$NODE_BIN
e2e_tmp claude-plugin
fail() {
    echo "FAIL: $*"
    for f in "$T/err1.txt" "$T/err2.txt" "$T/home/.agent/lcm/hooks.log"; do
        [ -s "$f" ] && { echo "--- $f:"; tail -n 20 "$f"; }
    done
    exit 1
}
U="$T/home"
W="$T/work"
mkdir -p "$U" "$W"
python3 "$E2E/fake_anthropic.py" --record "$T/requests.jsonl" >"$T/port" 2>"$T/server.err" &
SERVER_PID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
PORT=$(head -n 1 "$T/port")
[ -n "$PORT" ] || fail "the scripted Anthropic server did not start: $(cat "$T/server.err")"

export HOME="$U" ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=sk-ant-e2e-test PATH="$BUILD:$PATH"
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1
unset CLAUDE_CONFIG_DIR ANTHROPIC_AUTH_TOKEN LCM_HOME 2>/dev/null || true

"$CLAUDE" plugin validate "$ROOT" </dev/null >"$T/validate.txt" 2>&1 || fail "claude plugin validate: $(cat "$T/validate.txt")"
(cd "$W" && "$CLAUDE" plugin marketplace add "$ROOT" </dev/null) >"$T/add.txt" 2>&1 ||
    fail "claude plugin marketplace add: $(cat "$T/add.txt")"
(cd "$W" && "$CLAUDE" plugin install lossless-context@lossless-context </dev/null) >"$T/inst.txt" 2>&1 ||
    fail "claude plugin install: $(cat "$T/inst.txt")"
lcm hooks doctor --agent claude-code >"$T/doctor.txt" 2>&1 || fail "doctor after the plugin install: $(cat "$T/doctor.txt")"
grep -q "lossless-context@lossless-context" "$T/doctor.txt" || fail "doctor does not name the plugin: $(cat "$T/doctor.txt")"
echo "ok: installed through claude plugin marketplace add + claude plugin install; doctor passes"

# The printed value exists only in the tool's output (the prompt holds the arithmetic).
NONCE=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
VALUE="PLUGIN-VALUE-42-$NONCE"
(cd "$W" && timeout 180 "$CLAUDE" -p "Please RUN-BASH:echo PLUGIN-VALUE-\$((6*7))-$NONCE" --allowedTools Bash \
    --output-format json) >"$T/out1.json" 2>"$T/err1.txt" || fail "session 1 (claude -p) failed"
python3 - "$T/out1.json" "$VALUE" >"$T/sid1" <<'PY' || fail "session 1 did not run the tool: $(head -c 800 "$T/out1.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert not d.get("is_error") and sys.argv[2] in d["result"], d.get("result")
print(d["session_id"])
PY
SID1=$(cat "$T/sid1")
DB="$U/.agent/lcm/claude-$SID1.sqlite"
[ -f "$DB" ] || fail "no store for session 1 under $U/.agent/lcm (the plugin's hooks did not capture it): $(ls "$U/.agent/lcm" 2>&1)"
python3 - "$DB" "$VALUE" <<'PY' || fail "session 1's printed value is not in the store"
import sqlite3, sys
rows = list(sqlite3.connect(sys.argv[1]).execute("SELECT role, text FROM messages WHERE removed = 0 ORDER BY ordinal"))
assert any(r == "toolResult" and sys.argv[2] in t for r, t in rows), rows
PY
echo "ok: session 1 ($SID1) captured by the plugin's hooks, its tool output in the store"

TOOL=mcp__plugin_lossless-context_lcm__lcm_grep
before=$(wc -l <"$T/requests.jsonl")
(cd "$W" && ENABLE_TOOL_SEARCH=false timeout 180 "$CLAUDE" -p "look it up RUN-TOOL:$TOOL {\"query\":\"\\\"$VALUE\\\"\"}" \
    --allowedTools "$TOOL" --output-format json) >"$T/out2.json" 2>"$T/err2.txt" || fail "session 2 (claude -p) failed"
python3 - "$T/requests.jsonl" "$before" "$SID1" "$VALUE" "$TOOL" <<'PY' || fail "session 2's model did not get the value from the plugin's lcm_grep"
import json, sys
path, before, sid1, value, tool = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
reqs = [json.loads(l) for l in open(path)][before:]
offered = {t.get("name") for r in reqs for t in ((r.get("body") or {}).get("tools") or [])}
assert tool in offered, sorted(n for n in offered if n and n.startswith("mcp__"))
res = []
for r in reqs:
    for m in ((r.get("body") or {}).get("messages") or []):
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if b.get("type") == "tool_result":
                c = b.get("content")
                res.append(c if isinstance(c, str) else json.dumps(c))
first = json.dumps([r["body"] for r in reqs if r["body"] and r["body"].get("tools")][0])
assert "Previous session in this folder: claude-" + sid1 in first, "no SessionStart bundle from the plugin's hook"
assert res, "no tool_result reached the model"
assert any(value in t and sid1 in t for t in res), res[:2]
PY
echo "ok: session 2 began with session 1's bundle (SessionStart) and its model received session 1's value from the plugin's MCP lcm_grep"

lcm hooks install --agent claude-code >"$T/hooks-install.txt" 2>&1 || fail "lcm hooks install: $(cat "$T/hooks-install.txt")"
lcm hooks doctor --agent claude-code >"$T/doctor2.txt" 2>&1 && fail "doctor passes with both installs active: $(cat "$T/doctor2.txt")"
grep -q "twice" "$T/doctor2.txt" || fail "doctor does not warn that both installs are active: $(cat "$T/doctor2.txt")"
echo "ok: with lcm hooks install as well, doctor warns that events would be captured twice"
status=0
echo "claude-code plugin e2e: passed"
