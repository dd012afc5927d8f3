#!/bin/sh
# lcm import of the shapes the real CLIs write (issue 25; fixtures: cli_shapes.py): the
# conversation as the CLI means it (a parallel batch whole, a result line before its call,
# only a rewind's turn removed), sub-agents stored in stores of their own linked to their
# session (inline sidechains, subagents/agent-*.jsonl, the subagent-stop hook's
# agent_transcript_path) without taking over the session's store, nothing dropped (two
# objects on a line, reasoning summaries, tool_search items, tool_reference and unknown
# blocks, counted by kind), a second file that goes on from a stored session leaving the
# first's marks (issue 24 #15), and the hook turn by turn with a torn line giving the rows
# of a whole import.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
F="$T/f"
mkdir -p "$F"
python3 "$ROOT/tests/contract/cli_shapes.py" "$F" || fail "fixtures"
S=5eed0000-aaaa-bbbb-cccc-00000000000

# rows HOME SESSION: "entry role removed" lines, by entry id
rows() {
    PYTHONPATH="$ROOT/tests/contract" python3 - "$1/lcm/$2.sqlite" <<'PY'
import sqlite3, sys
import store_raw
db = sqlite3.connect(sys.argv[1])
for e, role, rem in sorted(store_raw.rows(db, ["entry_id", "role", "removed"])):
    print(e, role, rem)
PY
}
meta() {
    python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("SELECT value FROM meta WHERE key=?",(sys.argv[2],)).fetchone(); print(r[0] if r else "")' "$1/lcm/$2.sqlite" "$3"
}
raw_has() { # HOME SESSION ENTRY WORD what: the stored message holds WORD
    PYTHONPATH="$ROOT/tests/contract" python3 - "$1/lcm/$2.sqlite" "$3" "$4" <<'PY' || fail "$5"
import sqlite3, sys
import store_raw
db = sqlite3.connect(sys.argv[1])
r = dict(store_raw.rows(db, ["entry_id", "raw_json"]))
sys.exit(0 if sys.argv[3] in r.get(sys.argv[2], "") else 1)
PY
    ok
}
found() { # HOME WORD ENTRY what
    "$LCM" grep --home "$1" "$2" >"$T/g.txt" 2>&1 || true
    assert_grep "$T/g.txt" "^- $3 \[" "$4"
}

# ---- 1. a parallel batch stays whole; only the rewound turn is removed ----------------------
"$LCM" import --home "$T/h1" "$F/cc-parallel.jsonl" >"$T/i1.txt" || { cat "$T/i1.txt"; fail "import cc-parallel"; }
rows "$T/h1" "claude-${S}1" >"$T/r1.txt"
for e in p1 p2 p3 p4 p5 p6 p9 p10; do assert_grep "$T/r1.txt" "^$e [a-zA-Z]* 0$" "parallel batch: $e is on the conversation"; done
for e in p7 p8; do assert_grep "$T/r1.txt" "^$e [a-zA-Z]* 1$" "the rewound turn $e is removed"; done
found "$T/h1" ZEBRAFIRSTRESULT p4 "the first call's result (a sibling line) is found without include_removed"

# ---- 2. a result line written before its call -----------------------------------------------
"$LCM" import --home "$T/h2" "$F/cc-order.jsonl" >"$T/i2.txt" || { cat "$T/i2.txt"; fail "import cc-order"; }
assert_grep "$T/i2.txt" "6 messages, 6 new, 0 marked removed" "order in the file does not matter: nothing removed"
rows "$T/h2" "claude-${S}2" >"$T/r2.txt"
assert_grep "$T/r2.txt" "^o3 toolResult 0$" "the early result line is stored as a result"
found "$T/h2" OTTERFIRSTASK o1 "the session's first request is found"
PYTHONPATH="$ROOT/tests/contract" python3 - "$T/h2/lcm/claude-${S}2.sqlite" <<'PY' || fail "the early result names its tool"
import json, sqlite3, sys
import store_raw
db = sqlite3.connect(sys.argv[1])
r = {e: json.loads(raw) for e, raw in store_raw.rows(db, ["entry_id", "raw_json"])}
sys.exit(0 if r["o3"]["toolName"] == "Bash" else 1)
PY
ok

