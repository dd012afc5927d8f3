#!/bin/sh
# runner: alone (drives the real Pi in tmux, reading the screen as it draws)
# The /clm panel in the real Pi (interactive mode, the pinned CLI of tests/e2e/package-lock.json:
# the current Pi, on the Node.js 22 pinned beside it)
# driven in a detached tmux session the way a person uses it: Pi runs against the loopback
# fake model with the plugin loaded through the bridge (host/pi/extension.js); a prompt makes
# one provider-reported request; `/clm overview` opens Pi's overlay showing the plugin's
# overview page; `z` asks the plugin for the next zoom (the page's own header changes from
# "overview (fit)" to "overview (requests)"); `<-` selects the accepted edit the scripted
# model made and Enter shows its side-by-side diff; `s` switches to the settings page, Down/Enter
# edits `reminders` and the plugin saves it; Esc closes the panel and Pi answers a prompt
# again. Every wait is a bounded poll of the screen (capture-pane). PI_OFFLINE=1: Pi fetches
# no tools from the network. Skips only when node, npm or tmux is absent.
. "$(dirname "$0")/lib.sh"
for tool in node npm tmux; do
    command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is not installed"; exit 0; }
done
if ldd "$BUILD/lossless-context.so" 2>/dev/null | grep -q libasan; then
    echo "SKIP: $BUILD/lossless-context.so is a sanitizer build; node cannot host it"
    exit 0
fi
. "$ROOT/tests/e2e/lib.sh"
e2e_begin "$BUILD" "" e2e-node pi "Pi and Node.js 22" lossless-context.so
PI=$NODE_BIN
e2e_koffi

mkdir -p "$T/agent" "$T/work" "$T/tmp"
# The first prompt's run: the model edits the live context once through Pi's bash tool (the
# mirror's folder is named by Pi's session id, unknown here, hence the glob), so the branch
# holds an accepted revision for the panel's Enter.
cat > "$T/script.json" <<EOF
[
 {"tool_calls":[{"name":"bash","arguments":{"command":"sed -i 's/PANEL_USER_TEXT/PANEL_USER_TEXT_EDITED/' $T/tmp/lossless-context-*/LIVE_CONTEXT.md"}}]},
 {"content":"EDIT_RUN_DONE"}
]
EOF
start_server "$T/script.json" "$T/requests.jsonl"
python3 -c "import sys; sys.path.insert(0, sys.argv[1]); import pi_session; pi_session.write_models(sys.argv[2], int(sys.argv[3]))" \
    "$ROOT/tests/e2e" "$T/agent" "$PORT" || fail "models.json"

cat > "$T/pi.sh" <<EOF
cd "$T/work" && PATH="$PATH" HOME="$HOME_DIR" TMPDIR="$T/tmp" PI_OFFLINE=1 PI_CODING_AGENT_DIR="$T/agent" \
LOSSLESS_CONTEXT_SO="$BUILD/lossless-context.so" NODE_PATH="$KOFFI_PATH" \
"$PI" --provider fake --model fake-model -e "$ROOT/host/pi/extension.js" 2>"$T/pi-stderr.txt"
echo "PI EXITED \$?"
sleep 600
EOF
tui_start pi "$T/pi.sh" "$T/pi-stderr.txt"
# at_least_requests N: the fake model has had N agent requests (with tools) or more.
at_least_requests() { _n=$(grep -c '"tools"' "$T/requests.jsonl" 2>/dev/null); [ "${_n:-0}" -ge "$1" ]; }

wait_for "fake-model" "Pi's interactive screen did not come up"
keys "first question PANEL_USER_TEXT" Enter
wait_for "EDIT_RUN_DONE" "Pi did not show the model's answer"

keys "/clm overview"
wait_for "/clm overview" "the typed command is not in Pi's editor"
keys Enter
wait_for "overview (fit): 2 provider-reported requests" "the panel did not show the plugin's overview page"
wait_for "revision 1 accepted after request" "the overview does not list the accepted edit"
wait_for "/clm overview fit -- lines" "the panel's title does not name the page it shows"
wait_for "z zoom" "the panel's key help is not shown"

keys z
wait_for "overview (requests): 2 provider-reported requests" "z did not show the next zoom"
wait_gone "overview (fit)" "the previous zoom is still on screen after z"
keys z
wait_for "overview (turns)" "a second z did not show the turns zoom"

# <- selects the last event (the accepted edit), Enter shows its side-by-side diff, Esc
# goes back to the overview.
keys Left
wait_for "/clm overview turns at 1" "<- did not select the event"
wait_for "> 1. revision 1 accepted" "the plugin does not mark the selected edit"
keys Enter
wait_for "/clm edits 1 -- lines" "Enter on the accepted edit did not open its diff page"
wait_for "PANEL_USER_TEXT{+_EDITED+}" "the diff page does not show the edit side by side"
keys Escape
wait_for "/clm overview turns at 1 -- lines" "Esc from the diff did not go back to the overview"

# Settings: select reminders (the third row), change it, and the plugin saves it.
keys s
wait_for "/clm settings -- lines" "s did not switch to the settings page"
keys Down Down Enter
wait_for "reminders = on_" "Enter on a setting did not open its value for editing"
keys BSpace BSpace o f f Enter
wait_for "reminders = off (saved)" "the panel's edit did not reach /clm config"
grep -rqs '"reminders":"off"' "$T/agent/sessions" || fail "the changed setting was not saved in the session"
ok

keys Escape
wait_gone "/clm settings -- lines" "Esc did not close the panel"
wait_gone "z zoom" "the panel's footer stayed after Esc"

# The panel decoded keys with Pi's own pi-tui (found under Pi's scope), not the plain fallback.
! grep -q "pi-tui not loadable" "$T/agent/lcm/pi-bridge.log" ||
    fail "the panel could not load Pi's pi-tui: $(grep "pi-tui not loadable" "$T/agent/lcm/pi-bridge.log" | head -n 1)"
ok

# Pi still works: the editor takes a prompt and the model answers it.
keys "second question after the panel" Enter
wait_for "second question after the panel" "Pi's editor did not take a prompt after the panel closed"
poll "Pi sent no request for the prompt after the panel" at_least_requests 3
! screen | grep -q "PI EXITED" || fail "Pi exited"
ok
done_ok
