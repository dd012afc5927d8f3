#!/bin/sh
# The bounded fault-injection run (make faultsim is the whole one): the cases of
# tests/fault/faultsim_run.c marked quick -- a new store's ingest, a read-only open, a
# live-context edit -- with their Nth allocation failed for every N, under the preloaded
# fail-after-N allocator. No crash, no leak, and a run that succeeds has its data right.
# Skipped under AddressSanitizer (its runtime must own malloc, before any preload).
. "$(dirname "$0")/lib.sh"
RUN="$BUILD/tests/faultsim-run"
[ -x "$RUN" ] || fail "$RUN is not built (make)"
if nm "$RUN" 2>/dev/null | grep -q __asan_init; then
    echo "SKIP test_faultsim_store_apply: built with AddressSanitizer (run: make faultsim)"; exit 0
fi
FAULTSIM_NOSYNC=1 LD_PRELOAD="$BUILD/tests/libfaultsim.so" "$RUN" -q >"$T/out" 2>&1
rc=$?
cat "$T/out"
[ "$rc" -eq 0 ] || fail "the fault-injection run failed"
ok
# it ran: every quick case reached its end (an N past its allocations) and failed somewhere
assert_grep "$T/out" "^ok   store_ingest: " "store_ingest ran to its end"
assert_grep "$T/out" "^ok   clm_edit: " "clm_edit ran to its end"
assert_grep "$T/out" "answered LC_NOMEM" "the summary line"
echo "PASS test_faultsim_store_apply ($checks checks)"
