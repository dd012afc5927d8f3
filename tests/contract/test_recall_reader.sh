#!/bin/sh
# lcm_expand_query's bounded reader over real HTTP: the plugin reads the stored original in
# its own context through the host's completion service (agent-host -> libcurl -> the
# scripted loopback model) and returns the reader's findings, not the original; an address
# the store does not hold is refused before any model call.
. "$(dirname "$0")/lib.sh"
"$HOST" gen --seed 5 --tokens 40000 "$T/in.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" replay "$T/in.jsonl" \
    --window 32000 >/dev/null 2>&1 || fail "replay"
NEEDLE=$(grep -o 'Remember N[0-9]*=[0-9]*' "$T/in.jsonl" | head -n 1 | cut -d' ' -f2)
[ -n "$NEEDLE" ] || fail "the generated session has a needle"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" \
    --tool lcm_grep "{\"pattern\":\"$NEEDLE\\\\b\"}" > "$T/grep" 2>&1 || fail "lcm_grep"
ENTRY=$(sed -n 's/^- \([0-9a-f]\{8\}\) .*/\1/p' "$T/grep" | head -n 1)
[ -n "$ENTRY" ] || { cat "$T/grep"; fail "lcm_grep names the needle's entry"; }
ok
printf '[{"content":"FINDING: %s, read in entry %s."}]\n' "$NEEDLE" "$ENTRY" > "$T/script.json"
start_server "$T/script.json" "$T/requests.jsonl"
URL="http://127.0.0.1:$PORT/v1"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --base-url "$URL" \
    --model reader --tool lcm_expand_query "{\"entry_id\":\"$ENTRY\",\"query\":\"What is ${NEEDLE%%=*}?\"}" \
    > "$T/expand" 2>&1 || { cat "$T/expand"; fail "lcm_expand_query with a model"; }
assert_grep "$T/expand" "FINDING: $NEEDLE, read in entry $ENTRY" "the reader's findings come back"
# (the session model may also be asked for summaries between turns: only reader requests count)
READER="[r for r in rows if 'bounded reader' in r['messages'][0]['content']]"
assert_jsonl "$T/requests.jsonl" "len($READER) == 1 and rows[0] == $READER[0]" \
    "one reader turn, in its own context with its own system prompt, for one short window"
assert_jsonl "$T/requests.jsonl" "any('$NEEDLE' in json.dumps(m) and 'Window 1 of' in json.dumps(m) for m in rows[0]['messages'])" \
    "the stored original went to the reader, windowed"
assert_jsonl "$T/requests.jsonl" "rows[0]['model'] == 'reader'" "through the host's own model"
# an address the store does not hold: refused, and the model is not called
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --base-url "$URL" \
    --model reader --tool lcm_expand_query '{"entry_id":"ffffffff","query":"anything"}' > "$T/bad" 2>&1
assert_grep "$T/bad" "ffffffff" "the unknown address is named"
assert_jsonl "$T/requests.jsonl" "len($READER) == 1" "no reader call for an unknown address"
done_ok
