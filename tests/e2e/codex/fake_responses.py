#!/usr/bin/env python3
"""A scripted OpenAI Responses API on loopback for the live Codex end-to-end test.

  fake_responses.py --record FILE [--port 0]

Prints the port on stdout, then serves until killed. Every request (method, path, JSON
body) is appended to FILE as one JSON line. POST .../responses (Codex's `wire_api =
"responses"`) answers by the conversation in the request's `input` items. The prompt is the
last user message whose text starts with a directive (so a directive quoted inside the
session-start bundle, which Codex also sends as a user or developer message, is never
obeyed):
  - RUN-SHELL:<command>  no function_call_output after the prompt yet: a call of the shell
    tool the request offers (exec_command {cmd}, shell_command {command} or shell
    {command: [bash, -lc, ...]}) with that command;
  - RUN-TOOL:<name> <json>  likewise a call of the tool <name> with those arguments, where
    an MCP tool is <namespace>__<tool> (mcp__lcm__lcm_grep: the function lcm_grep of the
    namespace mcp__lcm, called with that namespace); a tool the request does not offer is
    answered "TOOL-NOT-OFFERED <name>";
  - once a function_call_output follows the prompt: a final message quoting it;
  - anything else: the final message "SESSION-DONE".
Answers stream as server-sent events, the events Codex reads: response.created,
response.output_item.added, response.output_text.delta (for text), response.output_item.done
and response.completed with the response id and usage. GET answers {"models": []}.
"""
import argparse
import itertools
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
ids = itertools.count(1)

DIRECTIVE = re.compile(r"^RUN-(SHELL|TOOL):(.*)$", re.S)


def next_id():
    with lock:
        return next(ids)


def item_text(item):
    """The text of a message item (input_text / output_text parts, or a plain string)."""
    c = item.get("content")
    if isinstance(c, str):
        return c
    return "".join(part.get("text", "") for part in c or [] if isinstance(part, dict))


def output_text(item):
    """A function_call_output's output: a string, or content items (MCP results)."""
    out = item.get("output")
    if isinstance(out, str):
        return out
    if isinstance(out, list):
        return "".join(part.get("text", "") for part in out if isinstance(part, dict))
    if isinstance(out, dict):
        return str(out.get("content", ""))
    return ""


def find_prompt(items):
    """(index, kind, rest) of the last user message that starts with a directive."""
    for i in range(len(items) - 1, -1, -1):
        it = items[i]
        if it.get("type", "message") == "message" and it.get("role") == "user":
            m = DIRECTIVE.match(item_text(it).strip())
            if m:
                return i, m.group(1), m.group(2).strip()
    return None, None, None


def offered(tools, name):
    """(namespace, function name) of the tool `name` in the request's tools, or None."""
    for t in tools or []:
        if t.get("type") == "function" and t.get("name") == name:
            return None, name
        if t.get("type") == "namespace":
            for f in t.get("tools") or []:
                if t.get("name") + "__" + f.get("name", "") == name:
                    return t.get("name"), f.get("name")
    return None


def shell_call(tools, command):
    """A call of whichever shell tool the request offers, running `command`."""
    if offered(tools, "exec_command"):
        return "exec_command", {"cmd": command}
    if offered(tools, "shell_command"):
        return "shell_command", {"command": command}
    if offered(tools, "shell"):
        return "shell", {"command": ["bash", "-lc", command]}
    return None, None


def answer(body):
    """The output items for one request."""
    items = [it for it in body.get("input") or [] if isinstance(it, dict)]
    tools = body.get("tools") or []
    at, kind, rest = find_prompt(items)
    if at is None:
        return [text_item("SESSION-DONE")]
    outputs = [output_text(it) for it in items[at + 1:] if it.get("type") == "function_call_output"]
    if outputs:
        return [text_item("The tool returned: %s. SESSION-DONE" % outputs[-1].strip()[:4000])]
    n = next_id()
    if kind == "SHELL":
        name, arguments = shell_call(tools, rest)
        if not name:
            return [text_item("NO-SHELL-TOOL-OFFERED")]
        return [text_item("Running the command."), call_item(n, None, name, arguments)]
    m = re.match(r"(\S+)\s+(\{.*\})$", rest, re.S)
    if not m:
        return [text_item("BAD-DIRECTIVE %s" % rest)]
    where = offered(tools, m.group(1))
    if not where:
        return [text_item("TOOL-NOT-OFFERED %s" % m.group(1))]
    return [text_item("Searching."), call_item(n, where[0], where[1], json.loads(m.group(2)))]


def text_item(text):
    return {"type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call_item(n, namespace, name, arguments):
    it = {"type": "function_call", "status": "completed", "call_id": "call_e2e_%04d" % n, "name": name,
          "arguments": json.dumps(arguments)}
    if namespace:
        it["namespace"] = namespace
    return it


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

    def _json(self, obj, code=200):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._record(None)
        self._json({"models": []})

    def do_POST(self):
        body = self._body()
        self._record(body)
        if not self.path.split("?")[0].endswith("/responses") or not isinstance(body, dict):
            return self._json({"error": {"message": "not scripted: %s" % self.path}}, 404)
        out = answer(body)
        rid = "resp_e2e_%04d" % next_id()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()

        def ev(data):
            self.wfile.write(("event: %s\ndata: %s\n\n" % (data["type"], json.dumps(data))).encode())
            self.wfile.flush()

        ev({"type": "response.created", "response": {"id": rid, "status": "in_progress", "output": []}})
        for i, it in enumerate(out):
            it = dict(it, id=("msg_" if it["type"] == "message" else "fc_") + "e2e_%04d_%d" % (next_id(), i))
            if it["type"] == "message":
                ev({"type": "response.output_item.added", "output_index": i, "item": dict(it, content=[])})
                ev({"type": "response.output_text.delta", "item_id": it["id"], "output_index": i,
                    "content_index": 0, "delta": it["content"][0]["text"]})
            else:
                ev({"type": "response.output_item.added", "output_index": i, "item": dict(it, arguments="")})
            ev({"type": "response.output_item.done", "output_index": i, "item": it})
        ev({"type": "response.completed", "response": {
            "id": rid, "status": "completed",
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120}}})
        self.close_connection = True


srv = ThreadingHTTPServer(("127.0.0.1", args.port), H)
print(srv.server_address[1], flush=True)
try:
    srv.serve_forever()
except KeyboardInterrupt:
    pass
sys.exit(0)
