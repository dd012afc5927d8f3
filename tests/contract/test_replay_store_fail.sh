#!/bin/sh
# A replay whose store will not open (here: a store file that is not a database) replays the
# file but stores nothing: its summary says so, naming the warning (issue 14.10), instead
# of reading like a normal run. A replay into a sound store has no such line.
. "$(dirname "$0")/lib.sh"
IN="$T/in.jsonl"
cat > "$IN" <<'JSONL'
{"type":"session","version":3,"id":"rfail-0001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/rfail"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":1767225601000}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"openai-completions","provider":"generated","model":"gen-1","stopReason":"stop","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15},"timestamp":1767225602000}}
JSONL
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
