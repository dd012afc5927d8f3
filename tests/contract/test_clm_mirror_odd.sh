#!/bin/sh
# Two odd mirrors (issue 14.10). A mirror holding only its metadata line would be a
# whole-context rewrite to nothing: refused, with the reason named. A directory in place of
# LIVE_CONTEXT.md: the edit is ignored, the directory is moved aside (kept), the notice says
# so (it does not claim the file was rendered again), and the mirror is a file again for the
# next request.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/contract/clm/check.sh"
clm_session clmodd-0001
cat > "$T/script.json" <<EOF
[
 {"tool_calls":[{"name":"bash","arguments":{"command":"python3 $ROOT/tests/contract/clm/edits.py header-only"}}]},
 {"tool_calls":[{"name":"bash","arguments":{"command":"rm -f $MIRROR && mkdir $MIRROR && echo MADE_DIR"}}]},
 {"tool_calls":[{"name":"bash","arguments":{"command":"test -f $MIRROR && head -c 15 $MIRROR && echo && echo MIRROR_IS_FILE; ls $T/tmp/lossless-context-$SID"}}]},
 {"content":"ODD_DONE"}
]
EOF
start_server "$T/script.json" "$T/r.jsonl"
run_prompt "$S" "$T/out.txt" "$T/err.txt" "run" "start USER_ONE"
assert_grep "$T/out.txt" "ODD_DONE" "the run finishes"
R="$T/r.jsonl"
check "len(rows) == 4" "four requests"
check "has(rows[1], 'holds only its metadata line') and has(rows[1], 'replace the whole context with nothing') and has(rows[1], 'so it is refused')" "a header-only mirror is refused, naming why"
check "'USER_ONE' in text(body(rows[1])[0])" "the context is unchanged"
check "has(rows[2], 'was not read, so your edit was ignored') and has(rows[2], 'It was a directory, moved aside to') and not has(rows[2], 'rendered again')" "a directory mirror: the notice says what was done"
check "has(rows[3], 'MIRROR_IS_FILE') and has(rows[3], 'LIVE_CONTEXT.md.dir-')" "the mirror is a file again, the directory kept beside it"
done_ok
