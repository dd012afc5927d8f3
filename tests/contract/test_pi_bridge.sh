#!/bin/sh
# runner: alone (the bridge answers RPC polls within a bound while the summarizer runs)
# Contract entry for the Pi bridge (host/pi/extension.js): runs tests/e2e/run.sh, which
# installs the pinned Pi and koffi into BUILD/e2e-node and drives the real Pi against the
# real .so. Skips only when node or npm is absent; any other failure fails.
# Issue 9's live-context and store assertions run by default; LC_E2E_FULL=0 drops them.
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool is not installed; the Pi bridge test needs node and npm"
        exit 0
    fi
done
# A sanitizer build of the .so cannot live inside node: node is not instrumented, and the
# bridge's libc allocations would meet ASan's. The plain build runs this test (make test).
if ldd "$BUILD/lossless-context.so" 2>/dev/null | grep -q libasan; then
    echo "SKIP: $BUILD/lossless-context.so is a sanitizer build; node cannot host it (make test runs this)"
    exit 0
fi
exec sh "$ROOT/tests/e2e/run.sh" "$BUILD"
