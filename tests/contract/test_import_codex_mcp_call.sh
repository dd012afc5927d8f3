#!/bin/sh
# A Codex 0.171 call of an MCP tool, as its rollout holds it: a function_call of the function
# lcm_grep in the namespace mcp__lcm, and its function_call_output as content items (Codex's
# "Wall time" line, then the server's text). Imported (lcm import, and so the Stop hook), the
# result reads as the text the model got, not as a JSON array of items with escaped quotes and
# newlines, in the store and in a grep hit.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
cat >"$T/rollout.jsonl" <<'J'
{"timestamp":"2026-11-03T10:00:00.000Z","type":"session_meta","payload":{"id":"01a2beef-0000-7000-8000-000000000171","timestamp":"2026-11-03T10:00:00.000Z","cwd":"/proj/mcp171","cli_version":"0.171.0"}}
{"timestamp":"2026-11-03T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"what did we name the cache flag"}]}}
{"timestamp":"2026-11-03T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","status":"completed","name":"lcm_grep","namespace":"mcp__lcm","arguments":"{\"query\": \"cache flag\"}","call_id":"call_m1"}}
{"timestamp":"2026-11-03T10:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_m1","output":[{"type":"input_text","text":"Wall time: 0.0042 seconds\nOutput:"},{"type":"input_text","text":"lcm_grep query \"cache flag\": 1 hit(s)\n- e7 [user] (past session s1): set \"KOALA_CACHE\" = on"}]}}
{"timestamp":"2026-11-03T10:00:04.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"It was KOALA_CACHE."}]}}
J
SID=codex-01a2beef-0000-7000-8000-000000000171
"$LCM" import --home "$T/h" "$T/rollout.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "lcm import"; }
assert_grep "$T/imp.txt" "session $SID, 4 messages" "the four messages"
python3 - "$T/h/lcm/$SID.sqlite" <<'PY' || fail "the MCP call and its result as the model saw them"
import json, sqlite3, sys
rows = list(sqlite3.connect(sys.argv[1]).execute("SELECT role, text FROM messages ORDER BY ordinal"))
assert [r for r, _ in rows] == ["user", "assistant", "toolResult", "assistant"], rows
assert rows[1][1].startswith("[toolCall lcm_grep] "), rows[1]
want = 'Wall time: 0.0042 seconds\nOutput:\nlcm_grep query "cache flag": 1 hit(s)\n- e7 [user] (past session s1): set "KOALA_CACHE" = on'
assert rows[2][1] == want, rows[2][1]
PY
ok
"$LCM" grep --home "$T/h" '"set \"KOALA_CACHE\" = on"' >"$T/g.txt" 2>&1 || true
assert_grep "$T/g.txt" '\[toolResult\] (past session .*: set "KOALA_CACHE" = on$' "the MCP result's hit shows its text as the model read it"
assert_nogrep "$T/g.txt" "input_text" "no content-item JSON in the hit"
done_ok
