#!/bin/sh
# Codex 0.171 rollouts carry top-level records beside its events: world_state (the turn's
# state snapshot: instructions hash, model, cwd, date) and token_usage_record (a response's
# token counts). They are the CLI's bookkeeping, not the conversation: imported (lcm import,
# and so the Stop hook), a session holds its user message, call, result and answer only, a
# grep for a word of those records finds nothing, and the next session's bundle quotes the
# model's answer as the session's last conclusion (not a token count).
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
cat >"$T/rollout.jsonl" <<'J'
{"timestamp":"2026-11-02T09:00:00.000Z","ordinal":0,"type":"session_meta","payload":{"id":"01a2cafe-0000-7000-8000-000000000171","timestamp":"2026-11-02T09:00:00.000Z","cwd":"/proj/cx171","originator":"codex_exec","cli_version":"0.171.0"}}
{"timestamp":"2026-11-02T09:00:00.100Z","ordinal":1,"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}
{"timestamp":"2026-11-02T09:00:00.200Z","ordinal":2,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"how many lines in walrus.txt"}]}}
{"timestamp":"2026-11-02T09:00:00.200Z","ordinal":3,"type":"world_state","payload":{"full":true,"state":{"collaboration_mode":{"mode":"default","model":"ZEBRAFISH-model"},"cwd":"/proj/cx171","current_date":"2026-11-02"}}}
{"timestamp":"2026-11-02T09:00:00.200Z","ordinal":4,"type":"turn_context","payload":{"turn_id":"t1","cwd":"/proj/cx171","model":"ZEBRAFISH-model"}}
{"timestamp":"2026-11-02T09:00:01.000Z","ordinal":5,"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"wc -l walrus.txt\"}","call_id":"call_1"}}
{"timestamp":"2026-11-02T09:00:01.000Z","ordinal":6,"type":"token_usage_record","payload":{"thread_id":"01a2cafe-0000-7000-8000-000000000171","turn_id":"t1","response_id":"resp_TAPIR1","usage":{"input_tokens":100,"output_tokens":20}}}
{"timestamp":"2026-11-02T09:00:02.000Z","ordinal":7,"type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"Process exited with code 0\nOutput:\n77 walrus.txt\n"}}
{"timestamp":"2026-11-02T09:00:03.000Z","ordinal":8,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"walrus.txt has 77 lines."}]}}
{"timestamp":"2026-11-02T09:00:03.000Z","ordinal":9,"type":"token_usage_record","payload":{"thread_id":"01a2cafe-0000-7000-8000-000000000171","turn_id":"t1","response_id":"resp_TAPIR2","usage":{"input_tokens":200,"output_tokens":40}}}
{"timestamp":"2026-11-02T09:00:03.100Z","ordinal":10,"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"walrus.txt has 77 lines."}}
J
SID=codex-01a2cafe-0000-7000-8000-000000000171
"$LCM" import --home "$T/h" "$T/rollout.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "lcm import of a Codex 0.171 rollout"; }
assert_grep "$T/imp.txt" "(codex): session $SID, 4 messages, 4 new" "the session is its four messages, no state or usage record among them"
python3 - "$T/h/lcm/$SID.sqlite" <<'PY' || fail "the stored rows are the conversation"
import sqlite3, sys
rows = list(sqlite3.connect(sys.argv[1]).execute("SELECT role, text FROM messages ORDER BY ordinal"))
assert [r for r, _ in rows] == ["user", "assistant", "toolResult", "assistant"], rows
assert rows[-1][1] == "walrus.txt has 77 lines.", rows[-1]
assert not any("world_state" in t or "token_usage_record" in t for _, t in rows), rows
PY
ok
"$LCM" grep --home "$T/h" ZEBRAFISH >"$T/g1.txt" 2>&1 || true
assert_nogrep "$T/g1.txt" "$SID" "a word of the state snapshot is not a hit"
"$LCM" grep --home "$T/h" TAPIR2 >"$T/g2.txt" 2>&1 || true
assert_nogrep "$T/g2.txt" "$SID" "a response id of a usage record is not a hit"
printf '{"session_id":"next-one","cwd":"/proj/cx171","hook_event_name":"SessionStart","source":"startup"}' |
    "$LCM" hook session-start --home "$T/h" >"$T/bundle.json" || fail "lcm hook session-start"
assert_grep "$T/bundle.json" "Previous session in this folder: $SID" "the next session's bundle names the session"
assert_grep "$T/bundle.json" "Last conclusion:.*walrus.txt has 77 lines" "the bundle's last conclusion is the model's answer"
assert_nogrep "$T/bundle.json" "token_usage_record" "no usage record in the bundle"
done_ok
