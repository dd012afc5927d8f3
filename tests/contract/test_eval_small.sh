#!/bin/sh
# The CI-sized procedural long-context evaluation: the generator's contract (same seed,
# same bytes; unique needles, each in the entry the answer key names, in every kind of
# place), then one small seed (64k tokens at a 16k window) through tests/eval/eval.py
# over the real host + .so: every needle returned by address, in one reader window and by
# lcm_grep, with zero failures, and the report, table, picture and metrics row written;
# probed through one --tool-batch host by default, and the same per-needle answers when
# probed with a fresh host per call (--probe tool).
. "$(dirname "$0")/lib.sh"

# 1. same seed, same bytes (session and answer key); another seed, other bytes
"$HOST" gen --seed 2 --tokens 64000 --needles "$T/n1.jsonl" "$T/a.jsonl" >/dev/null || fail "gen a"
"$HOST" gen --seed 2 --tokens 64000 --needles "$T/n2.jsonl" "$T/b.jsonl" >/dev/null || fail "gen b"
"$HOST" gen --seed 3 --tokens 64000 "$T/c.jsonl" >/dev/null || fail "gen c"
cmp -s "$T/a.jsonl" "$T/b.jsonl" || fail "the same seed writes the same session bytes"; ok
cmp -s "$T/n1.jsonl" "$T/n2.jsonl" || fail "the same seed writes the same needles"; ok
! cmp -s "$T/a.jsonl" "$T/c.jsonl" || fail "another seed writes another session"; ok

# 2. the answer key matches the session: unique keys, each key=value inside the entry it
#    names and nowhere else, large-tool needles in results >= 32,000 chars read from a path
python3 - "$T/a.jsonl" "$T/n1.jsonl" <<'PY' || fail "the needles file is the session's answer key"
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
needles = [json.loads(l) for l in open(sys.argv[2])]
by_id = {r["id"]: r for r in rows if "id" in r}
calls = {}
for r in rows:
    m = r.get("message", {})
    if m.get("role") == "assistant":
        for b in m["content"]:
            if b.get("type") == "toolCall":
                calls[b["id"]] = b
text = open(sys.argv[1]).read()
keys = [n["key"] for n in needles]
assert len(keys) == len(set(keys)), "keys repeat"
assert len(needles) >= 10, "too few needles: %d" % len(needles)
for n in needles:
    kv = "%s=%s" % (n["key"], n["value"])
    assert len(re.findall(r"\b%s\b" % re.escape(kv), text)) == 1, kv + " is not unique in the session"
    e = by_id[n["entry_id"]]
    assert kv in json.dumps(e["message"]), kv + " is not in its entry"
    if n["part"] == "large-tool":
        m = e["message"]
        assert m["role"] == "toolResult" and len(m["content"][0]["text"]) >= 32000, kv + " not in a large result"
        assert "path" in calls[m["toolCallId"]]["arguments"], kv + ": the large result's call names no path"
wheres = {n["where"] for n in needles}
for w in ("user", "assistant", "tool", "large-tool", "removed-branch"):
    assert w in wheres, "no needle in " + w
print("%d needles, places %s" % (len(needles), sorted(wheres)))
PY
ok

# 3. the evaluation itself, one small seed (probing through one agent-host --tool-batch)
python3 "$ROOT/tests/eval/eval.py" --build "$BUILD" --out "$T/eval" --sizes 64k --window 16000 --seed 2 \
    > "$T/eval.txt" 2>&1
rc=$?
cat "$T/eval.txt" | grep -v '^|' | head -20
assert_eq "$rc" "0" "the evaluation reports zero failures"
assert_grep "$T/eval.txt" "eval: 0 failure(s)" "the summary line says zero failures"
assert_jsonl "$T/eval/metrics.jsonl" \
    'len(rows) == 1 and rows[0]["kind"] == "eval" and rows[0]["failures"] == 0 and rows[0]["needles"] >= 10 and rows[0]["by_address"] == rows[0]["needles"] and rows[0]["by_grep"] == rows[0]["needles"] and rows[0]["requests"] > 0 and rows[0]["summaries"] > 0' \
    "one metrics row: every needle by address and by grep, the DAG built"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if len(r['rows']) == 1 and not r['failures'] else 1)" \
    "$T/eval/report.json" || fail "report.json holds the row and no failure"; ok
assert_grep "$T/eval/table.md" "| 64k |" "the readable table has the row"
python3 -c "import sys, xml.dom.minidom as m; d=m.parse(sys.argv[1]); sys.exit(0 if d.getElementsByTagName('polyline') else 1)" \
    "$T/eval/context-64k.svg" || fail "the picture is well-formed SVG with the context curve"; ok
assert_jsonl "$T/eval/metrics.jsonl" 'rows[0]["probe"] == "batch" and rows[0]["probe_hosts"] == 1' \
    "the default probes through one batch host"

# 4. the same seed probed the earlier way, a fresh host per call: the same answers
python3 "$ROOT/tests/eval/eval.py" --build "$BUILD" --out "$T/eval-tool" --sizes 64k --window 16000 --seed 2 \
    --probe tool > "$T/eval-tool.txt" 2>&1
assert_eq "$?" "0" "the evaluation with --probe tool reports zero failures"
python3 - "$T/eval/64k/needles-result.jsonl" "$T/eval-tool/64k/needles-result.jsonl" <<'PY' || fail "both probes answer alike"
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
keys = ("key", "address", "one_window", "grep", "hidden")
assert [[r.get(k) for k in keys] for r in a] == [[r.get(k) for k in keys] for r in b], "per-needle answers differ"
PY
ok
done_ok
