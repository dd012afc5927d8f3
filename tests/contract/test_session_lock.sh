#!/bin/sh
# Appends to a session file take an advisory lock (issue 14.10): two replays into one session
# file at once, of a session whose lines are 54 KB (stdio writes each in several write()s),
# leave every line whole JSON, and every input entry has an intact copy. Without the lock
# the two writers' chunks interleave and lines are torn.
. "$(dirname "$0")/lib.sh"
python3 - "$T/in.jsonl" <<'PY'
import json, sys
rows = [{"type": "session", "version": 3, "id": "0f1e2d3c-4b5a-4697-8a8b-aaaaaaaaaaaa",
         "timestamp": "2026-02-03T10:00:00.000Z", "cwd": "/tmp"}]
parent = None
for i in range(120):
    txt = (("L%03d " % i) + ("lorem ipsum dolor sit amet %d " % i) * 1900)[:54000]
    if i % 2 == 0:
        m = {"role": "user", "content": [{"type": "text", "text": txt}], "timestamp": 1770112800000 + i}
    else:
        m = {"role": "assistant", "content": [{"type": "text", "text": txt}], "api": "openai-completions",
             "provider": "fx", "model": "fx", "stopReason": "stop", "timestamp": 1770112800000 + i,
             "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}
    eid = "e%07d" % i
    rows.append({"type": "message", "id": eid, "parentId": parent,
                 "timestamp": "2026-02-03T10:00:%02d.000Z" % (i % 60), "message": m})
    parent = eid
open(sys.argv[1], "w").write("\n".join(json.dumps(r) for r in rows) + "\n")
PY
for round in 1 2; do
    rm -rf "$T/h1" "$T/h2" "$T/out.jsonl"
    mkdir -p "$T/h1" "$T/h2"
    "$HOST" --home "$T/h1" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" replay "$T/in.jsonl" \
        > "$T/r1.out" 2>&1 &
    P1=$!
    "$HOST" --home "$T/h2" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" replay "$T/in.jsonl" \
        > "$T/r2.out" 2>&1 &
    P2=$!
    wait "$P1" || { cat "$T/r1.out"; fail "replay 1"; }
    wait "$P2" || { cat "$T/r2.out"; fail "replay 2"; }
    ok
    python3 - "$T/in.jsonl" "$T/out.jsonl" <<'PY' || fail "round $round: a line of the session file is torn"
import json, sys
want = {json.loads(l)["id"]: l for l in open(sys.argv[1]) if l.strip()}
seen, torn = {}, 0
for n, l in enumerate(open(sys.argv[2], encoding="utf-8"), 1):
    try:
        r = json.loads(l)
    except ValueError:
        torn += 1
        print("line %d is not JSON (%d bytes)" % (n, len(l)))
        continue
    seen.setdefault(r.get("id"), r)
missing = [i for i in want if i not in seen]
print("torn lines:", torn, "missing ids:", len(missing))
sys.exit(1 if torn or missing else 0)
PY
    ok
done
done_ok
