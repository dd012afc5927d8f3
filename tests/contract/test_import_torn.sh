#!/bin/sh
# lcm import racing a writer (issue 14.10): a last line with no newline that is not JSON yet
# is a line a host is still appending. import waits for it (up to 2 s) and reads it once it
# is complete; if it stays incomplete it is left out with a note (not counted as a malformed
# line, not an error), and the next import takes it.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
python3 - "$T/full.jsonl" <<'PY'
import json, sys
rows = [{"type": "session", "version": 3, "id": "11112222-3333-4444-5555-666677778888",
         "timestamp": "2026-02-03T10:00:00.000Z", "cwd": "/tmp"}]
parent = None
for i in range(6):
    eid = "t%07d" % i
    rows.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-02-03T10:00:0%d.000Z" % i,
                 "message": {"role": "user", "content": [{"type": "text", "text": ("TORN_%d " % i) * 6000}],
                             "timestamp": 1770112800000 + i}})
    parent = eid
open(sys.argv[1], "w").write("\n".join(json.dumps(r) for r in rows) + "\n")
PY
LAST=$(tail -n 1 "$T/full.jsonl")
head -n 6 "$T/full.jsonl" > "$T/s.jsonl"
printf '%s' "$LAST" | head -c 20000 >> "$T/s.jsonl"
# 1. The writer finishes the line while import waits: all six messages.
( sleep 0.5; printf '%s\n' "$LAST" | tail -c +20001 >> "$T/s.jsonl" ) &
W=$!
"$LCM" import --home "$T/h1" "$T/s.jsonl" > "$T/i1.out" 2>&1 || { cat "$T/i1.out"; fail "import while the line is written"; }
wait "$W"
ok
assert_grep "$T/i1.out" "6 messages, 6 new, 0 marked removed, 0 lines skipped" "the line completed meanwhile is imported"
cmp -s "$T/s.jsonl" "$T/full.jsonl" || fail "the writer's file is whole"; ok
# 2. The line stays incomplete: left out with a note, exit 0, and the next import takes it.
head -n 6 "$T/full.jsonl" > "$T/s2.jsonl"
printf '%s' "$LAST" | head -c 20000 >> "$T/s2.jsonl"
"$LCM" import --home "$T/h2" "$T/s2.jsonl" > "$T/i2.out" 2>&1 || { cat "$T/i2.out"; fail "import of a torn tail fails"; }
ok
assert_grep "$T/i2.out" "5 messages, 5 new, 0 marked removed, 0 lines skipped" "the five whole lines are imported"
assert_grep "$T/i2.out" "note: the last line of .* was still incomplete after 2 s" "the torn tail is named"
printf '%s\n' "$LAST" | tail -c +20001 >> "$T/s2.jsonl"
"$LCM" import --home "$T/h2" "$T/s2.jsonl" > "$T/i3.out" 2>&1 || { cat "$T/i3.out"; fail "the next import"; }
ok
assert_grep "$T/i3.out" "6 messages, 1 new" "the next import takes the completed line"
done_ok
