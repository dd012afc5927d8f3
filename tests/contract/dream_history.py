#!/usr/bin/env python3
"""Write a generated history with planted lessons as Pi session files (version 3).

    dream_history.py OUTDIR CWD [--fork]

Three sessions of folder CWD (dream-s1..s3), ordinary chatter around planted lessons at
known entry ids; OUTDIR/planted.json lists them: [{"session", "entry_id", "kind", "text"}].
With --fork, dream-s3 starts as a copy of dream-s1's first turns (the same entry ids, as a
forked session has), so their summaries cover the same messages.
"""
import json
import sys

out, cwd = sys.argv[1], sys.argv[2]
fork = "--fork" in sys.argv

PLANTED = {
    "dream-s1": [
        ("s1u2", "correction", "Actually, never use tabs for indentation in this repo; use four spaces."),
        ("s1u4", "decision", "We decided to go with PostgreSQL for the job queue."),
    ],
    "dream-s2": [
        ("s2u1", "anti-pattern", "Do not push directly to the main branch."),
        ("s2u3", "correction", "That's wrong: the config lives in config/app.toml, not in settings.py."),
    ],
    "dream-s3": [
        ("s3u2", "decision", "Let's go with pytest for the integration tests."),
        ("s3u3", "preference", "Always run make test before you commit."),
    ],
}
FILLER = [
    "Can you look at the parser module?",
    "Show me the failing test output.",
    "What does the build script do?",
    "Rename the helper to something clearer.",
]


def msg(eid, parent, role, text, ts):
    m = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1767225600000 + ts * 1000}
    if role == "assistant":
        m.update({"api": "openai-completions", "provider": "generated", "model": "gen-1", "stopReason": "stop",
                  "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}})
    return {"type": "message", "id": eid, "parentId": parent,
            "timestamp": "2026-01-01T00:%02d:%02d.000Z" % (ts // 60 % 60, ts % 60), "message": m}


planted = []
ts = 0
for si, (sid, lessons) in enumerate(sorted(PLANTED.items())):
    rows = [{"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-0%dT00:00:00.000Z" % (si + 1), "cwd": cwd}]
    parent = None
    if fork and sid == "dream-s3":
        # the forked prefix: dream-s1's first turns, same ids and bytes
        for k in range(8):
            for role, eid, text in (("user", "f%du" % k, "Forked question %d about the parser." % k),
                                    ("assistant", "f%da" % k, "Forked answer %d: the parser reads tokens." % k)):
                ts += 1
                rows.append(msg(eid, parent, role, text, ts))
                parent = eid
    lesson_at = {int(eid[3:]): (eid, kind, text) for eid, kind, text in lessons}
    prefix = sid.split("-")[1]
    for i in range(1, 6):
        ts += 1
        if i in lesson_at:
            eid, kind, text = lesson_at[i]
            planted.append({"session": sid, "entry_id": eid, "kind": kind, "text": text})
        else:
            eid, text = "%su%d" % (prefix, i), FILLER[i % len(FILLER)]
        rows.append(msg(eid, parent, "user", text, ts))
        parent = eid
        ts += 1
        aid = "%sa%d" % (prefix, i)
        rows.append(msg(aid, parent, "assistant", "Done: I looked at it and updated the code.", ts))
        parent = aid
    if fork and sid == "dream-s1":
        pass
    with open("%s/%s.jsonl" % (out, sid), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
if fork:
    # dream-s1 gets the same forked prefix at its start (its own copy of those turns)
    path = "%s/dream-s1.jsonl" % out
    rows = [json.loads(l) for l in open(path, encoding="utf-8")]
    head, body = rows[0], rows[1:]
    pre, parent = [], None
    for k in range(8):
        for role, eid, text in (("user", "f%du" % k, "Forked question %d about the parser." % k),
                                ("assistant", "f%da" % k, "Forked answer %d: the parser reads tokens." % k)):
            pre.append(msg(eid, parent, role, text, k))
            parent = eid
    body[0]["parentId"] = parent
    with open(path, "w", encoding="utf-8") as f:
        for r in [head] + pre + body:
            f.write(json.dumps(r) + "\n")
with open("%s/planted.json" % out, "w", encoding="utf-8") as f:
    json.dump(planted, f, indent=1)
