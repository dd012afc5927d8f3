#!/bin/sh
# The fleet scope's policy through every door: `lcm grep --scope fleet` is refused (exit 2,
# the sentence naming fleetRecall) while the agent home's lcm.json does not set
# "fleetRecall": true, and finds the sessions of every project once it does; the plugin's
# lcm_grep and the MCP server's lcm_grep / lcm_sessions follow the same rule. On the
# embedded SQLite store the answers say the store is not shared.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
mkdir -p "$T/other"
replay_hellos fleet-000 FLEETNEEDLE /work/proj
# Refused without the setting: exit 2, the setting named; nothing found.
"$LCM" grep --home "$HOME_DIR" --scope fleet FLEETNEEDLE_1 >"$T/g0.out" 2>"$T/g0.err"
assert_eq "$?" 2 "lcm grep --scope fleet without fleetRecall exits 2"
assert_grep "$T/g0.err" "fleetRecall" "the refusal names the setting"
assert_nogrep "$T/g0.out" "FLEETNEEDLE" "a refused search shows no hit"
# The home's own scopes stay open.
"$LCM" grep --home "$HOME_DIR" --scope all_sessions FLEETNEEDLE_2 >"$T/ga.out" 2>&1 || { cat "$T/ga.out"; fail "all_sessions"; }
assert_grep "$T/ga.out" "past session fleet-0002" "scope all_sessions needs no setting"
# The plugin's tool: refused the same way.
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/new.jsonl" --cwd "$T/other" \
    --tool lcm_grep '{"query":"FLEETNEEDLE_3","scope":"fleet"}' >"$T/p0.out" 2>&1
assert_grep "$T/p0.out" "fleetRecall" "the model's lcm_grep scope fleet is refused naming the setting"
assert_nogrep "$T/p0.out" "past session fleet-0003" "the refused tool call shows no hit"
# With the setting: every session, whatever its project, and the store named not shared.
printf '{"fleetRecall": true}\n' > "$HOME_DIR/lcm.json"
"$LCM" grep --home "$HOME_DIR" --cwd /work/proj1 --scope fleet FLEETNEEDLE >"$T/g1.out" 2>&1
assert_eq "$?" 0 "lcm grep --scope fleet with fleetRecall exits 0"
for n in 1 2 3; do assert_grep "$T/g1.out" "past session fleet-000$n" "fleet finds the needle of session $n"; done
assert_grep "$T/g1.out" "not shared" "the embedded store says it is not shared"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/new.jsonl" --cwd "$T/other" \
    --tool lcm_grep '{"query":"FLEETNEEDLE_3","scope":"fleet"}' >"$T/p1.out" 2>&1 || { cat "$T/p1.out"; fail "plugin fleet grep"; }
assert_grep "$T/p1.out" "past session fleet-0003" "the model's lcm_grep scope fleet finds another project's session"
# The MCP server: lcm_sessions and lcm_grep with scope fleet, refused then allowed.
python3 - "$LCM" "$HOME_DIR" <<'PY' || fail "MCP fleet scope"
import json, os, subprocess, sys
lcm, home = sys.argv[1:3]
def session():
    p = subprocess.Popen([lcm, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    def rpc(obj):
        p.stdin.write(json.dumps(obj) + "\n"); p.stdin.flush()
        return json.loads(p.stdout.readline())
    rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
         "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    return p, rpc
def check(cond, what, got=""):
    if not cond:
        print("FAIL:", what, str(got)[:1500]); sys.exit(1)
def call(rpc, name, args, rid):
    r = rpc({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}})
    return r["result"].get("isError"), r["result"]["content"][0]["text"]
p, rpc = session()
tools = rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
sess = next(t for t in tools if t["name"] == "lcm_sessions")
check("fleet" in sess["inputSchema"]["properties"]["scope"]["enum"], "lcm_sessions' schema offers scope fleet", sess)
grep = next(t for t in tools if t["name"] == "lcm_grep")
check("fleet" in grep["inputSchema"]["properties"]["scope"]["description"], "lcm_grep's schema names scope fleet", grep)
err, text = call(rpc, "lcm_sessions", {"scope": "fleet"}, 3)
check(not err and all(f"fleet-000{n}" in text for n in (1, 2, 3)), "lcm_sessions scope fleet lists every session", text)
check("not shared" in text, "lcm_sessions scope fleet says the embedded store is not shared", text)
err, text = call(rpc, "lcm_sessions", {"scope": "sessions", "cwd": "/work/proj2"}, 4)
check(not err and "fleet-0002" in text and "fleet-0001" not in text, "lcm_sessions scope sessions keeps to the project", text)
err, text = call(rpc, "lcm_grep", {"query": "FLEETNEEDLE_2", "scope": "fleet"}, 5)
check(not err and "past session fleet-0002" in text, "MCP lcm_grep scope fleet finds the needle", text)
p.stdin.close(); p.wait()
os.remove(os.path.join(home, "lcm.json"))
p, rpc = session()
err, text = call(rpc, "lcm_sessions", {"scope": "fleet"}, 3)
check(err and "fleetRecall" in text and "fleet-0001" not in text, "MCP lcm_sessions scope fleet refused without the setting", text)
err, text = call(rpc, "lcm_grep", {"query": "FLEETNEEDLE_2", "scope": "fleet"}, 4)
check(err and "fleetRecall" in text, "MCP lcm_grep scope fleet refused without the setting", text)
err, text = call(rpc, "lcm_sessions", {}, 5)
check(not err and "fleet-0001" in text, "lcm_sessions without a scope lists this home's sessions as before", text)
p.stdin.close(); p.wait()
PY
ok
done_ok
