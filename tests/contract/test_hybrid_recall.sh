#!/bin/sh
# Hybrid semantic recall (issue 19 item 3) against a loopback embeddings server
# (tests/contract/fake_embed.py: deterministic vectors where synonyms share a dimension).
# With nothing configured: `lcm grep --hybrid` and `lcm reindex --embeddings` say what to
# configure, `lcm status` and `lcm grep` read as before, and no request is made. With an
# endpoint: reindex embeds every row in batches, status shows coverage, `lcm grep --hybrid`
# finds the planted paraphrase that `lcm grep` misses (tagged [hybrid]) and the query was
# embedded by the same server; a switch of model re-embeds only with --force; a schema-2
# store migrates to 3 keeping every row; the plugin's worker embeds a live session's rows in
# the background through the real host and the real .so; the same session in a shared
# PostgreSQL store (tests/pg/pg.sh) is embedded there and found by meaning.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/pg/pg.sh"
LCM="$BUILD/lcm"
H="$T/h"
EMBED_PID=""
trap '[ -n "$EMBED_PID" ] && kill "$EMBED_PID" 2>/dev/null; pg_stop; cleanup' EXIT
# start_embed RECORD [OPTIONS...]: the loopback embeddings server; sets EPORT.
start_embed() {
    [ -n "$EMBED_PID" ] && kill "$EMBED_PID" 2>/dev/null && wait "$EMBED_PID" 2>/dev/null
    : >"$T/eport"
    python3 "$ROOT/tests/contract/fake_embed.py" --port 0 --record "$1" >"$T/eport" 2>"$T/embed.err" &
    EMBED_PID=$!
    i=0
    while [ ! -s "$T/eport" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
    EPORT=$(head -n 1 "$T/eport")
    [ -n "$EPORT" ] || { cat "$T/embed.err"; fail "the embeddings server did not start"; }
}
sqlq() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2]).fetchone(); print(r[0] if r else "")' "$@"; }

# A Pi session: 30 filler messages about parsing, and one planted paraphrase of a
# "deployment schedule" that shares none of those words.
python3 - "$T/s.jsonl" <<'PY'
import json, sys
rows = [{"type": "session", "version": 3, "id": "hyb-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/proj/h"}]
parent = None
texts = []
for i in range(30):
    texts.append("the parser handles nested brackets in file %d and the lexer keeps line numbers" % i)
