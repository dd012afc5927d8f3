#!/bin/sh
# lcm hook session-start with the real build/lcm: quiet (no output, exit 0) for a folder
# with no history; for a known folder, the reference bundle of its previous session as
# SessionStart additionalContext: the recovery line first, the last requests, the steps
# and the last conclusion with the entry ids lcm_expand reads, a partial statement, within
# the token budget (--budget, lcm.json bundleTokens). The session starting now is never
# its own "previous session"; its transcript is imported first (a resumed session).
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H="$T/h"
input() { printf '{"session_id":"%s","transcript_path":"%s","cwd":"%s","hook_event_name":"SessionStart","source":"startup"}' "$1" "$2" "$3"; }

out=$(input new-1 "$T/none.jsonl" /proj/unknown | "$LCM" hook session-start --home "$H"); rc=$?
assert_eq "$rc" "0" "unknown folder exits 0"
assert_eq "$out" "" "unknown folder: no output"
[ ! -s "$H/lcm/hooks.log" ] || { cat "$H/lcm/hooks.log"; fail "a new session with no transcript yet logs nothing"; }

S1=aaaa1111-0000-4000-8000-000000000001
python3 "$ROOT/tests/contract/claude_transcript.py" "$T/s1.jsonl" --messages 24 --session "$S1" --cwd /proj/known --tag FIRSTSESSION
printf '{"session_id":"%s","transcript_path":"%s","cwd":"/proj/known"}' "$S1" "$T/s1.jsonl" | "$LCM" hook stop --home "$H"
# another folder's session must not leak in
python3 "$ROOT/tests/contract/claude_transcript.py" "$T/o.jsonl" --messages 8 --session bbbb2222-0000-4000-8000-000000000002 --cwd /proj/other --tag OTHERFOLDER
printf '{"session_id":"x","transcript_path":"%s","cwd":"/proj/other"}' "$T/o.jsonl" | "$LCM" hook stop --home "$H"

input cccc3333-0000-4000-8000-000000000003 "$T/s2.jsonl" /proj/known | "$LCM" hook session-start --home "$H" >"$T/b.json"; rc=$?
assert_eq "$rc" "0" "known folder exits 0"
python3 - "$T/b.json" "$S1" >"$T/bundle.txt" <<'PY' || fail "bundle is SessionStart hookSpecificOutput"
import json, sys
d = json.load(open(sys.argv[1]))
h = d["hookSpecificOutput"]
assert h["hookEventName"] == "SessionStart"
print(h["additionalContext"])
PY
head -n 1 "$T/bundle.txt" | grep -q "lcm_grep" || { cat "$T/bundle.txt"; fail "the recovery line comes first"; }
ok
assert_grep "$T/bundle.txt" "Previous session in this folder: claude-$S1" "names the previous session"
assert_grep "$T/bundle.txt" "request 5 FIRSTSESSION" "the last request"
assert_grep "$T/bundle.txt" "\[aaaa1111-00000020\] request 5" "the request line carries its entry id"
assert_grep "$T/bundle.txt" "Bash" "the steps name the tool"
assert_grep "$T/bundle.txt" "Last conclusion:" "a conclusion section"
assert_grep "$T/bundle.txt" "Fixed the counter in module_5.c" "the last conclusion"
assert_grep "$T/bundle.txt" "Partial:" "says it is partial"
assert_nogrep "$T/bundle.txt" "OTHERFOLDER" "another folder's session is not in it"
# the id in the bundle is one lcm_expand reads
"$LCM" expand --home "$H" "claude-$S1" aaaa1111-00000020 >"$T/x.txt" || fail "lcm expand of a bundle id"
assert_grep "$T/x.txt" "request 5 FIRSTSESSION" "lcm_expand reads the bundle's id"
python3 -c "import sys; t=open(sys.argv[1]).read(); sys.exit(0 if len(t)/4 <= 1000 else 1)" "$T/bundle.txt" || fail "default budget 1000 tokens"
ok

# a small budget keeps the recovery line and the last request, drops the rest
input cccc3333-0000-4000-8000-000000000003 "$T/s2.jsonl" /proj/known | "$LCM" hook session-start --home "$H" --budget 200 |
    python3 -c "import json,sys; print(json.load(sys.stdin)['hookSpecificOutput']['additionalContext'])" >"$T/small.txt"
python3 -c "import sys; t=open(sys.argv[1]).read(); sys.exit(0 if len(t)/4 <= 200 else 1)" "$T/small.txt" || { wc -c "$T/small.txt"; fail "--budget 200 is kept"; }
head -n 1 "$T/small.txt" | grep -q "lcm_grep" || fail "small budget: recovery line first"
assert_grep "$T/small.txt" "request 5 FIRSTSESSION" "small budget keeps the last request"
printf '{"bundleTokens": 300}\n' >"$H/lcm.json"
input cccc3333-0000-4000-8000-000000000003 "$T/s2.jsonl" /proj/known | "$LCM" hook session-start --home "$H" |
    python3 -c "import json,sys; print(json.load(sys.stdin)['hookSpecificOutput']['additionalContext'])" >"$T/cfg.txt"
python3 -c "import sys; t=open(sys.argv[1]).read(); sys.exit(0 if len(t)/4 <= 300 else 1)" "$T/cfg.txt" || fail "lcm.json bundleTokens is used"
rm -f "$H/lcm.json"
ok

# the session starting is a resumed one: it is imported first, and is not its own previous
input "$S1" "$T/s1.jsonl" /proj/known | "$LCM" hook session-start --home "$H" >"$T/self.json"
assert_eq "$(cat "$T/self.json")" "" "a folder whose only session is the one starting: quiet"
python3 "$ROOT/tests/contract/claude_transcript.py" "$T/s1.jsonl" --messages 4 --session "$S1" --cwd /proj/known --append --tag RESUMEDWORD
S3=dddd4444-0000-4000-8000-000000000004
input "$S3" "$T/s3.jsonl" /proj/known | "$LCM" hook session-start --home "$H" >/dev/null
"$LCM" grep --home "$H" RESUMEDWORD >"$T/g.txt"
input "$S1" "$T/s1.jsonl" /proj/known | "$LCM" hook session-start --home "$H" >/dev/null
"$LCM" grep --home "$H" RESUMEDWORD >"$T/g.txt"
assert_grep "$T/g.txt" "request 6 RESUMEDWORD" "session-start imports what is new first"

# bad input: exit 0, nothing printed, a log line
out=$(printf '[1,2' | "$LCM" hook session-start --home "$H"); rc=$?
assert_eq "$rc:$out" "0:" "bad input: exit 0 and quiet"
assert_grep "$H/lcm/hooks.log" "session-start: the hook input is not a JSON object" "bad input is logged"
done_ok
