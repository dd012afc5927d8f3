#!/bin/sh
# The background summarizer's bounds, through the real .so and the real host against the
# loopback model (tests/contract/fake_openai.py), each run one live prompt of tool rounds:
#   hang     the session model never answers a summary in time (30 s, summaryTimeoutMs
#            1000): the agent finishes its rounds, each call fails with the bound named,
#            the chain falls back to the extractive summarizer, summaries are stored, and
#            /lcm status names the last fallback and why;
#   error    the configured summarizer's provider refuses connections: the chain falls
#            back, the breaker opens after repeated failures (a summarizer-breaker row),
#            and the agent is unaffected;
#   late     a fast agent on a small window with a 6-s summarizer and summaryWaitMs 800: a
#            request over the fit line waits for the pass in flight at most the bound (the
#            waits the log reports), then the oldest history is covered by truncation
#            ([lcm:truncated] summaries in the store), and no request (the plugin's own
#            LCM_REQUEST_LOG) reaches the window.
. "$(dirname "$0")/lib.sh"

run_case() { # NAME WINDOW ROUNDS AGENT_DELAY SUMMARY_DELAY LCM_JSON
    C="$T/$1"; mkdir -p "$C/home" "$C/work"
    printf '%s\n' "$6" >"$C/home/lcm.json"
    : >"$C/port"
    python3 "$ROOT/tests/contract/fake_openai.py" --port 0 --record "$C/rec.jsonl" --record-answers \
        --agent-delay "$4" --summary-delay "$5" --tool-rounds "$3" --tool-bytes 4000 \
        >"$C/port" 2>"$C/server.err" &
    SERVER_PID=$!
    i=0; while [ ! -s "$C/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
    PORT=$(head -n 1 "$C/port"); [ -n "$PORT" ] || { cat "$C/server.err"; fail "$1: the fake model did not start"; }
    LCM_REQUEST_LOG="$C/requests.jsonl" "$HOST" --home "$C/home" --plugin-dir "$PLUGINS" \
        --session "$C/s.jsonl" --cwd "$C/work" --base-url "http://127.0.0.1:$PORT/v1" --model fake \
        --window "$2" --max-turns $(($3 + 10)) --log "$C/host.log" \
        -p "Run the checks, one round at a time." --command "/lcm status" \
        >"$C/out.txt" 2>"$C/err.txt" || { tail -n 20 "$C/err.txt"; fail "$1: the host run failed"; }
    kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
    ok
    assert_grep "$C/out.txt" "done." "$1: the agent reached the model's final answer"
    M="$C/home/lcm/metrics.jsonl"
}

# ---- hang ---------------------------------------------------------------------------------
run_case hang 32000 30 0.2 30 \
    '{"summarizer":"auto","leafChunkTokens":4000,"eagerSummaries":true,"summaryTimeoutMs":1000}'
assert_jsonl "$M" "any(r.get('kind') == 'summarizer-call' and r.get('model') == 'auto' and r.get('ok') is False for r in rows)" \
    "hang: the session model's summarizer calls failed"
assert_jsonl "$M" "any(r.get('kind') == 'summarizer-fallback' and r.get('from') == 'auto' and r.get('to') == 'extractive' and 'timed out after 1000 ms' in r.get('reason', '') for r in rows)" \
    "hang: each fell back to the extractive summarizer, the bound named"
assert_grep "$C/out.txt" "summarizer last fallback (.*): auto -> extractive: .*timed out after 1000 ms" \
    "hang: /lcm status names the last fallback and its bound"
N=$(sed -n 's/^LCM: [0-9]* messages, \([0-9]*\) summaries.*/\1/p' "$C/out.txt" | head -n 1)
[ -n "$N" ] && [ "$N" -gt 0 ] || { cat "$C/out.txt"; fail "hang: summaries were stored (got '${N:-none}')"; }
ok

# ---- error --------------------------------------------------------------------------------
run_case error 32000 20 0.1 0 \
    '{"summarizer":["dead/sum"],"baseUrls":{"dead":"http://127.0.0.1:9/v1"},"leafChunkTokens":2000,"eagerSummaries":true}'
assert_jsonl "$M" "sum(1 for r in rows if r.get('kind') == 'summarizer-call' and r.get('model') == 'dead/sum' and r.get('ok') is False) >= 3" \
    "error: the refusing provider's calls failed"
assert_jsonl "$M" "any(r.get('kind') == 'summarizer-fallback' and r.get('from') == 'dead/sum' for r in rows)" \
    "error: the chain fell back past it"
assert_jsonl "$M" "any(r.get('kind') == 'summarizer-breaker' for r in rows)" \
    "error: the breaker opened after repeated failures"
assert_grep "$C/out.txt" "summarizer last fallback (.*): dead/sum -> " "error: /lcm status names the fallback"

# ---- late ---------------------------------------------------------------------------------
run_case late 16000 24 0.05 6 \
    '{"summarizer":"auto","leafChunkTokens":2000,"summaryWaitMs":800}'
assert_grep "$C/host.log" "waited [0-9]* ms for summaries (summaryWaitMs 800)" "late: a request waited for the pass in flight"
python3 - "$C/host.log" <<'PY' || fail "late: no wait outlasted summaryWaitMs (with 400 ms to spare for the host)"
import re, sys
waits = [int(m) for m in re.findall(r"waited (\d+) ms for summaries", open(sys.argv[1]).read())]
print("waits (ms):", waits)
sys.exit(0 if waits and max(waits) <= 1200 else 1)
PY
ok
assert_grep "$C/host.log" "summaries were late; the oldest uncovered history is truncated" \
    "late: what the worker could not make in time was covered by truncation"
DB=$(ls "$C"/home/lcm/*.sqlite | head -n 1)
T_N=$(sqlite3 "$DB" "SELECT count(*) FROM summaries WHERE text LIKE '[lcm:truncated]%'")
[ "$T_N" -gt 0 ] || fail "late: [lcm:truncated] summaries are in the store (got $T_N)"
ok
assert_jsonl "$C/requests.jsonl" "len(rows) >= 20 and all(r['tokens'] < r['window'] for r in rows)" \
    "late: no request reached the window"
done_ok
