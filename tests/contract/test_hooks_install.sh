#!/bin/sh
# lcm hooks install / uninstall / doctor with the real build/lcm, against a temp HOME:
# Claude Code (settings.json + ~/.claude.json) and Codex (hooks.json + config.toml).
# Install merges with the user's own hooks and tables, twice = once, keeps a .bak of what
# it rewrites, --dry-run writes nothing, uninstall removes exactly what it added, doctor
# says what is missing (exit 1) and what is right (exit 0).
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
U="$T/user"          # the user's HOME
S="$T/store home"    # the lcm home (a space: the hook command must quote it)
mkdir -p "$U/.claude" "$U/.codex"
SELF=$(readlink -f "$LCM")

# ---- Claude Code ---------------------------------------------------------------------------
cat >"$U/.claude/settings.json" <<'J'
{
  "model": "opus",
  "hooks": {
    "Stop": [ { "hooks": [ { "type": "command", "command": "notify-send done" } ] } ],
    "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "/usr/local/bin/guard" } ] } ]
  }
}
J
printf '{"numStartups": 3, "mcpServers": {"other": {"type": "stdio", "command": "other-mcp", "args": [], "env": {}}}}\n' >"$U/.claude.json"
cp "$U/.claude/settings.json" "$T/settings.orig"
cp "$U/.claude.json" "$T/claude.orig"

HOME="$U" "$LCM" hooks install --agent claude-code --home "$S" --dry-run >"$T/dry.txt" || fail "dry-run exit"
assert_grep "$T/dry.txt" "would write $U/.claude/settings.json" "dry-run names settings.json"
assert_grep "$T/dry.txt" "hook session-start --home '$S'" "dry-run shows the quoted hook command"
cmp -s "$U/.claude/settings.json" "$T/settings.orig" || fail "dry-run wrote settings.json"
cmp -s "$U/.claude.json" "$T/claude.orig" || fail "dry-run wrote .claude.json"
[ ! -e "$U/.claude/settings.json.bak" ] || fail "dry-run made a .bak"
ok

HOME="$U" "$LCM" hooks doctor --agent claude-code --home "$S" >"$T/doc0.txt"; rc=$?
assert_eq "$rc" "1" "doctor fails before install"
assert_grep "$T/doc0.txt" "FAIL Stop hook missing" "doctor names the missing Stop hook"

HOME="$U" "$LCM" hooks install --agent claude-code --home "$S" >"$T/inst1.txt" || fail "install"
cp "$U/.claude/settings.json" "$T/settings.once"
cp "$U/.claude.json" "$T/claude.once"
python3 - "$U" "$SELF" "$S" <<'PY' || fail "installed Claude Code settings"
import json, sys
u, lcm, home = sys.argv[1:]
s = json.load(open(u + "/.claude/settings.json"))
assert s["model"] == "opus", s
h = s["hooks"]
cmds = lambda ev: [x["command"] for g in h[ev] for x in g["hooks"]]
q = "'" + home + "'"
assert cmds("Stop") == ["notify-send done", lcm + " hook stop --home " + q], cmds("Stop")
assert cmds("PreToolUse") == ["/usr/local/bin/guard"] and h["PreToolUse"][0]["matcher"] == "Bash"
for ev, verb in [("SessionStart", "session-start"), ("SubagentStop", "subagent-stop"), ("PreCompact", "precompact")]:
    assert cmds(ev) == [lcm + " hook " + verb + " --home " + q], (ev, cmds(ev))
    assert h[ev][0]["hooks"][0]["type"] == "command"
assert "UserPromptSubmit" not in h  # off by default
c = json.load(open(u + "/.claude.json"))
assert c["numStartups"] == 3 and c["mcpServers"]["other"]["command"] == "other-mcp"
assert c["mcpServers"]["lcm"] == {"type": "stdio", "command": lcm, "args": ["mcp", "--home", home], "env": {}}, c
PY
ok
cmp -s "$U/.claude/settings.json.bak" "$T/settings.orig" || fail ".bak of settings.json is the user's file"
cmp -s "$U/.claude.json.bak" "$T/claude.orig" || fail ".bak of .claude.json is the user's file"
ok

HOME="$U" "$LCM" hooks install --agent claude-code --home "$S" >"$T/inst2.txt" || fail "install twice"
cmp -s "$U/.claude/settings.json" "$T/settings.once" || fail "install twice changed settings.json"
cmp -s "$U/.claude.json" "$T/claude.once" || fail "install twice changed .claude.json"
assert_grep "$T/inst2.txt" "unchanged $U/.claude/settings.json" "second install says unchanged"

