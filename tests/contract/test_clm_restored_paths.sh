#!/bin/sh
# A session file cannot make the plugin read a file (issue 14, item 2). A session file
# (one a colleague shared, say) holding a live-context-settings entry whose overrides name
# a steering document and a compact prompt by path: the next run through the real host
# and the scripted model never reads them (the files' text is in no recorded request),
# and /clm status names each ignored key. A path the user types in this run still works,
# and the steering document passes redaction: a key in it reaches the model masked.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/contract/clm/check.sh"
mkdir -p "$T/work" "$T/tmp" "$T/elsewhere"
echo "[]" > "$T/script.json"
export TMPDIR="$T/tmp"
printf 'LEAKED_STEERING_CONTENT private notes\n' > "$T/elsewhere/private.txt"
printf 'LEAKED_PROMPT_CONTENT {{mirror}}\n' > "$T/elsewhere/prompt.md"
S="$T/shared.jsonl"
python3 - "$S" "$T/elsewhere" <<'PY'
import json, sys
path, d = sys.argv[1], sys.argv[2]
rows = [
    {"type": "session", "version": 3, "id": "shared-0001", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/shared"},
    {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
     "message": {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1767225601000}},
    {"type": "custom", "customType": "live-context-settings", "id": "c1", "parentId": "u1",
     "timestamp": "2026-01-01T00:00:02.000Z",
     "data": {"version": 1, "overrides": {"steering": d + "/private.txt", "compactPrompt": d + "/prompt.md",
                                          "sizeTrailer": "on"}}},
]
with open(path, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
cp "$S" "$T/shared.orig"
run() { "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --cwd "$T/work" "$@"; }

start_server "$T/script.json" "$T/r1.jsonl"
run --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "first prompt USER_ONE" > "$T/p1.out" 2>&1 \
    || { cat "$T/p1.out"; fail "a prompt on the shared session"; }
ok
R="$T/r1.jsonl"
check "len(rows) >= 1" "the model was asked"
assert_nogrep "$T/r1.jsonl" "LEAKED_STEERING_CONTENT" "a steering path from the session file is never read into a request"
assert_nogrep "$T/r1.jsonl" "Context-management guidance" "no steering section from a restored path"
run --command "/clm status" > "$T/status" 2>&1 || { cat "$T/status"; fail "/clm status"; }
assert_grep "$T/status" "stored setting 'steering' ignored: a setting restored from the session file never names a file to read" "/clm status names the ignored steering path"
assert_grep "$T/status" "stored setting 'compactPrompt' ignored" "/clm status names the ignored compact prompt path"
run --command "/clm settings" > "$T/settings" 2>&1 || fail "/clm settings"
assert_grep "$T/settings" "warning: stored setting 'steering' ignored" "/clm settings names it too"
assert_grep "$T/settings" "^steering: none" "no steering is in force"
assert_grep "$T/settings" "\* sizeTrailer" "a restored setting that names no file is still applied"

# /clm-compact would send the compact prompt: the restored path is not it.
start_server "$T/script.json" "$T/r2.jsonl"
printf '%s\n' "/clm-compact" "/quit" | run --base-url "http://127.0.0.1:$PORT/v1" --model fake > "$T/c.out" 2>&1 \
    || { cat "$T/c.out"; fail "/clm-compact run"; }
ok
assert_nogrep "$T/c.out" "LEAKED_PROMPT_CONTENT" "the restored compact prompt path is not read"
[ ! -s "$T/r2.jsonl" ] || assert_nogrep "$T/r2.jsonl" "LEAKED_PROMPT_CONTENT" "no request carries the restored compact prompt"

# Typed in this run: the user's own choice, read, and masked on the way out.
printf 'STEER_OWN keep decisions. deploy with api_key=sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234\n' > "$T/work/steer.md"
start_server "$T/script.json" "$T/r3.jsonl"
printf '%s\n' "/clm config steering steer.md" "second prompt USER_TWO" "/quit" | \
    run --base-url "http://127.0.0.1:$PORT/v1" --model fake > "$T/p3.out" 2>&1 || { cat "$T/p3.out"; fail "typed steering run"; }
assert_grep "$T/p3.out" "steering = steer.md (saved)" "a typed steering path is taken"
R="$T/r3.jsonl"
check "any('STEER_OWN' in sysp(r) for r in rows)" "the typed steering document reaches the system prompt"
assert_nogrep "$T/r3.jsonl" "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234" "a key in the steering document never reaches the model"
check "any('[REDACTED]' in sysp(r) for r in rows)" "the steering document is masked"
assert_eq "$(cat "$T/elsewhere/private.txt")" "LEAKED_STEERING_CONTENT private notes" "the named file is untouched"
done_ok
