#!/usr/bin/env python3
"""Small transcripts of the shapes the real CLIs write (written here, by hand, word by word;
no real session is copied): python3 cli_shapes.py DIR writes

  cc-parallel.jsonl     Claude Code 2.x: a parallel batch (each call its own line, each result
                        under its own call line, the answer under the last result), then a
                        rewind (a prompt abandoned and asked again)
  cc-order.jsonl        Claude Code 2.1.97: a tool_result line written before the tool_use line
                        it answers (its parentUuid names a later line)
  cc-inline.jsonl       Claude Code 1.0.x: a Task call whose sub-agent writes isSidechain lines
                        into the session's own file (no agentId), then its result
  cc-parent.jsonl       Claude Code 2.x: a session that ran an Agent call (toolUseResult names the
                        agent), and its sub-agent's own file subagents/agent-a77beef0c0ffee.jsonl
  cc-blocks.jsonl       Claude Code: a tool_reference block in a tool result and a block of a type
                        no reader knows
  cc-cont1.jsonl, cc-cont2.jsonl
                        one session in two files: the second goes on from the first's last entry
  pi-two.jsonl          Pi version 1: a line holding two JSON objects (a message, then another)
  codex-items.jsonl     Codex: a reasoning summary, tool_search_call / tool_search_output, an item
                        type no reader knows
  codex-sub.jsonl       Codex: a sub-agent's own rollout, naming the thread that spawned it

Every rare word (ZEBRA..., WALRUS...) is said once, in the place its test looks for it.
"""
import json
import os
import sys

OUT = sys.argv[1]
SID = "5eed0000-aaaa-bbbb-cccc-00000000000%d"


