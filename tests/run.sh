#!/bin/sh
# The test runner behind `make test`: every unit binary in BUILD/tests, then every
# contract script in tests/contract (the real .so through the real host).
# Prints one line per suite (with its seconds, to see where CI's time goes) and a closing
# line; exits non-zero on any failure.
BUILD=${1:-build}
BUILD=$(cd "$BUILD" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export BUILD ROOT
pass=0; fail=0; failed=""
logdir="$BUILD/test-logs"; rm -rf "$logdir"; mkdir -p "$logdir"
run() { # name, command...
    name=$1; shift
    t0=$(date +%s)
    if "$@" >"$logdir/$name.log" 2>&1; then
        pass=$((pass+1)); echo "PASS $name ($(( $(date +%s) - t0 )) s)"
    else
        fail=$((fail+1)); failed="$failed $name"
        echo "FAIL $name ($(( $(date +%s) - t0 )) s, log: $logdir/$name.log)"
        tail -n 30 "$logdir/$name.log" | sed 's/^/    /'
    fi
}
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    run "$(basename "$t")" "$t"
done
for t in "$ROOT"/tests/contract/test_*.sh; do
    [ -f "$t" ] || continue
    run "$(basename "$t" .sh)" sh "$t"
done
echo "----"
if [ "$fail" -eq 0 ]; then
    echo "tests: $pass suites passed, 0 failed"
else
    echo "tests: $pass suites passed, $fail failed:$failed"
    exit 1
fi
