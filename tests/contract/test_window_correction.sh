#!/bin/sh
# A provider error that shows the host's window was wrong: the host compacts for the
# overflow and hands the provider's words to session_before_compact; the plugin records the
# correction (in the store, so it survives a restart), resolves its thresholds against it,
# and /lcm status names where it came from.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/work"
# summaries by the extractive summarizer, so the scripted model answers only the agent
printf '{"summarizer":["extractive"]}\n' > "$HOME_DIR/lcm.json"
"$HOST" gen --seed 3 --tokens 60000 "$T/in.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" replay "$T/in.jsonl" \
    --window 128000 >/dev/null 2>&1 || fail "replay"
cat > "$T/script.json" <<'JSON'
[{"status": 400, "error": "This model's maximum context length is 40000 tokens. However, your messages resulted in 61234 tokens."},
 {"content": "Answered after the compaction."}]
JSON
start_server "$T/script.json" "$T/requests.jsonl"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --cwd "$T/work" \
    --window 128000 --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "go on" \
    --trace "$T/trace.jsonl" > "$T/p.out" 2> "$T/p.err" || { cat "$T/p.err"; fail "the overflow is recovered"; }
assert_grep "$T/p.out" "Answered after the compaction." "the retried request answered"
assert_jsonl "$T/trace.jsonl" \
    "any(r['event'] == 'session_before_compact' and r['input']['reason'] == 'overflow' and 'maximum context length is 40000' in r['input'].get('error', '') for r in rows)" \
    "session_before_compact carries the provider's error"
assert_grep "$T/p.err" "provider says 40000" "the user is told about the correction"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --window 128000 \
    --command "/lcm status" > "$T/status" 2>&1 || fail "/lcm status"
assert_grep "$T/status" "window: the host believes 128.0k, corrected to 40.0k (provider-error)" \
    "status names the correction and its source after a restart"
assert_grep "$T/status" "of 40.0k" "occupancy is measured against the corrected window"
# another model (another host window) makes the correction stale
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --window 200000 \
    --command "/lcm status" > "$T/status2" 2>&1 || fail "/lcm status"
assert_grep "$T/status2" "window: 200.0k (host)" "a different host window is not overridden"
done_ok
