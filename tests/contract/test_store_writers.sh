#!/bin/sh
# Every writer the project has, on one live store. The reference host replays a session with
# the default settings (the background summary worker on), and while it runs, round after
# round, the other writers take turns on the same home and the same session's store:
# `lcm compact --session`, a second host's `/lcm status`, `/lcm doctor`, `lcm doctor
# --repair`, `lcm import` of the session file the host is writing, `lcm backup`, `lcm gc
# --apply`, a Claude Code `lcm hook stop` into the same home, `lcm grep` over every session.
# Then: the host never went offline and exits 0, no writer met a malformed store, every
# store passes integrity_check, and the live store holds every message a lone replay stores,
# each one byte for byte. (A lossless store must never lose a byte: before the rule in
# engine/store/sqlite/store_sqlite_file.h, this test's first round already left the store malformed.)
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
mkdir -p "$T/tmp"
export TMPDIR="$T/tmp"
"$HOST" gen --seed 31 --tokens 2000000 "$T/in.jsonl" >/dev/null || fail "gen"
SID=$(head -1 "$T/in.jsonl" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
CSID=5e551011-0000-4000-8000-0000000057e5
python3 "$ROOT/tests/contract/claude_transcript.py" "$T/claude.jsonl" --messages 30 --session "$CSID" --cwd /proj/w
conf='{"leafChunkTokens":2000,"summaryTokens":200}'
mkdir -p "$T/ref"; printf '%s\n' "$conf" > "$T/ref/lcm.json"; printf '%s\n' "$conf" > "$HOME_DIR/lcm.json"
"$HOST" --home "$T/ref" --plugin-dir "$PLUGINS" --session "$T/ref-out.jsonl" --window 16000 \
    replay "$T/in.jsonl" >/dev/null 2>&1 || fail "lone replay"

( "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" --window 16000 \
      replay "$T/in.jsonl" > "$T/replay.out" 2>&1; echo $? > "$T/replay.rc" ) &
P=$!
side() { # a writer's name, then its command: its output is kept, a non-zero exit noted
    _n=$1; shift
    "$@" >> "$T/side.out" 2>&1 || echo "$_n rc $?" >> "$T/side.rc"
}
hook() { printf '{"session_id":"%s","transcript_path":"%s","cwd":"/proj/w","hook_event_name":"Stop"}' \
    "$CSID" "$T/claude.jsonl" | "$LCM" hook stop --home "$HOME_DIR"; }
: > "$T/side.rc"
rounds=0
while kill -0 $P 2>/dev/null; do
    # the store exists once the host's first request was stored
    if [ -f "$HOME_DIR/lcm/$SID.sqlite" ]; then
        side compact "$LCM" compact --home "$HOME_DIR" --session "$SID"
        side status "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" --command "/lcm status"
        side doctor "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" --command "/lcm doctor"
        side repair "$LCM" doctor --home "$HOME_DIR" --repair --session "$SID"
        [ -s "$T/out.jsonl" ] && side import "$LCM" import --home "$HOME_DIR" "$T/out.jsonl"
        side backup "$LCM" backup --home "$HOME_DIR" --session "$SID"
        side gc "$LCM" gc --home "$HOME_DIR" --apply
        python3 "$ROOT/tests/contract/claude_transcript.py" "$T/claude.jsonl" --messages 4 --session "$CSID" \
            --cwd /proj/w --append --tag ROUND$rounds
        side hook hook
        side grep "$LCM" grep --home "$HOME_DIR" --scope all_sessions request
        rounds=$((rounds+1))
    else
        sleep 0.05
    fi
done
wait $P
[ "$rounds" -ge 2 ] || fail "the other writers ran beside the host ($rounds rounds)"; ok
assert_eq "$(cat "$T/replay.rc")" "0" "the host's replay exits 0"
cat "$T/replay.out" "$T/side.out" > "$T/all.out"
assert_nogrep "$T/all.out" "is malformed\|not a database\|is not a readable SQLite" "no writer ever met a damaged store"
assert_nogrep "$T/replay.out" "store is offline" "the host's store never went offline"
# doctor --repair reports "something to do" with exit 1 only when it found a fault: none here
assert_eq "$(grep -v '^grep rc 1$' "$T/side.rc")" "" "every other writer exits 0 (a grep with no hit aside)"
python3 - "$HOME_DIR" "$T/ref" "$SID" <<'PY' || fail "every store whole, every message kept"
import glob, sqlite3, sys
home, ref, sid = sys.argv[1:4]
bad = []
for f in sorted(glob.glob(home + "/lcm/*.sqlite") + glob.glob(home + "/lcm-home/*.sqlite")):
    r = sqlite3.connect(f).execute("PRAGMA integrity_check").fetchall()
    if r != [("ok",)]:
        bad.append("%s: %s" % (f, r[:3]))
q = "SELECT entry_id, raw_json, payload FROM messages ORDER BY entry_id"
live = sqlite3.connect("%s/lcm/%s.sqlite" % (home, sid)).execute(q).fetchall()
lone = sqlite3.connect("%s/lcm/%s.sqlite" % (ref, sid)).execute(q).fetchall()
if len(live) != len(lone):
    bad.append("live store %d messages, a lone replay %d" % (len(live), len(lone)))
elif live != lone:
    bad.append("a message's bytes differ from a lone replay's")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
ok
echo "rounds: $rounds"
done_ok
