#!/bin/sh
# runner: alone (the summarizer worker races the replay: on a loaded machine a swap's request has gone out near raw size, then the next keep did not extend it)
# LCM compaction through the real host and the real .so: a generated session of ~300k
# tokens replayed at a 32k window with the extractive summarizer. Every request stays
# under the window; every request that keeps LCM's pinned cut over an append-only raw
# input extends the previous request byte for byte (SHA-256 of its prefix, from
# LCM_REQUEST_LOG); swaps and re-cuts happen; the host's compactions are supplied from the
# DAG; the DAG covers every aged message; a planted needle is found by lcm_grep and read
# by lcm_expand_query.
. "$(dirname "$0")/lib.sh"

IN="$T/in.jsonl"
OUT="$T/out.jsonl"
REQ="$T/requests.jsonl"
TRACE="$T/trace.jsonl"
WINDOW=32000
"$HOST" gen --seed 11 --tokens 300000 "$IN" >/dev/null || fail "gen"
printf '{"leafChunkTokens":3000,"summaryTokens":300}\n' > "$HOME_DIR/lcm.json"
LCM_REQUEST_LOG="$REQ" "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" \
    --window $WINDOW --trace "$TRACE" replay "$IN" > "$T/replay.txt" 2>&1 || {
    cat "$T/replay.txt"; fail "replay"; }

assert_jsonl "$REQ" "len(rows) > 200" "one request line per request"
assert_jsonl "$REQ" "all(r['tokens'] < r['window'] == $WINDOW for r in rows)" \
    "every request sent stays under the window"
assert_jsonl "$REQ" "max(r['raw'] for r in rows) > $WINDOW" \
    "the raw context did outgrow the window (the projection was needed)"
assert_jsonl "$REQ" "sum(r['action'] == 'swap' for r in rows) >= 1" "at least one swap"
assert_jsonl "$REQ" "sum(r['action'] == 'recut' for r in rows) >= 1" "at least one re-cut"
# Past live context's overflow-guard limit (window - 4096 - reserve 2048, docs/DESIGN.md §5.4) the
# guard withholds the oldest raw tool result on purpose; below it nothing may move.
GUARD=$((WINDOW - 4096 - 2048))
assert_jsonl "$REQ" "all(b['prefixSha'] == a['sha'] for a, b in zip(rows, rows[1:]) if b['action'] == 'keep' and b['rawAppended'] and b['cut'] == a['cut'] > 0 and max(a['tokens'], b['tokens']) < $GUARD)" \
    "a request that keeps the pin extends the previous one byte for byte"
assert_jsonl "$REQ" "sum(1 for a, b in zip(rows, rows[1:]) if b['action'] == 'keep' and b['rawAppended'] and b['cut'] == a['cut'] > 0 and b['zone'] == 'swap') >= 20" \
    "many requests between the swap and re-cut lines were checked"
assert_jsonl "$REQ" "all(r['zone'] == 'recut' for r in rows if r['action'] == 'recut')" \
    "re-cuts happen only past the re-cut line"
assert_jsonl "$REQ" "all(r['raw'] >= r['swap'] for r in rows if r['action'] == 'swap')" \
    "swaps happen only past the swap line"
# the trace agrees: one context call per request, each answered with a projection
assert_jsonl "$TRACE" "sum(1 for r in rows if r['event'] == 'context' and r['handled']) == $(wc -l < "$REQ")" \
    "one traced context call per logged request"
assert_jsonl "$TRACE" "all(r['status'] == 0 for r in rows if r['event'] == 'context' and r['handled'])" \
    "every context call succeeded"

# (On a window this small the host's own threshold, window - window/4, sits below the re-cut
# line, so the host may compact in the band; every such compaction must come from the DAG.)
NHOST=$(grep -c '"type":"compaction"' "$OUT")
# the blocking regime: a host compaction (here /compact) is supplied from the DAG
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --window $WINDOW \
    --command "/compact" > "$T/compact.txt" 2>&1 || { cat "$T/compact.txt"; fail "/compact"; }
assert_jsonl "$OUT" "sum(r.get('type') == 'compaction' for r in rows) >= max(1, $NHOST)" "the host compacted"
assert_jsonl "$OUT" "all(r['fromHook'] and r['summary'].find('[lcm:summary #') >= 0 for r in rows if r.get('type') == 'compaction')" \
    "every host compaction was supplied from the DAG"

# coverage: every message older than the fresh tail is under a leaf, nothing twice
DB=$(ls "$HOME_DIR"/lcm/*.sqlite | head -1)
python3 - "$DB" <<'PY' || fail "the DAG covers every aged message exactly once"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
elig = "m.removed = 0 AND m.role NOT IN ('compactionSummary','branchSummary')"
unc = "NOT EXISTS (SELECT 1 FROM summary_messages sm WHERE sm.entry_id = m.entry_id)"
first_unc, unc_tokens = c.execute(f"SELECT min(ordinal), coalesce(sum(tokens),0) FROM messages m WHERE {elig} AND {unc}").fetchone()
last_cov = c.execute(f"SELECT max(m.ordinal) FROM messages m WHERE {elig} AND NOT ({unc})").fetchone()[0]
dup = c.execute("SELECT count(*) FROM (SELECT entry_id FROM summary_messages GROUP BY entry_id HAVING count(*) > 1)").fetchone()[0]
total = c.execute(f"SELECT count(*) FROM messages m WHERE {elig}").fetchone()[0]
big = c.execute(f"SELECT coalesce(max(tokens),0) FROM messages m WHERE {elig} AND {unc}").fetchone()[0]
# keep-recent is 11,200 at this window (half the swap line); one leaf chunk may wait, and
# the tail ends on a whole message, however large (a tool result can be 20k tokens)
ok = dup == 0 and last_cov is not None and (first_unc is None or first_unc > last_cov) and unc_tokens <= 11200 + 3000 + 4000 + big
print(f"eligible {total}, last covered {last_cov}, first uncovered {first_unc}, uncovered tokens {unc_tokens}, duplicates {dup}")
sys.exit(0 if ok else 1)
PY
ok

# a needle planted early is found and read back
NEEDLE=$(grep -o 'Remember N[0-9]*=[0-9]*' "$IN" | head -1 | sed 's/Remember //')
KEY=${NEEDLE%=*}
VAL=${NEEDLE#*=}
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --window $WINDOW \
    --tool lcm_grep "{\"query\":\"\\\"$KEY $VAL\\\"\"}" > "$T/grep.txt" 2>&1 || fail "lcm_grep ran"
assert_grep "$T/grep.txt" "$KEY=$VAL" "lcm_grep finds the needle $NEEDLE"
assert_grep "$T/grep.txt" "covered by summary #" "the hit names the covering summary"
ENTRY=$(grep -o '^- [0-9a-f]*' "$T/grep.txt" | head -1 | cut -c3-)
[ -n "$ENTRY" ] || fail "the hit names an entry id"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --window $WINDOW \
    --tool lcm_expand_query "{\"entry_id\":\"$ENTRY\",\"question\":\"What is $KEY?\"}" > "$T/expand.txt" 2>&1 \
    || fail "lcm_expand_query ran"
assert_grep "$T/expand.txt" "$KEY=$VAL" "lcm_expand_query reads the needle back"

# the pin survives the process: a resumed session reports it
assert_grep "$T/replay.txt" "replayed" "replay summary printed"
done_ok
