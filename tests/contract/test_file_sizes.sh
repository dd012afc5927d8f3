#!/bin/sh
# No source file over 1,200 lines: every .c and .h under engine/, plugin/, host/, tools/ and
# abi/ is at most LIMIT lines, so a subsystem too big to read whole is split along a seam
# into its own .c/.h pair (docs/develop.md, "Layout"). The check names each file over the limit
# with its length. First it is tried on a planted tree, so it is seen to refuse.
. "$(dirname "$0")/lib.sh"
LIMIT=1200

# sizes ROOT: one "path: N lines" line per file over LIMIT on stdout; fails when there is one.
sizes() {
    (cd "$1" && for d in engine plugin host tools abi; do
        [ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' \)
    done) | sort | while IFS= read -r f; do
        n=$(wc -l <"$1/$f")
        [ "$n" -le "$LIMIT" ] || echo "$f: $n lines (over $LIMIT: split it along a seam into its own .c/.h pair)"
    done | grep . && return 1
    return 0
}

# lines FILE N: a file of N lines.
lines() { mkdir -p "$(dirname "$1")"; awk -v n="$2" 'BEGIN { for (i = 1; i <= n; i++) print "int x" i ";" }' >"$1"; }

P="$T/planted"
lines "$P/engine/lcm/big.c" 1201                 # one line over: refused
lines "$P/tools/lcm/deep/big.h" 1500             # a header, in a subfolder: refused
lines "$P/plugin/at_limit.c" "$LIMIT"            # at the limit: kept
lines "$P/build/obj/generated.c" 5000            # outside the source folders: not looked at
lines "$P/engine/lcm/notes.md" 5000              # not C: not looked at
if sizes "$P" >"$T/planted.txt"; then cat "$T/planted.txt"; fail "a planted 1201-line file was accepted"; fi; ok
assert_grep "$T/planted.txt" '^engine/lcm/big.c: 1201 lines' "the file one line over is named, with its length"
assert_grep "$T/planted.txt" '^tools/lcm/deep/big.h: 1500 lines' "a header in a subfolder is named"
assert_nogrep "$T/planted.txt" 'at_limit' "a file at the limit passes"
assert_nogrep "$T/planted.txt" 'build/\|notes.md' "only .c/.h under the source folders count"

# The tree itself.
if ! sizes "$ROOT" >"$T/tree.txt"; then
    cat "$T/tree.txt"
    fail "$(wc -l <"$T/tree.txt") source file(s) over $LIMIT lines"
fi
ok
done_ok