def ts(i):
    return "2026-03-01T10:%02d:%02d.000Z" % (i // 60, i % 60)


def cc(uuid, parent, typ, content, sid, i, **kw):
    d = {"parentUuid": parent, "isSidechain": False, "type": typ, "uuid": uuid, "timestamp": ts(i),
         "sessionId": sid, "cwd": "/proj/shapes", "version": "2.1.97"}
    if typ == "assistant":
        d["message"] = {"id": kw.pop("api", "msg_" + uuid), "role": "assistant", "model": "claude-x",
                        "content": content, "stop_reason": kw.pop("stop", "tool_use")}
    else:
        d["message"] = {"role": "user", "content": content}
    d.update(kw)
    return d


def use(cid, name, inp):
    return {"type": "tool_use", "id": cid, "name": name, "input": inp}


def res(cid, text):
    return {"type": "tool_result", "tool_use_id": cid, "content": text}


def write(name, rows, raw_lines=None):
    with open(os.path.join(OUT, name), "w") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


# ---- a parallel batch, then a rewind ----------------------------------------------------
s = SID % 1
write("cc-parallel.jsonl", [
    cc("p1", None, "user", "find the ZEBRAPROMPT config", s, 1),
    cc("p2", "p1", "assistant", [use("tc_a", "Read", {"file_path": "a.conf"})], s, 2, api="msg_batch"),
    cc("p3", "p2", "assistant", [use("tc_b", "Read", {"file_path": "b.conf"})], s, 3, api="msg_batch"),
    cc("p4", "p2", "user", [res("tc_a", "alpha holds ZEBRAFIRSTRESULT")], s, 4),
    cc("p5", "p3", "user", [res("tc_b", "beta holds ZEBRASECONDRESULT")], s, 5),
    cc("p6", "p5", "assistant", [{"type": "text", "text": "Both read: ZEBRAANSWER."}], s, 6, stop="end_turn"),
    cc("p7", "p6", "user", "now delete WALRUSABANDONED everywhere", s, 7),
    cc("p8", "p7", "assistant", [{"type": "text", "text": "Deleting WALRUSGONE."}], s, 8, stop="end_turn"),
    # the person rewound to p6 and asked something else
    cc("p9", "p6", "user", "no, only rename the ZEBRAKEPT key", s, 9),
    cc("p10", "p9", "assistant", [{"type": "text", "text": "Renamed."}], s, 10, stop="end_turn"),
])

# ---- a result line before the call it answers ------------------------------------------
s = SID % 2
write("cc-order.jsonl", [
    cc("o1", None, "user", "what does the OTTERFIRSTASK script print", s, 1),
    cc("o3", "o2", "user", [res("tc_o", "it prints OTTERRESULT")], s, 3),   # written early
    cc("o2", "o1", "assistant", [use("tc_o", "Bash", {"command": "sh run.sh"})], s, 2),
    cc("o4", "o3", "assistant", [{"type": "text", "text": "It prints OTTERRESULT."}], s, 4, stop="end_turn"),
    cc("o5", "o4", "user", "and the OTTERSECONDASK one", s, 5),
    cc("o6", "o5", "assistant", [{"type": "text", "text": "The same."}], s, 6, stop="end_turn"),
])

# ---- Claude Code 1.0.x: a sub-agent inside the session's file ------------------------------
s = SID % 3
prompt = "Survey the KESTRELTASK modules and report"
side = lambda uuid, parent, typ, content, i, **kw: dict(cc(uuid, parent, typ, content, s, i, **kw), isSidechain=True)
write("cc-inline.jsonl", [
    cc("i1", None, "user", "run a sub-agent on the modules", s, 1),
    cc("i2", "i1", "assistant", [use("tc_task", "Task", {"description": "survey", "prompt": prompt,
                                                         "subagent_type": "general-purpose"})], s, 2),
    side("x1", None, "user", prompt, 3),
    side("x2", "x1", "assistant", [use("tc_x", "Glob", {"pattern": "**/*.py"})], 4),
    side("x3", "x2", "user", [res("tc_x", "mod_a.py mod_b.py")], 5),
    side("x4", "x3", "assistant", [{"type": "text", "text": "Found KESTRELINSIDE in two modules."}], 6,
         stop="end_turn"),
    cc("i3", "i2", "user", [res("tc_task", "The survey found two modules.")], s, 7),
    cc("i4", "i3", "assistant", [{"type": "text", "text": "Done."}], s, 8, stop="end_turn"),
    # a second sub-agent, after the first: each gets its own store
    cc("i5", "i4", "user", "and check the tests", s, 9),
    cc("i6", "i5", "assistant", [use("tc_task2", "Task", {"description": "tests", "prompt": "Check the tests",
                                                          "subagent_type": "test-runner"})], s, 10),
    side("z1", None, "user", "Check the tests", 11),
    side("z2", "z1", "assistant", [{"type": "text", "text": "All pass: MAGPIESECOND."}], 12, stop="end_turn"),
    cc("i7", "i6", "user", [res("tc_task2", "All pass.")], s, 13),
    cc("i8", "i7", "assistant", [{"type": "text", "text": "Good."}], s, 14, stop="end_turn"),
])

# ---- Claude Code 2.x: the session, and its sub-agent's own file ---------------------------
s = SID % 4
write("cc-parent.jsonl", [
    cc("q1", None, "user", "ask a helper about the HERONPARENT issue", s, 1),
    cc("q2", "q1", "assistant", [use("tc_agent", "Agent", {"description": "look", "prompt": "Look at HERON",
                                                           "subagent_type": "Explore"})], s, 2),
    cc("q3", "q2", "user", [res("tc_agent", "It is in heron.c")], s, 3,
       toolUseResult={"agentId": "a77beef0c0ffee", "agentType": "Explore", "status": "completed"}),
    cc("q4", "q3", "assistant", [{"type": "text", "text": "The helper says heron.c."}], s, 4, stop="end_turn"),
])
os.makedirs(os.path.join(OUT, "cc-parent", "subagents"), exist_ok=True)
aside = lambda uuid, parent, typ, content, i, **kw: dict(cc(uuid, parent, typ, content, s, i, **kw),
                                                          isSidechain=True, agentId="a77beef0c0ffee")
write(os.path.join("cc-parent", "subagents", "agent-a77beef0c0ffee.jsonl"), [
    aside("y1", None, "user", "Look at HERON", 10),
    aside("y2", "y1", "assistant", [use("tc_y", "Grep", {"pattern": "heron"})], 11),
    aside("y3", "y2", "user", [res("tc_y", "heron.c:12: HERONSUBRESULT")], 12),
    aside("y4", "y3", "assistant", [{"type": "text", "text": "It is in heron.c, see HERONSUBANSWER."}], 13,
          stop="end_turn"),
])

# ---- blocks no reader knows -------------------------------------------------------------
s = SID % 5
write("cc-blocks.jsonl", [
    cc("b1", None, "user", "load the fetch tool", s, 1),
    cc("b2", "b1", "assistant", [use("tc_ts", "ToolSearch", {"query": "fetch"})], s, 2),
    cc("b3", "b2", "user", [{"type": "tool_result", "tool_use_id": "tc_ts",
                              "content": [{"type": "tool_reference", "tool_name": "IBISFETCHTOOL"}]}], s, 3),
    cc("b4", "b3", "assistant", [{"type": "text", "text": "Loaded."},
                                 {"type": "future_block", "note": "IBISFUTUREWORD"}], s, 4, stop="end_turn"),
])

# ---- one session in two files -------------------------------------------------------------
s = SID % 6
write("cc-cont1.jsonl", [
    cc("c1", None, "user", "start the CRANEFIRST work", s, 1),
    cc("c2", "c1", "assistant", [{"type": "text", "text": "Started."}], s, 2, stop="end_turn"),
])
write("cc-cont2.jsonl", [
    cc("c3", "c2", "user", "go on with CRANESECOND", s, 3),
    cc("c4", "c3", "assistant", [{"type": "text", "text": "Going on."}], s, 4, stop="end_turn"),
])

# ---- Pi version 1: two objects on one line ------------------------------------------------
pi = [{"type": "session", "id": "5eed0000-pi00-0000-0000-000000000007", "timestamp": ts(0), "cwd": "/proj/pi"}]
msg = lambda role, text, i: {"type": "message", "timestamp": ts(i),
                             "message": {"role": role, "content": [{"type": "text", "text": text}],
                                         "timestamp": 1772359200000 + i}}
lines = [json.dumps(pi[0]), json.dumps(msg("user", "first PUFFINASK", 1)),
         json.dumps(msg("assistant", "an answer", 2)) + json.dumps(msg("user", "the PUFFINSECONDOBJECT", 3)),
         json.dumps(msg("assistant", "the last answer", 4))]
write("pi-two.jsonl", lines)

# ---- Codex items -----------------------------------------------------------------------
cid = "5eed0000-c0de-0000-0000-000000000008"
ri = lambda i, p: {"timestamp": ts(i), "type": "response_item", "payload": p}
write("codex-items.jsonl", [
    {"timestamp": ts(0), "type": "session_meta", "payload": {"id": cid, "timestamp": ts(0), "cwd": "/proj/codex"}},
    ri(1, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "find the LYNXASK tool"}]}),
    ri(2, {"type": "reasoning", "summary": [{"type": "summary_text", "text": "I should search for LYNXREASONING."}],
           "content": None, "encrypted_content": "gAAAA"}),
    ri(3, {"type": "tool_search_call", "call_id": "call_ts", "status": "completed",
           "arguments": {"query": "LYNXSEARCHQUERY", "limit": 5}}),
    ri(4, {"type": "tool_search_output", "call_id": "call_ts", "status": "completed",
           "tools": [{"type": "function", "name": "lynx_tool", "description": "LYNXTOOLDESCRIPTION"}]}),
    ri(5, {"type": "brand_new_item", "detail": "LYNXUNKNOWNITEM"}),
    {"timestamp": ts(6), "type": "event_msg", "payload": {"type": "agent_message", "message": "done"}},
    ri(7, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it."}]}),
])

sub = "5eed0000-c0de-0000-0000-000000000009"
write("codex-sub.jsonl", [
    {"timestamp": ts(10), "type": "session_meta",
     "payload": {"id": sub, "parent_thread_id": cid, "timestamp": ts(10), "cwd": "/proj/codex",
                 "source": {"subagent": {"thread_spawn": {"parent_thread_id": cid, "depth": 1}}},
                 "agent_nickname": "Newton", "agent_role": "reviewer"}},
    ri(11, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "review LYNXSUBTASK"}]}),
    ri(12, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reviewed."}]}),
])
