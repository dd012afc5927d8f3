#!/bin/sh
# A hook given a huge transcript_path keeps its memory bounded (issue 24.12): a Claude Code
# transcript of 40 messages followed by a 1 GiB hole (truncate -s: a sparse file of NUL
# bytes, one "line" with no newline) is read by `lcm hook stop` with a peak resident size far
# below the file's size (measured, not limited: an address-space limit also counts what a
# sanitizer reserves, which is no memory used). Before, the reader took the hole as one line and grew a buffer
# to its size (1.06 GB); now a line past the bound is read through without being kept and
# skipped: the hook exits 0, the 40 messages are stored, the log names the line (not taken
# for a line still being written, so the next call does not read the hole again). The same transcript through `lcm import` too.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H="$T/h"
LOG="$H/lcm/hooks.log"
export LCM_HOOK_VERBOSE=1
SID=5e551011-0000-4000-8000-00000000beef
TR="$T/t.jsonl"
python3 "$ROOT/tests/contract/claude_transcript.py" "$TR" --messages 40 --session "$SID" --cwd /proj/a
truncate -s 1G "$TR" || fail "truncate makes a sparse file"
[ "$(du -k "$TR" | cut -f1)" -lt 10000 ] || fail "the transcript is sparse (it takes no GiB of disk)"
ok
# 400 MB resident at the peak: the program with its libraries and threads, not the file.
LIMIT_KB=400000
# peak STDIN CMD...: run CMD with STDIN, its output to $T/run.txt; prints "EXIT PEAK_KB"
peak() { python3 - "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "rb") as i, open(sys.argv[2], "wb") as o:
    rc = subprocess.call(sys.argv[3:], stdin=i, stdout=o, stderr=subprocess.STDOUT)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
printf '{"session_id":"%s","transcript_path":"%s","cwd":"/proj/a","hook_event_name":"Stop"}' "$SID" "$TR" \
    > "$T/in.json"
set -- $(peak "$T/in.json" "$T/out.txt" "$LCM" hook stop --home "$H")
assert_eq "$1" "0" "the hook exits 0"
[ "$2" -lt $LIMIT_KB ] || fail "the hook's peak resident size is $2 KB for a 1 GiB transcript"; ok
DB="$H/lcm/claude-$SID.sqlite"
[ -f "$DB" ] || { cat "$LOG" "$T/out.txt"; fail "the hook made its store"; }
ok
assert_grep "$LOG" "40 messages, 40 new" "the 40 messages before the hole are stored"
assert_nogrep "$LOG" "out of memory\|Cannot allocate" "no allocation failed"
assert_grep "$LOG" "1 line(s) longer than 64 MiB skipped" "the hole is named as one line past the bound"
assert_nogrep "$LOG" "incomplete last line left for later" "the hole is not taken for a line still being written"
set -- $(peak /dev/null "$T/imp.txt" "$LCM" import --home "$T/h2" "$TR")
assert_eq "$1" "0" "lcm import of the same file exits 0"
[ "$2" -lt $LIMIT_KB ] || fail "lcm import's peak resident size is $2 KB for a 1 GiB transcript"; ok
assert_grep "$T/imp.txt" "40 new" "lcm import stores the 40 messages"
assert_grep "$T/imp.txt" "1 line(s) of .* longer than 64 MiB skipped" "lcm import names the line past the bound"
done_ok
