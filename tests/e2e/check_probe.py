#!/usr/bin/env python3
"""Assertions over the probe plugin's session in the real Pi (tests/e2e/run.sh calls it).

    check_probe.py OUT_DIR AGENT_DIR

The probe plugin (tests/e2e/probe_plugin.c) calls complete_async from a thread of its own,
as the plugin's summarizer worker does, and then the blocking complete. Checks that the
completion went through Pi's own pi-ai (imported as an ES module) to the scripted model and
came back to `done` once with the model's answer, that Pi kept answering RPC commands
promptly while that call was in flight (the scripted model takes 1.5 s), and that the
blocking complete works inside Pi too. Prints one line per check; exits 1 at the first
failure.
"""
import json
import os
import sys

from check_session import check, jsonl

# The longest an RPC command may take while the completion is in flight; a blocked event
# loop would hold it for the model's whole 1.5 s.
MAX_RESPONSE_MS = 500


def fields(note):
    out = {}
    for line in (note or "").splitlines():
        k, _, v = line.partition("=")
        out[k] = v
    return out


def main():
    out, agent = sys.argv[1], sys.argv[2]
    events = jsonl(os.path.join(out, "events.jsonl"))
    requests = jsonl(os.path.join(out, "requests.jsonl"))
    notes = json.load(open(os.path.join(out, "notes.json")))
    log_path = os.path.join(agent, "lcm", "pi-bridge.log")
    log = open(log_path).read() if os.path.exists(log_path) else ""
    by_step = {s["step"]: s for s in notes}

    errors = [e for e in events if e.get("type") == "extension_error"]
    check(not errors, "no extension errors in Pi", errors)
    check("loaded probe" in log, "the bridge loaded the probe plugin inside Pi", log)
    check("ERR_PACKAGE_PATH_NOT_EXPORTED" not in log, "pi-ai was imported (no ERR_PACKAGE_PATH_NOT_EXPORTED)", log)
    started = by_step.get("/probe-async", {}).get("notes", [])
    check("probe-async: started" in started, "/probe-async started complete_async on the probe's thread", notes)

    pings = [r for r in requests if "PROBE-ASYNC-PING" in json.dumps(r.get("messages"))]
    check(len(pings) == 1, "the complete_async request reached the scripted model once, through Pi's pi-ai", requests)
    result = by_step.get("/probe-async-result", {})
    r = fields(next((n for n in result.get("notes", []) if "calls=" in (n or "")), ""))
    check(r.get("start") == "0:-", "complete_async returned AP_OK", result)
    check(r.get("calls") == "1" and r.get("status") == "0" and r.get("ud") == "ok",
          "done was called once with AP_OK and the plugin's done_ud", result)
    try:
        message = json.loads(r.get("out", ""))
    except ValueError:
        message = {}
    text = "".join(c.get("text", "") for c in message.get("content", []) if isinstance(c, dict))
    check(message.get("role") == "assistant" and text == "PROBE-ASYNC-PONG",
          "done carried the model's answer as an assistant message", r)
    check(result.get("polls", 0) >= 5 and result.get("max_response_ms", 1e9) < MAX_RESPONSE_MS,
          "Pi answered every RPC command within %d ms while the call was in flight "
          "(%s commands, the slowest %s ms)" % (MAX_RESPONSE_MS, result.get("polls"), result.get("max_response_ms")),
          result)

    check(len([r for r in requests if "PROBE-SYNC-PING" in json.dumps(r.get("messages"))]) == 1,
          "the blocking complete's request reached the scripted model once", requests)
    sync = "\n".join(by_step.get("/probe-complete", {}).get("notes", []))
    check(sync.startswith("complete=0:") and "PROBE-SYNC-PONG" in sync,
          "the blocking complete answered inside Pi (its worker imports pi-ai as an ES module too)", sync)
    print("ok: probe session in Pi")


if __name__ == "__main__":
    main()
