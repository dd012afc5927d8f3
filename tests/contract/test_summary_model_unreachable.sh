#!/bin/sh
# A summarizer whose session model cannot be reached through the host at all (the Pi
# bridge when Pi's model layer cannot be imported or Pi has no credentials; here the
# reference host replaying a session, which has no model and answers complete_async with
# AP_UNSUPPORTED): summaries fall back to extractive, and that is an error the user sees,
# not a silent fallback: /lcm status has a "summarizer error" line carrying the host's own
# reason, the plugin notifies it once, and the status names the host it runs in.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/home"
"$HOST" gen --seed 3 --tokens 60000 "$T/in.jsonl" >/dev/null || fail "gen"
printf '%s\n' '{"summarizer":"auto","leafChunkTokens":2000,"eagerSummaries":true}' >"$T/home/lcm.json"
"$HOST" --home "$T/home" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" replay "$T/in.jsonl" \
    --window 16000 --command "/lcm status" >"$T/out.txt" 2>"$T/err.txt" ||
    { tail -n 20 "$T/err.txt"; fail "the replay failed"; }
ok
assert_jsonl "$T/home/lcm/metrics.jsonl" \
    "any(r.get('kind') == 'summarizer-fallback' and r.get('from') == 'auto' for r in rows)" \
    "summaries were due and fell back from the session model"
assert_grep "$T/out.txt" "^summarizer error: the session's model is not reachable through the host, summaries are extractive (.*UTC): .*this host has no model" \
    "/lcm status shows the unreachable model as an error with the host's reason"
assert_grep "$T/out.txt" "^host: agent-host " "/lcm status names the host"
n=$(grep -c "summaries cannot use the session's model" "$T/err.txt")
[ "$n" -eq 1 ] || { cat "$T/err.txt"; fail "the plugin notified the unreachable model once (got $n)"; }
ok
done_ok
