#!/bin/sh
# `lcm sessions` shows each session's title (its first real request, not a CLI's meta line)
# and a short id; every id is accepted by a unique prefix (session: with or without its
# agent's "claude-"; entry: of the session's entries); an ambiguous or unknown prefix is
# named with its candidates, exit 1.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/contract/cli_home.sh"
cli_home

"$LCM" sessions --home "$HOME_DIR" >"$T/s" 2>"$T/e" || { cat "$T/s" "$T/e"; fail "lcm sessions exits 0"; }
assert_grep "$T/s" "why do the grays look identical in the terminal?" "session A's title is its first request"
assert_nogrep "$T/s" "Caveat:" "a CLI's meta line is not a title"
assert_grep "$T/s" "request 0 rust: look at module_0.c" "session B's title"
assert_nogrep "$T/s" "$SA" "sessions shows short ids, not the whole id"
# at an 80-column terminal each line fits, the title cut to what is left
COLUMNS=80 "$LCM" sessions --home "$HOME_DIR" >"$T/s80" 2>&1 || fail "lcm sessions at 80 columns"
fits80 "$T/s80" || { cat "$T/s80"; fail "sessions lines fit 80 columns"; }
assert_grep "$T/s80" "why do the gr" "the title's start is shown at 80 columns"
ok
# the short id it prints is accepted back
SHORT_A=$(grep "grays look" "$T/s" | awk '{print $1}')
[ -n "$SHORT_A" ] || fail "a short id for session A"
"$LCM" expand "$SHORT_A" c0ffee00-0000-4000-8000-000000000002 --home "$HOME_DIR" >"$T/x" 2>&1 \
    || { cat "$T/x"; fail "expand takes the short id lcm sessions prints"; }
assert_grep "$T/x" "why do the grays look identical" "expand by the short id reads the message"

"$LCM" expand 1fb5e404 c0ffee --home "$HOME_DIR" >"$T/x" 2>&1 || { cat "$T/x"; fail "expand 1fb5e404 c0ffee"; }
assert_grep "$T/x" "why do the grays look identical" "a session and an entry by unique prefixes"
"$LCM" expand claude-1fb5 c0ffee00 --home "$HOME_DIR" >"$T/x" 2>&1 || { cat "$T/x"; fail "expand claude-1fb5"; }
assert_grep "$T/x" "why do the grays look identical" "a session prefix with its agent's name"
"$LCM" expand "$SA" c0ffee00-0000-4000-8000-000000000002 --home "$HOME_DIR" >"$T/x" 2>&1 \
    || fail "the whole ids still work"
ok

"$LCM" expand 2abcdef 2abcdef0-00000000 --home "$HOME_DIR" >"$T/x" 2>"$T/xe"; rc=$?
assert_eq "$rc" "1" "an ambiguous session prefix exits 1"
assert_grep "$T/xe" "2abcdef.*names 2 sessions" "an ambiguous prefix is named as such"
assert_grep "$T/xe" "2abcdef0" "the candidates are listed"
assert_grep "$T/xe" "2abcdef9" "the candidates are listed (2)"
"$LCM" expand 2abcdef0 2abcdef0-00000000 --home "$HOME_DIR" >"$T/x" 2>&1 || { cat "$T/x"; fail "2abcdef0 is unique"; }
assert_grep "$T/x" "request 0 rust" "session B by its unique prefix"
"$LCM" expand 1fb5e404 1fb5e404-0000001 --home "$HOME_DIR" >"$T/x" 2>"$T/xe"; rc=$?
assert_eq "$rc" "1" "an ambiguous entry prefix exits 1"
assert_grep "$T/xe" "names [0-9]* entries" "an ambiguous entry prefix is named as such"
"$LCM" expand 99999 x --home "$HOME_DIR" >"$T/x" 2>"$T/xe"; rc=$?
assert_eq "$rc" "1" "an unknown session exits 1"
assert_grep "$T/xe" "no session 99999" "an unknown session is named"
assert_grep "$T/xe" "lcm sessions" "an unknown session points at lcm sessions"

# the other verbs that take a session id take a prefix too
"$LCM" grep --session 1fb5e404 grays --home "$HOME_DIR" >"$T/g" 2>&1 || { cat "$T/g"; fail "grep --session PREFIX"; }
assert_grep "$T/g" "c0ffee00" "grep --session PREFIX finds the entry"
"$LCM" describe 2abcdef0 "#1" --home "$HOME_DIR" >"$T/d" 2>&1
assert_nogrep "$T/d" "no session\|no store for session" "describe takes a session prefix"
"$LCM" status --session 1fb5e404 --json --home "$HOME_DIR" >"$T/st" 2>&1 || { cat "$T/st"; fail "status --session PREFIX"; }
assert_grep "$T/st" "$SA" "status --session PREFIX is that session's"
"$LCM" handoff --generate --session 1fb5e404 --home "$HOME_DIR" >"$T/h" 2>&1 || { cat "$T/h"; fail "handoff --session PREFIX"; }
done_ok
