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
line when it arrives. A request with "stream": true is answered as server-sent events
(chat.completion.chunk deltas for content and tool_calls, a usage chunk, data: [DONE]).

Each recorded line also carries "_fake": {"seq", "kind", "arrivedAt"} (seq counts requests
from 1 in arrival order; arrivedAt is epoch seconds, time.time(), the clock of
tests/e2e/pi_session.py's poll record; kind is "summary" for the plugin's summarizer -- its
system prompt (the first message, role system or developer; engine/lcm/summarize.c) asks to
summarize or compress part of a conversation "for a lossless context store" -- "agent" for
a request that offers tools, else "other"). With --record-answers, an answer also appends
{"_answer": {"seq", "kind", "answeredAt", "status", "text"?}} to --record just before the
answer's first byte is sent (text: the content sent to a summarizer request), so the record
gives both ends of every request; readers of the plain request lines skip rows with
"_answer" (the option is off by default, so the one-line-per-request format that existing
tests read is unchanged).

A provider's prompt cache (test_ledger_spend.sh):
  --prefix-cache      an agent request's usage reports prompt_tokens_details.cached_tokens:
                      the estimated tokens (characters/4) of the longest common prefix of its
                      messages (as JSON) with the previous agent request's, as a provider that
                      caches prefixes would serve them

A provider's window (test_clm_overflow.sh):
  --context-limit T   a request whose messages are over T estimated tokens (characters/4)
                      is answered 400 with OpenAI's context_length_exceeded error ("This
                      model's maximum context length is T tokens. However, your messages
                      resulted in N tokens."), taking no script entry

Long unscripted runs (the benchmark, the summary-worker test):
  --agent-delay S     seconds before answering an agent request the script does not cover
  --summary-delay S   seconds before answering a summarizer request
  --tool-rounds N     answer the first N agent requests with one `bash` call each, then
                      "done."; --tool-bytes B makes each call print about B bytes, and
                      --plant TEXT goes into the first call's output (a value to recall)
  --summary-marker RE the regular expression that marks a summarizer system prompt
  --summary-ratio F   a summary's size as a fraction of its excerpt (default 0.125, an 8x
                      compression, as a model writes; never over what the request asks)
  --summary-tag TAG   a summary's first line is "TAG <seq>: the scripted model summarized
                      this part." (seq: the request's), so a reader of the store can tell
                      the model's text from anything else (tests/e2e/check_summ.py)
Once any of --summary-delay or --tool-rounds is given, summarizer requests no longer take
script entries: they are answered with bullet points drawn from the excerpt (every
KEY=VALUE line first), within the "at most about N tokens" the request asks for.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"script": [], "next": 0, "record": None, "calls": 0, "seq": 0, "agent_rounds": 0}
OPTS = argparse.Namespace(context_limit=0, agent_delay=0.0, summary_delay=0.0, tool_rounds=0, tool_bytes=8000,
                          plant="", summary_marker=None, record_answers=False,
                          summary_ratio=0.125, summary_tag=None, prefix_cache=False)
# The summarizer's system prompts (engine/lcm/summarize.c summ_system_prompt): "You summarize part
# of a coding-agent conversation for a lossless context store" and "You compress part of ...".
SUMMARY_MARKER = r"(?is)\b(summari[sz]e|compress)\b.*\blossless context store\b"


def system_text(request):
    msgs = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(msgs, list) or not msgs or not isinstance(msgs[0], dict):
        return ""
    if msgs[0].get("role") not in ("system", "developer"):
        return ""
    c = msgs[0].get("content")
    if isinstance(c, list):
        return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c if isinstance(c, str) else ""


def request_kind(request):
    if re.search(OPTS.summary_marker or SUMMARY_MARKER, system_text(request)):
        return "summary"
    if isinstance(request, dict) and request.get("tools"):
        return "agent"
    return "other"


def kinds_split():
    """Whether summarizer requests are answered apart from the script."""
    return OPTS.summary_delay > 0 or OPTS.tool_rounds > 0


