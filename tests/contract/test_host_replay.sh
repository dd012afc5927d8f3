#!/bin/sh
# runner: alone (compares token figures the summarizer worker races to produce)
# Replay through the real host and plugins: the output session is valid, keeps the
# input's ids / timestamps / tree shape, fires session_tree for an abandoned branch,
# reports a malformed line by number without stopping, and is deterministic.
. "$(dirname "$0")/lib.sh"
FX="$ROOT/tests/contract/fixtures/branch.jsonl"

# check_shape IN OUT: every input entry is in OUT with its timestamp and type; its parent
# is the input parent, or entries the host/plugins appended whose chain leads there.
check_shape() { python3 - "$1" "$2" <<'PY'
import json, sys
def load(p):
    rows = []
    for l in open(p, encoding="utf-8"):
        try: rows.append(json.loads(l))
        except ValueError: pass
    return rows
inp, out = load(sys.argv[1]), load(sys.argv[2])
assert out[0]["type"] == "session" and out[0]["version"] == 3, "header"
assert out[0]["id"] == inp[0]["id"], "session id kept"
ob = {r["id"]: r for r in out[1:]}
ib = {r["id"]: r for r in inp[1:]}
assert len(ob) == len(out) - 1, "ids unique"
for r in out[1:]:
    for k in ("type", "id", "parentId", "timestamp"):
        assert k in r, "entry %s lacks %s" % (r.get("id"), k)
    assert r["parentId"] is None or r["parentId"] in ob, "dangling parent in %s" % r["id"]
for i in inp[1:]:
    o = ob.get(i["id"])
    assert o is not None, "input entry %s missing" % i["id"]
    assert o["timestamp"] == i["timestamp"] and o["type"] == i["type"], "kept %s" % i["id"]
    p = o["parentId"]
    while p is not None and p not in ib:
        p = ob[p]["parentId"]
    assert p == i["parentId"], "tree shape of %s: %s != %s" % (i["id"], p, i["parentId"])
    if i["type"] == "custom":
        assert o["data"] == i["data"] and o["customType"] == i["customType"], "custom carried"
print("shape ok:", len(inp) - 1, "input entries,", len(out) - 1, "output entries")
PY
}

# 1. the fixture: a branch, a malformed line, another extension's custom entry.
# Summaries on the host thread in lockstep with the turns: with the background worker, which
# cut a request gets (and so the host's compaction's tokensBefore) depends on how far the
# worker has come, and the claim below is that the same replay gives the same bytes.
mkdir -p "$T/home2"
printf '{"summaryWorker":false}\n' | tee "$HOME_DIR/lcm.json" > "$T/home2/lcm.json"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" \
    --trace "$T/trace.jsonl" replay "$FX" --window 1200 >"$T/stdout" 2>"$T/stderr"
assert_eq "$?" "0" "replay exits 0"
assert_grep "$T/stderr" "branch.jsonl:11: malformed JSON; line skipped" "malformed line reported with its number"
assert_grep "$T/stdout" "replayed 17 entries" "summary line counts the entries"
assert_grep "$T/stdout" "1 tree moves" "summary counts the tree move"
check_shape "$FX" "$T/out.jsonl" || fail "output keeps ids, timestamps and tree shape"; ok
assert_nogrep "$T/out.jsonl" "broken01" "the malformed line is not carried over"
assert_jsonl "$T/trace.jsonl" \
  "any(r['event']=='session_tree' and r.get('handled') and json.loads(json.dumps(r['input']))['newLeafId']=='b0000002' and r['input']['oldLeafId'] for r in rows)" \
  "session_tree fired with the abandoned branch's parent as newLeafId"
assert_jsonl "$T/out.jsonl" "any(r['type']=='compaction' for r in rows[1:])" "threshold compaction ran with --window 1200"
assert_jsonl "$T/trace.jsonl" "any(r['event']=='session_compact' and r.get('handled') for r in rows)" "session_compact fired"
# The input file is untouched.
cmp -s "$FX" "$ROOT/tests/contract/fixtures/branch.jsonl" || fail "input unchanged"; ok

# 2. deterministic: the same replay again gives the same bytes
"$HOST" --home "$T/home2" --plugin-dir "$PLUGINS" --session "$T/out2.jsonl" \
    replay "$FX" --window 1200 >/dev/null 2>&1
assert_eq "$?" "0" "second replay exits 0"
cmp -s "$T/out.jsonl" "$T/out2.jsonl" || { diff "$T/out.jsonl" "$T/out2.jsonl" | head -5; fail "replay is deterministic"; }; ok

# 3. a generated session with abandoned branches keeps its shape too
"$HOST" gen --seed 3 --tokens 60000 "$T/gen.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/gout.jsonl" \
    replay "$T/gen.jsonl" --window 24000 >"$T/gstdout" 2>"$T/gstderr"
assert_eq "$?" "0" "replay of a generated session exits 0"
check_shape "$T/gen.jsonl" "$T/gout.jsonl" || fail "generated session shape kept"; ok
assert_nogrep "$T/gstdout" " 0 tree moves" "the generated session has tree moves"

# 4. the output session reopens cleanly and status commands work on it
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" \
    --command "/lcm status" --command "/clm status" >"$T/status" 2>"$T/status.err"
assert_eq "$?" "0" "status on the replayed session exits 0"
assert_nogrep "$T/status.err" "malformed" "the replayed session has no malformed line"

# 5. a missing input is a clear one-line failure, and nothing is written
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/none.jsonl" \
    replay "$T/does-not-exist.jsonl" >/dev/null 2>"$T/missing.err"
[ "$?" -ne 0 ] || fail "missing input fails"; ok
assert_grep "$T/missing.err" "cannot open" "missing input named"
# 6. an existing session with a torn last line: reported with its number, never
#    rewritten; the next entry starts on a line of its own.
head -n 5 "$FX" >"$T/torn.jsonl"
printf '{"type":"message","id":"torn0001","parentId":"r00' >>"$T/torn.jsonl"
cp "$T/torn.jsonl" "$T/torn.before"
"$HOST" --home "$HOME_DIR" --plugin "$BUILD/tests/example-plugin.so" --session "$T/torn.jsonl" \
    --tool example_echo '{"a":1}' >/dev/null 2>"$T/torn.err"
assert_eq "$?" "0" "a session with a torn line still opens"
assert_grep "$T/torn.err" "torn.jsonl:6: malformed JSON; line skipped" "torn line reported with its number"
size=$(wc -c <"$T/torn.before")
head -c "$size" "$T/torn.jsonl" | cmp -s - "$T/torn.before" || fail "existing bytes are never rewritten"; ok
assert_jsonl_tail() { python3 - "$1" <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
new = [json.loads(l) for l in lines[6:] if l.strip()]
assert new and new[0]["parentId"] == "r0000001", "the new entry continues from the last good entry"
PY
}
assert_jsonl_tail "$T/torn.jsonl" || fail "appended entries are whole lines after the torn one"; ok
done_ok