# ---- 3. Claude Code 1.0.x: a sub-agent inside the session's file ---------------------------
"$LCM" import --home "$T/h3" "$F/cc-inline.jsonl" >"$T/i3.txt" || { cat "$T/i3.txt"; fail "import cc-inline"; }
SUB3="claude-${S}3--agent-tc_task"
assert_grep "$T/i3.txt" "sub-agents: 6 of the messages, each sub-agent in a store of its own: $SUB3 (general-purpose, 4 messages), claude-${S}3--agent-tc_task2 (test-runner, 2 messages)" "the inline sub-agents are stored and counted"
rows "$T/h3" "claude-${S}3--agent-tc_task2" >"$T/r3t.txt"
assert_grep "$T/r3t.txt" "^z2 assistant 0$" "the second sub-agent has a store of its own"
rows "$T/h3" "claude-${S}3" >"$T/r3.txt"
assert_nogrep "$T/r3.txt" "^x" "the session's store holds none of the sub-agent's messages"
rows "$T/h3" "$SUB3" >"$T/r3s.txt"
for e in x1 x2 x3 x4; do assert_grep "$T/r3s.txt" "^$e [a-zA-Z]* 0$" "the sub-agent's $e is in its store, live"; done
assert_eq "$(meta "$T/h3" "$SUB3" parent_session)" "claude-${S}3" "the sub-agent's store names its session"
assert_grep "$T/h3/lcm/$SUB3.sqlite" "general-purpose" "the sub-agent's store says its type"
found "$T/h3" KESTRELINSIDE x4 "a word only the sub-agent wrote is found"
"$LCM" sessions --home "$T/h3" >"$T/s3.txt" || fail "lcm sessions"
python3 - "$T/s3.txt" "claude-${S}3" "$SUB3" <<'PY' || { cat "$T/s3.txt"; fail "lcm sessions lists the sub-agent under its session"; }
import sys
lines = open(sys.argv[1]).read().splitlines()
# a session's line starts with its short id: 8 characters of the id past "claude-"
at = [i for i, l in enumerate(lines) if l.startswith(sys.argv[2][len("claude-"):][:8] + "  ")]
sub = [i for i, l in enumerate(lines) if l.startswith("  sub-agent general-purpose") and sys.argv[3] in l]
# right under its session: only sub-agent lines between the two
sys.exit(0 if at and sub and sub[0] > at[0] and all(l.startswith("  sub-agent ") for l in lines[at[0] + 1:sub[0]]) else 1)
PY
ok

"$LCM" sessions --home "$T/h3" --json --limit 10 >"$T/s3.json" || fail "lcm sessions --json"
assert_jsonl "$T/s3.json" "any(s.get('parent') == 'claude-${S}3' and s['subagent']['type'] == 'general-purpose' and s['subagent']['call'] == 'tc_task' for s in rows[0]['sessions'])" "lcm sessions --json names a sub-agent's session and its type"

# ---- 4. Claude Code 2.x: the sub-agent's own file, after its session ------------------------
SUBF="$F/cc-parent/subagents/agent-a77beef0c0ffee.jsonl"
"$LCM" import --home "$T/h4" "$F/cc-parent.jsonl" "$SUBF" >"$T/i4.txt" || { cat "$T/i4.txt"; fail "import cc-parent + sub-agent file"; }
SUB4="claude-${S}4--agent-a77beef0c0ffee"
assert_grep "$T/i4.txt" "agent-a77beef0c0ffee.jsonl (claude-code): session $SUB4, 4 messages" "the sub-agent file goes to its own store"
assert_eq "$(basename "$(meta "$T/h4" "claude-${S}4" session_file)")" "cc-parent.jsonl" "the sub-agent file never takes over the session's session_file"
assert_eq "$(meta "$T/h4" "$SUB4" parent_session)" "claude-${S}4" "the sub-agent's store names its session"
assert_grep "$T/h4/lcm/claude-${S}4.sqlite" "Explore" "the session's store knows its sub-agent's type (toolUseResult)"
found "$T/h4" HERONSUBANSWER y4 "a word only the sub-agent's file holds is found"
"$LCM" sessions --home "$T/h4" >"$T/s4.txt" || fail "lcm sessions"
assert_grep "$T/s4.txt" "^  sub-agent Explore of claude-${S}4: $SUB4 " "lcm sessions names the sub-agent's type its session's file gave"

# ---- 5. the subagent-stop hook reads agent_transcript_path ----------------------------------
printf '{"session_id":"%s4","transcript_path":"%s","agent_transcript_path":"%s","cwd":"/proj/shapes","hook_event_name":"SubagentStop"}' \
    "$S" "$F/cc-parent.jsonl" "$SUBF" | "$LCM" hook subagent-stop --home "$T/h5" || fail "hook subagent-stop"
found "$T/h5" HERONSUBRESULT y3 "subagent-stop stores the sub-agent's own transcript"
found "$T/h5" HERONPARENT q1 "subagent-stop stores the session's transcript too"

