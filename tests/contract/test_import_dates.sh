#!/bin/sh
# Imported history keeps its own time (issue 17 item 8): a Pi session from 2026-11-20
# brought in by `lcm import` is dated 2026-11-20 (its header's timestamp), not the day of
# the import, in `lcm sessions` and in a cross-session lcm_grep hit; a transcript with no
# header (Claude Code) is dated by its earliest entry; a store an older import dated "now"
# is corrected by importing again; and the plugin's own session start over the imported
# store keeps that date (meta "created" is the store's birth, never overwritten later).
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
TODAY=$(date -u +%Y-%m-%d)
OLD=2026-11-20
[ "$TODAY" != "$OLD" ] || OLD=2026-11-19 # the test needs a day that is not today
mkdir -p "$T/work" "$T/other"
H="$T/h"
{
printf '{"type":"session","version":3,"id":"pi-dated-1","timestamp":"%sT09:15:00.000Z","cwd":"%s"}\n' "$OLD" "$T/work"
printf '{"type":"message","id":"m1","parentId":null,"timestamp":"%sT09:16:00.000Z","message":{"role":"user","content":[{"type":"text","text":"remember OLDNEEDLE_7731 is the deploy key"}],"timestamp":0}}\n' "$OLD"
printf '{"type":"message","id":"m2","parentId":"m1","timestamp":"%sT09:16:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Noted."}],"stopReason":"stop","timestamp":0}}\n' "$OLD"
} >"$T/pi.jsonl"
"$LCM" import --home "$H" "$T/pi.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "import"; }
ok
"$LCM" sessions --home "$H" >"$T/sessions.txt" 2>&1 || { cat "$T/sessions.txt"; fail "lcm sessions"; }
assert_grep "$T/sessions.txt" "pi-dated-1" "the imported session is listed"
assert_grep "$T/sessions.txt" "$OLD 09:15" "listed with its header's time"
assert_nogrep "$T/sessions.txt" "$TODAY" "not with the import's date"

# A cross-session hit, through the real host and plugin, from another session.
"$HOST" --home "$H" --plugin-dir "$PLUGINS" --session "$T/new.jsonl" --cwd "$T/other" \
    --tool lcm_grep '{"query":"OLDNEEDLE_7731","scope":"all_sessions"}' >"$T/grep.txt" 2>&1 ||
    { cat "$T/grep.txt"; fail "cross-session lcm_grep"; }
assert_grep "$T/grep.txt" "past session pi-dated-1, $OLD" "the cross-session hit carries the session's own date"
assert_nogrep "$T/grep.txt" "past session pi-dated-1, $TODAY" "not the import's"

# The plugin's session start over the imported store (the same session id) keeps the date.
cp "$T/pi.jsonl" "$T/live.jsonl"
"$HOST" --home "$H" --plugin-dir "$PLUGINS" --session "$T/live.jsonl" --cwd "$T/work" \
    --command "/lcm status" >"$T/status.txt" 2>&1 || { cat "$T/status.txt"; fail "/lcm status"; }
"$LCM" sessions --home "$H" >"$T/sessions2.txt" 2>&1 || fail "lcm sessions (2)"
assert_grep "$T/sessions2.txt" "$OLD 09:15" "a later session start does not re-date the store"

# A store an older import dated by the import: importing again gives it its own date.
python3 - "$H" <<'PY'
import glob, sqlite3, sys, time
(p,) = [x for x in glob.glob(sys.argv[1] + "/lcm/*.sqlite")
        if sqlite3.connect(x).execute("SELECT value FROM meta WHERE key='session_id'").fetchone()[0] == "pi-dated-1"]
db = sqlite3.connect(p); db.execute("UPDATE meta SET value=? WHERE key='created'", (str(int(time.time() * 1000)),)); db.commit()
PY
"$LCM" sessions --home "$H" >"$T/s3.txt" 2>&1; assert_grep "$T/s3.txt" "$TODAY" "(setup) the store is dated today"
"$LCM" import --home "$H" "$T/pi.jsonl" >/dev/null 2>&1 || fail "re-import"
"$LCM" sessions --home "$H" >"$T/s4.txt" 2>&1
assert_grep "$T/s4.txt" "$OLD 09:15" "re-import restores the session's own date"

# No header: a Claude Code transcript is dated by its earliest entry.
cat >"$T/claude.jsonl" <<'J'
{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"find the zebra bug"},"uuid":"u1","timestamp":"2025-06-01T10:00:00.000Z","sessionId":"c0ffee00-1111-2222-3333-444455556666","cwd":"/proj/claude"}
{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Found it."}],"stop_reason":"end_turn"},"uuid":"u2","timestamp":"2025-06-01T10:00:03.000Z","sessionId":"c0ffee00-1111-2222-3333-444455556666","cwd":"/proj/claude"}
J
"$LCM" import --home "$T/cc" "$T/claude.jsonl" >/dev/null 2>&1 || fail "claude import"
"$LCM" sessions --home "$T/cc" >"$T/cc.txt" 2>&1
assert_grep "$T/cc.txt" "2025-06-01 10:00" "a headerless transcript is dated by its first entry"
done_ok