def user_text(request):
    out = []
    for m in request.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                out.extend(p.get("text", "") for p in c if isinstance(p, dict))
            elif isinstance(c, str):
                out.append(c)
    return "\n".join(out)


def summary_answer(request, seq):
    """Bullets from the excerpt, KEY=VALUE lines first, within the asked size (a model that
    keeps identifiers verbatim, which is what the store's recall relies on), after the
    --summary-tag line when one is given."""
    text = user_text(request)
    m = re.search(r"at most about (\d+) tokens", text)
    asked_chars = int(m.group(1)) * 3 if m else 1200
    ex = re.search(r"<excerpt>\n?(.*?)\n?</excerpt>", text, re.S)
    body = ex.group(1) if ex else text
    budget_chars = max(200, min(asked_chars, int(len(body) * OPTS.summary_ratio)))
    lines = [l.strip() for l in body.splitlines() if l.strip()]
    keyed = [l for l in lines if re.search(r"\b[A-Za-z_][\w.-]*=\S", l)]
    seen, bullets, used = set(), [], 0
    for l in keyed + lines:
        l = l[:160]
        if l in seen:
            continue
        seen.add(l)
        if used + len(l) + 3 > budget_chars:
            break
        bullets.append("- " + l)
        used += len(l) + 3
    if OPTS.summary_tag:
        bullets.insert(0, "%s %d: the scripted model summarized this part." % (OPTS.summary_tag, seq))
    return "\n".join(bullets) or "- (nothing to keep)"


def tool_round_answer(n):
    """Round n (1-based) of --tool-rounds: one bash call printing ~--tool-bytes bytes."""
    head = "round %d output" % n
    plant = OPTS.plant.replace("'", "") if n == 1 else ""
    # The planted value is printed in two halves, so it is whole only in the tool's output,
    # never in the call's own arguments: finding it later proves the output was kept.
    half = len(plant) // 2
    # printf the head, then repeat a numbered line until the byte count is reached; the
    # numbers keep lines distinct, so the text is not one repeated token for the store.
    reps = max(1, (OPTS.tool_bytes - 40) // 52)
    cmd = ("printf '%%s %%s%%s\\n' '%s' '%s' '%s'; i=0; while [ $i -lt %d ]; do "
           "printf 'r%d line %%05d: status=ok value=%%d lorem ipsum dolor\\n' $i $((i*%d)); "
           "i=$((i+1)); done" % (head, plant[:half], plant[half:], reps, n, n))
    return {"content": "Running round %d." % n,
            "tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]}


def next_response():
    with LOCK:
        STATE["calls"] += 1
        i = STATE["next"]
        if i < len(STATE["script"]):
            STATE["next"] += 1
            return STATE["script"][i], STATE["calls"]
        return DONE, STATE["calls"]


DONE = {"content": "done."}  # the answer once the script is exhausted (compared by identity)


def record(body_text):
    """Append the request as it arrived; returns (seq, kind)."""
    arrived = time.time()
    try:
        obj = json.loads(body_text)
    except ValueError:
        obj = None
    kind = request_kind(obj) if isinstance(obj, dict) else "other"
    with LOCK:
        STATE["seq"] += 1
        seq = STATE["seq"]
        path = STATE["record"]
        if path:
            row = obj if isinstance(obj, dict) else {"_unparsed": body_text}
            row = dict(row)
            row["_fake"] = {"seq": seq, "kind": kind, "arrivedAt": round(arrived, 4)}
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row, separators=(",", ":")) + "\n")
    return seq, kind


