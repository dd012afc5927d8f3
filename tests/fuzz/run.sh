#!/bin/sh
# The fuzz runner behind `make fuzz`: builds every libFuzzer target (tests/fuzz/fuzz_*.c)
# with clang + ASan + UBSan into BUILD (default build-fuzz), replays every saved
# reproducer under tests/fuzz/regressions/, then runs each target for FUZZ_SECONDS
# (default 60) from its seed corpus tests/fuzz/corpus/<target>/ (new inputs go to a
# working copy under BUILD, never into the checked-in seeds). One line per target:
#   fuzz_jsonl: 123456 runs in 10 s, 0 crashes
# Exits non-zero when a target crashes, leaks or a reproducer still fails.
#   FUZZ_SECONDS=10 sh tests/fuzz/run.sh            # the CI-sized run
#   FUZZ_TARGETS="fuzz_grep" sh tests/fuzz/run.sh   # a subset
#   FUZZ_BUILD_ONLY=1 sh tests/fuzz/run.sh          # build, replay reproducers, stop
#   FUZZ_SAN_EXTRA=-fno-sanitize=nonnull-attribute BUILD=build-fuzz-x sh tests/fuzz/run.sh
#       explore past a known, reported finding (its own BUILD: objects differ)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build-fuzz}
SECS=${FUZZ_SECONDS:-60}
CLANG=${CLANG:-clang}
SANS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer ${FUZZ_SAN_EXTRA:-}"
SAN="-fsanitize=fuzzer-no-link $SANS"
# The engine's own link line (the Makefile knows which backends it links).
LIBS=$(make --no-print-directory -s print-libs)
# and its header folders (one per subsystem, engine/README.md).
FLAGS="-std=c11 -Wall -Wextra -Werror -g -O1 -D_GNU_SOURCE -Iabi $(make --no-print-directory -s print-engine-inc) -Iplugin"

if ! command -v "$CLANG" >/dev/null 2>&1; then
    echo "SKIP fuzz: $CLANG not found (libFuzzer needs clang)"; exit 0
fi

# Engine and plugin objects through the project's own Makefile rules, instrumented.
mkdir -p "$BUILD"
# make does not see flag changes: objects built with other sanitizer flags are dropped.
if [ "$(cat "$BUILD/flags" 2>/dev/null)" != "$CLANG $SAN" ]; then
    rm -rf "$BUILD/obj" "$BUILD/libengine.a"
    echo "$CLANG $SAN" >"$BUILD/flags"
fi
plugin_objs=""
for f in plugin/*.c; do plugin_objs="$plugin_objs $BUILD/obj/${f%.c}.o"; done
if ! make --no-print-directory -j2 BUILD="$BUILD" CC="$CLANG" OPT=-O1 SAN="$SAN" \
        "$BUILD/libengine.a" $plugin_objs >"$BUILD/make.log" 2>&1; then
    grep -E "error|Error" "$BUILD/make.log" | head -20
    echo "FAIL fuzz: engine/plugin build (log: $BUILD/make.log)"; exit 1
fi

# Max input length per target: whole session files and configs are larger than a query.
max_len() {
    case $1 in
        fuzz_grep) echo 512 ;;
        fuzz_query) echo 4096 ;;
        fuzz_pattern_long) echo 512 ;;
        fuzz_config) echo 4096 ;;
        *) echo 16384 ;;
    esac
}

targets=${FUZZ_TARGETS:-$(ls tests/fuzz/fuzz_*.c | sed 's,.*/,,; s,\.c$,,')}
fails=0
for t in $targets; do
    extra=""
    [ "$t" = fuzz_callbacks ] && extra=$plugin_objs
    if ! $CLANG $FLAGS -fsanitize=fuzzer $SANS "tests/fuzz/$t.c" $extra "$BUILD/libengine.a" $LIBS \
            -o "$BUILD/$t" 2>"$BUILD/$t.build.log"; then
        cat "$BUILD/$t.build.log"; echo "FAIL $t: build"; fails=$((fails+1)); continue
    fi
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# Every saved reproducer must now run clean (the file name is <target>-<name>).
for r in tests/fuzz/regressions/*; do
    [ -f "$r" ] || continue
    t=$(basename "$r" | sed 's/-.*//')
    [ -x "$BUILD/$t" ] || continue
    rlog="$BUILD/regression-$(basename "$r").log"
    if "$BUILD/$t" "$r" >"$rlog" 2>&1; then
        echo "regression $(basename "$r"): ok"
    else
        echo "regression $(basename "$r"): STILL FAILS (log: $rlog)"
        grep -m3 -E "ERROR|runtime error|SUMMARY" "$rlog" | sed 's/^/    /'
        fails=$((fails+1))
    fi
done
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit $((fails > 0))

for t in $targets; do
    [ -x "$BUILD/$t" ] || continue
    name=${t#fuzz_}
    work="$BUILD/corpus/$name"; art="$BUILD/artifacts/$name"
    rm -rf "$art"; mkdir -p "$work" "$art"  # artifacts: this run's only
    log="$BUILD/$t.log"
    "$BUILD/$t" -max_total_time="$SECS" -max_len="$(max_len "$t")" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" \
        "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(ls "$art" | wc -l)
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        fails=$((fails+1))
        echo "$t: ${runs:-?} runs in $SECS s, $crashes crashes (log: $log; inputs: $art)"
        grep -m3 -E "ERROR: |runtime error|SUMMARY" "$log" | sed 's/^/    /'
    else
        echo "$t: ${runs:-?} runs in $SECS s, 0 crashes"
    fi
done
exit $((fails > 0))
