#!/usr/bin/env python3
"""Check (or measure) a real Pi session whose summaries were made by Pi's own model.

    check_summ.py OUT AGENT_DIR --window TOKENS [--check] [--label NAME] [--json FILE]

OUT is pi_session.py's output folder (requests.jsonl from tests/contract/fake_openai.py
--record-answers with arrival and answer times and the summaries sent, polls.jsonl with
the get_state polls sent while the prompt ran, notes.json); AGENT_DIR is Pi's agent home (lcm/metrics.jsonl, lcm/*.sqlite,
lcm/pi-bridge.log). Always prints the figures, one "LABEL name: value unit" line each:
the wait from each agent answer to the next agent request (median, p95, max, how many
over 1 s), the summarizer requests Pi's model received and answered, the metrics' calls
and fallbacks, the get_state polls sent while a summarizer request was in flight and the
slowest answer among them, and the largest agent request. (A call the worker queues while
Pi is idle starts at the next plugin callback -- the next prompt, or /lcm, which the
scenario sends after an idle spell.) With --check it also asserts:

  (a) summarizer requests reached the scripted model from Pi, every one was answered, and
      the bridge delivered answers back to the plugin (pi-bridge.log);
  (b) metrics.jsonl has summarizer-call rows of model "auto" with ok true, none with ok
      false, and no summarizer-fallback row;
  (c) a summary in the store holds a text the scripted model sent (its "TAG seq:" line,
      fake_openai.py --summary-tag, and the bullets that follow);
  (d) Pi's event loop kept turning while a summarizer request was in flight: at least 3
      get_state polls overlapped such a flight (from its arrival at the model to its
      answer) and each was answered within 500 ms;
  (e) no agent request was over the window (characters / 4 of the text the model reads,
      the engine's estimate), and /lcm status answered with its summarizer line.
"""
import argparse
import glob
import json
import os
import re
import sqlite3
import sys

# The bench's figures of a record: its percentile and its token estimate, the engine's rule.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from turn_wait import pct, prompt_tokens  # noqa: E402

POLL_LIMIT_MS = 500


def load_record(path):
    reqs, answers = {}, {}
    for line in open(path, encoding="utf-8"):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if "_answer" in row:
            answers[row["_answer"]["seq"]] = row["_answer"]
        elif "_fake" in row:
            f = row["_fake"]
            reqs[f["seq"]] = {"seq": f["seq"], "kind": f["kind"], "arrived": f["arrivedAt"],
                              "tokens": prompt_tokens(row)}
    for seq, r in reqs.items():
        a = answers.get(seq) or {}
        r["answered"], r["status"], r["text"] = a.get("answeredAt"), a.get("status"), a.get("text")
    return [reqs[k] for k in sorted(reqs)]


