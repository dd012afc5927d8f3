#!/bin/sh
# `lcm help` lists every verb with one line each; every verb it lists answers `lcm VERB --help`,
# `lcm VERB -h` and `lcm help VERB` with its own usage on stdout and exit 0; `lcm --version`
# and `lcm version` name the version; `lcm` alone prints the usage on stderr, exit 2.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"

"$LCM" help >"$T/help" 2>"$T/help.err"; rc=$?
assert_eq "$rc" "0" "lcm help exits 0"
assert_grep "$T/help" "^usage: lcm " "lcm help prints the usage"
# the verbs: the lines "  VERB  summary" of lcm help's verb list
sed -n '/^verbs:/,/^$/p' "$T/help" | awk 'NF >= 2 && $1 !~ /:$/ {print $1}' >"$T/verbs"
n=$(wc -l <"$T/verbs")
[ "$n" -ge 20 ] || { cat "$T/help"; fail "lcm help lists every verb (got $n)"; }
ok
for v in grep sessions status expand describe import mcp tui handoff hooks hook compact doctor export backup \
         gc migrate heal report reindex dream contracts help version; do
    grep -qx "$v" "$T/verbs" || { cat "$T/help"; fail "lcm help lists $v"; }
done
ok
while read -r v; do
    for form in "$v --help" "$v -h" "help $v"; do
        # shellcheck disable=SC2086
        "$LCM" $form >"$T/vh" 2>"$T/vh.err"; rc=$?
        assert_eq "$rc" "0" "lcm $form exits 0"
        assert_grep "$T/vh" "^usage: lcm $v" "lcm $form shows the usage of $v"
        [ ! -s "$T/vh.err" ] || { cat "$T/vh.err"; fail "lcm $form writes nothing on stderr"; }
        # a verb's help is its own: not the whole list of verbs again
        assert_nogrep "$T/vh" "^verbs:" "lcm $form is the verb's help, not the whole usage"
    done
done <"$T/verbs"
ok

"$LCM" --version >"$T/ver" 2>&1; rc=$?
assert_eq "$rc" "0" "lcm --version exits 0"
assert_grep "$T/ver" "^lcm [0-9][0-9.]*" "lcm --version names the version"
"$LCM" version >"$T/ver2" 2>&1 || fail "lcm version exits 0"
cmp -s "$T/ver" "$T/ver2" || fail "lcm version says what lcm --version says"
ok

"$LCM" help nosuchverb >"$T/hn" 2>&1; rc=$?
assert_eq "$rc" "2" "lcm help of an unknown verb is a usage error"
assert_grep "$T/hn" "unknown verb nosuchverb" "lcm help names the unknown verb"

"$LCM" >"$T/bare" 2>"$T/bare.err"; rc=$?
assert_eq "$rc" "2" "lcm alone exits 2"
assert_grep "$T/bare.err" "^usage: lcm " "lcm alone prints the usage on stderr"
done_ok
