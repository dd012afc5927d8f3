#!/bin/sh
# make demo: what lossless-context does, on a fresh machine, with no network and no model.
# Generates a long recorded session, replays it through the reference host with the plugin
# at a 128k window, then shows what a user does with the history: search it in plain words
# (lcm grep), read a message back (lcm expand), import another agent's transcript (lcm
# import, a Claude Code file), browse it (lcm tui, driven in tmux and printed), and one
# live-context edit made by a scripted stand-in for a model on loopback.
# Colour only when stdout is a terminal; DEMO=DIR puts the files elsewhere than BUILD/demo.
set -u
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
DEMO=${DEMO:-$BUILD/demo}
rm -rf "$DEMO"
mkdir -p "$DEMO/home" "$DEMO/tmp" "$DEMO/work"
DEMO=$(cd "$DEMO" && pwd)
export TMPDIR="$DEMO/tmp"
IN="$DEMO/recorded.jsonl"
S="$DEMO/session.jsonl"
H="$DEMO/home"
LCM="$BUILD/lcm"
host() { "$BUILD/agent-host" --home "$H" --plugin-dir "$BUILD/plugins" --cwd "$DEMO/work" "$@"; }
if [ -t 1 ]; then B=$(printf '\033[1m'); N=$(printf '\033[0m'); else B=; N=; fi
say() { printf '\n%s%s%s\n' "$B" "$*" "$N"; }
die() { echo "demo: $*" >&2; exit 1; }
SERVER=""; SOCK="$DEMO/tmux.sock"
trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null; tmux -S "$SOCK" kill-server 2>/dev/null' EXIT
t0=$(date +%s)
# No model here: summaries are made by the extractive summarizer (sentences kept verbatim),
# said up front rather than discovered as a fallback.
echo '{"summarizer": ["extractive"]}' > "$H/lcm.json"

say "1. A long recorded session"
"$BUILD/agent-host" gen --seed 7 --tokens 500000 "$IN" >/dev/null || die "gen failed"
python3 - "$IN" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
msgs = [r for r in rows if r.get("type") == "message"]
print("A generated coding session (seeded, the same every time): {:,} messages, %.1f MB,".format(len(msgs))
      % ( sum(len(json.dumps(r)) for r in rows) / 1e6))
print("about 500,000 tokens: four times a 128,000-token context window.")
PY

say "2. Replay it through the plugin, as if live, with a 128k window"
LCM_REQUEST_LOG="$DEMO/requests-replay.jsonl" host --session "$S" --window 128000 replay "$IN" \
    > "$DEMO/replay.txt" 2>&1 || { cat "$DEMO/replay.txt"; die "replay failed"; }
SID=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['id'])" "$S")
python3 - "$DEMO/requests-replay.jsonl" "$LCM" "$H" <<'PY' || die "the replay left no store"
import json, subprocess, sys
log, lcm, home = sys.argv[1:4]
reqs = [json.loads(l) for l in open(log)]
last, peak = reqs[-1], max(reqs, key=lambda r: r["tokens"])
f = "{:,}".format
try:  # what the store holds, as `lcm sessions --json` reports it
    st = json.loads(subprocess.check_output([lcm, "sessions", "--home", home, "--json"]))["sessions"][0]
    print("%s requests were sent. Every message is in the store, verbatim: %s messages (%s MB)."
          % (f(len(reqs)), f(st["messages"]), "%.1f" % (st["bytes"] / 1e6)))
    print("The older part of the session became %d summaries, each pointing at its originals."
          % st["summaries"])
except (subprocess.CalledProcessError, ValueError, LookupError, TypeError):
    print("%s requests were sent; every message is in the store, verbatim." % f(len(reqs)))
print("The last request carried the whole history (%s tokens as written) in %s tokens;"
      % (f(last["raw"]), f(last["tokens"])))