HOME="$U" "$LCM" hooks doctor --agent claude-code --home "$S" >"$T/doc1.txt"; rc=$?
assert_eq "$rc" "0" "doctor passes after install ($(cat "$T/doc1.txt"))"
assert_grep "$T/doc1.txt" "ok   MCP server lcm present" "doctor sees the MCP entry"
assert_grep "$T/doc1.txt" "ok   the store folder is writable" "doctor checks the store folder"
HOME="$U" "$LCM" hooks doctor --agent claude-code --home "$T/elsewhere" >"$T/doc2.txt"; rc=$?
assert_eq "$rc" "1" "doctor fails for another home"
assert_grep "$T/doc2.txt" "another lcm or home" "doctor says the hooks point elsewhere"

# --prompt-hook adds UserPromptSubmit; the user's hook added meanwhile is kept
python3 - "$U/.claude/settings.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["hooks"].setdefault("UserPromptSubmit", []).append({"hooks": [{"type": "command", "command": "log-prompt"}]})
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
HOME="$U" "$LCM" hooks install --agent claude-code --home "$S" --prompt-hook >/dev/null || fail "install --prompt-hook"
python3 - "$U/.claude/settings.json" <<'PY' || fail "prompt hook next to the user's"
import json, sys
h = json.load(open(sys.argv[1]))["hooks"]["UserPromptSubmit"]
c = [x["command"] for g in h for x in g["hooks"]]
assert c[0] == "log-prompt" and c[1].endswith("hook user-prompt-submit --home '" + sys.argv[1].rsplit("/user/", 1)[0] + "/store home'"), c
PY
ok

HOME="$U" "$LCM" hooks uninstall --agent claude-code --home "$S" >"$T/un.txt" || fail "uninstall"
python3 - "$U" "$T/settings.orig" "$T/claude.orig" <<'PY' || fail "uninstall removes exactly ours"
import json, sys
u, so, co = sys.argv[1:]
s, orig = json.load(open(u + "/.claude/settings.json")), json.load(open(so))
orig["hooks"]["UserPromptSubmit"] = [{"hooks": [{"type": "command", "command": "log-prompt"}]}]
assert s == orig, s
assert json.load(open(u + "/.claude.json")) == json.load(open(co))
PY
ok
HOME="$U" "$LCM" hooks uninstall --agent claude-code --home "$S" >"$T/un2.txt" || fail "uninstall twice"
assert_nogrep "$T/un2.txt" "wrote" "a second uninstall writes nothing"

# project scope: .claude/settings.json and .mcp.json of the folder
mkdir -p "$T/proj"
(cd "$T/proj" && HOME="$U" "$LCM" hooks install --agent claude-code --scope project --home "$S" >/dev/null) || fail "project install"
[ -f "$T/proj/.claude/settings.json" ] && [ -f "$T/proj/.mcp.json" ] || fail "project scope files"
assert_grep "$T/proj/.mcp.json" '"lcm"' "project .mcp.json names lcm"
ok

# a settings.json that is not JSON is refused, untouched
printf '{ not json' >"$T/proj/.claude/settings.json"
(cd "$T/proj" && HOME="$U" "$LCM" hooks install --agent claude-code --scope project --home "$S" >/dev/null 2>"$T/bad.txt") && fail "install over broken JSON succeeded"
assert_grep "$T/bad.txt" "not a JSON object" "broken settings.json is named"
assert_eq "$(cat "$T/proj/.claude/settings.json")" "{ not json" "broken settings.json left as it is"

# ---- Codex ---------------------------------------------------------------------------------
cat >"$U/.codex/config.toml" <<'TOML'
model = "gpt-5-codex"   # the user's

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "0"]

