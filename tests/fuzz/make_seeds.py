#!/usr/bin/env python3
"""Writes the seed corpora under tests/fuzz/corpus/ (jsonl, config, grep, callbacks).

The files are checked in; this script documents how they were made and rebuilds them
(run from the repository root: python3 tests/fuzz/make_seeds.py). fuzz_mirror's corpus is
hand-written and not touched here.

Input formats:
  grep       byte 0 = option bits (see fuzz_grep.c), rest = FTS5 query or PCRE2 pattern
  callbacks  chunks separated by 0xFF; byte 0 of a chunk = action (see fuzz_callbacks.c),
             rest = its payload (event JSON, message lines, tool arguments, command args)
"""
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "contract", "fixtures",
                   "branch.jsonl")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def j(o):
    return json.dumps(o, separators=(",", ":"))


USER = {"role": "user", "content": [{"type": "text", "text": "Set N07=4821 in config.h"}]}
ASSIST = {"role": "assistant", "content": [
    {"type": "thinking", "thinking": "read first"}, {"type": "text", "text": "Looking."},
    {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "src/a.c"}}],
    "usage": {"input": 300, "output": 50, "totalTokens": 350}, "stopReason": "toolUse"}
RESULT = {"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
          "content": [{"type": "text", "text": "int main(void) { return 0; }\n"}], "isError": False}
