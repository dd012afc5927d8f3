#!/bin/sh
# Summaries off the agent's path (issue 13), through the real .so and the real host: the
# session model is the summarizer ("auto") and takes 2 s a call, the agent answers at once
# with ~30 rounds of `bash` calls printing ~4 KB each, on a 16k window. Asserted from the
# loopback model's record (tests/contract/fake_openai.py --record-answers: each request's
# kind, arrival and answer) and the store, never from wall-clock durations:
#   (a) no agent request exceeded the window (characters / 4 of what the model reads, the
#       rule of engine/core/message.c msg_estimate_tokens);
#   (b) summarizer calls reached the model and every one answered was answered 200;
#   (c) a summary was committed by the end (/lcm status counts summaries > 0);
#   (d) summaries do not run on the agent's path: no summarizer call lies wholly inside the
#       gap between an agent answer and the next agent request (the signature of a call
#       made synchronously between turns), and agent requests keep arriving while a
#       summarizer call is in flight.
# (d) failed on the code before the background worker: turn_end ran every pass on the host
# thread, so each summarizer call sat inside one of those gaps.
. "$(dirname "$0")/lib.sh"
# Both ways a worker reaches the model: the blocking `complete` from the worker thread, and
# `complete_async` (AGENT_HOST_COMPLETE_ASYNC=1: the level-3 path Pi takes), whose calls the
# worker queues for the host thread to start and whose `done` comes from a host thread.
scenario() { # MODE HOST_ENV
MODE=$1; HOST_ENV=$2
ROUNDS=${SW_ROUNDS:-30}
WINDOW=32000
NEEDLE="SW_NEEDLE_FIRST=5be2a0"
HOME_DIR="$T/$MODE/home"; mkdir -p "$T/$MODE/work" "$HOME_DIR"
printf '{"summarizer": "auto", "leafChunkTokens": 4000}\n' >"$HOME_DIR/lcm.json"
R="$T/$MODE/rec.jsonl"
# start_server (lib.sh) takes a script; this run is unscripted, so the fake starts here.
: >"$T/$MODE/port"
python3 "$ROOT/tests/contract/fake_openai.py" --port 0 --record "$R" --record-answers \
    --agent-delay 0.5 --summary-delay 2 --tool-rounds "$ROUNDS" --tool-bytes 4000 --plant "$NEEDLE" \
    >"$T/$MODE/port" 2>"$T/$MODE/server.err" &
SERVER_PID=$!
i=0; while [ ! -s "$T/$MODE/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
PORT=$(head -n 1 "$T/$MODE/port"); [ -n "$PORT" ] || { cat "$T/$MODE/server.err"; fail "fake model server did not start"; }

env $HOST_ENV "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/$MODE/s.jsonl" --cwd "$T/$MODE/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake --window "$WINDOW" \
    --max-turns $((ROUNDS + 10)) -p "Run the checks, one round at a time, until they are all done." \
    >"$T/$MODE/out.txt" 2>"$T/$MODE/err.txt" || { tail -n 20 "$T/$MODE/err.txt"; fail "the host run failed"; }
ok
assert_grep "$T/$MODE/out.txt" "done." "the run reached the model's final answer"

# The record's requests and answers, paired by seq; `agent` and `summ` in arrival order.
ROWS='
def load(path):
    reqs, ans = {}, {}
    for l in open(path, encoding="utf-8"):
        if not l.strip(): continue
        r = json.loads(l)
        if "_answer" in r: ans[r["_answer"]["seq"]] = r["_answer"]
        elif "_fake" in r: reqs[r["_fake"]["seq"]] = r
    out = []
    for s in sorted(reqs):
        r = reqs[s]; a = ans.get(s)
        out.append({"kind": r["_fake"]["kind"], "t0": r["_fake"]["arrivedAt"],
                    "t1": a["answeredAt"] if a else None, "status": a["status"] if a else None,
                    "req": r})
    return out
def chars(v):
    if isinstance(v, str): return len(v.encode("utf-16-le")) // 2
    if isinstance(v, list): return sum(chars(p.get("text", "")) for p in v if isinstance(p, dict))
    return 0
def tokens(req):
    n = 0
    for m in req.get("messages") or []:
        n += chars(m.get("content"))
        for c in m.get("tool_calls") or []:
            n += chars(c["function"].get("name", "")) + chars(c["function"].get("arguments", ""))
    return (n + 3) // 4
'
check() { # PY-EXPR DESCRIPTION, over agent / summ
    python3 - "$R" "$1" <<PY || fail "$MODE: $2"
import json, sys
$ROWS
rows = load(sys.argv[1])
agent = [r for r in rows if r["kind"] == "agent"]
summ = [r for r in rows if r["kind"] == "summary"]
gaps = [(a["t1"], b["t0"]) for a, b in zip(agent, agent[1:]) if a["t1"] is not None]
ok = eval(sys.argv[2])
if not ok:
    print("agent requests: %d, summarizer calls: %d" % (len(agent), len(summ)))
    print("agent tokens:", [tokens(r["req"]) for r in agent])
    print("summarizer calls (arrived, answered):", [(r["t0"], r["t1"]) for r in summ][:20])
sys.exit(0 if ok else 1)
PY
    ok
}
check "len(agent) == $ROUNDS + 1" "every tool round reached the model (and the final answer)"
# (a)
check "all(tokens(r['req']) <= $WINDOW for r in agent)" "(a) no agent request exceeded the $WINDOW-token window"
# (b)
check "len(summ) >= 1" "(b) summarizer calls reached the model"
check "any(r['status'] == 200 for r in summ) and all(r['status'] in (None, 200) for r in summ)" \
    "(b) the summarizer calls were answered"
# (c)
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/$MODE/s.jsonl" --cwd "$T/$MODE/work" \
    --command "/lcm status" >"$T/$MODE/status" 2>&1 || fail "/lcm status"
N=$(sed -n 's/^LCM: [0-9]* messages, \([0-9]*\) summaries.*/\1/p' "$T/$MODE/status" | head -n 1)
[ -n "$N" ] && [ "$N" -gt 0 ] || { cat "$T/$MODE/status"; fail "(c) a summary was committed (got '${N:-none}')"; }
ok
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/$MODE/s.jsonl" --cwd "$T/$MODE/work" \
    --tool lcm_grep "{\"pattern\":\"$NEEDLE\"}" >"$T/$MODE/grep" 2>&1 || fail "lcm_grep"
assert_grep "$T/$MODE/grep" "\[toolResult\].*$NEEDLE" "lcm_grep still finds the value of the first tool output"
# (d) -- fails while summaries run inside turn_end on the host thread
check "not [s for s in summ if s['t1'] is not None and any(g0 <= s['t0'] and s['t1'] <= g1 for g0, g1 in gaps)]" \
    "(d) no summarizer call was made synchronously inside the gap between an answer and the next request"
check "any(any(s['t0'] < a['t0'] < s['t1'] for a in agent) for s in summ if s['t1'] is not None)" \
    "(d) agent requests keep arriving while a summarizer call is in flight"
kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
}
scenario complete ""
scenario complete_async AGENT_HOST_COMPLETE_ASYNC=1
done_ok
