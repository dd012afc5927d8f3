#!/bin/sh
# Contract entry for the Claude Code plugin (the repository as a plugin marketplace): runs
# tests/e2e/claude-code/plugin.sh, which installs the plugin with the pinned Claude Code's own
# `claude plugin` commands from this checkout and drives two headless sessions against a
# loopback scripted model. Skips only when npm is absent or the lcm under test is a sanitizer
# build (make test runs this with the plain build).
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
if ! command -v npm >/dev/null 2>&1; then
    echo "SKIP: npm is not installed; the Claude Code plugin end-to-end test needs it"
    exit 0
fi
if ldd "$BUILD/lcm" 2>/dev/null | grep -q -e libasan -e libtsan; then
    echo "SKIP: $BUILD/lcm is a sanitizer build (make test runs this with the plain build)"
    exit 0
fi
exec sh "$ROOT/tests/e2e/claude-code/plugin.sh" "$BUILD"
