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


def sysp(r):
    return r["messages"][0]["content"] if r["messages"][0]["role"] == "system" else ""


def tools(r):
    return [text(m) for m in body(r) if m["role"] == "tool"]


def nonce(path):
    import re
    return re.search(r"document=(\w+)", open(path).readline()).group(1)


def block_id(path, needle):
    import re
    last = None
    for line in open(path):
        if line.startswith("[[CTX_TURN "):
            last = re.search(r" id=(\S+)", line).group(1)
        elif needle in line:
            return last
    return None
