#!/usr/bin/env python3
"""Assertions over one Pi session run by pi_session.py (tests/e2e/run.sh calls it).

    check_session.py OUT_DIR AGENT_DIR [--full]

Always: the bridge loaded the .so inside Pi, events reached the plugin, /lcm status and
/clm status answered through Pi's UI, the plugin's tools were in the requests Pi sent, the
lcm_grep call went through the bridge, and /clm-compact's send_user_message started a turn
in Pi (a request whose last user message is the compaction prompt), both when Pi was idle
and, sent while a prompt streamed, once that prompt's run had ended. With --full
(LC_E2E_FULL=1), also issue 9's end-to-end claims: live-context-state entries in the
session JSONL, the edited context in the next request, every message in the store, the
needle found by lcm_grep, and the compaction turn's edit accepted.
Prints one line per check; exits 1 at the first failure.
"""
import glob
import json
import os
import re
import sqlite3
import sys

checks = 0


def check(cond, what, detail=""):
    global checks
    if not cond:
        print("FAIL: %s%s" % (what, ("\n--- " + str(detail)[:3000]) if detail else ""))
        sys.exit(1)
    checks += 1
    print("ok: %s" % what)


def jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def texts(blocks):
    if isinstance(blocks, str):
        return blocks
    return "\n".join(b.get("text", "") for b in blocks or [] if isinstance(b, dict))


COMPACT_STEP = "/clm-compact keep the numbers"
BUSY_STEP = "/clm-compact keep the paths"
BUSY_PROMPT = "Check the release status."
# The fixed sentence of clm_compact_default (plugin/clm.c) and what the steps' arguments add.
COMPACT_PROMPT = "[CLM COMPACT] Compact your live context now by editing "
COMPACT_ALSO = "\n\nAlso: keep the numbers"
BUSY_ALSO = "\n\nAlso: keep the paths"


def last_user_text(request):
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    return texts(users[-1].get("content")) if users else ""


def carried(request, needle):
    """Is `needle` in the text of a message the request sends? Tool-call arguments do not
    count: the scripted edit command spells the needle out itself."""
    return any(needle in texts(m.get("content")) for m in request.get("messages", []))


