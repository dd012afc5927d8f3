#!/bin/sh
# Contract entry for lcm's Claude Code hooks: runs tests/e2e/claude-code/run.sh, which
# installs the pinned Claude Code into BUILD/e2e-claude and drives it headless against a
# loopback scripted Anthropic API. Skips only when npm is absent or the lcm under test is a
# sanitizer build (the real Claude Code would run it as its hook; make test runs this).
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
if ! command -v npm >/dev/null 2>&1; then
    echo "SKIP: npm is not installed; the Claude Code end-to-end test needs it"
    exit 0
fi
if ldd "$BUILD/lcm" 2>/dev/null | grep -q -e libasan -e libtsan; then
    echo "SKIP: $BUILD/lcm is a sanitizer build (make test runs this with the plain build)"
    exit 0
fi
exec sh "$ROOT/tests/e2e/claude-code/run.sh" "$BUILD"
