#!/bin/sh
# `lcm grep` answers in a screen by default (at most 10 hits, each line cut to the terminal's
# width), --limit N sets the count, --full prints whole lines; the CLI's footer names the CLI
# command (lcm expand SESSION ENTRY) while the MCP tool's still names the MCP call.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/contract/cli_home.sh"
cli_home

COLUMNS=80 "$LCM" grep rust --home "$HOME_DIR" >"$T/g" 2>"$T/e" || { cat "$T/g" "$T/e"; fail "grep exits 0"; }
hits=$(grep -c "rust" "$T/g")
n=$(wc -l <"$T/g")
[ "$n" -le 24 ] || { cat "$T/g"; fail "grep's default answer fits a 24-line screen (got $n lines)"; }
fits80 "$T/g" || { cat "$T/g"; fail "grep's lines fit 80 columns"; }
[ "$hits" -ge 5 ] || { cat "$T/g"; fail "grep still shows hits ($hits)"; }
assert_grep "$T/g" "lcm expand SESSION ENTRY" "the footer names the CLI command"
assert_nogrep "$T/g" "lcm_expand(" "the footer does not name the MCP call"
assert_grep "$T/g" "\-\-limit\|--offset" "the footer says how to see more"
ok

"$LCM" grep --limit 3 rust --home "$HOME_DIR" >"$T/g3" 2>&1 || { cat "$T/g3"; fail "grep --limit 3"; }
assert_eq "$(grep -c '^- ' "$T/g3")" "3" "--limit 3 shows 3 hits"
"$LCM" grep --limit 0 rust --home "$HOME_DIR" >"$T/g0" 2>&1; rc=$?
assert_eq "$rc" "2" "--limit 0 is a usage error"
"$LCM" grep --full rust --home "$HOME_DIR" >"$T/gf" 2>&1 || { cat "$T/gf"; fail "grep --full"; }
[ "$(grep -c '^- ' "$T/gf")" -gt 10 ] || { cat "$T/gf"; fail "--full shows more than a screen of hits"; }
COLUMNS=80 "$LCM" grep --full --role tool counter --home "$HOME_DIR" >"$T/gx" 2>&1 || { cat "$T/gx"; fail "grep --full counter"; }
assert_grep "$T/gx" "int counter = 0; /\* xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" \
    "--full prints a hit's line whole, even at a terminal"
ok

# at a real 80x24 terminal (tmux): the whole answer, header to footer, is on the one screen
if command -v tmux >/dev/null 2>&1; then
    SOCK="$T/tmux.sock"
    trap 'tmux -S "$SOCK" kill-server 2>/dev/null; cleanup' EXIT
    tmux -S "$SOCK" new-session -d -s g -x 80 -y 24 \
        "env -u COLUMNS -u LINES '$LCM' grep rust --home '$HOME_DIR'; echo DONE-\$?; sleep 60" || fail "tmux starts lcm grep"
    i=0
    while [ $i -lt 200 ]; do
        tmux -S "$SOCK" capture-pane -p -t g >"$T/pane" 2>/dev/null
        grep -q "DONE-" "$T/pane" && break
        sleep 0.05; i=$((i + 1))
    done
    assert_grep "$T/pane" "DONE-0" "lcm grep at a terminal exits 0"
    assert_grep "$T/pane" "^lcm grep query" "the header is still on the 24-line screen"
    assert_grep "$T/pane" "lcm expand SESSION ENTRY" "the footer is on the same screen"
    assert_grep "$T/pane" "^    request [0-9] rust" "a hit's words are on the screen"
fi

# the MCP tool keeps naming its own call
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lcm_grep","arguments":{"query":"rust"}}}' \
    | "$LCM" mcp --home "$HOME_DIR" >"$T/mcp" 2>"$T/mcp.err" || { cat "$T/mcp.err"; fail "lcm mcp"; }
assert_grep "$T/mcp" "lcm_expand({session, entry_id})" "the MCP tool's footer names the MCP call"
assert_nogrep "$T/mcp" "lcm expand SESSION" "the MCP tool's footer is not the CLI's"
done_ok