def main():
    out, agent = sys.argv[1], sys.argv[2]
    full = "--full" in sys.argv[3:]
    events = jsonl(os.path.join(out, "events.jsonl"))
    requests = jsonl(os.path.join(out, "requests.jsonl"))
    notes = json.load(open(os.path.join(out, "notes.json")))
    log_path = os.path.join(agent, "lcm", "pi-bridge.log")
    log = open(log_path).read() if os.path.exists(log_path) else ""

    errors = [e for e in events if e.get("type") == "extension_error"]
    check(not errors, "no extension errors in Pi", errors)
    check("loaded lossless-context" in log, "the bridge loaded lossless-context.so inside Pi", log)
    check(not any(n.startswith("lossless-context is not active") for s in notes for n in s["notes"]),
          "Pi did not report the plugin as inactive", notes)

    by_step = {s["step"]: s["notes"] for s in notes}
    lcm = "\n".join(by_step.get("/lcm status", []))
    clm = "\n".join(by_step.get("/clm status", []))
    check(re.search(r"LCM: \d+ messages", lcm), "/lcm status answered through Pi", notes)
    check(re.search(r"live context", clm), "/clm status answered through Pi", notes)

    check(len(requests) >= 9, "Pi sent every scripted request to the fake provider (%d)" % len(requests))
    tools = {t.get("function", {}).get("name") for t in requests[0].get("tools", [])}
    for t in ("lcm_grep", "lcm_describe", "lcm_expand_query"):
        check(t in tools, "tool %s registered by the plugin reached the provider" % t, sorted(tools))
    check({"bash", "read", "edit", "write"} <= tools, "Pi's own tools sit beside the plugin's", sorted(tools))

    sessions = glob.glob(os.path.join(agent, "sessions", "*", "*.jsonl"))
    check(len(sessions) == 1, "Pi wrote one session file", sessions)
    entries = jsonl(sessions[0])
    msgs = [e for e in entries if e.get("type") == "message"]
    grep_results = [e["message"] for e in msgs if e["message"].get("role") == "toolResult"
                    and e["message"].get("toolName") == "lcm_grep"]
    check(len(grep_results) == 1, "the model's lcm_grep call ran through the bridge", grep_results)
    # The context events reached the plugin: its store, fed only by them, counts the
    # branch's messages (the last assistant reply arrives after the last context event).
    # Pi 1.x also keeps its system prompt as message entries of role system, which no context
    # event carries.
    convo = [e for e in msgs if e["message"].get("role") != "system"]
    stored = re.search(r"LCM: (\d+) messages", lcm)
    check(stored and int(stored.group(1)) >= len(convo) - 1,
          "context events reached the plugin with the whole branch", lcm)
    # /clm-compact with Pi idle: the plugin's send_user_message became pi.sendUserMessage,
    # and Pi ran it as a prompt of its own (pi_session.py waited for that turn's agent_end).
    compact_notes = "\n".join(by_step.get(COMPACT_STEP, []))
    check("compaction prompt was sent as a user message" in compact_notes,
          "%s answered that it sent the prompt (Pi was idle)" % COMPACT_STEP, notes)
    prompts = [i for i, r in enumerate(requests) if last_user_text(r).startswith(COMPACT_PROMPT)]
    compact_reqs = [i for i in prompts if last_user_text(requests[i]).endswith(COMPACT_ALSO)]
    compact_text = last_user_text(requests[compact_reqs[0]]) if compact_reqs else ""
    check(len(compact_reqs) == 1 and "LIVE_CONTEXT.md" in compact_text,
          "Pi sent a request whose last user message is the compaction prompt with the step's instructions",
          [last_user_text(r)[:300] for r in requests])
    compact_entry = [i for i, e in enumerate(entries) if e.get("type") == "message"
                     and e["message"].get("role") == "user"
                     and texts(e["message"].get("content")) == compact_text]
    check(len(compact_entry) == 1, "Pi appended the compaction prompt to the session as a user message",
          [texts(e["message"].get("content"))[:200] for e in msgs if e["message"].get("role") == "user"])
    # /clm-compact while a prompt streams: the plugin holds the prompt until agent_end, and
    # the bridge delivers it once Pi is idle, as a run of its own after that prompt's run.
    busy_notes = "\n".join(by_step.get(BUSY_STEP, []))
    check("the agent is busy" in busy_notes and "the agent is idle; the compaction prompt was sent" in busy_notes,
          "%s, sent while Pi streamed, waited for agent_end and then sent the prompt" % BUSY_STEP, notes)
    busy_reqs = [i for i in prompts if last_user_text(requests[i]).endswith(BUSY_ALSO)]
    running = [i for i, r in enumerate(requests) if last_user_text(r) == BUSY_PROMPT]
    check(len(busy_reqs) == 1 and running and busy_reqs[0] > running[-1] and len(prompts) == 2,
          "Pi sent the waiting compaction prompt once, after the run it waited for",
          [last_user_text(r)[:120] for r in requests])
    stores = glob.glob(os.path.join(agent, "lcm", "*.sqlite"))
    check(stores, "the plugin's store lives under the agent home (<agent dir>/lcm/)", os.listdir(os.path.join(agent, "lcm")))

    if not full:
        print("ok: %d checks (set LC_E2E_FULL=1 for the live-context and store assertions)" % checks)
        return

    states = [e for e in entries if e.get("type") == "custom" and e.get("customType") == "live-context-state"]
    check(states, "the session JSONL holds live-context-state entries",
          sorted({e.get("customType") for e in entries if e.get("type") == "custom"}))
    pin = [i for i, e in enumerate(msgs) if e["message"].get("role") == "toolResult"
           and e["message"].get("toolName") == "bash"]
    check(pin and "edited" in texts(msgs[pin[0]]["message"].get("content")),
          "the scripted model edited LIVE_CONTEXT.md with Pi's bash tool", msgs[pin[0]] if pin else msgs)
    after_edit = requests[2:]
    check(any(carried(r, "PINNED-NOTE-7731") for r in after_edit),
          "the next request carried the edited live context", json.dumps(after_edit[:1])[:2000])
    # The store's own count, as /lcm status reports it; the raw table when it says none.
    m = re.search(r"\((\d+) messages\)", lcm)
    stored = int(m.group(1)) if m else None
    if stored is None:
        con = sqlite3.connect(stores[0])
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        if "messages" in tables:
            stored = con.execute("select count(*) from messages").fetchone()[0]
    check(stored is not None and stored >= len(convo),
          "the store holds every message of the session (%s of %d)" % (stored, len(convo)), lcm)
    check("NEEDLE-4417" in texts(grep_results[0].get("content")) and not grep_results[0].get("isError"),
          "lcm_grep found the planted needle", grep_results[0])

    # The compaction turn: the scripted model edits the mirror with bash, and the plugin
    # accepts the edit (an accept mark after the tool result, inside that turn).
    turn = entries[compact_entry[0] + 1:]
    edit = [i for i, e in enumerate(turn) if e.get("type") == "message"
            and e["message"].get("role") == "toolResult" and e["message"].get("toolName") == "bash"]
    check(edit and texts(turn[edit[0]]["message"].get("content")).startswith("compacted "),
          "the compaction turn edited LIVE_CONTEXT.md with Pi's bash tool", turn)
    accepts = [e for e in turn[edit[0] + 1:] if e.get("type") == "custom"
               and e.get("customType") == "live-context-state"
               and (e.get("data") or {}).get("kind") == "accept"]
    check(accepts, "the compaction edit was accepted (a live-context-state accept entry after it)",
          [(e.get("type"), e.get("customType"), (e.get("data") or {}).get("kind")) for e in turn])
    check(any(carried(r, "COMPACT-NOTE-2468") for r in requests[compact_reqs[0] + 1:]),
          "the request after the compaction edit carried the compacted live context",
          json.dumps(requests[compact_reqs[0] + 1:])[:2000])
    print("ok: %d checks (full)" % checks)


if __name__ == "__main__":
    main()
