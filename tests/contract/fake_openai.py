#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for tests (stdlib only).

    fake_openai.py --port 0 --script FILE --record FILE

Listens on 127.0.0.1 and prints the chosen port as the first stdout line. Serves
POST /v1/chat/completions and /chat/completions. --script is a JSON array of responses
consumed in order, each:

    {"content": "text"?, "tool_calls": [{"name", "arguments": {...} | "raw string",
     "id"?}]?, "usage": {prompt_tokens, completion_tokens, total_tokens,
     prompt_tokens_details: {cached_tokens}}?, "status": 500?, "error": "msg"?,
     "finish_reason"?, "reasoning"?, "delay": seconds?, "raw": "body text"?}

A response with "status" >= 400 (or an "error") answers {"error": {"message", ...}} with
that status (500 when only "error" is given). "raw" sends that body verbatim with status
200 (for malformed-answer tests). When the script is exhausted every request is answered
"done." with finish_reason "stop". Each request body is appended to --record as one JSON
line. A request with "stream": true is answered as server-sent events
(chat.completion.chunk deltas for content and tool_calls, a usage chunk, data: [DONE]).
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"script": [], "next": 0, "record": None, "calls": 0}


def next_response():
    with LOCK:
        STATE["calls"] += 1
        i = STATE["next"]
        if i < len(STATE["script"]):
            STATE["next"] += 1
            return STATE["script"][i], STATE["calls"]
        return {"content": "done."}, STATE["calls"]


def record(body_text):
    path = STATE["record"]
    if not path:
        return
    try:
        line = json.dumps(json.loads(body_text), separators=(",", ":"))
    except ValueError:
        line = json.dumps({"_unparsed": body_text})
    with LOCK:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def estimate_tokens(text):
    return max(1, (len(text) + 3) // 4)


def build_parts(resp, call_no):
    """content, tool_calls (OpenAI shape), finish_reason for a scripted response."""
    content = resp.get("content")
    calls = []
    for k, tc in enumerate(resp.get("tool_calls") or []):
        args = tc.get("arguments", {})
        args_text = args if isinstance(args, str) else json.dumps(args)
        calls.append({
            "id": tc.get("id") or "call_%d_%d" % (call_no, k),
            "type": "function",
            "function": {"name": tc["name"], "arguments": args_text},
        })
    finish = resp.get("finish_reason") or ("tool_calls" if calls else "stop")
    return content, calls, finish


def build_usage(resp, request_text, content, calls):
    usage = dict(resp.get("usage") or {})
    out_text = (content or "") + "".join(c["function"]["arguments"] for c in calls)
    usage.setdefault("prompt_tokens", estimate_tokens(request_text))
    usage.setdefault("completion_tokens", estimate_tokens(out_text))
    usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
    return usage


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep test output quiet
        pass

    def send_json(self, status, obj):
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self.send_json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "no route " + self.path}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body_text = self.rfile.read(length).decode("utf-8", errors="replace")
        if self.path.split("?")[0].rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self.send_json(404, {"error": {"message": "no route " + self.path}})
            return
        record(body_text)
        try:
            request = json.loads(body_text)
        except ValueError:
            self.send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        resp, call_no = next_response()
        if resp.get("delay"):
            time.sleep(float(resp["delay"]))
        status = int(resp.get("status") or (500 if resp.get("error") else 200))
        if status >= 400:
            self.send_json(status, {"error": {
                "message": resp.get("error") or "scripted failure",
                "type": "server_error", "code": status}})
            return
        if "raw" in resp:
            data = resp["raw"].encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        content, calls, finish = build_parts(resp, call_no)
        usage = build_usage(resp, body_text, content, calls)
        model = request.get("model") or "fake"
        rid = "chatcmpl-fake-%d" % call_no
        if request.get("stream"):
            self.stream(rid, model, resp, content, calls, finish, usage)
            return
        message = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        if resp.get("reasoning"):
            message["reasoning_content"] = resp["reasoning"]
        self.send_json(200, {
            "id": rid, "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        })

    def stream(self, rid, model, resp, content, calls, finish, usage):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        created = int(time.time())

        def chunk(choices, extra=None):
            obj = {"id": rid, "object": "chat.completion.chunk", "created": created,
                   "model": model, "choices": choices}
            if extra:
                obj.update(extra)
            self.wfile.write(("data: " + json.dumps(obj) + "\n\n").encode("utf-8"))
            self.wfile.flush()

        def delta(d, finish_reason=None):
            chunk([{"index": 0, "delta": d, "finish_reason": finish_reason}])

        delta({"role": "assistant", "content": ""})
        if resp.get("reasoning"):
            delta({"reasoning_content": resp["reasoning"]})
        text = content or ""
        for i in range(0, len(text), 16):
            delta({"content": text[i:i + 16]})
        for k, c in enumerate(calls):
            delta({"tool_calls": [{"index": k, "id": c["id"], "type": "function",
                                   "function": {"name": c["function"]["name"], "arguments": ""}}]})
            args = c["function"]["arguments"]
            for i in range(0, len(args), 24):
                delta({"tool_calls": [{"index": k, "function": {"arguments": args[i:i + 24]}}]})
        delta({}, finish)
        chunk([], {"usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--script")
    ap.add_argument("--record")
    a = ap.parse_args()
    if a.script:
        with open(a.script, encoding="utf-8") as f:
            STATE["script"] = json.load(f)
        if not isinstance(STATE["script"], list):
            sys.exit("--script must hold a JSON array")
    STATE["record"] = a.record
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