def record_answer(seq, kind, status, text=None):
    path = STATE["record"]
    if not path or not OPTS.record_answers:
        return
    ans = {"seq": seq, "kind": kind, "answeredAt": round(time.time(), 4), "status": status}
    if kind == "summary" and status < 400 and isinstance(text, str):
        ans["text"] = text
    line = json.dumps({"_answer": ans}, separators=(",", ":"))
    with LOCK:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def pick_response(kind, request, seq):
    """The response for a request of this kind (see the module text for the split)."""
    if kinds_split() and kind == "summary":
        with LOCK:
            STATE["calls"] += 1
            call_no = STATE["calls"]
        return {"content": summary_answer(request, seq), "delay": OPTS.summary_delay}, call_no
    resp, call_no = next_response()
    scripted = resp is not DONE
    if kind == "agent" and not scripted and OPTS.tool_rounds > 0:
        with LOCK:
            STATE["agent_rounds"] += 1
            n = STATE["agent_rounds"]
        if n <= OPTS.tool_rounds:
            resp = tool_round_answer(n)
    if not scripted and "delay" not in resp:
        resp = dict(resp)
        resp["delay"] = OPTS.summary_delay if kind == "summary" else OPTS.agent_delay if kind == "agent" else 0
    return resp, call_no


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


def prefix_cached(request):
    """Tokens of this agent request's messages that repeat the previous one's from the start."""
    text = json.dumps(request.get("messages") or [], sort_keys=True)
    with LOCK:
        prev = STATE.get("last_agent") or ""
        STATE["last_agent"] = text
    return len(os.path.commonprefix([prev, text])) // 4


def build_usage(resp, request_text, content, calls):
    usage = dict(resp.get("usage") or {})
    out_text = (content or "") + "".join(c["function"]["arguments"] for c in calls)
    usage.setdefault("prompt_tokens", estimate_tokens(request_text))
    usage.setdefault("completion_tokens", estimate_tokens(out_text))
    usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
    return usage


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers JSON: the base of the loopback fakes (fake_embed.py too)."""

    def log_message(self, fmt, *args):  # keep test output quiet
        pass

    def send_body(self, status, data):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status, obj):
        self.send_body(status, json.dumps(obj).encode("utf-8"))


class Handler(JsonHandler):
    protocol_version = "HTTP/1.1"

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
        seq, kind = record(body_text)
        try:
            request = json.loads(body_text)
        except ValueError:
            record_answer(seq, kind, 400)
            self.send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        if OPTS.context_limit > 0:
            tokens = len(json.dumps(request.get("messages") or [])) // 4
            if tokens > OPTS.context_limit:
                record_answer(seq, kind, 400)
                self.send_json(400, {"error": {
                    "message": "This model's maximum context length is %d tokens. However, your "
                               "messages resulted in %d tokens. Please reduce the length of the "
                               "messages." % (OPTS.context_limit, tokens),
                    "type": "invalid_request_error", "param": "messages",
                    "code": "context_length_exceeded"}})
                return
        resp, call_no = pick_response(kind, request, seq)
        if resp.get("delay"):
            time.sleep(float(resp["delay"]))
        status = int(resp.get("status") or (500 if resp.get("error") else 200))
        record_answer(seq, kind, status, None if "raw" in resp else resp.get("content"))
        if status >= 400:
            self.send_json(status, {"error": {
                "message": resp.get("error") or "scripted failure",
                "type": "server_error", "code": status}})
            return
        if "raw" in resp:
            self.send_body(200, resp["raw"].encode("utf-8"))
            return
        content, calls, finish = build_parts(resp, call_no)
        usage = build_usage(resp, body_text, content, calls)
        if OPTS.prefix_cache and kind == "agent" and "prompt_tokens_details" not in usage:
            usage["prompt_tokens_details"] = {"cached_tokens": min(prefix_cached(request), usage["prompt_tokens"])}
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
    ap.add_argument("--record-answers", action="store_true")
    ap.add_argument("--agent-delay", type=float, default=0.0)
    ap.add_argument("--summary-delay", type=float, default=0.0)
    ap.add_argument("--tool-rounds", type=int, default=0)
    ap.add_argument("--tool-bytes", type=int, default=8000)
    ap.add_argument("--plant", default="")
    ap.add_argument("--summary-marker")
    ap.add_argument("--summary-ratio", type=float, default=0.125)
    ap.add_argument("--summary-tag")
    ap.add_argument("--context-limit", type=int, default=0)
    ap.add_argument("--prefix-cache", action="store_true")
    a = ap.parse_args()
    for k in vars(OPTS):
        setattr(OPTS, k, getattr(a, k))
    if a.summary_marker:
        re.compile(a.summary_marker)
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
