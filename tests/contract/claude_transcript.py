#!/usr/bin/env python3
"""Write (or extend) a Claude Code JSONL transcript of N messages for the hook tests and the
hook bench: user request -> assistant tool_use (Bash) -> tool_result -> assistant answer,
repeated, each line chained to the previous one by parentUuid, as Claude Code writes them.

  claude_transcript.py FILE --messages N [--session ID] [--cwd DIR] [--append] [--tag WORD]

--append continues FILE's chain (its last uuid) with N more messages; --tag puts WORD in
every user request, so a test can find the lines of one call.
"""
import argparse
import json
import os

p = argparse.ArgumentParser()
p.add_argument("file")
p.add_argument("--messages", type=int, required=True)
p.add_argument("--session", default="5e551011-0000-4000-8000-00000000c0de")
p.add_argument("--cwd", default="/proj/hooks")
p.add_argument("--append", action="store_true")
p.add_argument("--tag", default="")
a = p.parse_args()

parent, start = None, 0
if a.append and os.path.exists(a.file):
    with open(a.file, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                parent = d.get("uuid", parent)
                start += 1


def line(i, typ, message):
    global parent
    uid = "%s-%08d" % (a.session[:8], i)
    d = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": a.cwd,
         "sessionId": a.session, "version": "2.1.332", "type": typ, "message": message, "uuid": uid,
         "timestamp": "2026-12-01T10:%02d:%02d.000Z" % ((i // 60) % 60, i % 60)}
    parent = uid
    return json.dumps(d) + "\n"


out = []
for k in range(start, start + a.messages):
    turn, step = divmod(k, 4)
    tool = "toolu_%08d" % turn
    if step == 0:
        out.append(line(k, "user", {"role": "user", "content": "request %d %s: look at module_%d.c and fix the counter"
                                    % (turn, a.tag, turn)}))
    elif step == 1:
        out.append(line(k, "assistant", {"id": "msg_%d" % k, "type": "message", "role": "assistant",
                                         "model": "claude-sonnet-4", "stop_reason": "tool_use",
                                         "content": [{"type": "text", "text": "Reading module_%d.c." % turn},
                                                     {"type": "tool_use", "id": tool, "name": "Bash",
                                                      "input": {"command": "grep -n counter module_%d.c" % turn}}],
                                         "usage": {"input_tokens": 100, "output_tokens": 20}}))
    elif step == 2:
        out.append(line(k, "user", {"role": "user", "content": [
            {"tool_use_id": tool, "type": "tool_result",
             "content": "module_%d.c:%d: int counter = %d; /* %s */" % (turn, turn + 10, turn * 7, "x" * 200)}]}))
    else:
        out.append(line(k, "assistant", {"id": "msg_%d" % k, "type": "message", "role": "assistant",
                                         "model": "claude-sonnet-4", "stop_reason": "end_turn",
                                         "content": [{"type": "text", "text": "Fixed the counter in module_%d.c: it "
                                                      "starts at %d now. %s" % (turn, turn * 7, "Done. " * 20)}],
                                         "usage": {"input_tokens": 120, "output_tokens": 40}}))
with open(a.file, "a" if a.append else "w", encoding="utf-8") as f:
    f.writelines(out)
