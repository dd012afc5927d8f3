#!/bin/sh
# lcm hook precompact with the real build/lcm: it returns at once (exit 0, its output
# pipes closed: a detached child does the work), the child imports what is new and builds
# the session's DAG with the extractive summarizer; two at once do one build at a time
# and leave one consistent DAG; bad input exits 0 with a log line.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H="$T/h"
SID=eeee5555-0000-4000-8000-000000000005
TR="$T/t.jsonl"
python3 "$ROOT/tests/contract/claude_transcript.py" "$TR" --messages 600 --session "$SID" --cwd /proj/pc --tag PRECOMPACT
IN=$(printf '{"session_id":"%s","transcript_path":"%s","cwd":"/proj/pc","hook_event_name":"PreCompact","trigger":"auto"}' "$SID" "$TR")
# $(...) returns only when every writer of the pipe closed it: the child must not hold it
out=$(printf '%s' "$IN" | "$LCM" hook precompact --home "$H"; echo "rc=$?")
assert_eq "$out" "rc=0" "precompact exits 0 and prints nothing"
printf '%s' "$IN" | "$LCM" hook precompact --home "$H" >/dev/null
DB="$H/lcm/claude-$SID.sqlite"
i=0; n=0
while [ $i -lt 200 ]; do
    if [ -f "$DB" ]; then
        n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from summaries').fetchone()[0])" "$DB" 2>/dev/null || echo 0)
        [ "$n" -gt 0 ] && ! pgrep -f "hook precompact --home $H" >/dev/null && break
    fi
    sleep 0.1; i=$((i+1))
done
[ "$n" -gt 0 ] || { cat "$H/lcm/hooks.log" 2>/dev/null; fail "no summaries after precompact"; }
ok
python3 - "$DB" <<'PY' || fail "the DAG covers the session once"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
msgs = db.execute("select count(*) from messages").fetchone()[0]
assert msgs == 600, msgs
# no message is covered by two leaves (two builds at once made one DAG), and every one is
leaf = "from summary_messages m join summaries s on s.id = m.summary_id where s.kind = 'leaf'"
dup = db.execute("select count(*) from (select m.entry_id " + leaf + " group by m.entry_id having count(*) > 1)").fetchone()[0]
covered = db.execute("select count(distinct m.entry_id) " + leaf).fetchone()[0]
assert dup == 0 and covered == 600, (dup, covered)
PY
ok
"$LCM" grep --home "$H" PRECOMPACT >/dev/null || fail "grep after precompact"
printf 'garbage' | "$LCM" hook precompact --home "$H"; rc=$?
assert_eq "$rc" "0" "bad input exits 0"
assert_grep "$H/lcm/hooks.log" "precompact: the hook input is not a JSON object" "bad input is logged"
done_ok
