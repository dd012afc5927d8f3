#!/bin/sh
# Redaction at every outbound seam, through the real host, the real .so and the scripted
# loopback model. Every case of tests/contract/redact_cases.json is planted as its own
# user message; a small window makes compaction passes run with the `llm` summarizer
# (fake/sum, routed by baseUrls to the loopback model, which answers every summary with an
# echo of every secret, as a model repeating what it read would). Then:
#  - summarizer requests (leaves, condensations over stored echo summaries, every level),
#    reader requests (lcm_expand_query with a model), the reader's findings, the no-model
#    reader's windows, lcm_grep hits, lcm_describe, the MCP server's tools, /lcm report and
#    /lcm diagnose: no positive case's secret, every negative case's text intact;
#  - a provider error quoting a key is masked before it reaches metrics.jsonl;
#  - the store holds every secret verbatim (lossless), and so does /lcm export (a store
#    surface the user asked for, written 0600: the README's Security notes);
#  - with redactSecrets: false the same seams carry the secrets (the checks can fail), and
#    diagnose, a block meant for public pasting, still does not.
. "$(dirname "$0")/lib.sh"
CASES="$ROOT/tests/contract/redact_cases.json"
WINDOW=32000

# The session: one user message per case, then filler that pushes the context past the
# swap line so passes run over the cases' leaves and condense the frontier.
python3 - "$CASES" "$T/in.jsonl" "$T/echo.txt" <<'PY' || fail "write the session"
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
out = open(sys.argv[2], "w")
out.write(json.dumps({"type": "session", "version": 3, "id": "5e55a0e1-0000-4000-8000-000000000001",
                      "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/redact"}) + "\n")
