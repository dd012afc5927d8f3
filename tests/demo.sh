#!/bin/sh
# make demo: the main job on a fresh machine, with no network and no model.
# Generates a ~500k-token session, replays it through the reference host with the plugin
# at a 128k window, and shows what a newcomer should see: /lcm status and /clm status
# before and after, an lcm_grep that finds a needle from the first minutes of the session,
# lcm_expand_query reading it back, and one accepted live-context edit (made by a scripted
# stand-in for a model, on loopback, with the host's ordinary bash tool).
set -u
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
DEMO="$BUILD/demo"
rm -rf "$DEMO"
mkdir -p "$DEMO/home" "$DEMO/tmp" "$DEMO/work"
export TMPDIR="$DEMO/tmp"
IN="$DEMO/recorded.jsonl"
S="$DEMO/session.jsonl"
host() { "$BUILD/agent-host" --home "$DEMO/home" --plugin-dir "$BUILD/plugins" --cwd "$DEMO/work" "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }
t0=$(date +%s)

say "1. a recorded session of ~500,000 tokens (seeded, deterministic)"
"$BUILD/agent-host" gen --seed 7 --tokens 500000 "$IN" || die "gen failed"
python3 - "$IN" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
msgs = [r for r in rows if r.get("type") == "message"]
print("%d entries, %d messages, %.1f MB" % (len(rows), len(msgs), sum(len(json.dumps(r)) for r in rows) / 1e6))
PY

say "2. before: a new session, /lcm status and /clm status"
host --session "$S" --command "/lcm status" --command "/clm status" || die "status failed"

say "3. replay it through the plugin at a 128k window (every event, as if live)"
host --session "$S" --window 128000 replay "$IN" --command "/lcm status" --command "/clm status" \
    || die "replay failed"

NEEDLE=$(python3 - "$IN" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    m = re.search(r"Remember (N\d\d=\d+)", line)
    if m:
        print(m.group(1)); break
PY
)
[ -n "$NEEDLE" ] || die "the generated session holds no needle"

say "4. lcm_grep finds a needle from the first minutes: $NEEDLE"
host --session "$S" --tool lcm_grep "{\"pattern\":\"$NEEDLE\"}" > "$DEMO/grep.txt" || die "lcm_grep failed"
head -n 12 "$DEMO/grep.txt"
ENTRY=$(sed -n 's/.*entry \([0-9a-f]\{8\}\).*/\1/p' "$DEMO/grep.txt" | head -n 1)
[ -n "$ENTRY" ] || ENTRY=$(grep -o '[0-9a-f]\{8\}' "$DEMO/grep.txt" | head -n 1)
[ -n "$ENTRY" ] || die "lcm_grep did not name an entry"

say "5. lcm_expand_query reads entry $ENTRY back (no model: the verbatim window)"
host --session "$S" --tool lcm_expand_query "{\"entry_id\":\"$ENTRY\",\"query\":\"What is $NEEDLE about?\"}" \
    > "$DEMO/expand.txt" || die "lcm_expand_query failed"
head -c 1200 "$DEMO/expand.txt"; echo
grep -q "$NEEDLE" "$DEMO/expand.txt" || die "the expanded entry does not hold $NEEDLE"

say "6. one live-context edit: the (scripted) model pins a note in LIVE_CONTEXT.md with bash"
SID=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['id'])" "$S")
MIRROR="$TMPDIR/lossless-context-$SID/LIVE_CONTEXT.md"
NOTE="PINNED: the needle $NEEDLE was found with lcm_grep in entry $ENTRY."
python3 - "$DEMO/script.json" "$ROOT/tests/demo/pin_note.py" "$MIRROR" "$NOTE" <<'PY'
import json, shlex, sys
out, tool, mirror, note = sys.argv[1:5]
cmd = "python3 %s %s %s" % (shlex.quote(tool), shlex.quote(mirror), shlex.quote(note))
json.dump([{"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]},
           {"content": "Pinned the needle in my live context."},
           {"content": "My notes say: " + note}], open(out, "w"))
PY
python3 "$ROOT/tests/contract/fake_openai.py" --port 0 --script "$DEMO/script.json" \
    --record "$DEMO/requests.jsonl" > "$DEMO/port" 2>"$DEMO/server.err" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
i=0; while [ ! -s "$DEMO/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
PORT=$(head -n 1 "$DEMO/port")
[ -n "$PORT" ] || die "the scripted model did not start"
URL="http://127.0.0.1:$PORT/v1"
host --session "$S" --window 128000 --base-url "$URL" --model scripted \
    -p "Pin the needle you just found in your live context." || die "the edit turn failed"
host --session "$S" --window 128000 --base-url "$URL" --model scripted \
    -p "What did you pin?" || die "the follow-up turn failed"
python3 - "$DEMO/requests.jsonl" "$NOTE" <<'PY' || die "the next request did not carry the edit"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
last = json.dumps(rows[-1])
assert sys.argv[2] in last, "note missing from the last request"
print("the next request sent to the model carries the pinned note (%d messages)" % len(rows[-1]["messages"]))
PY

say "7. after: /lcm status and /clm status"
host --session "$S" --window 128000 --command "/lcm status" --command "/clm status" || die "status failed"
grep -c '"customType":"live-context-state"' "$S" | sed 's/^/live-context-state entries in the session file: /'
echo
echo "demo finished in $(( $(date +%s) - t0 ))s; files in $DEMO"
