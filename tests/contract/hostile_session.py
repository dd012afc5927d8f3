#!/usr/bin/env python3
"""Write a hostile session JSONL for tests/contract/test_hostile.sh:

    hostile_session.py OUT.jsonl

Between ordinary turns it holds: a malformed line, a line cut short mid-object, a message of
20 MB, JSON nested 100,000 levels deep, invalid UTF-8 bytes and NUL bytes (raw and escaped),
an unknown role and an unknown block type, a tool result with no call, an entry whose parent
is missing, two entries that are each other's parent (a cycle), and a last line truncated
without its newline. Every ordinary message carries a marker GOOD_n; the script prints the
ids of the messages a store must hold (one per line) to stdout."""
import json
import sys

out = open(sys.argv[1], "wb")
good = []
prev = [None]
n = [0]


def line(obj):
    out.write(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")


def msg(role, content, eid=None, parent="__prev__", keep=True, **extra):
    n[0] += 1
    eid = eid or "h%05d" % n[0]
    m = {"role": role, "content": content, "timestamp": 1767225600000 + n[0]}
    m.update(extra)
    e = {"type": "message", "id": eid, "parentId": prev[0] if parent == "__prev__" else parent,
         "timestamp": "2026-01-01T00:00:%02d.000Z" % (n[0] % 60), "message": m}
    line(e)
    if parent == "__prev__":
        prev[0] = eid
    if keep:
        good.append(eid)
    return eid


def user(text, **kw):
    return msg("user", [{"type": "text", "text": text}], **kw)


def assistant(text, **kw):
    return msg("assistant", [{"type": "text", "text": text}], api="openai-completions",
               provider="generated", model="gen-1", stopReason="stop",
               usage={"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}, **kw)


line({"type": "session", "version": 3, "id": "hostile-0001", "timestamp": "2026-01-01T00:00:00.000Z",
      "cwd": "/work/hostile"})
user("GOOD_1 start")
assistant("GOOD_2 ok")
out.write(b"this is not json at all\n")
out.write(b'{"type":"message","id":"cut1","parentId":"' + prev[0].encode() + b'","message":{"role":"user","con\n')
user("GOOD_3 after the malformed lines")
assistant("GOOD_4 ok")
# 20 MB in one message, the marker at its very end
user("GOOD_5 big " + ("lorem ipsum dolor sit amet " * (20 * 1024 * 1024 // 27)) + " BIG_TAIL_MARKER")
assistant("GOOD_6 ok")
# 100,000 levels of nesting inside a message's content
deep = b"[" * 100000 + b"]" * 100000
out.write(b'{"type":"message","id":"deep1","parentId":"' + prev[0].encode() +
          b'","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":' + deep + b"}}\n")
out.write(b'{"type":"message","id":"deep2","parentId":"' + prev[0].encode() +
          b'","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"x","extra":' +
          b'{"a":' * 100000 + b"1" + b"}" * 100000 + b"}]}}\n")
user("GOOD_7 after the deep lines")
# invalid UTF-8 (raw bytes) and NUL bytes (escaped; a raw NUL is not legal JSON text)
n[0] += 1
out.write(b'{"type":"message","id":"utf8bad","parentId":"' + prev[0].encode() +
          b'","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"GOOD_8 bad \xff\xfe\xc3 bytes"}],"timestamp":1}}\n')
prev[0] = "utf8bad"
good.append("utf8bad")
user("GOOD_9 nul \u0000 inside \u0000 text")
assistant("GOOD_10 ok")
# an unknown role and an unknown block type
msg("wizard", [{"type": "text", "text": "GOOD_11 from a wizard"}])
msg("user", [{"type": "hologram", "data": "GOOD_12"}, {"type": "text", "text": "GOOD_12 beside a hologram"}])
assistant("GOOD_13 ok")
# a tool result whose call never happened
msg("toolResult", [{"type": "text", "text": "GOOD_14 orphan result"}], toolCallId="call_nowhere",
    toolName="bash", isError=False)
assistant("GOOD_15 ok")
# an entry whose parent does not exist, and a two-entry cycle: kept in the file, not on the
# active branch
msg("user", [{"type": "text", "text": "ORPHAN_PARENT"}], eid="orph1", parent="no-such-id", keep=False)
msg("user", [{"type": "text", "text": "CYCLE_A"}], eid="cyc1", parent="cyc2", keep=False)
msg("user", [{"type": "text", "text": "CYCLE_B"}], eid="cyc2", parent="cyc1", keep=False)
user("GOOD_16 the last whole turn")
# the closing turn reaches the store only with the next `context` call: not expected yet
assistant("GOOD_17 last answer", keep=False)
user("GOOD_18 a question that gets an answer", keep=False)
out.write(b'{"type":"message","id":"tail1","parentId":"' + prev[0].encode() + b'","message":{"role":"assist')
out.close()
print("\n".join(good))
