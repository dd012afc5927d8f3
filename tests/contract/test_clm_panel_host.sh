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

clm_session clmpanel-0001
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

cat > "$T/host.sh" <<EOF
cd "$T/work" && TMPDIR="$T/tmp" "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" \
    --cwd "$T/work" 2>"$T/host-stderr.txt"
echo "HOST EXITED \$?"
echo "TTY: \$(stty -a | tr ' ;' '\n\n' | grep -Ex -- '-?(icanon|echo)' | tr '\n' ' ')"
sleep 600
EOF
tui_start host "$T/host.sh" "$T/host-stderr.txt"

# (capture-pane drops trailing blanks: the prompt "> " reads ">")
wait_for ">" "the interactive prompt did not appear"
keys "/clm overview" Enter
wait_for "overview (fit): " "the panel did not show the plugin's overview page"
wait_for "/clm overview fit -- lines" "the panel's title does not name the page it shows"
wait_for "revision 1 accepted after request" "the overview does not list the accepted edit"
wait_gone "> /clm overview" "the panel is not on its own (alternate) screen"

keys z
wait_for "overview (requests): " "z did not show the next zoom"
wait_gone "overview (fit)" "the previous zoom is still on screen after z"

keys Left
wait_for "/clm overview requests at " "<- did not select an event"
wait_for "  > " "the plugin does not mark the selected event"
shows_re "^    > [0-9]*\. revision 1 accepted" || { tui_dump; fail "<- from now did not select the last event, the accepted edit"; }
ok
keys Enter
wait_for "/clm edits 1 -- lines" "Enter on the accepted edit did not open its diff page"
wait_for "start the task USER_ONE{+_EDITED+}" "the diff page does not show the edit side by side"
keys Escape
wait_for "/clm overview requests at " "Esc from the diff did not go back to the overview"
keys Escape
wait_gone "z zoom" "Esc did not close the panel"
wait_for "> /clm overview" "the normal screen did not come back after the panel"

# Cooked mode again: the typed line echoes and the command runs.
keys "/clm status" Enter
wait_for "> /clm status" "typed text does not echo after the panel (terminal not restored)"
wait_for "live context: on" "a command after the panel did not run"

# The /lcm cockpit: select summaryTokens, type a new value, the plugin writes lcm.json.
keys "/lcm settings" Enter
wait_for "/lcm settings -- lines" "/lcm settings did not open the cockpit panel"
# summaryTokens is the seventh row (swap: 3, re-cut: 2, summaries: keepRecentTokens first).
keys Down Down Down Down Down Down
poll "six Downs did not select summaryTokens" shows_re "^> *summaryTokens"
keys Enter
wait_for "summaryTokens = 1200_" "Enter on a cockpit row did not open its value"
keys BSpace BSpace BSpace BSpace 9 0 0 Enter
wait_for "900" "the cockpit did not show the new value"
poll "the cockpit edit was not written to lcm.json" grep -Eqs '"summaryTokens":[[:space:]]*900' "$HOME_DIR/lcm.json"
keys q
wait_gone "/lcm settings -- lines" "q did not close the cockpit"
keys "/quit" Enter
wait_for "HOST EXITED 0" "the host did not quit cleanly after the panels"
wait_for "TTY: icanon echo" "the terminal is not back in cooked mode with echo after the host quit"

# Killed with the panel up (SIGTERM): the terminal is still given back.
tui_restart
wait_for ">" "the interactive prompt did not appear the second time"
keys "/clm overview" Enter
wait_for "/clm overview fit -- lines" "the panel did not open the second time"
HOST_PID=$(pgrep -P "$($TM list-panes -t "$TUI" -F '#{pane_pid}')" agent-host)
[ -n "$HOST_PID" ] || fail "the host's pid is not found under its pane"
kill -TERM "$HOST_PID"
wait_for "HOST EXITED 143" "the host did not die of SIGTERM"
wait_for "TTY: icanon echo" "SIGTERM with the panel up left the terminal in raw mode"
done_ok
