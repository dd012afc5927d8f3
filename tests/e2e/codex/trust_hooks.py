#!/usr/bin/env python3
"""Trust lcm's Codex hooks the way Codex's own /hooks view does, without its terminal UI.

  trust_hooks.py CODEX CWD LCM_WORD

Codex (0.171) runs a hook of the user's hooks.json only once the user trusted it: /hooks
records, in the user's config.toml, [hooks.state."<key>"] trusted_hash = "<the hook's
current hash>". Both come from Codex itself here: `codex app-server` (the JSON-RPC server
its clients talk to) lists the hooks for CWD (hooks/list: key, command, currentHash,
trustStatus), and its own config writer records the trust (config/batchWrite). Only the
hooks whose command holds LCM_WORD are trusted. Prints one JSON line:
{"before": {key: status}, "after": {key: status}, "commands": [...]}; exits 1 unless every
such hook was untrusted before and is trusted after.
"""
import json
import subprocess
import sys

codex, cwd, word = sys.argv[1:4]
proc = subprocess.Popen([codex, "app-server"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)


def send(msg):
    proc.stdin.write(json.dumps(dict(msg, jsonrpc="2.0")) + "\n")
    proc.stdin.flush()


def call(rid, method, params):
    send({"id": rid, "method": method, "params": params})
    for line in proc.stdout:
        msg = json.loads(line)
        if msg.get("id") == rid and "method" not in msg:
            if "error" in msg:
                sys.exit("%s: %s" % (method, msg["error"]))
            return msg["result"]
    sys.exit("codex app-server closed before answering %s" % method)


def ours(rid):
    res = call(rid, "hooks/list", {"cwds": [cwd]})
    return [h for entry in res["data"] for h in entry["hooks"] if word in (h.get("command") or "")]


try:
    call(1, "initialize", {"clientInfo": {"name": "lcm-e2e", "title": "lcm e2e", "version": "0"}})
    send({"method": "initialized"})
    hooks = ours(2)
    before = {h["key"]: h["trustStatus"] for h in hooks}
    state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in hooks}
    if state:
        call(3, "config/batchWrite", {"edits": [{"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": state}]})
    hooks = ours(4)
    after = {h["key"]: h["trustStatus"] for h in hooks}
finally:
    proc.stdin.close()
    proc.terminate()
    proc.wait(timeout=10)
print(json.dumps({"before": before, "after": after, "commands": [h["command"] for h in hooks]}))
ok = before and all(s == "untrusted" for s in before.values()) and after.keys() == before.keys() and \
    all(s == "trusted" for s in after.values())
sys.exit(0 if ok else 1)
