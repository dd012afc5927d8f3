#!/bin/sh
# The reduced crash-consistency run for CI: CRASH_TRIALS (default 30) SIGKILLs of the real
# host at random points of ingest, a DAG pass, a revision persist and a backup, each
# followed by a restart and the checks of tests/crash/crash.py. `make crash` is the full run.
. "$(dirname "$0")/lib.sh"
python3 "$ROOT/tests/crash/crash.py" --build "$BUILD" --trials "${CRASH_TRIALS:-30}" > "$T/crash.out" 2>&1
rc=$?
cat "$T/crash.out"
[ $rc -eq 0 ] || fail "crash-consistency trials failed"
ok
assert_grep "$T/crash.out" "trials .*: ${CRASH_TRIALS:-30} survived, 0 failed" "every trial survived"
done_ok