texts[17] = "we ship to prod every friday after lunch"
for i, t in enumerate(texts):
    role = "user" if i % 2 == 0 else "assistant"
    m = {"role": role, "content": [{"type": "text", "text": t}], "timestamp": 1767225601000 + i}
    if role == "assistant":
        m.update({"api": "openai-completions", "provider": "x", "model": "y", "stopReason": "stop",
                  "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}})
    eid = "m%02d" % i
    rows.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:%02d.000Z" % i, "message": m})
    parent = eid
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
"$LCM" import --home "$H" "$T/s.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "import"; }
DB="$H/lcm/hyb-1.sqlite"
[ -f "$DB" ] || fail "the imported store is at $DB"; ok

# ---- 1. nothing configured: nothing changes, and hybrid says what it needs -----------------
start_embed "$T/rec0.jsonl"
: >>"$T/rec0.jsonl"
"$LCM" grep --home "$H" "deployment schedule" >"$T/g0.txt" 2>&1
assert_grep "$T/g0.txt" "no hits" "words alone miss the paraphrase"
"$LCM" grep --home "$H" --hybrid "deployment schedule" >"$T/h0.txt" 2>&1 && fail "hybrid without embeddings claimed success"
assert_grep "$T/h0.txt" "hybrid recall needs an embeddings endpoint" "hybrid without embeddings says what to configure"
assert_nogrep "$T/h0.txt" "no hits" "hybrid without embeddings is not a silent full-text answer"
"$LCM" reindex --home "$H" --embeddings >"$T/r0.txt" 2>&1 && fail "reindex without embeddings claimed success"
assert_grep "$T/r0.txt" "needs an embeddings endpoint" "reindex without embeddings says what to configure"
"$LCM" status --home "$H" >"$T/st0.txt" 2>&1 || fail "status"
assert_nogrep "$T/st0.txt" "embedd" "status of an unconfigured home has no embeddings line"
assert_eq "$(wc -c <"$T/rec0.jsonl" | tr -d ' ')" "0" "nothing configured: no embeddings request"
assert_eq "$(sqlq "$DB" 'select count(*) from message_vectors')" "0" "nothing configured: no vector stored"

# ---- 2. an endpoint: reindex, status, hybrid finds the paraphrase ---------------------------
printf '{"embeddings":{"url":"http://127.0.0.1:%s","model":"embed-a","batchSize":4}}\n' "$EPORT" >"$H/lcm.json"
"$LCM" grep --home "$H" --hybrid "deployment schedule" >"$T/h1.txt" 2>&1 || { cat "$T/h1.txt"; fail "hybrid before reindex"; }
assert_grep "$T/h1.txt" "0 of 30 messages embedded by embed-a" "before reindex, hybrid names the coverage"
"$LCM" reindex --home "$H" --embeddings >"$T/r1.txt" 2>&1 || { cat "$T/r1.txt"; fail "reindex"; }
assert_grep "$T/r1.txt" "embedded 30 row(s)" "reindex embeds every message"
assert_grep "$T/r1.txt" "30 of 30 messages embedded (model embed-a)" "reindex reports coverage"
assert_jsonl "$T/rec0.jsonl" "all(r['_path'] == '/v1/embeddings' and r['model'] == 'embed-a' for r in rows) and len(rows) >= 8" "the server received the document batches at /v1/embeddings with the model"
assert_jsonl "$T/rec0.jsonl" "max(len(r['input']) for r in rows if isinstance(r['input'], list)) <= 4" "batches hold at most batchSize inputs"
assert_jsonl "$T/rec0.jsonl" "sum(len(r['input']) for r in rows if isinstance(r['input'], list) and 'ship to prod' in ' '.join(r['input'])) >= 1" "the paraphrase was embedded"
assert_eq "$(sqlq "$DB" 'select count(*) from message_vectors where model = "embed-a" and dim = 64 and length(vec) = 256')" "30" "30 float32 vectors of 64 dimensions stored"
"$LCM" status --home "$H" >"$T/st1.txt" 2>&1 || fail "status configured"
assert_grep "$T/st1.txt" "embeddings: 30 of 30 messages embedded (model embed-a)" "lcm status shows coverage"
: >"$T/rec0.jsonl"
"$LCM" grep --home "$H" "deployment schedule" >"$T/g1.txt" 2>&1
assert_grep "$T/g1.txt" "no hits" "lcm grep alone still misses the paraphrase"
"$LCM" grep --home "$H" --hybrid "deployment schedule" >"$T/h2.txt" 2>&1 || { cat "$T/h2.txt"; fail "hybrid"; }
assert_grep "$T/h2.txt" "\[hybrid\] m17 \[assistant\]" "hybrid finds the planted paraphrase, tagged [hybrid]"
assert_grep "$T/h2.txt" "ship to prod every friday" "the hit shows the paraphrase"
first=$(grep -m1 '^- \[hybrid\]' "$T/h2.txt")
case "$first" in *m17*) ok ;; *) cat "$T/h2.txt"; fail "the paraphrase is the first hit" ;; esac
assert_grep "$T/h2.txt" "reciprocal rank fusion, k 60" "the fusion names k = 60"
assert_jsonl "$T/rec0.jsonl" "any(r.get('input') in ('deployment schedule', ['deployment schedule']) and r['model'] == 'embed-a' for r in rows)" "the query was embedded with the same client and model"
"$LCM" grep --home "$H" --session hyb-1 --hybrid "deployment schedule" >"$T/h3.txt" 2>&1 || { cat "$T/h3.txt"; fail "hybrid one session"; }
assert_grep "$T/h3.txt" "\[hybrid\] m17" "hybrid in one session finds it too"
"$LCM" grep --home "$H" --hybrid --json "deployment schedule" >"$T/h4.json" 2>&1
assert_jsonl "$T/h4.json" "rows[0]['tool'] == 'lcm_grep' and rows[0]['isError'] is False and '[hybrid] m17' in rows[0]['text']" "grep --hybrid --json"
"$LCM" grep --home "$H" --hybrid --regex "ship.*prod" >"$T/h5.txt" 2>&1 && fail "hybrid with a pattern claimed success"
assert_grep "$T/h5.txt" "mode hybrid takes a query" "hybrid refuses a pattern with a sentence"

