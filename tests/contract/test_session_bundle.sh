#!/bin/sh
# sessionBundle (lcm.json, off by default): a new session of a folder starts with the
# reference bundle of the folder's previous session in its system prompt -- the session's
# id, its last request and its conclusion -- through the real host and .so; nothing without
# the setting, nothing for a resumed session, nothing for another folder; `lcm handoff
# --generate` stores a session's handoff, which the next bundle carries.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/work" "$T/elsewhere"
cat > "$T/script.json" <<'JSON'
[
 {"content": "Noted: the planet is PLANET=NEPTUNE-7."},
 {"content": "It was NEPTUNE-7."},
 {"content": "No idea."},
 {"content": "Still here."},
 {"content": "Other folder."}
]
JSON
start_server "$T/script.json" "$T/record.jsonl"
run() { # SESSION CWD PROMPT
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$1" --cwd "$2" \
        --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "$3" >"$T/out.txt" 2>"$T/err.txt" ||
        { cat "$T/out.txt" "$T/err.txt"; fail "host run on $1"; }
}
system_of() { # the system prompt of request N (0-based) of the record
    python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip() and not l.startswith('{\"_answer')]
m = rows[int(sys.argv[2])]['messages']
print(next((x['content'] for x in m if x['role'] == 'system'), ''))" "$T/record.jsonl" "$1"
}
run "$T/a.jsonl" "$T/work" "Please remember PLANET=NEPTUNE-7 for later."
SID_A=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['id'])" "$T/a.jsonl")
assert_nogrep "$T/record.jsonl" "Previous session in this folder" "no bundle before any history"

# a handoff for session A: generated and stored, then carried first in the next bundle
LCM="$BUILD/lcm"
"$LCM" handoff --home "$HOME_DIR" --session "$SID_A" >"$T/h0.txt" 2>&1 && fail "lcm handoff before one was generated exits 0"
assert_grep "$T/h0.txt" "has no handoff yet" "lcm handoff says there is none yet"
"$LCM" handoff --generate --home "$HOME_DIR" --session "$SID_A" >"$T/h1.txt" 2>&1 || { cat "$T/h1.txt"; fail "lcm handoff --generate"; }
assert_grep "$T/h1.txt" "Handoff of session $SID_A" "the handoff names its session"
assert_grep "$T/h1.txt" "PLANET=NEPTUNE-7" "the handoff holds the session's request"
"$LCM" handoff --home "$HOME_DIR" --cwd "$T/work" >"$T/h2.txt" 2>&1 || fail "lcm handoff of the folder's newest session"
cmp -s "$T/h1.txt" "$T/h2.txt" || fail "the stored handoff is printed as generated"; ok
"$LCM" handoff --generate --home "$HOME_DIR" --session no-such-session >"$T/h3.txt" 2>&1 && fail "a handoff of an unknown session exits 0"
[ ! -e "$HOME_DIR/lcm/no-such-session.sqlite" ] || fail "an unknown session got a new store"; ok

printf '{"sessionBundle":true}\n' > "$HOME_DIR/lcm.json"
run "$T/b.jsonl" "$T/work" "What was the planet?"
system_of 1 > "$T/sys_b.txt"
assert_grep "$T/sys_b.txt" "Previous session in this folder: $SID_A" "a new session's system prompt names the folder's previous session"
assert_grep "$T/sys_b.txt" "PLANET=NEPTUNE-7" "it carries the previous session's request and conclusion"
assert_grep "$T/sys_b.txt" "lcm_grep" "it starts with how to recall"
assert_grep "$T/sys_b.txt" "Latest handoff:" "it carries the previous session's handoff"
assert_grep "$T/sys_b.txt" "LIVE_CONTEXT.md" "the live-context protocol is still there"

run "$T/a.jsonl" "$T/work" "Are you still there?"
system_of 2 > "$T/sys_a2.txt"
assert_nogrep "$T/sys_a2.txt" "Previous session in this folder" "a resumed session gets no bundle"

run "$T/c.jsonl" "$T/elsewhere" "Hello from another folder."
system_of 3 > "$T/sys_c.txt"
assert_nogrep "$T/sys_c.txt" "Previous session in this folder" "a folder with no history gets no bundle"

printf '{"sessionBundle":false}\n' > "$HOME_DIR/lcm.json"
run "$T/d.jsonl" "$T/work" "And now?"
system_of 4 > "$T/sys_d.txt"
assert_nogrep "$T/sys_d.txt" "Previous session in this folder" "without the setting nothing appears"
done_ok
