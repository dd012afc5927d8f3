#!/bin/sh
# `lcm tui` at 80x24: tab 1's session rows keep every column a person reads -- the short id
# (which lcm takes back), the date, the size with its unit, the folder and the start of the
# first request -- instead of a 43-character id pushing the folder off the screen.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/contract/cli_home.sh"
command -v tmux >/dev/null 2>&1 || fail "tmux is needed (tests/deps.sh installs it)"
SOCK="$T/tmux.sock"
tm() { tmux -S "$SOCK" "$@"; }
trap 'tmux -S "$SOCK" kill-server 2>/dev/null; cleanup' EXIT
export LANG=C.UTF-8 LC_ALL=C.UTF-8
cli_home
tm new-session -d -s tui -x 80 -y 24 "'$LCM' tui --home '$HOME_DIR'" || fail "tmux starts lcm tui"
i=0
while [ $i -lt 200 ]; do
    tm capture-pane -p -t tui >"$T/screen.txt" 2>/dev/null
    grep -q "1fb5e404" "$T/screen.txt" && break
    sleep 0.05; i=$((i + 1))
done
row=$(grep "^.\{0,2\}1fb5e404 " "$T/screen.txt")
[ -n "$row" ] || { cat "$T/screen.txt"; fail "tab 1 lists session A by its short id"; }
ok
echo "$row" | grep -q "/proj/alpha" || { cat "$T/screen.txt"; fail "the folder column is on the 80-column screen"; }
echo "$row" | grep -q " [0-9.]*[kMG] " || { cat "$T/screen.txt"; fail "the size is whole, with its unit"; }
echo "$row" | grep -q "why do the" || { cat "$T/screen.txt"; fail "the first request starts on the row"; }
echo "$row" | grep -q "2026-11-30 09:00" || { cat "$T/screen.txt"; fail "the date"; }
ok
done_ok
