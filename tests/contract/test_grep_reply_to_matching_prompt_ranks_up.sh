#!/bin/sh
# Across sessions, the agent's reply to a prompt that asked the same thing ranks above a
# message that only repeats one of the question's words more often (recall.c,
# RECALL_TURN_WEIGHT): asked "how do I reach the vm from the browser?", the reply "Open
# http://192.168.6.200:8006 in your browser." (its prompt asked just that) comes before an
# unrelated note saying "browser" twice, and the prompt itself is still found.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
cat >"$T/a.jsonl" <<'J'
{"type":"session","version":3,"id":"5a0e1d2c-0000-4000-8000-0000000ce501","timestamp":"2026-02-03T10:00:00.000Z","cwd":"/work/vm"}
{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-02-03T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"how can I reach the vm web console from a browser"}],"timestamp":1770112801000}}
{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-02-03T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Open http://192.168.6.200:8006 in your browser."}],"stopReason":"stop","timestamp":1770112802000}}
J
cat >"$T/b.jsonl" <<'J'
{"type":"session","version":3,"id":"5a0e1d2c-0000-4000-8000-0000000ce502","timestamp":"2026-02-04T10:00:00.000Z","cwd":"/work/vm"}
{"type":"message","id":"b0000001","parentId":null,"timestamp":"2026-02-04T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"tidy the downloads folder"}],"timestamp":1770199201000}}
{"type":"message","id":"b0000002","parentId":"b0000001","timestamp":"2026-02-04T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Done: the browser downloads are sorted, and the browser cache is gone."}],"stopReason":"stop","timestamp":1770199202000}}
J
"$LCM" import --home "$T/h" "$T/a.jsonl" "$T/b.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "import"; }
"$LCM" grep --home "$T/h" "how do I reach the vm from the browser?" >"$T/g.txt" 2>&1 || { cat "$T/g.txt"; fail "lcm grep"; }
reply=$(grep -n 'a0000002' "$T/g.txt" | head -1 | cut -d: -f1)
other=$(grep -n 'b0000002' "$T/g.txt" | head -1 | cut -d: -f1)
[ -n "$reply" ] && [ -n "$other" ] || { cat "$T/g.txt"; fail "both the reply and the note are hits"; }
[ "$reply" -lt "$other" ] || { cat "$T/g.txt"; fail "the reply to the matching prompt ranks above the note repeating 'browser' (reply line $reply, note line $other)"; }
ok
assert_grep "$T/g.txt" "a0000001" "the prompt itself is still found"
done_ok
