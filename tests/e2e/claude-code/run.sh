#!/bin/sh
# run.sh -- lcm's hooks inside the real Claude Code (headless, `claude -p`) against a
# loopback scripted Anthropic Messages API (fake_anthropic.py, which records every request).
#
#   sh tests/e2e/claude-code/run.sh [BUILD]     BUILD defaults to ./build (needs `make` first)
#
# Installs the pinned @anthropic-ai/claude-code of package-lock.json into BUILD/e2e-claude
# once (again when the lock file changes). Nothing touches the real home: HOME is a temp
# folder (kept on failure). Checks, in order:
#   - `lcm hooks install --agent claude-code --home DIR` next to a user's own Stop hook;
#     a second install changes nothing; `lcm hooks doctor` passes;
#   - `claude mcp list` shows lcm connected;
#   - session 1 runs a Bash tool that prints a value and stops: its messages (the prompt,
#     the call, the printed value, the answer) are in the store under DIR with no manual
#     import, and the user's own Stop hook ran too;
#   - session 2 (new, same folder): its model calls lcm_grep over MCP and gets session 1's
#     value back; the model's first request carries the bundle naming
#     session 1 and its value;
#   - `/compact` on session 1 (resumed): PreCompact builds its DAG in the background;
#   - `lcm hooks uninstall` leaves the user's settings as they were and no lcm MCP entry.
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
. "$ROOT/tests/e2e/lib.sh"
e2e_begin "${1:-}" claude-code e2e-claude claude "Claude Code" lcm
LCM="$BUILD/lcm"
CLAUDE=$NODE_BIN
e2e_tmp claude-e2e
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
mkdir -p "$U/.claude" "$W"
# the user's own hooks, which must keep running and survive uninstall
cat >"$U/.claude/settings.json" <<J
{
  "hooks": {
    "Stop": [ { "hooks": [ { "type": "command", "command": "echo user-stop-hook >> '$T/user-hook.txt'" } ] } ]
  }
}
J
cp "$U/.claude/settings.json" "$T/settings.orig"

python3 "$E2E/fake_anthropic.py" --record "$T/requests.jsonl" >"$T/port" 2>"$T/server.err" &
SERVER_PID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
PORT=$(head -n 1 "$T/port")
[ -n "$PORT" ] || fail "the scripted Anthropic server did not start: $(cat "$T/server.err")"

export HOME="$U" ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=sk-ant-e2e-test
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1
unset CLAUDE_CONFIG_DIR ANTHROPIC_AUTH_TOKEN 2>/dev/null || true

"$LCM" hooks install --agent claude-code --home "$S" >"$T/install1.txt" || fail "lcm hooks install: $(cat "$T/install1.txt")"
cp "$U/.claude/settings.json" "$T/settings.once"
"$LCM" hooks install --agent claude-code --home "$S" >"$T/install2.txt" || fail "second install"
cmp -s "$U/.claude/settings.json" "$T/settings.once" || fail "install twice is not install once"
PATH="$BUILD:$PATH" "$LCM" hooks doctor --agent claude-code --home "$S" >"$T/doctor.txt" || fail "doctor after install: $(cat "$T/doctor.txt")"
echo "ok: install (twice = once), doctor"

(cd "$W" && timeout 120 "$CLAUDE" mcp list) >"$T/mcp.txt" 2>&1 || fail "claude mcp list: $(cat "$T/mcp.txt")"
grep -q "^lcm: .*Connected" "$T/mcp.txt" || fail "claude mcp list does not show lcm connected: $(cat "$T/mcp.txt")"
echo "ok: claude mcp list shows lcm connected"

(cd "$W" && timeout 180 "$CLAUDE" -p 'Please RUN-BASH:echo E2E-VALUE-$((6*7))' --allowedTools Bash --output-format json) \
    >"$T/out1.json" 2>"$T/err1.txt" || fail "session 1 (claude -p) failed"
python3 - "$T/out1.json" >"$T/sid1" <<'PY' || fail "session 1 did not run the tool and finish: $(head -c 800 "$T/out1.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert not d.get("is_error") and "E2E-VALUE-42" in d["result"], d.get("result")
print(d["session_id"])
PY
SID1=$(cat "$T/sid1")
DB="$S/lcm/claude-$SID1.sqlite"
[ -f "$DB" ] || fail "no store for session 1 under $S/lcm: $(ls "$S/lcm" 2>&1)"
python3 - "$DB" "$W" <<'PY' || fail "session 1's messages in the store"
import sqlite3, sys, os
db = sqlite3.connect(sys.argv[1])
rows = list(db.execute("SELECT role, text FROM messages WHERE removed = 0 ORDER BY ordinal"))
roles = [r for r, _ in rows]
text = "\n".join(t for _, t in rows)
assert "RUN-BASH:echo E2E-VALUE-$((6*7))" in rows[0][1], rows[0]
assert "toolResult" in roles and "[toolCall Bash]" in text, rows
assert any(r == "toolResult" and "E2E-VALUE-42" in t for r, t in rows), rows
assert rows[-1][0] == "assistant" and "The command printed: E2E-VALUE-42" in rows[-1][1], rows[-1]
cwd = db.execute("SELECT value FROM meta WHERE key = 'cwd'").fetchone()[0]
assert os.path.realpath(cwd) == os.path.realpath(sys.argv[2]), cwd
PY
grep -q user-stop-hook "$T/user-hook.txt" 2>/dev/null || fail "the user's own Stop hook did not run beside lcm's"
"$LCM" grep --home "$S" '"E2E-VALUE-42"' >"$T/grep.txt" || fail "lcm grep"
grep -q "claude-$SID1" "$T/grep.txt" || fail "lcm grep does not find the value: $(cat "$T/grep.txt")"
echo "ok: session 1 ($SID1) is in the store with no manual import; the user's Stop hook ran too"

