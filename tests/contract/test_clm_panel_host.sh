#!/bin/sh
# The /clm panel in the reference host's interactive mode on a terminal, driven in a
# detached tmux session the way a person uses it. A scripted model (the loopback fake) first
# edits LIVE_CONTEXT.md once, so the branch holds an accepted revision. Then agent-host runs
# interactively in tmux on that session: `/clm overview` opens the panel on the plugin's
# overview page; `z` asks for the next zoom (the page's header changes); `<-` selects the
# last event (the accepted revision, marked '>' by the plugin) and Enter shows its
# side-by-side diff (`/clm edits 1`); Esc goes back to the overview and Esc again closes the
# panel; the terminal is back in cooked mode (a typed command echoes and runs); `/lcm
# settings` opens the cockpit and an edit there is saved to lcm.json; after /quit, and after a
# SIGTERM with the panel up, the terminal is in cooked mode with echo. Bounded polls only.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 0; }

mkdir -p "$T/work" "$T/tmp"
export TMPDIR="$T/tmp"
SID="clmpanel-0001"
MIRROR="$T/tmp/lossless-context-$SID/LIVE_CONTEXT.md"
S="$T/s.jsonl"
printf '{"type":"session","version":3,"id":"%s","timestamp":"2025-11-29T17:00:00.000Z","cwd":"%s"}\n' \
    "$SID" "$T/work" > "$S"
cat > "$T/script.json" <<EOF
[
 {"tool_calls":[{"name":"bash","arguments":{"command":"echo PANEL_TOOL_OUTPUT"}}]},
 {"tool_calls":[{"name":"edit","arguments":{"path":"$MIRROR","oldText":"USER_ONE","newText":"USER_ONE_EDITED"}}]},
 {"content":"EDIT_RUN_DONE"}
]
EOF
start_server "$T/script.json" "$T/r1.jsonl"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "start the task USER_ONE" \
    > "$T/out1.txt" 2> "$T/err1.txt" || { cat "$T/out1.txt" "$T/err1.txt"; fail "the editing run failed"; }
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" --command "/clm edits" > "$T/edits.txt" 2>&1
assert_grep "$T/edits.txt" "^revision 1 accepted" "the scripted edit was accepted (the panel needs an edit to open)"

TM="tmux -S $T/tmux.sock"
cleanup_tmux() { $TM kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT
cat > "$T/host.sh" <<EOF
cd "$T/work" && TMPDIR="$T/tmp" "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" \
    --cwd "$T/work" 2>"$T/host-stderr.txt"
echo "HOST EXITED \$?"
echo "TTY: \$(stty -a | tr ' ;' '\n\n' | grep -Ex -- '-?(icanon|echo)' | tr '\n' ' ')"
sleep 600
EOF
$TM new-session -d -s host -x 120 -y 40 "sh $T/host.sh" || fail "tmux cannot start a session"

screen() { $TM capture-pane -p -t host; }
wait_for() {
    _i=0
    while ! screen | grep -qF -- "$1"; do
        _i=$((_i + 1))
        [ $_i -le 200 ] || { echo "--- screen:"; screen; echo "--- stderr:"; tail -n 20 "$T/host-stderr.txt"; fail "$2"; }
        sleep 0.1
    done
    ok
}
wait_gone() {
    _i=0
    while screen | grep -qF -- "$1"; do
        _i=$((_i + 1))
        [ $_i -le 200 ] || { echo "--- screen:"; screen; fail "$2"; }
        sleep 0.1
    done
    ok
}

# (capture-pane drops trailing blanks: the prompt "> " reads ">")
wait_for ">" "the interactive prompt did not appear"
$TM send-keys -t host "/clm overview" Enter
wait_for "overview (fit): " "the panel did not show the plugin's overview page"
wait_for "/clm overview fit -- lines" "the panel's title does not name the page it shows"
wait_for "revision 1 accepted after request" "the overview does not list the accepted edit"
wait_gone "> /clm overview" "the panel is not on its own (alternate) screen"

$TM send-keys -t host z
wait_for "overview (requests): " "z did not show the next zoom"
wait_gone "overview (fit)" "the previous zoom is still on screen after z"

$TM send-keys -t host Left
wait_for "/clm overview requests at " "<- did not select an event"
wait_for "  > " "the plugin does not mark the selected event"
screen | grep -q "^    > [0-9]*\. revision 1 accepted" || { screen; fail "<- from now did not select the last event, the accepted edit"; }
ok
$TM send-keys -t host Enter
wait_for "/clm edits 1 -- lines" "Enter on the accepted edit did not open its diff page"
wait_for "start the task USER_ONE{+_EDITED+}" "the diff page does not show the edit side by side"
$TM send-keys -t host Escape
wait_for "/clm overview requests at " "Esc from the diff did not go back to the overview"
$TM send-keys -t host Escape
wait_gone "z zoom" "Esc did not close the panel"
wait_for "> /clm overview" "the normal screen did not come back after the panel"

# Cooked mode again: the typed line echoes and the command runs.
$TM send-keys -t host "/clm status" Enter
wait_for "> /clm status" "typed text does not echo after the panel (terminal not restored)"
wait_for "live context: on" "a command after the panel did not run"

# The /lcm cockpit: select summaryTokens, type a new value, the plugin writes lcm.json.
$TM send-keys -t host "/lcm settings" Enter
wait_for "/lcm settings -- lines" "/lcm settings did not open the cockpit panel"
# summaryTokens is the seventh row (swap: 3, re-cut: 2, summaries: keepRecentTokens first).
$TM send-keys -t host Down Down Down Down Down Down
i=0
while ! screen | grep -q "^> *summaryTokens"; do
    i=$((i + 1)); [ $i -le 200 ] || { screen; fail "six Downs did not select summaryTokens"; }
    sleep 0.1
done
ok
$TM send-keys -t host Enter
wait_for "summaryTokens = 1200_" "Enter on a cockpit row did not open its value"
$TM send-keys -t host BSpace BSpace BSpace BSpace 9 0 0 Enter
wait_for "900" "the cockpit did not show the new value"
_i=0
while ! grep -Eq '"summaryTokens":[[:space:]]*900' "$HOME_DIR/lcm.json" 2>/dev/null; do
    _i=$((_i + 1)); [ $_i -le 100 ] || { cat "$HOME_DIR/lcm.json" 2>&1; screen; fail "the cockpit edit was not written to lcm.json"; }
    sleep 0.1
done
ok
$TM send-keys -t host q
wait_gone "/lcm settings -- lines" "q did not close the cockpit"
$TM send-keys -t host "/quit" Enter
wait_for "HOST EXITED 0" "the host did not quit cleanly after the panels"
wait_for "TTY: icanon echo" "the terminal is not back in cooked mode with echo after the host quit"

# Killed with the panel up (SIGTERM): the terminal is still given back.
$TM kill-session -t host
$TM new-session -d -s host -x 120 -y 40 "sh $T/host.sh" || fail "tmux cannot start a second session"
wait_for ">" "the interactive prompt did not appear the second time"
$TM send-keys -t host "/clm overview" Enter
wait_for "/clm overview fit -- lines" "the panel did not open the second time"
HOST_PID=$(pgrep -P "$($TM list-panes -t host -F '#{pane_pid}')" agent-host)
[ -n "$HOST_PID" ] || fail "the host's pid is not found under its pane"
kill -TERM "$HOST_PID"
wait_for "HOST EXITED 143" "the host did not die of SIGTERM"
wait_for "TTY: icanon echo" "SIGTERM with the panel up left the terminal in raw mode"
done_ok
