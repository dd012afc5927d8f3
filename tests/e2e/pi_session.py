#!/usr/bin/env python3
"""Drive the real Pi coding agent in RPC mode over a scripted multi-turn session.

    pi_session.py --pi PI_BIN --extension EXT.js --work DIR --agent-dir DIR \
                  --script SCRIPT.json --steps STEPS.json --out DIR

Starts tests/contract/fake_openai.py on loopback with SCRIPT, writes a models.json that
points a custom provider "fake" at it, runs `pi --mode rpc -e EXT` in WORK (no -e with
--extension "": what Pi's settings install, e.g. a `pi install`ed package), and sends each
step in STEPS (a JSON array of prompt texts; "/..." are commands). A prompt step waits for
Pi's agent_end; a command step waits for its response and the notifications it caused. A
step {"command": "/...", "starts_turn": true} is a command that must make Pi start a turn
by itself (an extension's sendUserMessage): it waits for that turn's agent_start and
agent_end too, and fails when no turn starts. With "while": "prompt text" the command is
sent once that prompt's run has started (Pi streaming; script a "delay" for its answer),
and the step waits for the prompt's agent_end and then for the turn the command started.
A step {"command": "/...", "until": "text"} sends the command again (every 0.1 s, for at
most "timeout" seconds) until a notification it causes contains the text; its notes entry
also says how many times it was sent and the longest time Pi took to answer one (the event
loop's responsiveness while something runs in the background).
A step {"prompt": "text", "poll": "get_state", "interval": 0.1} sends the prompt and, until
its agent_end, sends the RPC command {"type": "get_state"} every interval seconds, each
waiting for its response; OUT/polls.jsonl gets one line per poll, {"step", "sentAt",
"answeredAt", "ms"} (epoch seconds, the clock of fake_openai.py's record). A step
{"idle": S, "poll": ...} polls the same way for S seconds with no prompt running.
--fake-arg ARG (repeatable) is passed on to fake_openai.py (e.g. --fake-arg=--summary-delay=1.5:
its timed, unscripted modes); --context-window N is the model's window in models.json
(default 32000); --settings JSON is merged into Pi's settings.json.
Writes OUT/events.jsonl (every RPC line), OUT/requests.jsonl (what the fake provider
received), OUT/notes.json (notify texts per step) and prints nothing on success.
Exits non-zero with a reason when Pi fails to start, a step times out, or Pi exits badly.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "..", "contract", "fake_openai.py")
STEP_TIMEOUT = 60


def start_fake(script, record, extra=()):
    proc = subprocess.Popen([sys.executable, FAKE, "--port", "0", "--script", script,
                             "--record", record] + list(extra), stdout=subprocess.PIPE, text=True)
    port = proc.stdout.readline().strip()
    if not port.isdigit():
        proc.kill()
        sys.exit("fake provider did not print its port")
    return proc, int(port)


def write_models(agent_dir, port, window=32000, settings=None):
    os.makedirs(agent_dir, exist_ok=True)
    models = {"providers": {"fake": {
        "baseUrl": "http://127.0.0.1:%d/v1" % port, "api": "openai-completions",
        "apiKey": "fake-key",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": "fake-model", "contextWindow": window, "maxTokens": 2048}]}}}
    with open(os.path.join(agent_dir, "models.json"), "w") as f:
        json.dump(models, f)
    # No retries: a provider failure must fail the step, not stall it for seconds. Settings
    # already there (the packages `pi install` added) are kept.
    path = os.path.join(agent_dir, "settings.json")
    old = {}
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
    with open(path, "w") as f:
        old["retry"] = {"enabled": False}
        old.update(settings or {})
        json.dump(old, f)


class Reader(threading.Thread):
    """Collects Pi's stdout lines (split on LF only, as the RPC framing requires)."""

    def __init__(self, stream, log):
        super().__init__(daemon=True)
        self.stream, self.log = stream, log
        self.lines, self.cond = [], threading.Condition()

    def run(self):
        buf = b""
        while True:
            chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else self.stream.read(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode("utf-8", errors="replace").rstrip("\r")
                self.log.write(text + "\n")
                self.log.flush()
                try:
                    obj = json.loads(text)
                except ValueError:
                    continue
                with self.cond:
                    self.lines.append(obj)
                    self.cond.notify_all()
        with self.cond:
            self.lines.append({"type": "_eof"})
            self.cond.notify_all()

    def wait_for(self, start, pred, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for i in range(start, len(self.lines)):
                    if self.lines[i].get("type") == "_eof":
                        return None, i
                    if pred(self.lines[i]):
                        return self.lines[i], i + 1
                left = deadline - time.monotonic()
                if left <= 0:
                    return None, len(self.lines)
                self.cond.wait(left)


def send(pi, command):
    pi.stdin.write((json.dumps(command) + "\n").encode())
    pi.stdin.flush()


def poll(pi, reader, rid, step, pos):
    """Runs an "until" step; returns (failure or None, notes entry, new position)."""
    deadline = time.monotonic() + step.get("timeout", STEP_TIMEOUT)
    latencies = []
    while True:
        sid = "%s-%d" % (rid, len(latencies))
        sent = time.monotonic()
        send(pi, {"id": sid, "type": "prompt", "message": step["command"]})
        resp, after = reader.wait_for(pos, lambda o: o.get("id") == sid, STEP_TIMEOUT)
        if not resp or not resp.get("success"):
            return "step %r: no successful response: %r" % (step["command"], resp), None, pos
        latencies.append(time.monotonic() - sent)
        time.sleep(0.1)
        end = len(reader.lines)
        got = [o.get("message") for o in reader.lines[pos:end]
               if o.get("type") == "extension_ui_request" and o.get("method") == "notify"]
        pos = max(end, after)
        entry = {"step": step["command"], "notes": got, "polls": len(latencies),
                 "max_response_ms": round(max(latencies) * 1000)}
        if any(step["until"] in (n or "") for n in got):
            return None, entry, pos
        if time.monotonic() > deadline:
            return "step %r: no notification with %r within %s s: %r" % (
                step["command"], step["until"], step.get("timeout", STEP_TIMEOUT), got), entry, pos


def poll_state(pi, reader, rid, step, pos, log):
    """Runs a "poll" step; returns (failure or None, new position)."""
    interval = float(step.get("interval", 0.1))
    started = None
    if step.get("prompt"):
        send(pi, {"id": rid, "type": "prompt", "message": step["prompt"]})
        resp, _ = reader.wait_for(pos, lambda o: o.get("id") == rid, STEP_TIMEOUT)
        if not resp or not resp.get("success"):
            return "step %r: no successful response: %r" % (step["prompt"], resp), pos
    else:
        started = time.monotonic()
    deadline = time.monotonic() + step.get("timeout", STEP_TIMEOUT)
    k = 0
    while True:
        if started is not None:
            if time.monotonic() - started >= float(step["idle"]):
                return None, len(reader.lines)
        else:
            done, end = reader.wait_for(pos, lambda o: o.get("type") == "agent_end", 0)
            if done:
                return None, end
            if time.monotonic() > deadline:
                return "step %r: no agent_end within %s s" % (step["prompt"], step.get("timeout", STEP_TIMEOUT)), pos
        sid = "%s-poll-%d" % (rid, k)
        k += 1
        sent, t0 = time.time(), time.monotonic()
        send(pi, {"id": sid, "type": step["poll"]})
        resp, _ = reader.wait_for(pos, lambda o: o.get("id") == sid, STEP_TIMEOUT)
        if not resp:
            return "step %r: no answer to %s within %d s" % (step.get("prompt"), step["poll"], STEP_TIMEOUT), pos
        ms = (time.monotonic() - t0) * 1000
        log.write(json.dumps({"step": rid, "sentAt": round(sent, 4), "answeredAt": round(sent + ms / 1000, 4),
                              "ms": round(ms, 1), "ok": bool(resp.get("success"))}) + "\n")
        log.flush()
        time.sleep(interval)


def main():
    ap = argparse.ArgumentParser()
    for a in ("pi", "extension", "work", "agent-dir", "script", "steps", "out"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--fake-arg", action="append", default=[])
    ap.add_argument("--context-window", type=int, default=32000)
    ap.add_argument("--settings", type=json.loads, default=None)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    requests = os.path.join(a.out, "requests.jsonl")
    open(requests, "w").close()
    fake, port = start_fake(a.script, requests, a.fake_arg)
    write_models(a.agent_dir, port, a.context_window, a.settings)
    env = dict(os.environ, PI_CODING_AGENT_DIR=a.agent_dir)
    steps = json.load(open(a.steps))
    notes = []
    events = open(os.path.join(a.out, "events.jsonl"), "w")
    stderr = open(os.path.join(a.out, "pi-stderr.txt"), "w")
    ext = ["-e", a.extension] if a.extension else []
    pi = subprocess.Popen([a.pi, "--mode", "rpc", "--provider", "fake", "--model", "fake-model"] + ext,
                          cwd=a.work, env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=stderr)
    reader = Reader(pi.stdout, events)
    reader.start()
    pos = 0
    failure = None
    polls = open(os.path.join(a.out, "polls.jsonl"), "w")
    try:
        for n, step in enumerate(steps):
            if isinstance(step, dict) and step.get("poll"):
                failure, pos = poll_state(pi, reader, "step-%d" % n, step, pos, polls)
                if failure:
                    break
                continue
            text = step["command"] if isinstance(step, dict) else step
            starts_turn = isinstance(step, dict) and step.get("starts_turn")
            rid = "step-%d" % n
            if isinstance(step, dict) and step.get("until"):
                failure, entry, pos = poll(pi, reader, rid, step, pos)
                if entry:
                    notes.append(entry)
                if failure:
                    break
                continue
            if isinstance(step, dict) and step.get("while"):
                send(pi, {"id": rid + "-while", "type": "prompt", "message": step["while"]})
                began, pos = reader.wait_for(pos, lambda o: o.get("type") == "agent_start", STEP_TIMEOUT)
                if not began:
                    failure = "step %d (%r): the prompt it runs beside did not start" % (n, step["while"])
                    break
                running, _ = reader.wait_for(pos, lambda o: o.get("type") == "agent_end", 0)
                if running:
                    failure = "step %d: the prompt ended before the command was sent" % n
                    break
            send(pi, {"id": rid, "type": "prompt", "message": text})
            resp, after = reader.wait_for(pos, lambda o: o.get("id") == rid, STEP_TIMEOUT)
            if not resp or not resp.get("success"):
                failure = "step %d (%r): no successful response: %r" % (n, text, resp)
                break
            if starts_turn:
                turn = pos
                if isinstance(step, dict) and step.get("while"):
                    done, turn = reader.wait_for(pos, lambda o: o.get("type") == "agent_end", STEP_TIMEOUT)
                    if not done:
                        failure = "step %d (%r): no agent_end within %d s" % (n, step["while"], STEP_TIMEOUT)
                        break
                # No prompt of ours is running, so an agent_start now is the extension's turn.
                began, turn = reader.wait_for(turn, lambda o: o.get("type") == "agent_start", STEP_TIMEOUT)
                if not began:
                    failure = "step %d (%r): Pi started no turn within %d s" % (n, text, STEP_TIMEOUT)
                    break
                done, end = reader.wait_for(turn, lambda o: o.get("type") == "agent_end", STEP_TIMEOUT)
                if not done:
                    failure = "step %d (%r): the turn it started did not end within %d s" % (n, text, STEP_TIMEOUT)
                    break
            elif text.startswith("/"):
                # Extension commands run before the response; give late notifications a beat.
                time.sleep(0.3)
                end = len(reader.lines)
            else:
                done, end = reader.wait_for(pos, lambda o: o.get("type") == "agent_end", STEP_TIMEOUT)
                if not done:
                    failure = "step %d (%r): no agent_end within %d s" % (n, text, STEP_TIMEOUT)
                    break
            notes.append({"step": text, "notes": [o.get("message") for o in reader.lines[pos:end]
                                                  if o.get("type") == "extension_ui_request"
                                                  and o.get("method") == "notify"]})
            pos = max(end, after)
    finally:
        pi.stdin.close()
        try:
            pi.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pi.kill()
            failure = failure or "pi did not exit after stdin closed"
        reader.join(timeout=5)
        fake.kill()
        fake.wait()
        events.close()
        stderr.close()
        polls.close()
        with open(os.path.join(a.out, "notes.json"), "w") as f:
            json.dump(notes, f, indent=1)
    if failure:
        sys.exit(failure)
    if pi.returncode != 0:
        sys.exit("pi exited with status %d" % pi.returncode)


if __name__ == "__main__":
    main()
