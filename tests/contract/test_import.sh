#!/bin/sh
# `lcm import`: a Pi session file gives the store the plugin builds by living through it
# (agent-host replay): every row the plugin stored is there with the same entry id,
# ordinal, text, raw JSON and removed mark, and no other row (the plugin also stores the
# messages no model request saw: a branch's abandoned tail, the last turn). Also through
# compactions (the replay's output file), idempotent, and the Claude Code and Codex
# transcript shapes (tool names resolved, Claude branches marked removed, searchable).
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
"$HOST" gen --seed 9 --messages 1200 "$T/in.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" \
    replay "$T/in.jsonl" --window 8000 >"$T/replay.txt" || fail "replay"
assert_grep "$T/replay.txt" "[1-9][0-9]* compactions" "the replay compacts (so the output file has compaction entries)"
"$LCM" import --home "$T/imp1" "$T/in.jsonl" >"$T/imp1.txt" 2>&1 || { cat "$T/imp1.txt"; fail "import in.jsonl"; }
"$LCM" import --home "$T/imp2" "$T/out.jsonl" >"$T/imp2.txt" 2>&1 || { cat "$T/imp2.txt"; fail "import out.jsonl"; }
assert_grep "$T/imp1.txt" "imported .* (pi): session" "the Pi format is detected"
cat >"$T/compare.py" <<'PY'
import glob, json, sqlite3, sys
import store_raw
replay_home, import_home, session_file = sys.argv[1:4]
def rows(home):
    (path,) = glob.glob(home + "/lcm/*.sqlite")
    db = sqlite3.connect(path)
    return {r[0]: r[1:] for r in store_raw.rows(db, ["entry_id", "ordinal", "role", "text", "raw_json", "removed"])}
a, b = rows(replay_home), rows(import_home)
# messages no request saw: no assistant message descends from them
ents = [json.loads(l) for l in open(session_file) if l.strip()]
ents = [e for e in ents if e.get("type") != "session"]
byid, seen = {e["id"]: e for e in ents}, set()
for e in ents:
    if e.get("type") == "message" and e["message"].get("role") == "assistant":
        x = e.get("parentId")
        while x and x not in seen:
            seen.add(x); x = byid[x].get("parentId")
unseen = {e["id"] for e in ents if e.get("type") == "message" and e["id"] not in seen}
missing = set(a) - set(b)
differ = [k for k in set(a) & set(b) if a[k] != b[k]]
extra = set(b) - set(a)
# The plugin stores every message, also those no request saw (a branch's abandoned tail,
# the session's last turn), so the two stores must be the same rows.
if missing or differ or extra or len(a) < 500:
    print("replay rows", len(a), "import rows", len(b), "missing", sorted(missing)[:5],
          "differ", differ[:3], "extra-not-tail", sorted(extra - unseen)[:5], "tail-not-extra", sorted(unseen - extra)[:5])
    for k in differ[:2]:
        print(k, a[k][:4], b[k][:4])
    sys.exit(1)