IMAGE = {"role": "toolResult", "toolCallId": "call_2", "toolName": "read",
         "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}
BASH = {"role": "bashExecution", "command": "wc -l *.c", "output": "3 a.c", "exitCode": 0}
SUMMARY = {"role": "compactionSummary", "summary": "Earlier work: config.", "tokensBefore": 5000}
CUSTOM = {"role": "custom", "customType": "note", "content": "remember", "display": True}

# ---- jsonl: whole session files ------------------------------------------------------
with open(FIX, encoding="utf-8") as f:
    lines = f.read().splitlines()
put("jsonl", "fixture-head.jsonl", "\n".join(lines[:6]) + "\n")
put("jsonl", "fixture-tail-crlf.jsonl", "\r\n".join(lines[-5:]))
entries = [{"type": "session", "version": 3, "id": "s1", "cwd": "/w"}]
for i, m in enumerate([USER, ASSIST, RESULT, IMAGE, BASH, SUMMARY, CUSTOM]):
    entries.append({"type": "message", "id": "m%d" % i, "parentId": "m%d" % (i - 1) if i else None,
                    "message": m})
put("jsonl", "all-roles.jsonl", "\n".join(j(e) for e in entries) + "\n")
put("jsonl", "malformed.jsonl", j(entries[1]) + "\n{\"type\":\"message\",\"id\":\n\n  \n" +
    j(entries[2])[:40])
put("jsonl", "bare-messages.jsonl", "\n".join(j(m) for m in [USER, ASSIST, RESULT]) + "\n")

# ---- config: lcm.json ------------------------------------------------------------------
put("config", "empty.json", "{}")
put("config", "typical.json", j({
    "keepRecentTokens": 30000, "summaryTokens": 1500, "summarizer": ["openrouter/x", "auto"],
    "redactSecrets": True, "largeFileChars": 40000,
    "baseUrls": {"openrouter": "https://openrouter.ai/api/v1"}}))
put("config", "zones.json", json.dumps({
    "swapAtRatio": 0.7, "recutAtRatio": 0.9, "smartZone": 60000,
    "zones": {"anthropic/claude": {"swapAtTokens": 120000, "recutAtTokens": 150000},
              "openai/gpt": {"smartZone": 40000}}}, indent=2))
put("config", "wrong-types.json", j({
    "keepRecentTokens": "many", "summaryTokens": -5, "summarizer": 3, "zones": [],
    "redactSecrets": "yes", "baseUrls": {"x": 1}, "healSourceTokens": 1e99, "unknown": None}))
put("config", "comment-trailing-comma.json", '{\n  // note\n  "summaryTokens": 1200,\n}\n')

# ---- grep: option byte + query / pattern ----------------------------------------------
put("grep", "query-word", b"\x00handlers")
put("grep", "query-phrase-or", b"\x04\"count the lines\" OR N07*")
put("grep", "query-near", b"\x20NEAR(handlers lines, 5) AND NOT deploy")
put("grep", "pattern-digits", b"\x01N07=\\d+")
put("grep", "pattern-case", b"\x0b(?i)sk-[a-z]+-\\w{8,}")
put("grep", "pattern-lookaround", b"\x05(?<=\\$ )wc(?= -l)")
put("grep", "describe-id", b"\x00#1")

# ---- callbacks: 0xFF-separated (action, payload) chunks --------------------------------
ACT = {"session_start": 0, "session_shutdown": 1, "before_agent_start": 2, "context": 3,
       "before_provider_request": 4, "turn_end": 5, "tool_call": 6, "tool_result": 7,
       "session_before_compact": 8, "session_compact": 9, "session_tree": 10,
       "set_branch": 11, "tools": 12, "commands": 13}


def cb(*chunks):
    out = []
    for name, payload in chunks:
        if not isinstance(payload, str):
            payload = j(payload)
        out.append(bytes([ACT[name]]) + payload.encode("utf-8"))
    return b"\xff".join(out)


ctx1 = "\n".join(j(m) for m in [USER])
ctx2 = "\n".join(j(m) for m in [USER, ASSIST, RESULT])
put("callbacks", "turn", cb(
    ("before_agent_start", {"prompt": "Set N07", "systemPrompt": "You are helpful."}),
    ("context", ctx1),
    ("before_provider_request", {"payload": {"model": "m", "messages": []}}),
    ("tool_call", {"toolCallId": "call_1", "toolName": "read", "input": {"path": "src/a.c"}}),
    ("tool_result", {"toolCallId": "call_1", "toolName": "read", "input": {"path": "src/a.c"},
                     "content": [{"type": "text", "text": "x"}], "isError": False}),
    ("turn_end", {"turnIndex": 0, "message": ASSIST, "toolResults": [RESULT]}),
    ("context", ctx2)))
put("callbacks", "grep-tools", cb(
    ("context", ctx2),
    ("tools", {"toolCallId": "t1", "arguments": {"query": "N07"}}),
    ("tools", {"toolCallId": "t2", "arguments": {"pattern": "N0\\d", "case_sensitive": True}}),
    ("tools", {"toolCallId": "t3", "arguments": {"id": "#1", "summary_id": 1, "entry_id": "m1",
                                                 "question": "what is N07?"}}),
    ("tools", {"toolCallId": "t4", "arguments": {"query": "x", "scope": "all_sessions"}})))
put("callbacks", "tree-compact", cb(
    ("context", "\n".join(j(m) for m in [USER, ASSIST, RESULT, IMAGE, BASH])),
    ("set_branch", [{"type": "message", "id": "e0", "parentId": None, "message": USER}]),
    ("session_tree", {"newLeafId": "e0", "oldLeafId": "e4"}),
    ("session_before_compact", {"reason": "threshold", "preparation": {
        "firstKeptEntryId": "e2", "tokensBefore": 5000, "messagesToSummarize": [USER]}}),
    ("session_compact", {"compactionEntry": {"type": "compaction", "id": "k1", "summary": "s",
                                             "firstKeptEntryId": "e2", "tokensBefore": 5000},
                         "fromExtension": False}),
    ("context", "\n".join(j(m) for m in [SUMMARY, RESULT]))))
put("callbacks", "commands-restart", cb(
    ("commands", "status"), ("commands", "grep N07"), ("session_shutdown", "{}"),
    ("session_start", {"reason": "resume"}), ("context", ctx1), ("commands", "")))
print("seeds written under", ROOT)