assert all(r["tokens"] <= r["window"] for r in reqs), "a request went over the window"
print("the largest request was %s tokens, %d%% of the window: none went over."
      % (f(peak["tokens"]), 100 * peak["tokens"] // peak["window"]))
PY

# The needle and its entry id come from the recorded file, so the demo does not depend on
# how lcm prints a hit; it checks that the search finds the needle and shows the hit.
read -r NEEDLE ENTRY <<EOF2
$(python3 - "$IN" <<'PY'
import json, re, sys
for line in open(sys.argv[1]):
    m = re.search(r"Remember (N\d\d=\d+)", line)
    if m:
        print(m.group(1), json.loads(line)["id"]); break
PY
)
EOF2
[ -n "$NEEDLE" ] && [ -n "$ENTRY" ] || die "the generated session holds no needle"

say "3. Search it in plain words: lcm grep \"where did I note $NEEDLE?\""
echo "(an early message, long since summarized away from what the model is sent)"
"$LCM" grep --home "$H" "where did I note $NEEDLE?" > "$DEMO/grep.txt" || die "lcm grep failed"
grep -m 1 "Remember $NEEDLE" "$DEMO/grep.txt" | cut -c1-180
grep -q "Remember $NEEDLE" "$DEMO/grep.txt" || die "lcm grep did not find $NEEDLE"

say "4. Read it back exactly: lcm expand SESSION $ENTRY"
"$LCM" expand --home "$H" "$SID" "$ENTRY" > "$DEMO/expand.txt" || die "lcm expand failed"
grep -m 1 "$NEEDLE" "$DEMO/expand.txt" || die "the expanded entry does not hold $NEEDLE"

say "5. Bring in another agent's history: lcm import a Claude Code transcript"
"$BUILD/agent-host" gen --seed 8 --tokens 60000 "$DEMO/other.jsonl" >/dev/null || die "gen failed"
python3 "$ROOT/tests/bench/pi_to_claude.py" "$DEMO/other.jsonl" "$DEMO/claude-code.jsonl" || die "conversion failed"
"$LCM" import --home "$H" "$DEMO/claude-code.jsonl" || die "lcm import failed"
echo "Both sessions are now searchable together:"
"$LCM" sessions --home "$H" | grep -v '^$' | cut -c1-110
OTHER=$(grep -o 'Remember N[0-9][0-9]=[0-9]*' "$DEMO/other.jsonl" | head -n 1 | sed 's/Remember //')
"$LCM" grep --home "$H" "$OTHER" > "$DEMO/grep2.txt" || die "lcm grep failed"
grep -q "Remember $OTHER" "$DEMO/grep2.txt" || die "the imported transcript is not searched"

say "6. Browse the stores: lcm tui (a terminal screen; here drawn in tmux and printed)"
if command -v tmux >/dev/null 2>&1; then
    tmux -S "$SOCK" new-session -d -x 80 -y 24 "'$LCM' tui --home '$H'" 2>/dev/null
    shown=""
    i=0; while [ $i -lt 100 ]; do
        tmux -S "$SOCK" capture-pane -p > "$DEMO/tui.txt" 2>/dev/null
        grep -q 'Sessions' "$DEMO/tui.txt" && break
        sleep 0.1; i=$((i+1))
    done
    tmux -S "$SOCK" send-keys / 2>/dev/null
    sleep 0.2
    tmux -S "$SOCK" send-keys -l "config retry window" 2>/dev/null
    tmux -S "$SOCK" send-keys Enter 2>/dev/null
    i=0; while [ $i -lt 100 ]; do
        tmux -S "$SOCK" capture-pane -p > "$DEMO/tui.txt" 2>/dev/null
        if grep -q 'hits' "$DEMO/tui.txt"; then shown=1; break; fi
        sleep 0.1; i=$((i+1))
    done
    tmux -S "$SOCK" send-keys q 2>/dev/null
    if [ -n "$shown" ]; then
        sed '/^ *$/d' "$DEMO/tui.txt" | head -n 9
        echo "   ..."
        tail -n 1 "$DEMO/tui.txt"
    else
        echo "(the screen did not come up in time; try: $LCM tui --home $H)"
    fi
else
    echo "(tmux is not installed, so the screen is not drawn here; try: $LCM tui --home $H)"
fi

say "7. Live context: the model edits what it will be sent"
echo "A scripted stand-in for a model (no real model, on loopback) pins a note in"
echo "LIVE_CONTEXT.md with an ordinary bash command; the plugin checks the edit, saves it in"
echo "the session file, and sends the edited context from then on."
MIRROR="$TMPDIR/lossless-context-$SID/LIVE_CONTEXT.md"
NOTE="PINNED: the needle $NEEDLE was found with lcm grep in entry $ENTRY."
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
i=0; while [ ! -s "$DEMO/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
PORT=$(head -n 1 "$DEMO/port")
[ -n "$PORT" ] || die "the scripted model did not start"
URL="http://127.0.0.1:$PORT/v1"
echo "> Pin the needle you just found in your live context."
host --session "$S" --window 128000 --base-url "$URL" --model scripted \
    -p "Pin the needle you just found in your live context." > "$DEMO/turn1.txt" 2>&1 \
    || { cat "$DEMO/turn1.txt"; die "the edit turn failed"; }
tail -n 1 "$DEMO/turn1.txt"
echo "> What did you pin?"
host --session "$S" --window 128000 --base-url "$URL" --model scripted \
    -p "What did you pin?" > "$DEMO/turn2.txt" 2>&1 || { cat "$DEMO/turn2.txt"; die "the follow-up turn failed"; }
tail -n 1 "$DEMO/turn2.txt"
python3 - "$DEMO/requests.jsonl" "$NOTE" "$S" <<'PY' || die "the next request did not carry the edit"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert sys.argv[2] in json.dumps(rows[-1]), "note missing from the last request"
saved = sum('"customType":"live-context-state"' in l for l in open(sys.argv[3]))
assert saved >= 1, "no revision saved in the session file"
print("The next request sent to the model carried the note, and the edit is saved in the")
print("session file (revision %d), so a resumed session keeps it." % saved)
PY

say "Done in $(( $(date +%s) - t0 )) s. Try it yourself on the demo's history:"
echo "  $LCM grep --home $H \"parser entry revision\""
echo "  $LCM tui --home $H"
echo "  $BUILD/agent-host --home $H --plugin-dir $BUILD/plugins --session $S --command \"/lcm status\""
