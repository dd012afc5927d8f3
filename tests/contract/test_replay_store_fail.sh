#!/bin/sh
# A replay whose store will not open (here: a store file that is not a database) replays the
# file but stores nothing: its summary says so, naming the warning (issue 14.10), instead
# of reading like a normal run. A replay into a sound store has no such line.
. "$(dirname "$0")/lib.sh"
IN="$T/in.jsonl"
hello_session "$IN" rfail-0001 /work/rfail "hello"
"$HOST" --home "$T/good" --plugin-dir "$PLUGINS" --session "$T/good.jsonl" replay "$IN" > "$T/good.out" 2>&1 \
    || { cat "$T/good.out"; fail "replay into a sound store"; }
ok
assert_grep "$T/good.out" "^replayed 2 entries" "the sound replay prints its summary"
assert_nogrep "$T/good.out" "^warnings:" "a sound replay names no warnings"
mkdir -p "$T/bad/lcm"; chmod 700 "$T/bad/lcm"
head -c 8192 /dev/urandom > "$T/bad/lcm/rfail-0001.sqlite"; chmod 600 "$T/bad/lcm/rfail-0001.sqlite"
"$HOST" --home "$T/bad" --plugin-dir "$PLUGINS" --session "$T/bad.jsonl" replay "$IN" > "$T/bad.out" 2>"$T/bad.err" \
    || { cat "$T/bad.out" "$T/bad.err"; fail "replay with a damaged store"; }
ok
assert_grep "$T/bad.out" "^replayed 2 entries" "the summary line is printed"
assert_grep "$T/bad.out" "^warnings: [0-9]* during the run (see above); the first: lcm: .*LCM is not active" "the summary names that LCM was not active"
done_ok
