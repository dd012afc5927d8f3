#!/bin/sh
# What `lcm grep` finds is what a person reads, in every transcript format `lcm import`
# takes (Pi, Claude Code, Codex): a word only the model's thinking holds is found and its
# hit labelled [thinking]; a word that starts a line of a file the agent wrote (a tool
# call's argument, stored as JSON where "\n" glues to the word after it) is found; a word
# of Chinese text and an identifier written inside it are found; an inflected form finds
# the word (stems). Each fixture is a small file of the format's own shape.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"

# grep_has HOME QUERY NEEDLE WHAT: `lcm grep QUERY` in HOME prints NEEDLE.
grep_has() {
    "$LCM" grep --home "$1" "$2" >"$T/g.txt" 2>&1 || { cat "$T/g.txt"; fail "lcm grep $2 ($4)"; }
    assert_grep "$T/g.txt" "$3" "$4"
}

# ---- Pi ----------------------------------------------------------------------------------
cat >"$T/pi.jsonl" <<'J'
{"type":"session","version":3,"id":"5a0e1d2c-0000-4000-8000-00000000aa01","timestamp":"2026-02-03T10:00:00.000Z","cwd":"/work/pi"}
{"type":"message","id":"p0000001","parentId":null,"timestamp":"2026-02-03T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"现在删除NotificationBell的导入，然后写笔记"}],"timestamp":1770112801000}}
{"type":"message","id":"p0000002","parentId":"p0000001","timestamp":"2026-02-03T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"The pangolin import is unused, so removing it is safe.","thinkingSignature":"sig"},{"type":"text","text":"Removing the import and writing the notes."},{"type":"toolCall","id":"call_1","name":"write","arguments":{"path":"notes.md","content":"# Notes\nMarmalade handler was renamed\nthe bell is gone"}}],"stopReason":"toolUse","timestamp":1770112802000}}
{"type":"message","id":"p0000003","parentId":"p0000002","timestamp":"2026-02-03T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"write","content":[{"type":"text","text":"wrote notes.md"}],"isError":false,"timestamp":1770112803000}}
{"type":"message","id":"p0000004","parentId":"p0000003","timestamp":"2026-02-03T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"The grays looked identically dim in that terminal."}],"stopReason":"stop","timestamp":1770112804000}}
J
"$LCM" import --home "$T/pi" "$T/pi.jsonl" >"$T/pi.txt" 2>&1 || { cat "$T/pi.txt"; fail "pi import"; }
grep_has "$T/pi" pangolin "p0000002 \[assistant\] \[thinking\].*pangolin" "Pi: a word only the thinking holds is found, labelled [thinking]"
grep_has "$T/pi" Marmalade "p0000002 \[assistant\]" "Pi: a word starting a line of a written file is found"
grep_has "$T/pi" NotificationBell "p0000001 \[user\]" "Pi: an identifier inside Chinese text is found"
grep_has "$T/pi" 删除 "p0000001 \[user\]" "Pi: a Chinese word is found"
grep_has "$T/pi" identical "p0000004 \[assistant\]" "Pi: an inflected form is found by its stem"
"$LCM" grep --home "$T/pi" Removing >"$T/g.txt" 2>&1 || fail "lcm grep Removing"
assert_nogrep "$T/g.txt" "\[thinking\]" "Pi: a hit in the message's text is not labelled [thinking]"

# ---- Claude Code -------------------------------------------------------------------------
S=c1a0de00-0000-4000-8000-0000000000c1
cat >"$T/cc.jsonl" <<J
{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"把导入删掉：现在删除NotificationBell的导入"},"uuid":"c1","timestamp":"2026-02-03T11:00:00.000Z","sessionId":"$S","cwd":"/work/cc"}
{"parentUuid":"c1","isSidechain":false,"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4","content":[{"type":"thinking","thinking":"An okapi could read this faster; the import is dead code.","signature":"c2ln"}],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":5}},"uuid":"c2","timestamp":"2026-02-03T11:00:01.000Z","sessionId":"$S","cwd":"/work/cc"}
{"parentUuid":"c2","isSidechain":false,"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/work/cc/NOTES.md","content":"first line\nQuetzal starts this line\n\tIndented tabby line"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}},"uuid":"c3","timestamp":"2026-02-03T11:00:02.000Z","sessionId":"$S","cwd":"/work/cc"}
{"parentUuid":"c3","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"File created successfully"}]},"uuid":"c4","timestamp":"2026-02-03T11:00:03.000Z","sessionId":"$S","cwd":"/work/cc"}
J
"$LCM" import --home "$T/cc" "$T/cc.jsonl" >"$T/cc.txt" 2>&1 || { cat "$T/cc.txt"; fail "claude import"; }
grep_has "$T/cc" okapi "c2 \[assistant\] \[thinking\].*okapi" "Claude Code: a word only the thinking holds is found, labelled [thinking]"
grep_has "$T/cc" Quetzal "c3 \[assistant\]" "Claude Code: a word starting a line of a written file is found"
grep_has "$T/cc" Indented "c3 \[assistant\]" "Claude Code: a word after a tab in a written file is found"
grep_has "$T/cc" NotificationBell "c1 \[user\]" "Claude Code: an identifier inside Chinese text is found"
grep_has "$T/cc" 导入 "c1 \[user\]" "Claude Code: a Chinese word is found"

# ---- Codex -------------------------------------------------------------------------------
cat >"$T/cx.jsonl" <<'J'
{"timestamp":"2026-02-03T12:00:00.000Z","type":"session_meta","payload":{"id":"0199cccc-0000-4000-8000-0000000000c2","timestamp":"2026-02-03T12:00:00.000Z","cwd":"/work/cx","originator":"codex_cli_rs","cli_version":"0.120.0"}}
{"timestamp":"2026-02-03T12:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"请现在删除NotificationBell的导入"}]}}
{"timestamp":"2026-02-03T12:00:02.000Z","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Add File: docs/plan.md\n+Xylophone section goes first\n+second line\n*** End Patch","call_id":"call_7"}}
{"timestamp":"2026-02-03T12:00:03.000Z","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"call_7","output":"{\"output\":\"Success. Updated the following files:\\nA docs/plan.md\\n\",\"metadata\":{\"exit_code\":0}}"}}
{"timestamp":"2026-02-03T12:00:04.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"grep -n walrus src/app.py\\nWombatcheck --all\"]}","call_id":"call_8"}}
J
"$LCM" import --home "$T/cx" "$T/cx.jsonl" >"$T/cx.txt" 2>&1 || { cat "$T/cx.txt"; fail "codex import"; }
grep_has "$T/cx" Xylophone "codex-line-3 \[assistant\]" "Codex: a word starting a line of a patch is found"
grep_has "$T/cx" Wombatcheck "codex-line-5 \[assistant\]" "Codex: a word starting a line of a shell command is found"
grep_has "$T/cx" NotificationBell "codex-line-2 \[user\]" "Codex: an identifier inside Chinese text is found"
grep_has "$T/cx" 删除 "codex-line-2 \[user\]" "Codex: a Chinese word is found"
done_ok
