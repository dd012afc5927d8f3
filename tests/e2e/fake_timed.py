#!/usr/bin/env python3
"""A timed loopback model for the Pi summarizer scenario and the Pi turn-wait benchmark
(stdlib only; OpenAI chat completions, streamed or not).

    fake_timed.py --port 0 --record FILE [--agent-delay S] [--summary-delay S]
                  [--tool-rounds N] [--tool-bytes B] [--plant TEXT] [--summary-tag TAG]

Prints the chosen port as the first stdout line. Requests are told apart by what they
carry: "summary" when the system prompt is the plugin's summarizer's (engine/summarize.c
summ_system_prompt: "You summarize/compress part of a coding-agent conversation for a
lossless context store"), "agent" when the request offers tools (Pi's agent loop), else
"other". Agent requests wait --agent-delay seconds; the first --tool-rounds of them are
answered with one `bash` call printing about --tool-bytes bytes (--plant goes into the
first call's output), later ones with "done.". Summarizer requests wait --summary-delay
seconds and are answered "TAG <seq>: " followed by bullets taken from the excerpt, within
the size the request asks for ("at most about N tokens").

--record gets one JSON line per request when it arrives, the request body plus
"_fake": {"seq", "kind", "arrivedAt"}, and one line {"_answer": {"seq", "kind",
"answeredAt", "status", "text"?}} just before the answer's first byte is sent (text: the
summary sent). Times are epoch seconds (time.time()), the clock pi_session.py's poll
record uses. The same row shapes as tests/contract/fake_openai.py --record-answers on the
host-complete branch, so one reader serves both.
"""
import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"seq": 0, "agent": 0}
OPTS = None
SUMMARY_MARKER = re.compile(r"(?is)\b(summari[sz]e|compress)\b.*\blossless context store\b")


def system_text(req):
    msgs = req.get("messages") if isinstance(req, dict) else None
    if not isinstance(msgs, list) or not msgs or not isinstance(msgs[0], dict):
        return ""
    if msgs[0].get("role") not in ("system", "developer"):
        return ""
    c = msgs[0].get("content")
    if isinstance(c, list):
        return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c if isinstance(c, str) else ""


def kind_of(req):
    if SUMMARY_MARKER.search(system_text(req)):
        return "summary"
    return "agent" if isinstance(req, dict) and req.get("tools") else "other"


def user_text(req):
    out = []
    for m in req.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                out.extend(p.get("text", "") for p in c if isinstance(p, dict))
            elif isinstance(c, str):
                out.append(c)
    return "\n".join(out)


def summary_text(req, seq):
    text = user_text(req)
    m = re.search(r"at most about (\d+) tokens", text)
    budget = max(200, int(m.group(1)) * 3 if m else 1200)
    ex = re.search(r"<excerpt>\n?(.*?)\n?</excerpt>", text, re.S)
    lines = [l.strip()[:160] for l in (ex.group(1) if ex else text).splitlines() if l.strip()]
    keyed = [l for l in lines if re.search(r"\b[A-Za-z_][\w.-]*=\S", l)]
    out, seen, used = ["%s %d: the scripted model summarized this part." % (OPTS.summary_tag, seq)], set(), 0
    for l in keyed + lines:
        if l in seen or used + len(l) + 3 > budget:
            continue
        seen.add(l)
        out.append("- " + l)
        used += len(l) + 3
    return "\n".join(out)


def tool_round(n):
    head = "round %d output" % n + (" " + OPTS.plant if n == 1 and OPTS.plant else "")
    reps = max(1, (OPTS.tool_bytes - 40) // 52)
    cmd = ("printf '%%s\\n' '%s'; i=0; while [ $i -lt %d ]; do "
           "printf 'r%d line %%05d: status=ok value=%%d lorem ipsum dolor\\n' $i $((i*%d)); "
           "i=$((i+1)); done" % (head.replace("'", ""), reps, n, n))
    return "Running round %d." % n, [{"id": "call_r%d" % n, "type": "function",
                                      "function": {"name": "bash",
                                                   "arguments": json.dumps({"command": cmd})}}]


def write_record(row):
    if OPTS.record:
        with LOCK:
            with open(OPTS.record, "a", encoding="utf-8") as f:
                f.write(json.dumps(row, separators=(",", ":")) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_body(self, status, ctype, data):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
        arrived = time.time()
        try:
            req = json.loads(body)
        except ValueError:
            req = None
        kind = kind_of(req) if isinstance(req, dict) else "other"
        with LOCK:
            STATE["seq"] += 1
            seq = STATE["seq"]
            if kind == "agent":
                STATE["agent"] += 1
            n = STATE["agent"]
        row = dict(req) if isinstance(req, dict) else {"_unparsed": body}
        row["_fake"] = {"seq": seq, "kind": kind, "arrivedAt": round(arrived, 4)}
        write_record(row)
        if not isinstance(req, dict):
            write_record({"_answer": {"seq": seq, "kind": kind, "answeredAt": round(time.time(), 4), "status": 400}})
            self.send_body(400, "application/json", b'{"error":{"message":"request body is not JSON"}}')
            return
        calls, text = [], "done."
        if kind == "summary":
            time.sleep(OPTS.summary_delay)
            text = summary_text(req, seq)
        elif kind == "agent":
            time.sleep(OPTS.agent_delay)
            if n <= OPTS.tool_rounds:
                text, calls = tool_round(n)
        ans = {"seq": seq, "kind": kind, "answeredAt": round(time.time(), 4), "status": 200}
        if kind == "summary":
            ans["text"] = text
        write_record({"_answer": ans})
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": max(1, len(body) // 4), "completion_tokens": max(1, len(text) // 4)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        rid, model, created = "chatcmpl-timed-%d" % seq, req.get("model") or "fake", int(time.time())
        if not req.get("stream"):
            msg = {"role": "assistant", "content": text}
            if calls:
                msg["tool_calls"] = calls
            self.send_body(200, "application/json", json.dumps({
                "id": rid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                "usage": usage}).encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        out = []

        def chunk(choices, extra=None):
            obj = {"id": rid, "object": "chat.completion.chunk", "created": created,
                   "model": model, "choices": choices}
            obj.update(extra or {})
            out.append("data: " + json.dumps(obj) + "\n\n")

        chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        for i in range(0, len(text), 64):
            chunk([{"index": 0, "delta": {"content": text[i:i + 64]}, "finish_reason": None}])
        for k, c in enumerate(calls):
            chunk([{"index": 0, "delta": {"tool_calls": [{"index": k, "id": c["id"], "type": "function",
                   "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}]},
                    "finish_reason": None}])
        chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
        chunk([], {"usage": usage})
        out.append("data: [DONE]\n\n")
        self.wfile.write("".join(out).encode("utf-8"))
        self.wfile.flush()


def main():
    global OPTS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--record")
    ap.add_argument("--script")  # accepted (pi_session.py passes one) and ignored
    ap.add_argument("--agent-delay", type=float, default=0.0)
    ap.add_argument("--summary-delay", type=float, default=0.0)
    ap.add_argument("--tool-rounds", type=int, default=0)
    ap.add_argument("--tool-bytes", type=int, default=6000)
    ap.add_argument("--plant", default="")
    ap.add_argument("--summary-tag", default="PI-SCRIPTED-SUMMARY")
    OPTS = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", OPTS.port), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
