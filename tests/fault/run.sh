#!/bin/sh
# make faultsim: the fault-injection run (tests/fault/faultsim_run.c) under the fail-after-N
# allocator (tests/fault/faultsim.c): every case with its Nth allocation failed for every N,
# then with every allocation from the Nth failed for every FAULTSIM_PSTRIDE-th N (default
# 13: the persistent failures of neighbouring N end on the same paths). Exits non-zero on
# any crash, leak, or success with wrong data. Extra arguments go to both runs (case names,
# -v to name the failing call sites).
BUILD=${1:-build}
[ $# -gt 0 ] && shift
BUILD=$(cd "$BUILD" && pwd)
SO="$BUILD/tests/libfaultsim.so"
RUN="$BUILD/tests/faultsim-run"
if nm "$RUN" 2>/dev/null | grep -q __asan_init; then
    echo "faultsim: $RUN is built with AddressSanitizer, which must own malloc itself (run: make faultsim)"
    exit 2
fi
export FAULTSIM_NOSYNC=1
t0=$(date +%s)
LD_PRELOAD="$SO" "$RUN" -s "${FAULTSIM_STRIDE:-1}" "$@" || exit 1
LD_PRELOAD="$SO" "$RUN" -p -s "${FAULTSIM_PSTRIDE:-13}" "$@" || exit 1
echo "faultsim: $(( $(date +%s) - t0 )) s"
