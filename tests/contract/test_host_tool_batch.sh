#!/bin/sh
# agent-host --tool-batch (issue 17 item 10): many tool calls through one host process
# that loads the plugins and the session once. The same calls against two copies of one
# replayed home, as separate --tool runs and as one batch, give the same answers (the
# plugin's lcm_grep and lcm_expand_query, a tool error, a built-in tool); a malformed line,
# arguments that are no object and an unknown tool each get an error line and the batch
# goes on; EOF ends it with exit 0; stdout carries only answer lines; every call is
# recorded in the session as --tool records it, each with its own call id; session_start
# fired once for the whole batch.
. "$(dirname "$0")/lib.sh"

"$HOST" --help >"$T/help.txt" 2>&1
assert_grep "$T/help.txt" "--tool-batch" "--help documents --tool-batch"
assert_grep "$T/help.txt" "is_error" "--help states the answer's fields"

# One replayed session with needles, then two identical copies of its home and session.
mkdir -p "$T/work"
"$HOST" gen --seed 4 --tokens 24000 --needles "$T/needles.jsonl" "$T/in.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --cwd "$T/work" \
    replay "$T/in.jsonl" >"$T/replay.out" 2>"$T/replay.err" || { cat "$T/replay.err"; fail "replay"; }
ok
for side in one batch; do
    cp -r "$HOME_DIR" "$T/home-$side" && cp "$T/s.jsonl" "$T/s-$side.jsonl" || fail "copy the home"
done
printf 'batch probe file\nsecond line\n' >"$T/work/notes.txt"

# The calls: JSON arguments per line. lcm_grep first, so no earlier call's recorded result
# can be one of its hits (those entries get ids of their own on each side).
python3 - "$T/needles.jsonl" "$T/calls.tsv" <<'PY' || fail "write the calls"
import json, sys
needles = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
n0, n1 = needles[0], needles[1]
calls = [
    ("lcm_grep", {"pattern": r"\b(?:%s=%s|%s=%s)\b" % (n0["key"], n0["value"], n1["key"], n1["value"])}),
    ("lcm_expand_query", {"entry_id": n0["entry_id"]}),
    ("lcm_expand_query", {"entry_id": n1["entry_id"], "max_tokens": 5000}),
    ("lcm_expand_query", {"entry_id": "no-such-entry"}),
    ("read", {"path": "notes.txt"}),
]
with open(sys.argv[2], "w") as f:
    for name, args in calls:
        f.write("%s\t%s\n" % (name, json.dumps(args)))
PY
ok

# Side one: a fresh host per call, as --tool.
i=0
while IFS="$(printf '\t')" read -r name args; do
    i=$((i+1))
    "$HOST" --home "$T/home-one" --plugin-dir "$PLUGINS" --session "$T/s-one.jsonl" --cwd "$T/work" \
        --tool "$name" "$args" >"$T/one-$i.out" 2>"$T/one-$i.err"
    echo $? >"$T/one-$i.rc"
done <"$T/calls.tsv"
assert_eq "$i" "5" "five separate --tool runs"

# Side batch: the same calls in one process, with a malformed line, arguments that are no
# object and an unknown tool among them, and a blank line.
python3 - "$T/calls.tsv" "$T/batch.in" <<'PY' || fail "write the batch input"
import json, sys
rows = [l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1]) if l.strip()]
lines = []
for i, (name, args) in enumerate(rows):
    lines.append(json.dumps({"id": "c%d" % (i + 1), "name": name, "args": json.loads(args)}))
    if i == 1:
        lines += ["{this is not json", "", json.dumps({"id": "bad-args", "name": "read", "args": [1, 2]}),
                  json.dumps({"id": "unknown", "name": "no_such_tool", "args": {}})]
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
"$HOST" --home "$T/home-batch" --plugin-dir "$PLUGINS" --session "$T/s-batch.jsonl" --cwd "$T/work" \
    --trace "$T/trace.jsonl" --tool-batch <"$T/batch.in" >"$T/batch.out" 2>"$T/batch.err"
