#!/bin/sh
# `lcm mcp` driven as an MCP client drives it: JSON-RPC 2.0 lines on stdin, one answer line
# each on stdout. Lifecycle (initialize + version negotiation, initialized notification,
# ping), tools/list, every tool over a store a replay wrote (a planted needle is found in
# all sessions, by session id, and read back verbatim), the spec's error shapes, tool
# failures as isError results, and read-only: the store file is byte-identical afterwards.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
"$HOST" gen --seed 5 --messages 300 --needles "$T/needles.jsonl" "$T/in.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" \
    replay "$T/in.jsonl" --window 60000 >/dev/null || fail "replay"
db=$(ls "$HOME_DIR"/lcm/*.sqlite | head -n 1)
before=$(sha256sum "$db" | cut -d' ' -f1)
python3 - "$LCM" "$HOME_DIR" "$T/needles.jsonl" "$db" <<'PY' || fail "MCP session"
import json, sqlite3, subprocess, sys
lcm, home, needles, db = sys.argv[1:5]
n = [json.loads(l) for l in open(needles) if l.strip()]
# a needle in a user prompt on the live path: stored by the plugin
needle = next(x for x in n if x["where"] == "user")
sid = sqlite3.connect(db).execute("SELECT value FROM meta WHERE key='session_id'").fetchone()[0]
p = subprocess.Popen([lcm, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     text=True, bufsize=1)
def send(obj):
    p.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n"); p.stdin.flush()
def rpc(obj):
    send(obj); line = p.stdout.readline()
    assert line, "server closed"
    return json.loads(line)
def check(cond, what, got=None):
    if not cond:
        print("FAIL:", what, json.dumps(got)[:1500] if got is not None else ""); sys.exit(1)
def call(name, args, rid):
    r = rpc({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}})
    check("result" in r and r["id"] == rid, f"{name} answers a result", r)
    c = r["result"]["content"]
    check(c and c[0]["type"] == "text", f"{name} returns text content", r)
    return r["result"].get("isError"), c[0]["text"]

r = rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
res = r.get("result", {})
check(res.get("protocolVersion") == "2025-06-18" and "tools" in res.get("capabilities", {})
      and res.get("serverInfo", {}).get("name") == "lcm", "initialize result", r)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})   # no answer expected
r = rpc({"jsonrpc": "2.0", "id": "p", "method": "ping"})
check(r == {"jsonrpc": "2.0", "id": "p", "result": {}}, "ping answers {} (and the notification got no answer)", r)
r = rpc({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "1999-01-01", "capabilities": {}}})
check(r["result"]["protocolVersion"] == "2025-06-18", "an unknown version is answered with the latest", r)

r = rpc({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
tools = {t["name"]: t for t in r["result"]["tools"]}
check(set(tools) == {"lcm_grep", "lcm_describe", "lcm_expand", "lcm_sessions", "lcm_status", "lcm_handoff", "lcm_contracts"}, "seven tools", r)
readers = set(tools) - {"lcm_contracts"}
check(all(t["inputSchema"]["type"] == "object" for t in tools.values()) and
      all(tools[n]["annotations"]["readOnlyHint"] is True for n in readers), "schemas are objects, the readers read-only", r)
ann = tools["lcm_contracts"]["annotations"]
check(ann["readOnlyHint"] is False and ann.get("destructiveHint") is True,
      "lcm_contracts says it changes rows (reject, retract)", ann)
check("approve" not in tools["lcm_contracts"]["inputSchema"]["properties"]["action"]["enum"] and
      "supersede" not in tools["lcm_contracts"]["inputSchema"]["properties"]["action"]["enum"],
      "lcm_contracts offers no approve or supersede", tools["lcm_contracts"])

err, text = call("lcm_sessions", {}, 10)
check(not err and sid in text and "messages" in text, "lcm_sessions lists the store", text)
err, text = call("lcm_status", {}, 11)
check(not err and "sessions: 1" in text, "lcm_status counts the store", text)
err, text = call("lcm_handoff", {"session": sid}, 40)
check(not err and text.startswith("Handoff of session " + sid) and "Last requests:" in text
      and "no handoff was stored" in text, "lcm_handoff builds one when none is stored, and says so", text)
err, text = call("lcm_handoff", {"session": "no-such-session"}, 41)
check(err and "no store for session" in text, "lcm_handoff of an unknown session is an error", text)
q = f'{needle["key"]}'
err, text = call("lcm_grep", {"query": q}, 12)
check(not err and needle["entry_id"] in text and f'{needle["key"]}={needle["value"]}' in text,
      "lcm_grep across all sessions finds the needle", text)
check("lcm_expand(" in text and "lcm_expand_query" not in text, "the hint names this server's reader", text)
err, text = call("lcm_grep", {"query": q, "scope": sid}, 13)
check(not err and needle["entry_id"] in text, "lcm_grep with a session id as scope", text)
err, text = call("lcm_grep", {"pattern": needle["key"] + "=[0-9]+", "scope": "session", "session": sid}, 14)
check(not err and needle["entry_id"] in text, "lcm_grep pattern in one session", text)
err, text = call("lcm_grep", {"query": q, "scope": "sessions", "cwd": "/nowhere/else"}, 15)
check(not err and needle["entry_id"] not in text, "scope sessions keeps to the project", text)
err, text = call("lcm_expand", {"session": sid, "entry_id": needle["entry_id"]}, 16)
check(not err and f'{needle["key"]}={needle["value"]}' in text, "lcm_expand reads the message verbatim", text)

# tool failures are results with isError
err, text = call("lcm_grep", {}, 20)
check(err is True and "query" in text, "lcm_grep without query or pattern is a tool error", text)
err, text = call("lcm_expand", {"session": "../etc", "entry_id": "x"}, 21)
check(err is True, "a session id that walks out of the folder is refused", text)
err, text = call("lcm_describe", {"session": sid, "id": "#999"}, 22)
check(err is True, "describing a missing summary is a tool error", text)
err, text = call("lcm_expand", {"session": "no-such-session", "entry_id": "x"}, 23)
check(err is True and "no store" in text, "an unknown session is a tool error", text)

# protocol errors, shaped per JSON-RPC
r = rpc("{not json")
check(r.get("error", {}).get("code") == -32700 and r["id"] is None, "parse error -32700 with id null", r)
r = rpc({"id": 30, "method": "ping"})
check(r.get("error", {}).get("code") == -32600 and r["id"] == 30, "no jsonrpc member: -32600", r)
r = rpc({"jsonrpc": "2.0", "id": 31, "method": "resources/list"})
check(r.get("error", {}).get("code") == -32601, "unknown method -32601", r)
r = rpc({"jsonrpc": "2.0", "id": 32, "method": "tools/call", "params": {"name": "rm_rf"}})
check(r.get("error", {}).get("code") == -32602, "unknown tool -32602", r)
r = rpc({"jsonrpc": "2.0", "id": 33, "method": "tools/call", "params": {"arguments": {}}})
check(r.get("error", {}).get("code") == -32602, "tools/call without a name -32602", r)
r = rpc({"jsonrpc": "2.0", "id": 34, "method": "initialize", "params": {}})
check(r.get("error", {}).get("code") == -32602, "initialize without protocolVersion -32602", r)
r = rpc([{"jsonrpc": "2.0", "id": 40, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/x"},
         {"jsonrpc": "2.0", "id": 41, "method": "nope"}])
check(isinstance(r, list) and [x["id"] for x in r] == [40, 41] and r[1]["error"]["code"] == -32601,
      "a batch answers each request", r)
p.stdin.close()
check(p.wait(timeout=10) == 0, "the server exits 0 at end of input")
PY
ok
after=$(sha256sum "$db" | cut -d' ' -f1)
assert_eq "$after" "$before" "the store file is unchanged by the server"
# the same tools as plain verbs
"$LCM" status --home "$HOME_DIR" >"$T/status.txt" || fail "lcm status"
assert_grep "$T/status.txt" "sessions: 1" "lcm status counts stores"
if "$LCM" grep --home "$HOME_DIR" >/dev/null 2>&1; then fail "lcm grep without a query fails"; fi
ok
done_ok
