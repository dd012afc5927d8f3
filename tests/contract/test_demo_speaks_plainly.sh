#!/bin/sh
# `make demo` (CI's first step) as a newcomer reads it, its output going to a file: it
# succeeds offline with no model, shows lcm grep, lcm expand, lcm import and lcm tui on the
# generated history, writes no terminal escape codes into the file (colour only on a
# terminal), and does not speak in internals (status dumps, a fallback that reads like an
# error).
. "$(dirname "$0")/lib.sh"

DEMO="$T/demo" BUILD="$BUILD" sh "$ROOT/tests/demo.sh" > "$T/out.txt" 2>&1 ||
    { cat "$T/out.txt"; fail "the demo failed"; }
ok
if grep -q "$(printf '\033')" "$T/out.txt"; then
    cat -v "$T/out.txt" | head -20; fail "the demo wrote escape codes into a file"
fi
ok
for shown in "lcm grep" "lcm expand" "lcm import" "lcm tui"; do
    assert_grep "$T/out.txt" "$shown" "the demo shows $shown"
done
assert_grep "$T/out.txt" "Pinned the needle" "the live-context edit turn ran"
assert_grep "$T/out.txt" "carried the note" "the next request carried the edit"
for internal in "projection:" "clm mode" "\[error\]" "fallback" "summarizer error"; do
    assert_nogrep "$T/out.txt" "$internal" "the demo speaks plainly (no '$internal')"
done
lines=$(wc -l < "$T/out.txt")
[ "$lines" -le 80 ] || fail "the demo prints $lines lines (keep it to a screenful or two)"
ok
done_ok