parent, n, ts = None, 0, 1767225600000
def entry(obj):
    global parent, n, ts
    n += 1; ts += 1000
    eid = "%08x" % (0x5eed0000 + n)
    obj.update({"id": eid, "parentId": parent, "timestamp": "2026-01-01T00:%02d:%02d.000Z" % (n // 60 % 60, n % 60)})
    out.write(json.dumps(obj) + "\n"); parent = eid
def user(text):
    entry({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}})
def assistant(text):
    entry({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
           "api": "openai-completions", "provider": "generated", "model": "gen-1",
           "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20,
                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
           "stopReason": "stop", "timestamp": ts}})
entry({"type": "model_change", "provider": "generated", "modelId": "gen-1"})
for c in cases:
    user("RCASE %s: %s" % (c["name"], c["text"]))
    assistant("Noted case %s." % c["name"])
for i in range(90):
    user("Step %d: please review module %d and keep the build green. " % (i, i) + "The parser reads the queue and the tests cover it. " * 18)
    assistant("Reviewed module %d; nothing to change. " % i + "All checks pass on this module as before. " * 12)
open(sys.argv[3], "w").write("Summary of the secrets seen: " + " | ".join(c["text"] for c in cases if c["kind"] == "positive"))
PY
ok

# a scripted model: a provider error quoting a key first, then echoes of every secret
mk_script() { # OUT ERROR(0|1)
    python3 - "$T/echo.txt" "$1" "$2" "$CASES" <<'PY'
import json, sys
echo = open(sys.argv[1]).read()
key = next(c["secret"] for c in json.load(open(sys.argv[4]))["cases"] if c["name"] == "openai-project")
s = ([{"status": 401, "error": "Incorrect API key provided: " + key}] if sys.argv[3] == "1" else []) + [{"content": echo}] * 400
json.dump(s, open(sys.argv[2], "w"))
PY
}

# check_seam FILE MODE WHAT: MODE masked = no secret, every negative intact (NEG=0 skips
# the negatives for outputs that carry only the echo) and something masked (MASKS=0 skips
# that for outputs that should carry no stored text at all); MODE clear = every secret
# present.
check_seam() {
    python3 - "$CASES" "$1" "$2" "${NEG:-1}" "${MASKS:-1}" <<'PY' || fail "$3"
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
raw = open(sys.argv[2], encoding="utf-8").read()
# request records are JSON lines: search their decoded strings, not the escaped form
def strings(o):
    if isinstance(o, str): yield o
    elif isinstance(o, dict):
        for v in o.values(): yield from strings(v)
    elif isinstance(o, list):
        for v in o: yield from strings(v)
try:
    texts = ["\n".join(strings(json.loads(l))) for l in raw.splitlines() if l.strip()]
except ValueError:
    texts = [raw]
body = "\n".join(texts)
bad = []
for c in cases:
    if c["kind"] == "positive":
        present = c["secret"] in body
        if sys.argv[3] == "masked" and present: bad.append("secret of %s leaked" % c["name"])
        if sys.argv[3] == "clear" and not present: bad.append("secret of %s missing" % c["name"])
    elif sys.argv[3] == "masked" and sys.argv[4] == "1" and c["text"] not in body:
        bad.append("negative %s not intact" % c["name"])
if sys.argv[3] == "masked" and sys.argv[5] == "1" and "[REDACTED]" not in body: bad.append("nothing was masked at all")
if bad:
    print("\n".join(bad[:12]), "(%d problems)" % len(bad)); sys.exit(1)
PY
    ok
}

run_phase() { # NAME REDACT(true|false)
    P=$1
    H="$T/$P/home"
    mkdir -p "$H"
    mk_script "$T/$P/script.json" 1
    start_server "$T/$P/script.json" "$T/$P/summ.jsonl"
    URL="http://127.0.0.1:$PORT/v1"
    printf '{"summarizer":["fake/sum"],"baseUrls":{"fake":"%s"},"leafChunkTokens":1000,"summaryTokens":100,"keepRecentTokens":4000,"eagerSummaries":true,"summaryWorker":false,"redactSecrets":%s}\n' \
        "$URL" "$2" > "$H/lcm.json"
    "$HOST" --home "$H" --plugin-dir "$PLUGINS" --session "$T/$P/s.jsonl" --window $WINDOW \
        replay "$T/in.jsonl" > "$T/$P/replay.txt" 2>&1 || { cat "$T/$P/replay.txt"; fail "$P: replay"; }
    DB=$(ls "$H"/lcm/*.sqlite | head -n 1)
    [ -n "$DB" ] || fail "$P: a store was written"
    # the seams, each into its own file
    grun() { "$HOST" --home "$H" --plugin-dir "$PLUGINS" --session "$T/$P/s.jsonl" --window $WINDOW "$@"; }
    : > "$T/$P/grep.txt"
    for off in 0 20 40 60; do
        grun --tool lcm_grep "{\"pattern\":\"RCASE \",\"offset\":$off}" >> "$T/$P/grep.txt" 2>&1 || fail "$P: lcm_grep"
    done
    python3 - "$DB" > "$T/$P/ids.txt" <<'PY' || fail "$P: read summary ids"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
leaves = [r[0] for r in c.execute("SELECT DISTINCT sm.summary_id FROM summary_messages sm JOIN messages m"
          " ON m.entry_id = sm.entry_id WHERE m.text LIKE 'RCASE %' ORDER BY 1")]
deep = [r[0] for r in c.execute("SELECT id FROM summaries WHERE depth > 0 ORDER BY id LIMIT 2")]
print("LEAVES=\"%s\"" % " ".join(map(str, leaves)))
print("DEEP=\"%s\"" % " ".join(map(str, deep)))
PY
    . "$T/$P/ids.txt"
    [ -n "$LEAVES" ] || fail "$P: the cases' messages are under leaves"
    : > "$T/$P/describe.txt"; : > "$T/$P/expand0.txt"
    for id in $LEAVES $DEEP; do
        grun --tool lcm_describe "{\"id\":\"$id\"}" >> "$T/$P/describe.txt" 2>&1 || fail "$P: lcm_describe $id"
    done
    for id in $LEAVES; do
        grun --tool lcm_expand_query "{\"summary_id\":$id,\"max_tokens\":30000}" >> "$T/$P/expand0.txt" 2>&1 \
            || fail "$P: lcm_expand_query (no model) $id"
    done
    grun --command "/lcm report" --command "/lcm diagnose" > "$T/$P/report.txt" 2>&1 || fail "$P: report/diagnose"
    grun --command "/lcm export $T/$P/export.jsonl" > "$T/$P/export.txt" 2>&1 || fail "$P: export"
    # the reader with a model: its own requests, then findings that echo the secrets
    mk_script "$T/$P/reader.json" 0
    start_server "$T/$P/reader.json" "$T/$P/reader.jsonl"
    : > "$T/$P/expand1.txt"
    for id in $LEAVES; do
        grun --base-url "http://127.0.0.1:$PORT/v1" --model reader \
            --tool lcm_expand_query "{\"summary_id\":$id,\"question\":\"Which keys were used?\",\"max_tokens\":30000}" \
            >> "$T/$P/expand1.txt" 2>&1 || fail "$P: lcm_expand_query with a model $id"
    done
}

# ---- masking on (the default) -----------------------------------------------------------
run_phase on true
S="$T/on"
assert_jsonl "$S/summ.jsonl" "len(rows) >= 4" "summarizer requests were made"
assert_jsonl "$S/summ.jsonl" "any('[lcm:summary #' in json.dumps(r) for r in rows)" \
    "a condensation over stored summaries went to the model"
# every level of the chain ran through the model (metrics name each call's stage)
M="$S/home/lcm/metrics.jsonl"
for stage in preserve-details bullets make-smaller; do
    assert_jsonl "$M" "any(r.get('kind') == 'summarizer-call' and r.get('model') == 'fake/sum' and r.get('stage') == '$stage' and r.get('ok') for r in rows)" \
        "the fake/sum model answered a $stage request"
done
assert_jsonl "$M" "any(r.get('kind') == 'compaction-pass' and r.get('condensed', 0) > 0 for r in rows)" \
    "a pass condensed stored summaries"
check_seam "$S/summ.jsonl" masked "summarizer requests: secrets masked, negatives intact"
# (with a session model, the `auto` entry also summarizes between turns through the host:
# those requests are in the same record, and are checked with the reader's)
assert_jsonl "$S/reader.jsonl" "any('bounded reader' in json.dumps(r) for r in rows)" \
    "the reader made its own requests"
check_seam "$S/reader.jsonl" masked "reader and session-model summarizer requests: secrets masked, negatives intact"
NEG=0 check_seam "$S/expand1.txt" masked "reader findings (an echo of the secrets) come back masked"
assert_grep "$S/expand1.txt" "findings" "the reader answered"
check_seam "$S/expand0.txt" masked "no-model reader windows: secrets masked, negatives intact"
assert_grep "$S/expand0.txt" "no model available" "the no-model path ran"
check_seam "$S/grep.txt" masked "lcm_grep hits: secrets masked, negatives intact"
NEG=0 check_seam "$S/describe.txt" masked "lcm_describe of stored echo summaries: masked"
NEG=0 MASKS=0 check_seam "$S/report.txt" masked "/lcm report and /lcm diagnose carry no secret"
assert_grep "$S/report.txt" "lcm-diagnose" "diagnose ran"
KEY=$(python3 -c "import json,sys; print(next(c['secret'] for c in json.load(open(sys.argv[1]))['cases'] if c['name']=='openai-project'))" "$CASES")
assert_nogrep "$S/home/lcm/metrics.jsonl" "$KEY" "the provider error's key is not in metrics.jsonl"
assert_grep "$S/home/lcm/metrics.jsonl" "Incorrect API key provided: \[REDACTED\]" \
    "the provider error reached the metrics, masked"
# lossless: the store and the export hold every secret verbatim
DB=$(ls "$S"/home/lcm/*.sqlite | head -n 1)
python3 - "$DB" > "$S/store.txt" <<'PY' || fail "dump the store"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (t,) in c.execute("SELECT text FROM messages"): print(t)
for (t,) in c.execute("SELECT text FROM summaries"): print(t)
PY
check_seam "$S/store.txt" clear "the store holds every secret verbatim (messages and summaries)"
check_seam "$S/export.jsonl" clear "/lcm export is verbatim, secrets included"
assert_eq "$(stat -c %a "$S/export.jsonl")" 600 "the export is written 0600"
# the MCP server: grep, describe and the no-model reader over the same store
SID=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT value FROM meta WHERE key='session_id'\").fetchone()[0])" "$DB")
set -- $LEAVES
python3 - "$BUILD/lcm" "$S/home" "$SID" "$1" > "$S/mcp.txt" <<'PY' || fail "MCP session"
import json, subprocess, sys
lcm, home, sid, leaf = sys.argv[1:5]
p = subprocess.Popen([lcm, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"); p.stdin.flush()
calls = [("lcm_grep", {"pattern": "RCASE ", "scope": "session", "session": sid, "offset": o}) for o in (0, 20, 40, 60)]
calls += [("lcm_describe", {"session": sid, "summary_id": int(leaf)}),
          ("lcm_expand", {"session": sid, "summary_id": int(leaf), "max_tokens": 30000})]
for i, (name, args) in enumerate(calls):
    r = rpc(10 + i, "tools/call", {"name": name, "arguments": args})
    print(r["result"]["content"][0]["text"])
p.stdin.close(); p.wait()
PY
NEG=0 check_seam "$S/mcp.txt" masked "MCP tools: secrets masked"
assert_grep "$S/mcp.txt" "RCASE prose-prefix: the sk- prefix names OpenAI keys" "MCP grep reaches the cases"

# ---- redactSecrets: false: the same seams carry the secrets ---------------------------------
run_phase off false
S="$T/off"
check_seam "$S/summ.jsonl" clear "redactSecrets false: summarizer requests carry the stored text"
check_seam "$S/reader.jsonl" clear "redactSecrets false: reader requests carry the stored text"
check_seam "$S/expand1.txt" clear "redactSecrets false: reader findings unmasked"
check_seam "$S/expand0.txt" clear "redactSecrets false: no-model windows unmasked"
check_seam "$S/grep.txt" clear "redactSecrets false: lcm_grep unmasked"
check_seam "$S/describe.txt" clear "redactSecrets false: lcm_describe unmasked"
assert_grep "$S/home/lcm/metrics.jsonl" "$KEY" "redactSecrets false: the provider error text is kept as sent"
NEG=0 MASKS=0 check_seam "$S/report.txt" masked "diagnose stays masked whatever redactSecrets says"
done_ok
