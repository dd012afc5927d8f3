#!/bin/sh
# The reference host's session file (issue 24, item 20) holds the same words as the store,
# which is 0600: it is created 0600 too, under the usual umask 022.
. "$(dirname "$0")/lib.sh"
hello_session "$T/in.jsonl" mode-0001 /work/p "MODENEEDLE"
(umask 022 && "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" replay "$T/in.jsonl" \
    >"$T/r.out" 2>&1) || { cat "$T/r.out"; fail "replay"; }
ok
assert_grep "$T/out.jsonl" "MODENEEDLE" "the session file holds the replayed message"
assert_eq "$(stat -c %a "$T/out.jsonl")" "600" "the session file is 0600 under umask 022"
assert_eq "$(stat -c %a "$HOME_DIR"/lcm/*.sqlite | sort -u | tr -d '\n')" "600" "as the store is"
done_ok