# ---- 3. a switch of model re-embeds only with --force --------------------------------------
printf '{"embeddings":{"url":"http://127.0.0.1:%s/v1","model":"embed-b","batchSize":8}}\n' "$EPORT" >"$H/lcm.json"
: >"$T/rec0.jsonl"
"$LCM" reindex --home "$H" --embeddings >"$T/r2.txt" 2>&1 && fail "reindex with rows of another model exits 0"
assert_grep "$T/r2.txt" "embedded 0 row(s)" "without --force nothing of the other model is re-embedded"
assert_grep "$T/r2.txt" "30 row(s) carry another model's vectors (embed-a)" "without --force it names the rows of the other model"
assert_eq "$(wc -l <"$T/rec0.jsonl" | tr -d ' ')" "0" "without --force no request"
assert_eq "$(sqlq "$DB" 'select count(*) from message_vectors where model = "embed-a"')" "30" "the old vectors stay"
"$LCM" reindex --home "$H" --embeddings --force >"$T/r3.txt" 2>&1 || { cat "$T/r3.txt"; fail "reindex --force"; }
assert_grep "$T/r3.txt" "embedded 30 row(s)" "--force re-embeds every row"
assert_eq "$(sqlq "$DB" 'select count(*) from message_vectors where model = "embed-b"')" "30" "every vector is of the new model"
assert_jsonl "$T/rec0.jsonl" "rows and all(r['model'] == 'embed-b' for r in rows)" "--force asked the new model"
"$LCM" grep --home "$H" --hybrid "deployment schedule" >"$T/h6.txt" 2>&1 || fail "hybrid after the switch"
assert_grep "$T/h6.txt" "\[hybrid\] m17" "the new model's vectors find the paraphrase"

# ---- 4. a schema-2 store migrates to 3 keeping every row ------------------------------------
cp "$DB" "$T/old.sqlite"
python3 - "$T/old.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("DROP TRIGGER summary_vectors_stale; DROP TABLE message_vectors; DROP TABLE summary_vectors;"
                "UPDATE meta SET value = 'hyb-old' WHERE key = 'session_id'; PRAGMA user_version = 2;")
c.commit()
PY
cp "$T/old.sqlite" "$H/lcm/hyb-old.sqlite"
before=$(sqlq "$T/old.sqlite" "select group_concat(id || ':' || entry_id || ':' || length(raw_json), ',') from messages")
"$LCM" grep --home "$H" --hybrid "deployment schedule" >"$T/h7.txt" 2>&1 || fail "hybrid beside an older store"
assert_nogrep "$T/h7.txt" "older-generation" "a schema-2 store is searched as it is (its words; no vectors) by read-only recall"
assert_eq "$(sqlq "$H/lcm/hyb-old.sqlite" 'pragma user_version')" "2" "read-only recall never migrates it"
"$LCM" reindex --home "$H" --embeddings --session hyb-old >"$T/r4.txt" 2>&1 || { cat "$T/r4.txt"; fail "reindex the old store"; }
assert_eq "$(sqlq "$H/lcm/hyb-old.sqlite" 'pragma user_version')" "6" "a read-write open migrates it to the current schema (6)"
after=$(sqlq "$H/lcm/hyb-old.sqlite" "select group_concat(id || ':' || entry_id || ':' || length(raw_json), ',') from messages")
assert_eq "$after" "$before" "the migration keeps every message row as it was"
assert_eq "$(sqlq "$H/lcm/hyb-old.sqlite" 'select count(*) from message_vectors')" "30" "the migrated store takes vectors"

