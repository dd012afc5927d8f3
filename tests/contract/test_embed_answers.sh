#!/bin/sh
# What goes to an embeddings endpoint and what comes back (issue 24.8, 24.13, 24.16),
# against the loopback server (tests/contract/fake_embed.py) with `lcm reindex
# --embeddings` and `lcm grep --hybrid`:
#   1. with redactSecrets on (the default) the server never receives a key (sk-..., AKIA...)
#      from a stored message nor from a query: it receives the redaction's mask; with
#      redactSecrets false it receives the text as stored;
#   2. a broken answer -- a number no float holds (1e400), NaN, an index given twice, an
#      index of -1 -- is refused: reindex fails naming it, no vector is stored, and the
#      coverage says 0 embedded;
#   3. a vector of another dimension than the model's stored ones is refused likewise (a
#      model under a name of its own embeds at its own);
#   4. a server's error text carrying ESC sequences is printed neutralised.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
EMBED_PID=""
trap '[ -n "$EMBED_PID" ] && kill "$EMBED_PID" 2>/dev/null; cleanup' EXIT
start_embed() {
    _rec=$1
    shift
    [ -n "$EMBED_PID" ] && kill "$EMBED_PID" 2>/dev/null && wait "$EMBED_PID" 2>/dev/null
    : >"$T/eport"
    python3 "$ROOT/tests/contract/fake_embed.py" --port 0 --record "$_rec" "$@" >"$T/eport" 2>"$T/embed.err" &
    EMBED_PID=$!
    i=0
    while [ ! -s "$T/eport" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
    EPORT=$(head -n 1 "$T/eport")
    [ -n "$EPORT" ] || { cat "$T/embed.err"; fail "the embeddings server did not start"; }
}
sqlq() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2]).fetchone(); print(r[0] if r else "")' "$@"; }
SK="sk-OX9YIMtCFIPzgNZpBdfdYfkM51ZFfOwBsRhae56YuHqQG0EY"
AK="AKIAIOSFODNN7EXAMPLE"
# session FILE ID N: a Pi session of N messages; message 3 carries both keys.
session() {
    python3 - "$1" "$2" "$3" "$SK" "$AK" <<'PY'
import json, sys
path, sid, n, sk, ak = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = [{"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/proj/e"}]
parent = None
for i in range(n):
    t = "the parser handles nested brackets in file %d" % i
    if i == 3:
        t = "deploy with OPENAI key %s and aws key id %s today" % (sk, ak)
    role = "user" if i % 2 == 0 else "assistant"
    m = {"role": role, "content": [{"type": "text", "text": t}], "timestamp": 1767225601000 + i}
    if role == "assistant":
        m.update({"api": "openai-completions", "provider": "x", "model": "y", "stopReason": "stop",
                  "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}})
    eid = "m%02d" % i
    rows.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:%02d.000Z" % i, "message": m})
    parent = eid
open(path, "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
}
# home H [EXTRA_JSON]: a home with the session imported and the embeddings endpoint set.
home() {
    mkdir -p "$1"
    session "$T/s.jsonl" "emb-1" 8
    "$LCM" import --home "$1" "$T/s.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "import"; }
    printf '{"embeddings":{"url":"http://127.0.0.1:%s","model":"embed-a","batchSize":4}%s}\n' "$EPORT" "${2:-}" >"$1/lcm.json"
}

# ---- 1. secrets are masked on their way to the endpoint -------------------------------------
start_embed "$T/rec1.jsonl"
home "$T/h1"
"$LCM" reindex --home "$T/h1" --embeddings >"$T/r1.txt" 2>&1 || { cat "$T/r1.txt"; fail "reindex"; }
assert_grep "$T/r1.txt" "embedded 8 row(s)" "reindex embeds every message"
"$LCM" grep --home "$T/h1" --hybrid "where is $SK used" >"$T/q1.txt" 2>&1 || { cat "$T/q1.txt"; fail "hybrid grep"; }
assert_nogrep "$T/rec1.jsonl" "$SK" "the endpoint never receives the OpenAI key"
assert_nogrep "$T/rec1.jsonl" "$AK" "the endpoint never receives the AWS key id"
assert_grep "$T/rec1.jsonl" "deploy with OPENAI key \[REDACTED\]" "the endpoint receives the message with the key masked"
assert_jsonl "$T/rec1.jsonl" "any(r['input'] == ['where is [REDACTED] used'] or r['input'] == 'where is [REDACTED] used' for r in rows)" "the query is embedded masked"
start_embed "$T/rec1b.jsonl"
home "$T/h1b" ',"redactSecrets":false'
"$LCM" reindex --home "$T/h1b" --embeddings >"$T/r1b.txt" 2>&1 || { cat "$T/r1b.txt"; fail "reindex unmasked"; }
assert_grep "$T/rec1b.jsonl" "$SK" "redactSecrets false: the text goes as stored"

# ---- 2. broken answers are refused, nothing stored ------------------------------------------
for bad in huge nan dup negindex; do
    start_embed "$T/rec-$bad.jsonl" --bad $bad
    home "$T/h-$bad"
    "$LCM" reindex --home "$T/h-$bad" --embeddings >"$T/r-$bad.txt" 2>&1 && { cat "$T/r-$bad.txt"; fail "$bad: reindex claimed success"; }
    assert_grep "$T/r-$bad.txt" "embeddings (http://127.0.0.1" "$bad: the refusal names the endpoint"
    assert_eq "$(sqlq "$T/h-$bad/lcm/emb-1.sqlite" 'select count(*) from message_vectors')" "0" "$bad: no vector is stored"
    "$LCM" status --home "$T/h-$bad" >"$T/st-$bad.txt" 2>&1
    assert_grep "$T/st-$bad.txt" "0 of 8 messages embedded" "$bad: nothing is counted as embedded"
done
assert_grep "$T/r-huge.txt" "not a finite number" "1e400 is named as no finite number"
assert_grep "$T/r-dup.txt" "two vectors for input" "a repeated index is named"
assert_grep "$T/r-negindex.txt" "index not in 0.." "a negative index is named"

# ---- 3. another dimension than the stored vectors' -------------------------------------------
start_embed "$T/rec3.jsonl"
home "$T/h3"
"$LCM" reindex --home "$T/h3" --embeddings >"$T/r3.txt" 2>&1 || { cat "$T/r3.txt"; fail "reindex at 64"; }
session "$T/s.jsonl" "emb-1" 12
"$LCM" import --home "$T/h3" "$T/s.jsonl" >"$T/imp3.txt" 2>&1 || { cat "$T/imp3.txt"; fail "import more"; }
start_embed "$T/rec3b.jsonl" --dim 32
printf '{"embeddings":{"url":"http://127.0.0.1:%s","model":"embed-a","batchSize":4}}\n' "$EPORT" >"$T/h3/lcm.json"
"$LCM" reindex --home "$T/h3" --embeddings >"$T/r3b.txt" 2>&1 && { cat "$T/r3b.txt"; fail "another dimension: reindex claimed success"; }
assert_grep "$T/r3b.txt" "32 dimensions where its stored vectors have 64" "another dimension is named"
assert_eq "$(sqlq "$T/h3/lcm/emb-1.sqlite" 'select count(*) from message_vectors where dim <> 64')" "0" "no vector of another dimension is stored"
"$LCM" reindex --home "$T/h3" --embeddings --force >"$T/r3c.txt" 2>&1 && { cat "$T/r3c.txt"; fail "another dimension: reindex --force claimed success"; }
assert_eq "$(sqlq "$T/h3/lcm/emb-1.sqlite" 'select count(*) from message_vectors where dim <> 64')" "0" "--force stores no vector of another dimension either"
printf '{"embeddings":{"url":"http://127.0.0.1:%s","model":"embed-a-32","batchSize":4}}\n' "$EPORT" >"$T/h3/lcm.json"
"$LCM" reindex --home "$T/h3" --embeddings --force >"$T/r3d.txt" 2>&1 || { cat "$T/r3d.txt"; fail "a model of its own name embeds at its dimension"; }
assert_eq "$(sqlq "$T/h3/lcm/emb-1.sqlite" 'select count(*) from message_vectors where dim = 32')" "12" "the renamed model's vectors are stored"

# ---- 4. a server's error text is neutralised -------------------------------------------------
start_embed "$T/rec4.jsonl" --status 500 --message "$(printf 'model \033]0;PWNED\007 gone \033[2J\033[31mred\r\302\233')"
home "$T/h4"
"$LCM" reindex --home "$T/h4" --embeddings >"$T/r4.txt" 2>&1 && fail "a failing server: reindex claimed success"
assert_grep "$T/r4.txt" "HTTP 500: model" "the server's sentence is shown"
python3 - "$T/r4.txt" <<'PY' || fail "no control byte of the server's text reaches the terminal"
import sys
b = open(sys.argv[1], "rb").read()
bad = [c for c in b if (c < 0x20 and c not in (0x0a, 0x09)) or c == 0x7f] + [1 for i in range(len(b) - 1) if b[i] == 0xc2 and 0x80 <= b[i + 1] <= 0x9f]
sys.exit(1 if bad else 0)
PY
ok
done_ok
