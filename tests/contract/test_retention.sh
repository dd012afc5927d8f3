#!/bin/sh
# lcm.json retention with the real build/lcm: a home over its maxGB keeps its newest
# sessions and never the live one; `lcm gc --retention` is a dry run that deletes nothing;
# --apply archives the rest to lcm-archive-<ts>.jsonl.gz under the home before deleting
# them; `lcm import` of that archive restores them row for row (their exports before and
# after are identical); `lcm status` shows each store's size and the home's total; with
# "auto": true, `lcm hook session-end` applies it. Unconfigured, nothing is ever deleted.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H="$T/h"
mkdir -p "$H"
S=5e55a0e1-0000-4000-8000-00000000000
for n in 1 2 3 4; do
    python3 "$ROOT/tests/contract/claude_transcript.py" "$T/c$n.jsonl" --messages 40 --session "$S$n" --cwd /proj/r$n --tag "WORD$n"
    "$LCM" import --home "$H" "$T/c$n.jsonl" >/dev/null || fail "import $n"
done
db() { echo "$H/lcm/claude-$S$1.sqlite"; }
# age: session 1 the oldest ... session 4 written now (a live session)
age() { touch -d '40 days ago' "$(db 1)"; touch -d '20 days ago' "$(db 2)"; touch -d '10 days ago' "$(db 3)"; }
for n in 1 2; do "$LCM" export --home "$H" --session "claude-$S$n" --out "$T/before$n.jsonl" >/dev/null || fail "export $n"; done
age
BYTES=$(stat -c %s "$(db 1)")

"$LCM" gc --retention --home "$H" >"$T/none.txt"; rc=$?
assert_eq "$rc" "0" "without retention nothing is to do"
assert_grep "$T/none.txt" "not configured" "an unconfigured home says retention is off"

# a cap smaller than one store: everything but the live session would go
python3 -c "import sys; print('{\"retention\": {\"maxGB\": %.9f}}' % ((0.5 * $BYTES) / 1e9))" >"$H/lcm.json"
"$LCM" gc --retention --home "$H" >"$T/tiny.txt"
assert_grep "$T/tiny.txt" "dry run): 3 stores would go" "a tiny cap would take every store but the live one"
assert_nogrep "$T/tiny.txt" "claude-${S}4" "never the live session, even over the cap"

# a cap that holds two stores: the live one and the newest other
python3 -c "import sys; print('{\"retention\": {\"maxGB\": %.9f}}' % ((2.5 * $BYTES) / 1e9))" >"$H/lcm.json"
"$LCM" gc --retention --home "$H" >"$T/dry.txt"; rc=$?
assert_eq "$rc" "1" "a dry run with something to do exits 1"
assert_grep "$T/dry.txt" "dry run): 2 stores would go" "the dry run names two stores"
assert_grep "$T/dry.txt" "claude-${S}1" "the oldest would go"
assert_grep "$T/dry.txt" "claude-${S}2" "the second oldest would go"
assert_nogrep "$T/dry.txt" "claude-${S}3" "the newest old one stays"
assert_nogrep "$T/dry.txt" "claude-${S}4" "the live session stays"
for n in 1 2 3 4; do [ -f "$(db $n)" ] || fail "the dry run deleted store $n"; done
ok

"$LCM" gc --retention --apply --home "$H" >"$T/apply.txt" || { cat "$T/apply.txt"; fail "apply"; }
assert_grep "$T/apply.txt" "archived to .*lcm-archive-.*jsonl.gz, then deleted 2 stores" "apply archives then deletes"
[ ! -f "$(db 1)" ] && [ ! -f "$(db 2)" ] || fail "the two oldest stores are deleted"
[ -f "$(db 3)" ] && [ -f "$(db 4)" ] || fail "the newest stores are kept"
ok
ARCH=$(ls "$H"/lcm/lcm-archive-*.jsonl.gz)
gzip -t "$ARCH" || fail "the archive is a sound gzip file"
assert_eq "$(stat -c %a "$ARCH")" "600" "the archive is private to the user"
"$LCM" status --home "$H" >"$T/status.txt"
assert_grep "$T/status.txt" "home size: .* MB in 2 store files" "status shows the home's total"
assert_grep "$T/status.txt" "MB  claude-${S}3" "status shows each store's size"
assert_grep "$T/status.txt" "retention: no age limit, home cap 0.4 MB" "status names the retention setting"

"$LCM" import --home "$H" "$ARCH" >"$T/restore.txt" || { cat "$T/restore.txt"; fail "import of the archive"; }
assert_grep "$T/restore.txt" "2 stores" "the archive's two stores are restored"
for n in 1 2; do
    "$LCM" export --home "$H" --session "claude-$S$n" --out "$T/after$n.jsonl" >/dev/null || fail "export after $n"
    cmp -s "$T/before$n.jsonl" "$T/after$n.jsonl" || { diff "$T/before$n.jsonl" "$T/after$n.jsonl" | head -5; fail "store $n restored row for row"; }
    ok
done
"$LCM" grep --home "$H" WORD1 >"$T/g.txt"
assert_grep "$T/g.txt" "WORD1" "a restored session is searchable again"

# auto: the session-end hook applies it (in the background; the log says what it did)
age
python3 -c "import sys; print('{\"retention\": {\"days\": 30, \"auto\": true}}')" >"$H/lcm.json"
printf '{"session_id":"%s4","transcript_path":"%s","cwd":"/proj/r4","hook_event_name":"SessionEnd"}' "$S" "$T/c4.jsonl" |
    "$LCM" hook session-end --home "$H" || fail "session-end exit"
i=0
while ! grep -q "retention: archived" "$H/lcm/hooks.log" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
assert_grep "$H/lcm/hooks.log" "deleted 1 stores" "the hook applied retention: the one store past 30 days"
[ ! -f "$(db 1)" ] && [ -f "$(db 2)" ] && [ -f "$(db 4)" ] || fail "auto retention took only the store past 30 days"
ok
done_ok