# ---- 6. nothing dropped: two objects on a line, Codex items, unknown blocks -----------------
"$LCM" import --home "$T/h6" "$F/pi-two.jsonl" "$F/codex-items.jsonl" "$F/cc-blocks.jsonl" >"$T/i6.txt" || { cat "$T/i6.txt"; fail "import pi-two, codex-items, cc-blocks"; }
assert_grep "$T/i6.txt" "(pi): session 5eed0000-pi00-0000-0000-000000000007, 4 messages" "the second object on a line is read"
found "$T/h6" PUFFINSECONDOBJECT "line-3.2" "the second object's words are found"
# its words are searchable once thinking is (issue 25 item 4): here, that the row holds it
raw_has "$T/h6" "codex-5eed0000-c0de-0000-0000-000000000008" codex-line-3 '"thinking":"I should search for LYNXREASONING."' "a Codex reasoning summary is stored as thinking"
found "$T/h6" LYNXSEARCHQUERY codex-line-4 "a tool_search_call is stored as a call"
found "$T/h6" LYNXTOOLDESCRIPTION codex-line-5 "a tool_search_output is stored as its result"
found "$T/h6" LYNXUNKNOWNITEM codex-line-6 "an unknown Codex item is kept verbatim, its words found"
found "$T/h6" IBISFETCHTOOL b3 "a tool_reference block is kept, its words found"
found "$T/h6" IBISFUTUREWORD b4 "an unknown block is kept verbatim, its words found"
assert_grep "$T/i6.txt" "not understood (stored verbatim): item brand_new_item 1" "the summary counts the unknown item"
assert_grep "$T/i6.txt" "not understood (stored verbatim): block tool_reference 1, block future_block 1" "the summary counts the unknown blocks"
assert_grep "$T/i6.txt" "skipped: event_msg 1" "the summary counts what it skipped, by kind"

# ---- 6b. a Codex sub-agent's rollout is linked to its parent thread -----------------------
"$LCM" import --home "$T/h6b" "$F/codex-items.jsonl" "$F/codex-sub.jsonl" >/dev/null || fail "import codex-sub"
assert_eq "$(meta "$T/h6b" codex-5eed0000-c0de-0000-0000-000000000009 parent_session)" "codex-5eed0000-c0de-0000-0000-000000000008" "a Codex sub-agent's store names its parent thread's session"
"$LCM" sessions --home "$T/h6b" >"$T/s6b.txt" || fail "lcm sessions"
assert_grep "$T/s6b.txt" "^  sub-agent reviewer of codex-5eed0000-c0de-0000-0000-000000000008: codex-5eed0000-c0de-0000-0000-000000000009 " "lcm sessions lists the Codex sub-agent under its parent"

# ---- 7. a second file that goes on from a stored session (issue 24 #15) ----------------------
"$LCM" import --home "$T/h7" "$F/cc-cont1.jsonl" >/dev/null || fail "import cc-cont1"
"$LCM" import --home "$T/h7" "$F/cc-cont2.jsonl" >"$T/i7.txt" || fail "import cc-cont2"
rows "$T/h7" "claude-${S}6" >"$T/r7.txt"
for e in c1 c2 c3 c4; do assert_grep "$T/r7.txt" "^$e [a-zA-Z]* 0$" "a continued session keeps $e on its branch"; done

# ---- 8. the hook turn by turn, with a torn line, gives the rows of a whole import ------------
for name in cc-parallel cc-order cc-inline; do
    H="$T/hook-$name"
    P="$T/proj-$name"
    mkdir -p "$P"
    TP="$P/$name.jsonl"
    SID=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["sessionId"])' "$F/$name.jsonl")
    N=$(wc -l <"$F/$name.jsonl")
    : >"$TP"
    i=1
    while [ "$i" -le "$N" ]; do
        head -n "$i" "$F/$name.jsonl" >"$TP"
        # a torn line: half of the next one, no newline
        if [ "$i" -lt "$N" ]; then sed -n "$((i + 1))p" "$F/$name.jsonl" | head -c 40 >>"$TP"; fi
        printf '{"session_id":"%s","transcript_path":"%s","cwd":"/proj/shapes","hook_event_name":"Stop"}' "$SID" "$TP" |
            "$LCM" hook stop --home "$H" || fail "hook stop ($name, step $i)"
        i=$((i + 1))
    done
    head -n "$N" "$F/$name.jsonl" >"$TP"
    printf '{"session_id":"%s","transcript_path":"%s","cwd":"/proj/shapes","hook_event_name":"Stop"}' "$SID" "$TP" |
        "$LCM" hook stop --home "$H" || fail "hook stop ($name, whole)"
    "$LCM" import --home "$T/whole-$name" "$F/$name.jsonl" >/dev/null || fail "whole import of $name"
    for st in $(ls "$T/whole-$name/lcm" | sed -n 's/\.sqlite$//p'); do
        rows "$T/whole-$name" "$st" >"$T/w.txt"
        [ -f "$H/lcm/$st.sqlite" ] || fail "hook ($name): no store $st"
        rows "$H" "$st" >"$T/k.txt"
        cmp -s "$T/w.txt" "$T/k.txt" || { diff "$T/w.txt" "$T/k.txt"; fail "hook ($name): store $st differs from a whole import"; }
        ok
        assert_eq "$(meta "$H" "$st" parent_session)" "$(meta "$T/whole-$name" "$st" parent_session)" "hook ($name): store $st has the link a whole import gives"
    done
done
done_ok
