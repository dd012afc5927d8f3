"""The turn-wait figures of one run, from the loopback model's record (tests/contract/
fake_openai.py --record FILE --record-answers) and, when given, the plugin's metrics.jsonl.

    python3 turn_wait.py --record REC --window TOKENS --label NAME [--metrics FILE]
                         [--grep-output FILE --needle TEXT]

One line per figure, "LABEL name: value unit (...)", the shape tests/bench/report.py reads:
  - the wait from each agent answer to the next agent request (tools + host + plugin):
    median, p95, max, and how many waits were over 1 s;
  - the largest agent request and how many were over the window, in tokens estimated as the
    project does (engine/core/message.c msg_estimate_tokens: characters / 4 of the text the model
    reads -- system prompt, message contents, tool-call names and arguments), and how many
    were over it by the cruder body-characters / 4 (JSON and tool schemas included; an
    upper bound);
  - the context at the first summarizer call (the last agent request before it arrived), in
    % of the window; the number of summarizer calls, answered and failed; their share of
    the run's wall time;
  - with --grep-output, whether lcm_grep at the end found the value planted in the first
    tool output (1) or not (0).
--json FILE also writes the figures as one JSON object (for the ratio line of the caller).
"""
import argparse
import json
import sys


def pct(sorted_vals, p):
    """Nearest-rank percentile of an ascending list (0 when empty)."""
    if not sorted_vals:
        return 0.0
    k = max(0, min(len(sorted_vals) - 1, int(round(p / 100.0 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


def text_chars(v):
    if isinstance(v, str):
        return len(v.encode("utf-16-le")) // 2  # JS string length, as the engine counts
    if isinstance(v, list):
        return sum(text_chars(p.get("text", "")) for p in v if isinstance(p, dict))
    return 0


def prompt_tokens(req):
    """characters / 4 of what the model reads (msg_estimate_tokens' rule over the payload)."""
    chars = 0
    for m in req.get("messages") or []:
        if not isinstance(m, dict):
            continue
        chars += text_chars(m.get("content"))
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or {}
            chars += text_chars(fn.get("name", "")) + text_chars(fn.get("arguments", ""))
    return (chars + 3) // 4


def load(record):
    reqs, answers = {}, {}
    with open(record, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if "_answer" in row:
                a = row["_answer"]
                answers[a["seq"]] = a
            elif "_fake" in row:
                meta = row["_fake"]
                size = len(json.dumps({k: v for k, v in row.items() if k != "_fake"},
                                      separators=(",", ":")))
                reqs[meta["seq"]] = {"seq": meta["seq"], "kind": meta["kind"],
                                     "arrived": meta["arrivedAt"], "tokens": prompt_tokens(row),
                                     "body_tokens": (size + 3) // 4}
    for seq, r in reqs.items():
        a = answers.get(seq)
        r["answered"] = a["answeredAt"] if a else None
        r["status"] = a["status"] if a else None
    return [reqs[k] for k in sorted(reqs)]


def metrics_calls(path):
    """(calls, ok, failed, fallbacks) of the summarizer from metrics.jsonl."""
    calls = ok = failed = fallbacks = 0
    try:
        f = open(path, encoding="utf-8")
    except OSError:
        return None
    with f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            kind = row.get("kind") or row.get("event")
            if kind == "summarizer-call":
                calls += 1
                d = row.get("data", row)
                if d.get("ok") is True:
                    ok += 1
                else:
                    failed += 1
            elif kind == "summarizer-fallback":
                fallbacks += 1
    return calls, ok, failed, fallbacks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", required=True)
    ap.add_argument("--window", type=int, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--metrics")
    ap.add_argument("--grep-output")
    ap.add_argument("--needle")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = load(a.record)
    agent = [r for r in rows if r["kind"] == "agent"]
    summ = [r for r in rows if r["kind"] == "summary"]
    if not agent:
        print("%s: no agent request in %s" % (a.label, a.record))
        return 1
    waits = []
    for prev, nxt in zip(agent, agent[1:]):
        if prev["answered"] is not None:
            waits.append(max(0.0, nxt["arrived"] - prev["answered"]))
    waits_sorted = sorted(waits)
    over_1s = sum(1 for w in waits if w > 1.0)
    largest = max(r["tokens"] for r in agent)
    over_window = sum(1 for r in agent if r["tokens"] > a.window)
    over_window_body = sum(1 for r in agent if r["body_tokens"] > a.window)
    L = a.label
    fig = {"label": L, "agent_requests": len(agent), "waits": len(waits),
           "wait_median": pct(waits_sorted, 50), "wait_p95": pct(waits_sorted, 95),
           "wait_max": waits_sorted[-1] if waits_sorted else 0.0, "waits_over_1s": over_1s,
           "largest_tokens": largest, "over_window": over_window, "summary_calls": len(summ)}
    print("%s agent requests: %d requests (%d waits between an answer and the next request)"
          % (L, len(agent), len(waits)))
    print("%s turn wait median: %.3f s" % (L, fig["wait_median"]))
    print("%s turn wait p95: %.3f s" % (L, fig["wait_p95"]))
    print("%s turn wait max: %.3f s" % (L, fig["wait_max"]))
    print("%s turns waiting over 1 s: %d turns (of %d)" % (L, over_1s, len(waits)))
    print("%s largest request: %d tokens (%.1f%% of the %d-token window; text characters / 4)"
          % (L, largest, 100.0 * largest / a.window, a.window))
    print("%s requests over the window: %d requests (%d by body characters / 4)"
          % (L, over_window, over_window_body))
    if summ:
        first = summ[0]
        before = [r for r in agent if r["arrived"] <= first["arrived"]]
        ctx = before[-1]["tokens"] if before else 0
        fig["first_summary_context_pct"] = 100.0 * ctx / a.window
        print("%s context at the first summarizer call: %.1f %% of the window (%d tokens, "
              "before agent request %d of %d)" % (L, fig["first_summary_context_pct"], ctx,
                                                  len(before) + 1, len(agent)))
    answered = sum(1 for r in summ if r["status"] == 200)
    print("%s summarizer calls: %d calls (%d answered by the model with status 200)"
          % (L, len(summ), answered))
    if a.metrics:
        m = metrics_calls(a.metrics)
        if m is not None:
            calls, ok, failed, fallbacks = m
            fig["summary_failed"] = failed
            print("%s summarizer calls failed (metrics): %d calls (of %d recorded; %d fallbacks)"
                  % (L, failed, calls, fallbacks))
    t0 = rows[0]["arrived"]
    t1 = max((r["answered"] or r["arrived"]) for r in rows)
    wall = max(1e-9, t1 - t0)
    busy = sum((r["answered"] - r["arrived"]) for r in summ if r["answered"] is not None)
    print("%s model-side wall time: %.1f s (first request to last answer)" % (L, wall))
    print("%s summarizer time: %.1f s (%.0f%% of that wall time)" % (L, busy, 100.0 * busy / wall))
    if a.grep_output and a.needle:
        try:
            text = open(a.grep_output, encoding="utf-8", errors="replace").read()
        except OSError:
            text = ""
        # In a stored tool result, not merely in the call that printed it.
        found = any(a.needle in l and "[toolResult]" in l for l in text.splitlines())
        fig["grep_found"] = int(found)
        print("%s lcm_grep finds the value planted in the first tool output: %d (%s)"
              % (L, int(found), "yes" if found else "no"))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(fig, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
