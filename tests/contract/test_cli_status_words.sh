#!/bin/sh
# `lcm status` speaks as the CLI (not "read-only MCP server"), in human sizes; the MCP tool's
# lcm_status keeps its own header.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/contract/cli_home.sh"
cli_home
"$LCM" status --home "$HOME_DIR" >"$T/s" 2>&1 || { cat "$T/s"; fail "status exits 0"; }
assert_nogrep "$T/s" "MCP server" "lcm status does not open as the MCP server"
assert_grep "$T/s" "^lcm [0-9]" "lcm status opens with lcm and its version"
assert_nogrep "$T/s" "^bytes: [0-9]*$" "no raw byte count"
assert_grep "$T/s" "[0-9.]* [KMG]B" "the size in KB/MB"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lcm_status","arguments":{}}}' \
    | "$LCM" mcp --home "$HOME_DIR" >"$T/mcp" 2>"$T/mcp.err" || { cat "$T/mcp.err"; fail "lcm mcp"; }
assert_grep "$T/mcp" "read-only MCP server" "the MCP tool keeps its header"
done_ok
