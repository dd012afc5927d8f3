#!/bin/sh
# run.sh -- the real Codex CLI reads what `lcm hooks install --agent codex` writes.
#
#   sh tests/e2e/codex/run.sh [BUILD]     BUILD defaults to ./build (needs `make` first)
#
# Installs the pinned @openai/codex of package-lock.json into BUILD/e2e-codex once. HOME is
# a temp folder with a user's own config.toml. After the install, Codex loads the config
# (`codex doctor`: config loaded), lists the lcm MCP server with our command and home
# (`codex mcp list`) and has hooks on (`codex features list`); after the uninstall the
# config is the user's again, byte for byte, and Codex lists no lcm. (Live Codex sessions
# through the hooks and the MCP server: live.sh.)
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
. "$ROOT/tests/e2e/lib.sh"
e2e_begin "${1:-}" codex e2e-codex codex "Codex" lcm
LCM="$BUILD/lcm"
CODEX=$NODE_BIN
e2e_tmp codex-e2e
fail() { echo "FAIL: $*"; exit 1; }
export HOME="$T/home"
unset CODEX_HOME 2>/dev/null || true
mkdir -p "$HOME/.codex"
printf 'model = "gpt-5-codex"\n\n[features]\ncodex_hooks = false\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n' >"$HOME/.codex/config.toml"
cp "$HOME/.codex/config.toml" "$T/config.orig"
timeout 60 "$CODEX" features list >"$T/features0.txt" 2>/dev/null || fail "codex features list (before)"
grep -Eq "^(codex_)?hooks +[a-z]+ +false" "$T/features0.txt" || fail "the user's codex_hooks = false is not read as off"
"$LCM" hooks install --agent codex --home "$T/store" >"$T/install.txt" || fail "lcm hooks install --agent codex"
(timeout 60 "$CODEX" doctor 2>&1 || true) >"$T/doctor.txt"
grep -q "config .*loaded" "$T/doctor.txt" || fail "codex doctor does not load the config: $(grep -i -A3 config "$T/doctor.txt")"
timeout 60 "$CODEX" mcp list >"$T/mcp.txt" 2>&1 || fail "codex mcp list: $(cat "$T/mcp.txt")"
SELF=$(readlink -f "$LCM")
grep -q "^lcm  *$SELF  *mcp --home $T/store" "$T/mcp.txt" || fail "codex mcp list does not show lcm: $(cat "$T/mcp.txt")"
grep -q "^docs " "$T/mcp.txt" || fail "the user's own MCP server is gone: $(cat "$T/mcp.txt")"
timeout 60 "$CODEX" features list >"$T/features.txt" 2>/dev/null || fail "codex features list"
grep -Eq "^(codex_)?hooks +[a-z]+ +true" "$T/features.txt" || fail "hooks are not on: $(grep hooks "$T/features.txt")"
echo "ok: Codex loads the config, lists lcm beside the user's server, hooks on"
"$LCM" hooks uninstall --agent codex --home "$T/store" >/dev/null || fail "uninstall"
cmp -s "$HOME/.codex/config.toml" "$T/config.orig" || fail "uninstall did not restore config.toml byte for byte"
timeout 60 "$CODEX" mcp list >"$T/mcp2.txt" 2>&1 || true
! grep -q "^lcm " "$T/mcp2.txt" || fail "codex still lists lcm after uninstall"
echo "ok: uninstall restores config.toml byte for byte"
status=0
echo "codex e2e: passed"
