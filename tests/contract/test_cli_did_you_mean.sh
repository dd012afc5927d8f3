#!/bin/sh
# A mistyped verb or option gets a suggestion (the nearest by edit distance) and exit 2, not
# the whole usage; an option without its value is named as such.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"

"$LCM" gerp rust >"$T/o" 2>"$T/e"; rc=$?
assert_eq "$rc" "2" "a mistyped verb exits 2"
assert_grep "$T/e" "unknown verb gerp" "the mistyped verb is named"
assert_grep "$T/e" "did you mean.*grep" "gerp: did you mean grep"
[ "$(wc -l <"$T/e")" -le 4 ] || { cat "$T/e"; fail "a mistyped verb is answered in a few lines, not the whole usage"; }
ok
"$LCM" sesions >"$T/o" 2>"$T/e"
assert_grep "$T/e" "did you mean.*sessions" "sesions: did you mean sessions"
"$LCM" stauts >"$T/o" 2>"$T/e"
assert_grep "$T/e" "did you mean.*status" "stauts: did you mean status"
"$LCM" xyzzyq >"$T/o" 2>"$T/e"; rc=$?
assert_eq "$rc" "2" "an unknown verb exits 2"
assert_nogrep "$T/e" "did you mean" "no suggestion for a word near no verb"
assert_grep "$T/e" "lcm help" "an unknown verb points at lcm help"

"$LCM" grep --limt 3 rust --home "$HOME_DIR" >"$T/o" 2>"$T/e"; rc=$?
assert_eq "$rc" "2" "a mistyped option exits 2"
assert_grep "$T/e" "unknown option --limt" "the mistyped option is named"
assert_grep "$T/e" "did you mean --limit" "--limt: did you mean --limit"
"$LCM" grep --sesion x rust --home "$HOME_DIR" >"$T/o" 2>"$T/e"
assert_grep "$T/e" "did you mean --session" "--sesion: did you mean --session"
"$LCM" doctor --repiar --home "$HOME_DIR" >"$T/o" 2>"$T/e"; rc=$?
assert_eq "$rc" "2" "a maintenance verb's mistyped option exits 2"
assert_grep "$T/e" "did you mean --repair" "doctor --repiar: did you mean --repair"

"$LCM" grep rust --home >"$T/o" 2>"$T/e"; rc=$?
assert_eq "$rc" "2" "an option without its value exits 2"
assert_grep "$T/e" "\-\-home needs a value" "--home with no value is named as such"
assert_nogrep "$T/e" "unknown option" "--home is not called unknown"
"$LCM" sessions --cwd >"$T/o" 2>"$T/e"
assert_grep "$T/e" "\-\-cwd needs a value" "sessions --cwd with no value is named as such"
"$LCM" export --home "$HOME_DIR" --session >"$T/o" 2>"$T/e"
assert_grep "$T/e" "\-\-session needs a value" "export --session with no value is named as such"
"$LCM" grep --home="$HOME_DIR" rust >"$T/o" 2>"$T/e"; rc=$?
assert_eq "$rc" "2" "--home=DIR exits 2"
assert_grep "$T/e" "takes its value after a space" "--home=DIR says how to write it"
done_ok
