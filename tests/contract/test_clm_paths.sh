#!/bin/sh
# Live-context paths decided by the glue, through the real host, the real plugin and the
# scripted model: the observation cap (head/tail around a marker naming the cap),
# oneToolPerTurn (the second call of a turn is blocked with a reason), sizeTrailer,
# steering (a hashed section in the system prompt; a document that cannot be read leaves
# the previous one in force), a symlink planted at the mirror path (never followed; the
# notice says so), budget reminders, the overflow guard (the oldest raw tool result
# withheld behind a same-call note naming its file under withheld/ and the limit).
. "$(dirname "$0")/lib.sh"


. "$ROOT/tests/contract/clm/check.sh"

run_host() { # SESSION OUT < stdin
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$1" --cwd "$T/work" \
        --base-url "http://127.0.0.1:$PORT/v1" --model fake > "$2" 2> "$2.err" \
        || { cat "$2" "$2.err"; fail "host run for $2"; }
}

mkdir -p "$T/work" "$T/tmp"
export TMPDIR="$T/tmp"
printf 'STEER_TEXT: keep decisions, drop logs.\n' > "$T/work/steer.md"

# ---- run 1: cap, one tool per turn, size trailer, steering, a planted symlink ----
SID1="clmpaths-0001"; S1="$T/s1.jsonl"; new_session "$SID1" "$S1"
MIRROR1="$T/tmp/lossless-context-$SID1/LIVE_CONTEXT.md"
cat > "$T/script1.json" <<JSON
[
 {"tool_calls":[{"name":"bash","arguments":{"command":"seq 1 3000"}},
                {"name":"bash","arguments":{"command":"echo SECOND_CALL_RAN"}}]},
 {"tool_calls":[{"name":"bash","arguments":{"command":"rm -f $MIRROR1; ln -s $T/work/steer.md $MIRROR1"}}]},
 {"content":"RUN1_DONE"}
]
JSON
start_server "$T/script1.json" "$T/r1.jsonl"
printf '%s\n' "/clm config observationCap 1000:0.5" "/clm config oneToolPerTurn on" \
    "/clm config sizeTrailer on" "/clm config steering steer.md" "count to 3000 USER_ONE" \
    "/clm config steering missing.md" "second prompt USER_TWO" "/quit" | run_host "$S1" "$T/out1.txt"
assert_grep "$T/out1.txt" "steering = steer.md (saved)" "a readable steering document is saved"
assert_grep "$T/out1.txt" "the steering document $T/work/missing.md cannot be read" "an unreadable steering document is named"
assert_grep "$T/out1.txt" "the settings in force are unchanged" "an unreadable steering document changes nothing"
R="$T/r1.jsonl"
check "len(rows) == 4" "four model requests"
check "all('## Context-management guidance (' in sysp(r) and 'STEER_TEXT' in sysp(r) for r in rows)" "the steering document is a hashed section of every system prompt, also after a failed load"
check "any('characters omitted by the observation cap of 1000 characters per tool result' in t and t.startswith('1\n2\n3\n') for t in tools(rows[1]))" "request 2: the long result keeps its head around the cap marker"
check "any('omitted by the observation cap' in t and '[context: ~' in t and ' tokens after this result]' in t for t in tools(rows[1]))" "request 2: the tail (with the size trailer) survives the cap"
check "any('oneToolPerTurn is on: only the first tool call of an assistant turn runs' in t for t in tools(rows[1])) and not any('SECOND_CALL_RAN' in t for t in tools(rows[1]))" "request 2: the second call of the turn was blocked with the reason"
check "has(rows[2], 'LIVE_CONTEXT.md was not read, so your edit was ignored') and has(rows[2], 'is a symlink, which is never followed')" "request 3: a symlink at the mirror path is refused with a notice"
check "not has(rows[2], 'whole-context rewrite') and not has(rows[2], 'accepted as revision')" "request 3: the symlink target never became the context"
assert_jsonl "$S1" "not any(r.get('customType') == 'live-context-state' and r['data']['kind'] == 'accept' for r in rows)" "no revision came from the symlink"
assert_eq "$(cat "$T/work/steer.md")" "STEER_TEXT: keep decisions, drop logs." "the symlink target was not overwritten by a render"

# ---- run 2: reminders and the overflow guard ----
SID2="clmpaths-0002"; S2="$T/s2.jsonl"; new_session "$SID2" "$S2"
cat > "$T/script2.json" <<'JSON'
[
 {"tool_calls":[{"name":"bash","arguments":{"command":"seq 1 1500 | sed s/^/AAAA/"}}]},
 {"tool_calls":[{"name":"bash","arguments":{"command":"seq 1 1500 | sed s/^/BBBB/"}}]},
 {"content":"RUN2_DONE"}
]
JSON
start_server "$T/script2.json" "$T/r2.jsonl"
printf '%s\n' "/clm config budget 8000" "fill the context USER_ONE" \
    "/quit" | run_host "$S2" "$T/out2.txt"
R="$T/r2.jsonl"
check "len(rows) == 3" "three model requests"
check "has(rows[1], '[CLM BUDGET] The context has reached') and has(rows[1], 'budget 8000 tokens with 2048 reserved')" "request 2: a budget reminder names the budget and the reserve"
check "any(t.startswith('[CLM] Tool result withheld by the overflow guard: tool bash') and '/withheld/' in t and 'the request limit is 5952 tokens' in t for t in tools(rows[2]))" "request 3: the oldest tool result is withheld behind a note naming its file and the limit"
check "not has(rows[2], 'AAAA1500') and has(rows[2], 'BBBB1500')" "request 3: the older result is withheld, the newest kept"
check "[m.get('tool_call_id') for m in body(rows[2]) if m['role'] == 'tool'] == [c['id'] for m in body(rows[2]) for c in (m.get('tool_calls') or [])]" "request 3: the note keeps the call id of the result it replaces"
check "has(rows[2], '[CLM BUDGET] Overflow guard: the request limit is 5952 tokens')" "request 3: the guard notice names the limit"
check "sum(1 for r in rows for m in body(r) if 'The context has reached 50% of' in text(m)) <= 1" "a tier fires once"
done_ok
