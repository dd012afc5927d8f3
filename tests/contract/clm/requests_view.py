"""Views over a recorded chat-completions request for the live-context contract tests."""
import json


def text(m):
    c = m.get("content")
    if isinstance(c, list):
        c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return (c or "") + (json.dumps(m["tool_calls"]) if m.get("tool_calls") else "")


def body(r):
    return [m for m in r["messages"] if m["role"] != "system"]


def has(r, s):
    return any(s in text(m) for m in body(r))


def idx(r, s):
    return [i for i, m in enumerate(body(r)) if s in text(m)]
