#!/usr/bin/env python3
"""Rewrite a generated Pi session (`agent-host gen`) as a Claude Code transcript with the
same texts, for the import bench: user prompts and tool results become `user` lines
(tool results as tool_result blocks), assistant messages `assistant` lines (thinking, text,
tool_use blocks, usage), each chained to its parent by parentUuid, so branches and tree
moves of the generated session stay branches of the transcript.

  pi_to_claude.py IN.jsonl OUT.jsonl
"""
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
session, cwd = "00000000-0000-4000-8000-000000000000", "/work/generated"
msg_parent = {}  # Pi entry id -> the nearest message entry at or above it (None: root)
out = []


def blocks(content, role):
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    r = []
    for b in content or []:
        t = b.get("type")
        if t == "text":
            r.append({"type": "text", "text": b.get("text", "")})
        elif t == "thinking":
            r.append({"type": "thinking", "thinking": b.get("thinking", ""), "signature": ""})
        elif t == "toolCall":
            r.append({"type": "tool_use", "id": b.get("id", ""), "name": b.get("name", ""),
                      "input": b.get("arguments", {})})
    return r


with open(src, encoding="utf-8") as f:
    for line in f:
        if not line.strip():
            continue
        d = json.loads(line)
        t = d.get("type")
        if t == "session":
            session, cwd = d.get("id", session), d.get("cwd", cwd)
            continue
        eid, pid = d.get("id"), d.get("parentId")
        parent = msg_parent.get(pid) if pid else None
        if t != "message":
            msg_parent[eid] = parent
            continue
        m = d["message"]
        role = m.get("role")
        base = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
                "sessionId": session, "version": "2.1.332", "uuid": eid,
                "timestamp": d.get("timestamp")}
        if role == "assistant":
            u = m.get("usage") or {}
            stop = {"toolUse": "tool_use", "stop": "end_turn", "length": "max_tokens"}.get(
                m.get("stopReason"), "end_turn")
            base["type"] = "assistant"
            base["message"] = {"id": "msg_" + eid, "type": "message", "role": "assistant",
                               "model": m.get("model", "claude-sonnet-4"),
                               "content": blocks(m.get("content"), role), "stop_reason": stop,
                               "usage": {"input_tokens": u.get("input", 0),
                                         "output_tokens": u.get("output", 0)}}
        elif role == "toolResult":
            base["type"] = "user"
            base["message"] = {"role": "user", "content": [
                {"tool_use_id": m.get("toolCallId", ""), "type": "tool_result",
                 "content": blocks(m.get("content"), role), "is_error": bool(m.get("isError"))}]}
        elif role == "user":
            base["type"] = "user"
            base["message"] = {"role": "user", "content": blocks(m.get("content"), role)}
        else:
            msg_parent[eid] = parent
            continue
        msg_parent[eid] = eid
        out.append(json.dumps(base, ensure_ascii=False) + "\n")

with open(dst, "w", encoding="utf-8") as f:
    f.writelines(out)
