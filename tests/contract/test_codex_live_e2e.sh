#!/bin/sh
# Contract entry: live sessions of the pinned real Codex CLI (`codex exec`) against a loopback
# scripted Responses API are captured by lcm's hooks, start with the bundle and recall over
# lcm's MCP server (tests/e2e/codex/live.sh). Skips only when npm is absent.
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
if ! command -v npm >/dev/null 2>&1; then
    echo "SKIP: npm is not installed; the live Codex test needs it"
    exit 0
fi
exec sh "$ROOT/tests/e2e/codex/live.sh" "$BUILD"