assert_eq "$?" "0" "EOF ends the batch with exit status 0"

python3 - "$T" <<'PY' || fail "the batch answers as the separate --tool runs do"
import json, sys
T = sys.argv[1]
def check(c, what):
    if not c:
        print("FAIL:", what)
        sys.exit(1)
raw = open(T + "/batch.out", encoding="utf-8").read().split("\n")
check(raw[-1] == "", "stdout ends with a complete line")
answers = [json.loads(l) for l in raw[:-1]]  # every stdout line is one JSON answer
check(len(answers) == 8, "one answer per non-blank line (got %d)" % len(answers))
by_id = {a.get("id"): a for a in answers}
check(answers[2].get("id") is None and answers[2]["is_error"] and "JSON object" in answers[2]["error"],
      "a malformed line is answered with an error line")
check(by_id["bad-args"]["is_error"] and "args" in by_id["bad-args"]["error"], "args that are no object: an error line")
check(by_id["unknown"]["is_error"] and "no_such_tool" in by_id["unknown"]["error"], "an unknown tool: an error line")
check([a.get("id") for a in answers] == ["c1", "c2", None, "bad-args", "unknown", "c3", "c4", "c5"],
      "answers come in the order of the calls, ids echoed")
for i in range(1, 6):
    a = by_id["c%d" % i]
    rc = int(open("%s/one-%d.rc" % (T, i)).read())
    out = open("%s/one-%d.out" % (T, i), encoding="utf-8").read()
    err = open("%s/one-%d.err" % (T, i), encoding="utf-8").read()
    check(a["is_error"] == (rc != 0), "call %d: is_error matches --tool's exit status %d" % (i, rc))
    check(a.get("text", "") + "\n" == out, "call %d: the same result text as --tool" % i)
    if rc:
        check(a["error"] in err, "call %d: the same error reason as --tool" % i)
check("N" in by_id["c1"]["text"] and by_id["c1"]["text"].count("\n- ") == 2, "the grep found both needles")
check(by_id["c4"]["is_error"], "a tool's own error is is_error")
check(by_id["c5"]["text"].startswith("batch probe file"), "a built-in tool runs too")
# Recorded as --tool records it: one toolCall + toolResult per call that ran, ids distinct.
def calls(path):
    rows = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
    ids = [b["id"] for r in rows if r.get("type") == "message" and r["message"]["role"] == "assistant"
           for b in r["message"]["content"] if b.get("type") == "toolCall" and b["id"].startswith("call_host_")]
    results = [r for r in rows if r.get("type") == "message" and r["message"]["role"] == "toolResult"
               and r["message"]["toolCallId"].startswith("call_host_")]
    return ids, results
ids, results = calls(T + "/s-batch.jsonl")
ids1, results1 = calls(T + "/s-one.jsonl")
check(len(ids) == 5 and len(results) == 5 and len(ids1) == 5, "five calls recorded on each side")
check(len(set(ids)) == 5, "each call of the batch has its own call id")
tr = [json.loads(l) for l in open(T + "/trace.jsonl", encoding="utf-8") if l.strip()]
starts = {t.get("plugin") for t in tr if t.get("event") == "session_start"}
n_starts = sum(1 for t in tr if t.get("event") == "session_start" and t.get("plugin") == "lossless-context")
check(n_starts == 1, "the plugin's session_start fired once for the batch (got %d)" % n_starts)
check(sum(1 for t in tr if t.get("event") == "tool_call" and t.get("plugin") == "lossless-context") >= 5,
      "every call went through the plugins' tool path")
PY
ok

# Not combinable with another mode (stdout is the answers' channel).
"$HOST" --home "$T/home-batch" --plugin-dir "$PLUGINS" --session "$T/s-batch.jsonl" \
    --tool-batch --tool read '{"path":"x"}' </dev/null >"$T/combo.out" 2>"$T/combo.err"
assert_eq "$?" "1" "--tool-batch with --tool is refused"
assert_grep "$T/combo.err" "cannot be combined" "the refusal says why"
done_ok
