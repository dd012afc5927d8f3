#!/bin/sh
# The test runner behind `make test`: every unit binary in BUILD/tests, then every
# contract script in tests/contract (the real .so through the real host).
# Suites run TEST_JOBS at a time (default: the machine's cores, at most 4), each with its
# own temporary folders; a contract script whose outcome depends on having the machine to
# itself (a bound on how soon a process answers, a timing assertion) says so with a line
# `# runner: alone (why)` and runs after the others, one at a time.
# Prints one line per suite as it finishes (with its seconds, to see where CI's time goes)
# and a closing line; exits non-zero on any failure.
BUILD=${1:-build}
BUILD=$(cd "$BUILD" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export BUILD ROOT
logdir="$BUILD/test-logs"
JOBS=${TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$JOBS" -gt 4 ] 2>/dev/null && JOBS=4
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1

# One suite: NAME FILE COMMAND... -> its PASS/FAIL line, its log FILE.log and FILE.ok or
# FILE.failed (FILE tells a unit binary from a contract script of the same name).
one() {
    name=$1 f=$logdir/$2; shift 2
    t0=$(date +%s)
    if "$@" >"$f.log" 2>&1; then
        : >"$f.ok"
        echo "PASS $name ($(( $(date +%s) - t0 )) s)"
    else
        : >"$f.failed"
        echo "FAIL $name ($(( $(date +%s) - t0 )) s, log: $f.log)
$(tail -n 30 "$f.log" | sed 's/^/    /')"
    fi
}

if [ -n "${LC_RUN_ONE:-}" ]; then
    # Called back by xargs below: one suite, given by its path.
    case $LC_RUN_ONE in
        *.sh) n=$(basename "$LC_RUN_ONE" .sh); one "$n" "$n" sh "$LC_RUN_ONE" ;;
        *) n=$(basename "$LC_RUN_ONE"); one "$n" "$n.unit" "$LC_RUN_ONE" ;;
    esac
    exit 0
fi

rm -rf "$logdir"; mkdir -p "$logdir"
list=$logdir/.suites alone=$logdir/.alone
: >"$list"; : >"$alone"
# The contract scripts first: they are the long ones, and a long suite started last
# would leave the other job idle at the end.
for t in "$ROOT"/tests/contract/test_*.sh; do
    [ -f "$t" ] || continue
    if grep -q '^# runner: alone' "$t"; then echo "$t" >>"$alone"; else echo "$t" >>"$list"; fi
done
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] && echo "$t" >>"$list"
done

# Each line is written by one echo of at most a few kB, so lines of parallel suites do
# not interleave.
xargs -P "$JOBS" -I{} env LC_RUN_ONE={} sh "$0" "$BUILD" <"$list"
while read -r t; do
    LC_RUN_ONE=$t sh "$0" "$BUILD" </dev/null
done <"$alone"

pass=$(find "$logdir" -name '*.ok' | wc -l)
fail=$(find "$logdir" -name '*.failed' | wc -l)
echo "----"
if [ "$fail" -eq 0 ]; then
    echo "tests: $pass suites passed, 0 failed"
else
    echo "tests: $pass suites passed, $fail failed:$(find "$logdir" -name '*.failed' | sed 's|.*/||; s|\.failed$||; s|\.unit$||' | sort | tr '\n' ' ' | sed 's/^/ /; s/ $//')"
    exit 1
fi