def load_jsonl(path):
    out = []
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("agent")
    ap.add_argument("--window", type=int, required=True)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--label", default="pi")
    ap.add_argument("--json")
    a = ap.parse_args()
    L = a.label
    rows = load_record(os.path.join(a.out, "requests.jsonl"))
    agent = [r for r in rows if r["kind"] == "agent"]
    summ = [r for r in rows if r["kind"] == "summary"]
    waits = sorted(max(0.0, n["arrived"] - p["answered"]) for p, n in zip(agent, agent[1:]) if p["answered"])
    metrics = load_jsonl(os.path.join(a.agent, "lcm", "metrics.jsonl"))
    calls = [m for m in metrics if m.get("kind") == "summarizer-call"]
    ok_auto = [m for m in calls if m.get("model") == "auto" and m.get("ok") is True]
    failed = [m for m in calls if m.get("ok") is not True]
    fallbacks = [m for m in metrics if m.get("kind") == "summarizer-fallback"]
    polls = load_jsonl(os.path.join(a.out, "polls.jsonl"))
    flight = [(r["arrived"], r["answered"] or float("inf")) for r in summ]
    # A poll counts when its round trip overlaps a call's flight (sent before the answer,
    # answered after the arrival): one held up by a blocked loop overlaps too.
    inside = [p for p in polls if any(p["sentAt"] <= t1 and p["answeredAt"] >= t0 for t0, t1 in flight)]
    largest = max((r["tokens"] for r in agent), default=0)
    over = [r for r in agent if r["tokens"] > a.window]
    log_path = os.path.join(a.agent, "lcm", "pi-bridge.log")
    log = open(log_path, encoding="utf-8", errors="replace").read() if os.path.exists(log_path) else ""
    delivered = log.count("complete_async answered in")
    fig = {"agent_requests": len(agent), "waits": len(waits), "wait_median": pct(waits, 50),
           "wait_p95": pct(waits, 95), "wait_max": max(waits, default=0.0),
           "waits_over_1s": sum(1 for w in waits if w > 1.0), "summary_requests": len(summ),
           "summary_answered": sum(1 for r in summ if r["status"] == 200),
           "calls_ok": len(ok_auto), "calls_failed": len(failed), "fallbacks": len(fallbacks),
           "polls": len(polls), "polls_in_flight": len(inside),
           "poll_max_ms_in_flight": max((p["ms"] for p in inside), default=0.0),
           "poll_max_ms": max((p["ms"] for p in polls), default=0.0),
           "largest_tokens": largest, "over_window": len(over), "delivered": delivered}
    print("%s agent requests: %d requests (%d waits from an answer to the next request)" % (L, len(agent), len(waits)))
    print("%s turn wait median: %.3f s" % (L, fig["wait_median"]))
    print("%s turn wait p95: %.3f s" % (L, fig["wait_p95"]))
    print("%s turn wait max: %.3f s" % (L, fig["wait_max"]))
    print("%s turns waiting over 1 s: %d turns (of %d)" % (L, fig["waits_over_1s"], len(waits)))
    print("%s summarizer requests at Pi's model: %d requests (%d answered with status 200; %d answers "
          "delivered to the plugin by the bridge)" % (L, len(summ), fig["summary_answered"], delivered))
    print("%s summarizer calls (metrics): %d ok of model auto, %d failed, %d fallbacks"
          % (L, len(ok_auto), len(failed), len(fallbacks)))
    print("%s event loop while a summarizer call was in flight: %d get_state polls, slowest %.0f ms "
          "(all %d polls: slowest %.0f ms)" % (L, len(inside), fig["poll_max_ms_in_flight"], len(polls), fig["poll_max_ms"]))
    print("%s largest agent request: %d tokens (%.1f%% of the %d-token window; %d over it)"
          % (L, largest, 100.0 * largest / a.window, a.window, len(over)))
    notes_path = os.path.join(a.out, "notes.json")
    notes = json.load(open(notes_path)) if os.path.exists(notes_path) else []
    status = "\n".join(n for s in notes if s["step"] == "/lcm status" for n in s["notes"] if n)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(fig, f)
    if not a.check:
        return 0

    failures = []

    def check(cond, what, detail=""):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)
            if detail:
                print("     " + str(detail)[:600])

    check(summ, "(a) summarizer requests reached the scripted model from Pi", [r["kind"] for r in rows][:20])
    # The last call may still be in flight when Pi shuts down (the bridge drops it at
    # unload): it has no answer. Every call that was answered was answered 200.
    unanswered = [r for r in summ if not r["answered"]]
    check(summ and all(r["status"] == 200 for r in summ if r["answered"]) and len(unanswered) <= 1
          and all(r is summ[-1] for r in unanswered),
          "(a) the scripted model answered every one (but a last one in flight at shutdown)",
          [(r["seq"], r["status"]) for r in summ])
    check(delivered >= 1, "(a) the bridge delivered answers to the plugin (complete_async answered)",
          log[-600:])
    check(ok_auto, "(b) metrics: summarizer-call rows of model auto with ok true", calls[:3])
    check(not failed, "(b) metrics: no summarizer call failed", failed[:3])
    check(not fallbacks, "(b) metrics: no summarizer-fallback row", fallbacks[:3])
    stores = glob.glob(os.path.join(a.agent, "lcm", "*.sqlite"))
    texts = []
    if stores:
        con = sqlite3.connect(stores[0])
        texts = [r[0] for r in con.execute("select text from summaries")]
        con.close()
    sent = [r["text"] for r in summ if r["text"]]
    heads = [t.split("\n", 1)[0] for t in sent]
    matched = [t for t in texts if any(h in t for h in heads)]
    exact = [t for t in texts if t.strip() in (s.strip() for s in sent)]
    check(matched, "(c) a committed summary holds the scripted model's summary text "
          "(%d of %d stored summaries; %d equal to an answer)" % (len(matched), len(texts), len(exact)),
          texts[:2])
    check(len(inside) >= 3 and all(p["ms"] < POLL_LIMIT_MS for p in inside),
          "(d) Pi answered get_state within %d ms while a summarizer call was in flight "
          "(%d polls, slowest %.0f ms)" % (POLL_LIMIT_MS, len(inside), fig["poll_max_ms_in_flight"]),
          sorted(inside, key=lambda p: -p["ms"])[:3])
    check(not over, "(e) no agent request over the %d-token window (largest %d)" % (a.window, largest),
          [(r["seq"], r["tokens"]) for r in over][:5])
    check("summarizer: background" in status and "last error" not in status,
          "/lcm status shows the background summarizer and no error", status)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