PY
PYTHONPATH="$ROOT/tests/contract" python3 "$T/compare.py" "$HOME_DIR" "$T/imp1" "$T/in.jsonl" || fail "import of the input differs from the replay's store"
ok
PYTHONPATH="$ROOT/tests/contract" python3 "$T/compare.py" "$HOME_DIR" "$T/imp2" "$T/out.jsonl" || fail "import of the compacted output differs from the replay's store"
ok
db=$(ls "$T/imp1"/lcm/*.sqlite)
n1=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*), sum(removed) from messages').fetchone())" "$db")
"$LCM" import --home "$T/imp1" "$T/in.jsonl" >"$T/again.txt" || fail "second import"
assert_grep "$T/again.txt" " 0 new, 0 marked removed" "a second import inserts and marks nothing"
n2=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*), sum(removed) from messages').fetchone())" "$db")
assert_eq "$n2" "$n1" "the store is unchanged by a second import"
# not a terminal: no progress bar, just the final line
assert_nogrep "$T/imp1.txt" "\[#" "no progress bar when stderr is not a tty"

# ---- Claude Code: uuid / parentUuid lines; an edited prompt forks the conversation ----
cat >"$T/claude.jsonl" <<'J'
{"type":"summary","summary":"Fix the parser","leafUuid":"u5"}
{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"find the zebra bug in parse.c"},"uuid":"u1","timestamp":"2025-06-01T10:00:00.000Z","sessionId":"c0ffee00-1111-2222-3333-444455556666","cwd":"/proj/claude"}
{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4","content":[{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"parse.c"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}},"uuid":"u2","timestamp":"2025-06-01T10:00:01.000Z","sessionId":"c0ffee00-1111-2222-3333-444455556666","cwd":"/proj/claude"}
{"parentUuid":"u2","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"int parse(void) { return QUOKKA_FLAG; }"}]},"uuid":"u3","timestamp":"2025-06-01T10:00:02.000Z","sessionId":"c0ffee00-1111-2222-3333-444455556666","cwd":"/proj/claude"}
{"parentUuid":"u3","isSidechain":true,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"sidechain noise"}]},"uuid":"s1","timestamp":"2025-06-01T10:00:02.500Z","sessionId":"c0ffee00-1111-2222-3333-444455556666"}
{"parentUuid":"u3","isSidechain":false,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"The bug is the unchecked flag."}],"stop_reason":"end_turn"},"uuid":"u4","timestamp":"2025-06-01T10:00:03.000Z","sessionId":"c0ffee00-1111-2222-3333-444455556666","cwd":"/proj/claude"}
{"parentUuid":"u1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"text","text":"actually look at lexer.c for the walrus"}]},"uuid":"u5","timestamp":"2025-06-01T10:01:00.000Z","sessionId":"c0ffee00-1111-2222-3333-444455556666","cwd":"/proj/claude"}
J
"$LCM" import --home "$T/cc" "$T/claude.jsonl" >"$T/cc.txt" || { cat "$T/cc.txt"; fail "claude import"; }
assert_grep "$T/cc.txt" "(claude-code): session claude-c0ffee00-1111-2222-3333-444455556666, 6 messages" "Claude Code transcript detected, the sidechain read too"
assert_grep "$T/cc.txt" "sub-agents: 1 of the messages, each sub-agent in a store of its own: claude-c0ffee00-1111-2222-3333-444455556666--agent-sidechain-s1" "the sidechain goes to a store of its own"
PYTHONPATH="$ROOT/tests/contract" python3 - "$T/cc/lcm/claude-c0ffee00-1111-2222-3333-444455556666.sqlite" <<'PY' || fail "Claude Code rows"
import json, sqlite3, sys
import store_raw
db = sqlite3.connect(sys.argv[1])
r = {e: (role, rem, json.loads(raw)) for e, role, rem, raw in store_raw.rows(db, ["entry_id", "role", "removed", "raw_json"])}
ok = (r["u3"][0] == "toolResult" and r["u3"][2]["toolName"] == "Read" and r["u3"][2]["toolCallId"] == "toolu_1"
      and r["u2"][2]["content"][1] == {"type": "toolCall", "id": "toolu_1", "name": "Read", "arguments": {"file_path": "parse.c"}}
      and [r[k][1] for k in ("u1", "u2", "u3", "u4", "u5")] == [0, 1, 1, 1, 0]
      and "s1" not in r and db.execute("SELECT value FROM meta WHERE key='cwd'").fetchone()[0] == "/proj/claude")
if not ok:
    print(r); sys.exit(1)
PY
ok
"$LCM" grep --home "$T/cc" QUOKKA_FLAG --include-removed >"$T/ccg.txt" || fail "lcm grep on the Claude store"
assert_grep "$T/ccg.txt" "\[removed\] u3 \[toolResult\]" "a tool result of the abandoned branch is found, labelled"
"$LCM" grep --home "$T/cc" QUOKKA_FLAG >"$T/ccg2.txt" || fail "lcm grep on the Claude store"
assert_grep "$T/ccg2.txt" "no hits" "without include_removed the abandoned branch stays hidden"

# ---- Claude Code /compact: the boundary line has parentUuid null, logicalParentUuid set ----
cat >"$T/claude-compact.jsonl" <<'J'
{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"where is the ocelot config?"},"uuid":"k1","timestamp":"2025-06-02T10:00:00.000Z","sessionId":"c0ffee00-aaaa-2222-3333-444455556666","cwd":"/proj/claude"}
{"parentUuid":"k1","isSidechain":false,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"It is OCELOT_PORT=8123 in app.conf."}],"stop_reason":"end_turn"},"uuid":"k2","timestamp":"2025-06-02T10:00:01.000Z","sessionId":"c0ffee00-aaaa-2222-3333-444455556666","cwd":"/proj/claude"}
{"parentUuid":null,"logicalParentUuid":"k2","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"manual","preTokens":1200},"uuid":"k3","timestamp":"2025-06-02T10:05:00.000Z","sessionId":"c0ffee00-aaaa-2222-3333-444455556666","cwd":"/proj/claude"}
{"parentUuid":"k3","isSidechain":false,"type":"user","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued. Summary: the ocelot config was found."},"uuid":"k4","timestamp":"2025-06-02T10:05:01.000Z","sessionId":"c0ffee00-aaaa-2222-3333-444455556666","cwd":"/proj/claude"}
{"parentUuid":"k4","isSidechain":false,"type":"user","message":{"role":"user","content":"now change the port"},"uuid":"k5","timestamp":"2025-06-02T10:06:00.000Z","sessionId":"c0ffee00-aaaa-2222-3333-444455556666","cwd":"/proj/claude"}
J
"$LCM" import --home "$T/ccc" "$T/claude-compact.jsonl" >"$T/ccc.txt" || { cat "$T/ccc.txt"; fail "claude import across /compact"; }
assert_grep "$T/ccc.txt" "0 marked removed" "a compaction does not mark the history before it removed"
"$LCM" grep --home "$T/ccc" OCELOT_PORT >"$T/cccg.txt" || fail "lcm grep on the compacted Claude store"
assert_grep "$T/cccg.txt" "k2" "the message before /compact is found without include_removed"

# ---- Codex rollout: session_meta + response_item lines ----
cat >"$T/codex.jsonl" <<'J'
{"timestamp":"2025-09-01T08:00:00.000Z","type":"session_meta","payload":{"id":"0199aaaa-bbbb-cccc-dddd-eeeeffff0000","timestamp":"2025-09-01T08:00:00.000Z","cwd":"/proj/codex","originator":"codex_cli_rs","cli_version":"0.30.0"}}
{"timestamp":"2025-09-01T08:00:01.000Z","type":"turn_context","payload":{"cwd":"/proj/codex","model":"gpt-5"}}
{"timestamp":"2025-09-01T08:00:01.000Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"system prompt"}]}}
{"timestamp":"2025-09-01T08:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"count the narwhals in data.csv"}]}}
{"timestamp":"2025-09-01T08:00:03.000Z","type":"response_item","payload":{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}}
{"timestamp":"2025-09-01T08:00:04.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"wc\",\"-l\",\"data.csv\"]}","call_id":"call_9"}}
{"timestamp":"2025-09-01T08:00:05.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_9","output":"{\"output\":\"4217 data.csv OKAPI\\n\",\"metadata\":{\"exit_code\":0}}"}}
{"timestamp":"2025-09-01T08:00:05.500Z","type":"event_msg","payload":{"type":"token_count","info":null}}
{"timestamp":"2025-09-01T08:00:06.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"There are 4216 narwhals."}]}}
J
"$LCM" import --home "$T/cx" "$T/codex.jsonl" >"$T/cx.txt" || { cat "$T/cx.txt"; fail "codex import"; }
assert_grep "$T/cx.txt" "(codex): session codex-0199aaaa-bbbb-cccc-dddd-eeeeffff0000, 4 messages, 4 new" "Codex rollout detected"
PYTHONPATH="$ROOT/tests/contract" python3 - "$T/cx/lcm/codex-0199aaaa-bbbb-cccc-dddd-eeeeffff0000.sqlite" <<'PY' || fail "Codex rows"
import json, sqlite3, sys
import store_raw
db = sqlite3.connect(sys.argv[1])
rows = [(role, json.loads(raw), o) for role, raw, o in store_raw.rows(db, ["role", "raw_json", "ordinal"], "ORDER BY ordinal")]
roles = [r[0] for r in rows]
tr = rows[2][1]
ok = (roles == ["user", "assistant", "toolResult", "assistant"] and [r[2] for r in rows] == [0, 1, 2, 3]
      and tr["toolName"] == "shell" and tr["content"][0]["text"] == "4217 data.csv OKAPI\n"
      and rows[1][1]["content"][0]["arguments"] == {"command": ["wc", "-l", "data.csv"]})
if not ok:
    print(rows); sys.exit(1)
PY
ok
"$LCM" grep --home "$T/cx" OKAPI >"$T/cxg.txt" || fail "lcm grep on the Codex store"
assert_grep "$T/cxg.txt" "codex-line-7 \[toolResult\]" "the Codex tool output is searchable"
printf '{"hello":"world"}\n' >"$T/other.jsonl"
if "$LCM" import --home "$T/x" "$T/other.jsonl" 2>"$T/other.txt"; then fail "an unknown shape is refused"; fi
assert_grep "$T/other.txt" "not a Pi session file" "the refusal says what was expected"
done_ok
