#!/usr/bin/env python3
"""A scripted Anthropic Messages API on loopback for the Claude Code end-to-end test.

  fake_anthropic.py --record FILE [--port 0]

Prints the port on stdout, then serves until killed. Every request (method, path, JSON
body) is appended to FILE as one JSON line. POST /v1/messages answers by the conversation:
  - a request without tools (Claude Code's side calls: titles, topics) gets a short text;
  - the main loop, when the first user text holds RUN-BASH:<command> and no tool result is
    in the conversation yet, gets a tool_use of Bash with that command; once the result is
    there, a final text quoting the result;
  - otherwise a final text "SESSION-DONE".
Answers stream as server-sent events when the request says "stream": true (message_start,
content_block_start/delta/stop, message_delta, message_stop), else one JSON message.
POST /v1/messages/count_tokens answers a count; anything else an empty object.
"""
import argparse
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, default=0)
p.add_argument("--record", required=True)
args = p.parse_args()
lock = threading.Lock()
counter = [0]


def texts(content):
    if isinstance(content, str):
        return [content]
    out = []
    for b in content or []:
        if b.get("type") == "text":
            out.append(b.get("text", ""))
        elif b.get("type") == "tool_result":
            c = b.get("content")
            out.extend(texts(c) if isinstance(c, list) else [str(c)])
    return out


def tool_results(messages):
    res = []
    for m in messages:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    res.append(" ".join(texts(b.get("content")) if isinstance(b.get("content"), list)
                                        else [str(b.get("content"))]))
    return res


def answer(body):
    """The content blocks and stop reason for one request."""
    msgs = body.get("messages") or []
    if not body.get("tools"):
        return [{"type": "text", "text": "Scripted side answer."}], "end_turn"
    all_user = " ".join(t for m in msgs if m.get("role") == "user" for t in texts(m.get("content")))
    m = re.search(r"RUN-BASH:(.+?)(?:\n|$)", all_user)
    t = re.search(r"RUN-TOOL:(\S+) (\{.*?\})(?:\n|$)", all_user)
    done = tool_results(msgs)
    if t and not done:
        # Any tool Claude Code offers (an MCP tool is mcp__<server>__<tool>), with these
        # arguments; the request must offer it, or the model could not call it.
        if not any(x.get("name") == t.group(1) for x in body.get("tools") or []):
            return [{"type": "text", "text": "TOOL-NOT-OFFERED %s" % t.group(1)}], "end_turn"
        with lock:
            counter[0] += 1
            n = counter[0]
        return [{"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "toolu_e2e_%04d" % n, "name": t.group(1),
                 "input": json.loads(t.group(2))}], "tool_use"
    if m and not done:
        with lock:
            counter[0] += 1
            n = counter[0]
        return [{"type": "text", "text": "Running the command."},
                {"type": "tool_use", "id": "toolu_e2e_%04d" % n, "name": "Bash",
                 "input": {"command": m.group(1).strip(), "description": "print the value"}}], "tool_use"
    if done:
        return [{"type": "text", "text": "The command printed: %s. SESSION-DONE" % done[-1].strip()[:2000]}], "end_turn"
    return [{"type": "text", "text": "SESSION-DONE"}], "end_turn"


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return {"unparsed": raw.decode("utf-8", "replace")}

    def _record(self, body):
        with lock, open(args.record, "a", encoding="utf-8") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")

    def _head(self, code, headers):
        """The status line and the (name, value) headers, then the blank line."""
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def _json(self, obj, code=200):
        data = json.dumps(obj).encode()
        self._head(code, [("content-type", "application/json"), ("content-length", str(len(data)))])
        self.wfile.write(data)

    def do_GET(self):
        self._record(None)
        self._json({})

    def do_HEAD(self):
        self._head(200, [("content-length", "0")])

    def do_POST(self):
        body = self._body()
        self._record(body)
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            return self._json({"input_tokens": 100})
        if not path.endswith("/v1/messages"):
            return self._json({})
        blocks, stop = answer(body or {})
        model = (body or {}).get("model", "claude-scripted")
        msg_id = "msg_e2e_%d" % id(body)
        usage = {"input_tokens": 100, "output_tokens": 20}
        if not (body or {}).get("stream"):
            return self._json({"id": msg_id, "type": "message", "role": "assistant", "model": model,
                               "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self._head(200, [("content-type", "text/event-stream"), ("cache-control", "no-cache"),
                         ("connection", "close")])

        def ev(name, data):
            self.wfile.write(("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode())
            self.wfile.flush()

        ev("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 1}}})
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                ev("content_block_start", {"type": "content_block_start", "index": i,
                                           "content_block": {"type": "text", "text": ""}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                           "delta": {"type": "text_delta", "text": b["text"]}})
            else:
                ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(b["input"])}})
            ev("content_block_stop", {"type": "content_block_stop", "index": i})
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                             "usage": {"output_tokens": 20}})
        ev("message_stop", {"type": "message_stop"})
        self.close_connection = True


srv = ThreadingHTTPServer(("127.0.0.1", args.port), H)
print(srv.server_address[1], flush=True)
try:
    srv.serve_forever()
except KeyboardInterrupt:
    pass
sys.exit(0)
