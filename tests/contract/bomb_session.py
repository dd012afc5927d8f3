#!/usr/bin/env python3
"""Write a session JSONL for tests/contract/test_grep_bounds.sh:

    bomb_session.py OUT.jsonl SESSION_ID [COPIES]

It holds COPIES (default 1) assistant messages of "a" * 199990 + "!" (a regex bomb's
subject: every start position of (a|aa){1,14}! backtracks through thousands of paths),
a user message "aaa...ab and then aac" (one that (a|aa)+c can only decide past PCRE2's
match limit), and a marker message "GREP_MARKER_OK" after them."""
import json
import sys

out = open(sys.argv[1], "w", encoding="utf-8")
sid = sys.argv[2]
copies = int(sys.argv[3]) if len(sys.argv) > 3 else 1
n = [0]
prev = [None]


def line(obj):
    out.write(json.dumps(obj) + "\n")


def msg(role, text, **kw):
    n[0] += 1
    eid = "m%05d" % n[0]
    m = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1767225600000 + n[0]}
    m.update(kw)
    line({"type": "message", "id": eid, "parentId": prev[0],
          "timestamp": "2026-01-01T00:%02d:%02d.000Z" % (n[0] // 60 % 60, n[0] % 60), "message": m})
    prev[0] = eid


A = dict(api="openai-completions", provider="generated", model="gen-1", stopReason="stop",
         usage={"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15})
line({"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/bomb"})
for _ in range(copies):
    msg("user", "show the long one")
    msg("assistant", "a" * 199990 + "!", **A)
msg("user", "a" * 40 + "b and then aac")
msg("assistant", "GREP_MARKER_OK", **A)