# ---- 5. the plugin's worker embeds a live session in the background (real host, real .so) --
rm -rf "$HOME_DIR"
mkdir -p "$HOME_DIR" "$T/work"
printf '{"embeddings":{"url":"http://127.0.0.1:%s","model":"embed-a"}}\n' "$EPORT" >"$HOME_DIR/lcm.json"
: >"$T/rec0.jsonl"
start_fake "$T/chat.jsonl"
start_host_fifo "$T/live.jsonl" "$T/live.out" "$T/live.err" --plugin-dir "$PLUGINS"
echo "when do we ship to prod" >&3
i=0
n=0
while [ $i -lt 200 ]; do
    LDB=$(ls "$HOME_DIR"/lcm/*.sqlite 2>/dev/null | head -n 1)
    if [ -n "$LDB" ]; then n=$(sqlq "$LDB" 'select count(*) from message_vectors' 2>/dev/null); fi
    [ "${n:-0}" -ge 1 ] && break
    sleep 0.05
    i=$((i+1))
done
echo "/lcm status" >&3
sleep 0.5
echo "/quit" >&3
exec 3>&-
wait "$HOST_PID"; st=$?; HOST_PID=""
assert_eq "$st" "0" "the host ran the session and quit"
[ "${n:-0}" -ge 1 ] || { cat "$T/live.err"; fail "the worker embedded the live session's messages (found ${n:-0})"; }
ok
assert_jsonl "$T/rec0.jsonl" "any('ship to prod' in ' '.join(r['input'] if isinstance(r['input'], list) else [r['input']]) for r in rows)" "the worker sent the session's text to the embeddings server"
assert_grep "$T/live.out" "embeddings: background" "/lcm status reports the background embedding"
"$LCM" grep --home "$HOME_DIR" --hybrid "deployment schedule" >"$T/h8.txt" 2>&1 || { cat "$T/h8.txt"; fail "hybrid over the live store"; }
assert_grep "$T/h8.txt" "\[hybrid\] .*ship to prod" "the live session's embedded message is found by meaning"

# ---- 6. a shared PostgreSQL store holds the vectors, and hybrid recall runs on it -----------
pg_available || fail "no PostgreSQL server binaries (tests/deps.sh installs the postgresql package)"
pg_start >"$T/pg_start.txt" 2>&1 || { cat "$T/pg_start.txt"; fail "the PostgreSQL server did not start"; }
HP="$T/hp"
"$LCM" import --home "$HP" "$T/s.jsonl" >"$T/pimp.txt" 2>&1 || { cat "$T/pimp.txt"; fail "import into PostgreSQL"; }
[ -z "$(find "$HP" -name '*.sqlite' 2>/dev/null)" ] || fail "the shared store writes no SQLite file"
ok
printf '{"embeddings":{"url":"http://127.0.0.1:%s","model":"embed-a","batchSize":4}}\n' "$EPORT" >"$HP/lcm.json"
"$LCM" grep --home "$HP" --hybrid "deployment schedule" >"$T/p1.txt" 2>&1 || { cat "$T/p1.txt"; fail "hybrid on PostgreSQL before reindex"; }
assert_grep "$T/p1.txt" "0 of 30 messages embedded by embed-a" "on PostgreSQL, hybrid names the coverage"
assert_nogrep "$T/p1.txt" "cannot hold vectors" "the PostgreSQL store holds vectors"
"$LCM" reindex --home "$HP" --embeddings >"$T/pr1.txt" 2>&1 || { cat "$T/pr1.txt"; fail "reindex on PostgreSQL"; }
assert_grep "$T/pr1.txt" "embedded 30 row(s)" "reindex embeds every message of the shared store"
assert_eq "$(pg_sql "SELECT count(*) FROM lcm.message_vectors WHERE model = 'embed-a' AND dim = 64 AND length(vec) = 256")" "30" "30 float32 vectors of 64 dimensions in lcm.message_vectors"
"$LCM" grep --home "$HP" "deployment schedule" >"$T/pg1.txt" 2>&1
assert_grep "$T/pg1.txt" "no hits" "on PostgreSQL, words alone miss the paraphrase"
"$LCM" grep --home "$HP" --hybrid "deployment schedule" >"$T/p2.txt" 2>&1 || { cat "$T/p2.txt"; fail "hybrid on PostgreSQL"; }
first=$(grep -m1 '^- \[hybrid\]' "$T/p2.txt")
case "$first" in *m17*"ship to prod"*) ok ;; *) cat "$T/p2.txt"; fail "on PostgreSQL the paraphrase is the first hybrid hit" ;; esac
assert_grep "$T/p2.txt" "30 vector(s) compared; 30 of 30 messages embedded by embed-a" "on PostgreSQL every vector is compared"
# A vector's row leaving (a branch marked removed in the database) leaves the scan.
pg_sql "UPDATE lcm.messages SET removed = 1 WHERE entry_id = 'm17'" >/dev/null
"$LCM" grep --home "$HP" --hybrid "deployment schedule" >"$T/p3.txt" 2>&1 || { cat "$T/p3.txt"; fail "hybrid on PostgreSQL after a removal"; }
assert_nogrep "$T/p3.txt" "\[hybrid\] m17" "a removed message is no meaning hit on PostgreSQL"
assert_grep "$T/p3.txt" "29 vector(s) compared" "the removed row's vector is left out of the scan"
done_ok