[features]
web_search = true
codex_hooks = false
TOML
printf '{\n  "hooks": {\n    "Stop": [\n      {\n        "hooks": [\n          {\n            "type": "command",\n            "command": "say done"\n          }\n        ]\n      }\n    ]\n  }\n}\n' >"$U/.codex/hooks.json"
cp "$U/.codex/config.toml" "$T/toml.orig"
cp "$U/.codex/hooks.json" "$T/chooks.orig"
HOME="$U" "$LCM" hooks install --agent codex --home "$S" --dry-run >/dev/null || fail "codex dry-run"
cmp -s "$U/.codex/config.toml" "$T/toml.orig" || fail "codex dry-run wrote config.toml"
HOME="$U" "$LCM" hooks install --agent codex --home "$S" >/dev/null || fail "codex install"
cp "$U/.codex/config.toml" "$T/toml.once"
python3 - "$U/.codex" "$SELF" "$S" <<'PY' || fail "codex files"
import json, sys, tomllib
d, lcm, home = sys.argv[1:]
t = tomllib.load(open(d + "/config.toml", "rb"))
assert t["model"] == "gpt-5-codex" and t["mcp_servers"]["docs"]["command"] == "docs-mcp"
assert t["mcp_servers"]["lcm"] == {"command": lcm, "args": ["mcp", "--home", home]}, t
assert t["features"] == {"web_search": True, "codex_hooks": True}, t["features"]
h = json.load(open(d + "/hooks.json"))["hooks"]
c = lambda ev: [x["command"] for g in h[ev] for x in g["hooks"]]
assert c("Stop") == ["say done", lcm + " hook stop --home '" + home + "'"], c("Stop")
assert c("SessionStart") == [lcm + " hook session-start --home '" + home + "'"]
assert "UserPromptSubmit" not in h
PY
ok
# the user's lines are kept byte for byte: every original line is still there, in order
python3 - "$T/toml.orig" "$U/.codex/config.toml" <<'PY' || fail "codex config.toml keeps the user's lines"
import sys
orig, new = open(sys.argv[1]).read().splitlines(), open(sys.argv[2]).read().splitlines()
rest = [l for l in orig if l != "codex_hooks = false"]
it = iter(new)
assert all(any(l == n for n in it) for l in rest), new
PY
ok
cmp -s "$U/.codex/config.toml.bak" "$T/toml.orig" || fail "config.toml .bak"
HOME="$U" "$LCM" hooks install --agent codex --home "$S" >/dev/null || fail "codex install twice"
cmp -s "$U/.codex/config.toml" "$T/toml.once" || fail "codex install twice changed config.toml"
# the trust Codex's /hooks records (test_hooks_codex_doctor_trust.sh has the doctor's side)
printf '\n[hooks.state."%s:session_start:0:0"]\ntrusted_hash = "sha256:aa"\n\n[hooks.state."%s:stop:1:0"]\ntrusted_hash = "sha256:bb"\n' \
    "$U/.codex/hooks.json" "$U/.codex/hooks.json" >>"$U/.codex/config.toml"
HOME="$U" "$LCM" hooks doctor --agent codex --home "$S" >"$T/cdoc.txt"; rc=$?
assert_eq "$rc" "0" "codex doctor passes ($(cat "$T/cdoc.txt"))"
HOME="$U" "$LCM" hooks doctor --home "$S" >"$T/adoc.txt"; rc=$?
assert_eq "$rc" "0" "doctor without --agent checks the agent that has our hooks ($(cat "$T/adoc.txt"))"
assert_grep "$T/adoc.txt" "^codex:" "doctor without --agent: codex"
assert_nogrep "$T/adoc.txt" "^claude-code:" "doctor without --agent: not Claude Code, which has none of ours"
cp "$T/toml.once" "$U/.codex/config.toml"
HOME="$U" "$LCM" hooks uninstall --agent codex --home "$S" >/dev/null || fail "codex uninstall"
cmp -s "$U/.codex/config.toml" "$T/toml.orig" || { diff "$T/toml.orig" "$U/.codex/config.toml"; fail "codex uninstall restores config.toml byte for byte"; }
python3 -c "import json,sys; assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2]))" "$U/.codex/hooks.json" "$T/chooks.orig" ||
    fail "codex uninstall restores hooks.json"
ok

# a config.toml without [features] or a trailing newline, and none at all
printf 'model = "o3"' >"$U/.codex/config.toml"
cp "$U/.codex/config.toml" "$T/toml2.orig"
HOME="$U" "$LCM" hooks install --agent codex --home "$S" >/dev/null || fail "codex install 2"
python3 -c "import tomllib,sys; t=tomllib.load(open(sys.argv[1],'rb')); assert t['features']['codex_hooks'] is True and t['model']=='o3'" "$U/.codex/config.toml" || fail "codex toml 2"
HOME="$U" "$LCM" hooks uninstall --agent codex --home "$S" >/dev/null || fail "codex uninstall 2"
cmp -s "$U/.codex/config.toml" "$T/toml2.orig" || { od -c "$U/.codex/config.toml" | tail -3; fail "codex uninstall 2 restores byte for byte"; }
rm -rf "$U/.codex"
HOME="$U" "$LCM" hooks install --agent codex --home "$S" >/dev/null || fail "codex install into nothing"
python3 -c "import tomllib,sys; t=tomllib.load(open(sys.argv[1],'rb')); assert t['features']['codex_hooks'] is True and 'lcm' in t['mcp_servers']" "$U/.codex/config.toml" || fail "codex toml from nothing"
ok
done_ok
