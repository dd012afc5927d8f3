#!/bin/sh
# Contract entry: the pinned real Codex CLI reads what `lcm hooks install --agent codex`
# writes (tests/e2e/codex/run.sh). Skips only when npm is absent.
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
if ! command -v npm >/dev/null 2>&1; then
    echo "SKIP: npm is not installed; the Codex config test needs it"
    exit 0
fi
exec sh "$ROOT/tests/e2e/codex/run.sh" "$BUILD"
