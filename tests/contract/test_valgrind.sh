#!/bin/sh
# Valgrind memcheck over the real host + real lossless-context.so: a replay of the
# fixture (every event, a tree move, a threshold compaction), then the session reopened
# for commands and tool calls (recall tools, a host tool). Any memcheck error or a
# definite leak fails the run (--error-exitcode). Skipped, with a SKIP line, when
# valgrind is absent or the build is sanitized (ASan and valgrind cannot share a process).
. "$(dirname "$0")/lib.sh"
FX="$ROOT/tests/contract/fixtures/branch.jsonl"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "SKIP test_valgrind: valgrind is not installed"; exit 0
fi
if nm "$HOST" 2>/dev/null | grep -q __asan_init; then
    echo "SKIP test_valgrind: $HOST is built with AddressSanitizer (run: make valgrind)"; exit 0
fi
# PCRE2's JIT code scans the subject with 16-byte loads that may pass its end (PCRE2 only
# stays quiet under valgrind when built with --enable-valgrind). Such code has no object
# file, so only reports whose top frame is unknown code are suppressed.
cat >"$T/pcre2-jit.supp" <<'SUPP'
{
   pcre2-jit-wide-load
   Memcheck:Addr16
   obj:???
}
{
   pcre2-jit-wide-load-cond
   Memcheck:Cond
   obj:???
}
SUPP
VG="valgrind --quiet --suppressions=$T/pcre2-jit.supp --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
--show-leak-kinds=definite --track-origins=yes --num-callers=30 --keep-debuginfo=yes"
S="$T/s.jsonl"
run=0; dirty=""; want=0
# [want=RC] vg NAME ARGS...: run the host under memcheck (expecting exit status RC, 0 by
# default; "any" accepts a tool's refusal, 1, too); exit status 99 is memcheck's verdict. Every run goes ahead so one report
# shows all findings; the verdict comes at the end.
vg() {
    name=$1; shift
    expect=${want:-0}; want=0
    run=$((run+1))
    $VG --log-file="$T/vg-$name.log" "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" \
        --session "$S" "$@" >"$T/$name.out" 2>"$T/$name.err"
    rc=$?
    if [ "$rc" -eq 99 ] || [ -s "$T/vg-$name.log" ]; then
        echo "--- memcheck report for $name:"; head -n 60 "$T/vg-$name.log"
        dirty="$dirty $name"
        return
    fi
    [ "$expect" = any ] && [ "$rc" -le 1 ] && { ok; return; }
    [ "$rc" -eq "$expect" ] || { cat "$T/$name.err"; fail "$name exits $rc under valgrind"; }
    ok
}

vg replay replay "$FX" --window 2000
assert_grep "$T/replay.out" "replayed 17 entries" "the replay ran to the end"

vg commands --command "/lcm status" --command "/clm status" --command "/lcm" \
    --command "/clm-compact"
assert_grep "$T/commands.out" "LCM: [0-9]* messages" "/lcm status answered"

vg grep_query --tool lcm_grep '{"query":"N07"}'
assert_grep "$T/grep_query.out" "N07" "lcm_grep query found the fixture's N07"
vg grep_pattern --tool lcm_grep '{"pattern":"N0[0-9]=\\d+","case_sensitive":true}'
# A malformed FTS5 query (only after the fts5: switch) is the model's error: the tool says so
# and the host exits 1.
want=1 vg grep_bad_query --tool lcm_grep '{"query":"fts5:\"unterminated AND ("}'
assert_grep "$T/grep_bad_query.err" "FTS5" "a bad query is explained, not crashed on"
vg grep_sessions --tool lcm_grep '{"query":"handlers","scope":"all_sessions"}'
# What exists to describe or expand depends on what compaction stored; either answer will do.
want=any vg describe --tool lcm_describe '{"id":"#1"}'
want=any vg expand --tool lcm_expand_query '{"question":"what is N07?","max_tokens":500}'
vg host_read --tool read '{"path":"'"$FX"'"}'
[ -z "$dirty" ] || fail "memcheck errors or definite leaks in:$dirty"
echo "memcheck clean over $run host runs"
done_ok