before=$(wc -l <"$T/requests.jsonl")
# Claude Code defers MCP tools behind its ToolSearch tool by default (a real model looks them
# up first); with tool search off the request offers mcp__lcm__lcm_grep itself, so the scripted
# model can call it in one step.
(cd "$W" && ENABLE_TOOL_SEARCH=false timeout 180 "$CLAUDE" -p 'hello again RUN-TOOL:mcp__lcm__lcm_grep {"query":"\"E2E-VALUE-42\"","scope":"all_sessions"}' \
    --allowedTools mcp__lcm__lcm_grep --output-format json) >"$T/out2.json" 2>"$T/err2.txt" ||
    fail "session 2 (claude -p) failed"
python3 - "$T/requests.jsonl" "$before" "$SID1" <<'PY' || fail "session 2's first request does not carry the bundle"
import json, sys
path, before, sid1 = sys.argv[1], int(sys.argv[2]), sys.argv[3]
reqs = [json.loads(l) for l in open(path)][before:]
main = [r["body"] for r in reqs if r["method"] == "POST" and r["path"].split("?")[0].endswith("/v1/messages")
        and r["body"] and r["body"].get("tools")]
assert main, "no model request in session 2"
first = json.dumps(main[0])
for want in ["Previous session in this folder: claude-" + sid1, "E2E-VALUE-42", "lcm_expand", "hello again"]:
    assert want in first, want
PY
echo "ok: session 2's first model request carries the bundle of session 1"
python3 - "$T/requests.jsonl" "$before" "$SID1" <<'PY' || fail "session 2's MCP lcm_grep did not return session 1's value"
import json, sys
path, before, sid1 = sys.argv[1], int(sys.argv[2]), sys.argv[3]
reqs = [json.loads(l) for l in open(path)][before:]
res = []
for r in reqs:
    for m in ((r.get("body") or {}).get("messages") or []):
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if b.get("type") == "tool_result":
                c = b.get("content")
                res.append(c if isinstance(c, str) else json.dumps(c))
assert res, "no tool_result reached the model: the MCP tool was not called"
hit = [t for t in res if "E2E-VALUE-42" in t and "past session claude-" + sid1 in t]
assert hit, res[:2]
PY
echo "ok: session 2's model called lcm_grep over MCP and got session 1's value back"

# /compact on session 1: PreCompact builds its DAG in the background (extractive)
(cd "$W" && timeout 180 "$CLAUDE" -p '/compact' --resume "$SID1" --output-format json) >"$T/out3.json" 2>"$T/err3.txt" ||
    fail "session 1 resumed for /compact failed"
i=0; n=0
while [ $i -lt 300 ]; do
    n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from summaries').fetchone()[0])" "$DB" 2>/dev/null || echo 0)
    [ "$n" -gt 0 ] && break
    sleep 0.1; i=$((i+1))
done
[ "$n" -gt 0 ] || fail "no summaries in session 1's store after /compact (PreCompact)"
echo "ok: /compact ran PreCompact, which built session 1's DAG ($n summaries)"

"$LCM" hooks uninstall --agent claude-code --home "$S" >"$T/uninstall.txt" || fail "uninstall"
python3 - "$U" "$T/settings.orig" <<'PY' || fail "uninstall did not restore the user's settings"
import json, sys
u, orig = sys.argv[1:]
assert json.load(open(u + "/.claude/settings.json")) == json.load(open(orig))
c = json.load(open(u + "/.claude.json"))
assert "lcm" not in c.get("mcpServers", {}), c.get("mcpServers")
PY
(cd "$W" && timeout 60 "$CLAUDE" mcp list) >"$T/mcp2.txt" 2>&1 || true
! grep -q "^lcm: " "$T/mcp2.txt" || fail "claude mcp list still shows lcm after uninstall"
echo "ok: uninstall restores the user's own hooks and removes the MCP entry"
status=0
echo "claude-code e2e: passed"
