#!/bin/sh
# `lcm compact` over a stored session (the same engine code as /lcm, engine/lcm/admin.c):
# summaries appear in status --json and sessions --json, `lcm grep` hits name the covering
# summary; --json documents parse and carry their fields; keyset paging over the stores;
# bad arguments exit 2 with a message; the progress bar is drawn on a terminal (script)
# and never into a pipe; --help lists the verbs and the exit codes.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H="$T/h"
"$HOST" gen --seed 9 --messages 400 "$T/a.jsonl" >/dev/null || fail "gen a"
"$HOST" gen --seed 11 --messages 300 "$T/b.jsonl" >/dev/null || fail "gen b"
"$LCM" import --home "$H" "$T/a.jsonl" "$T/b.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "import"; }
"$LCM" sessions --home "$H" --json >"$T/s.json" || fail "sessions --json"
assert_jsonl "$T/s.json" "len(rows[0]['sessions']) == 2 and rows[0]['next'] is None and all(s['summaries'] == 0 and s['messages'] > 0 for s in rows[0]['sessions'])" "sessions --json: two stores, no summaries yet, no next page"
A=$(python3 -c "import json,sys; print(sorted(s['key'] for s in json.load(open(sys.argv[1]))['sessions'])[0])" "$T/s.json")

# keyset paging: one at a time, next names the key to continue after
"$LCM" sessions --home "$H" --json --limit 1 >"$T/p1.json" || fail "page 1"
assert_jsonl "$T/p1.json" "len(rows[0]['sessions']) == 1 and rows[0]['next'] == rows[0]['sessions'][0]['key']" "page 1 has one store and a next key"
NEXT=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['next'])" "$T/p1.json")
"$LCM" sessions --home "$H" --json --limit 1 --after "$NEXT" >"$T/p2.json" || fail "page 2"
assert_jsonl "$T/p2.json" "len(rows[0]['sessions']) == 1 and rows[0]['next'] is None and rows[0]['sessions'][0]['key'] > '$NEXT'" "page 2 has the other store and no next"

# compact one session, then all
"$LCM" compact --home "$H" --session "$A" --json >"$T/c1.json" 2>"$T/c1.err" || { cat "$T/c1.err"; fail "compact --session"; }
assert_jsonl "$T/c1.json" "rows[0]['session'] == '$A' and rows[0]['leaves'] > 0 and rows[0]['uncovered'] == 0 and rows[0]['summaries'] >= rows[0]['leaves'] and 'condensed' in rows[0] and 'passes' in rows[0]" "compact --json: leaves made, nothing left uncovered"
assert_eq "$(wc -c <"$T/c1.err")" "0" "no progress bar into a file"
"$LCM" status --home "$H" --session "$A" --json >"$T/st.json" || fail "status --session --json"
assert_jsonl "$T/st.json" "rows[0]['summaries'] > 0 and rows[0]['messages'] > 0 and 'projection' in rows[0] and 'thresholds' in rows[0]" "status --json shows the summaries"
"$LCM" compact --home "$H" --all >"$T/call.txt" 2>&1 | cat || fail "compact --all"
assert_grep "$T/call.txt" "compact .*: 0 leaves and 0 condensed nodes made" "the compacted session has nothing left to do"
assert_grep "$T/call.txt" "messages left uncovered" "compact --all reports every store"
"$LCM" status --home "$H" --json >"$T/st2.json" || fail "status --json"
assert_jsonl "$T/st2.json" "all(s['summaries'] > 0 for s in rows[0]['sessions'])" "after --all every store has summaries"
"$LCM" grep --home "$H" --session "$A" "make" >"$T/grep.txt" || fail "grep"
assert_grep "$T/grep.txt" "covered by summary #[0-9]" "a grep hit names its covering summary"
"$LCM" grep --home "$H" --json "make" >"$T/grep.json" || fail "grep --json"
assert_jsonl "$T/grep.json" "rows[0]['tool'] == 'lcm_grep' and rows[0]['isError'] is False and 'covered by summary' in rows[0]['text']" "grep --json"

# lcm.json naming an OpenAI-compatible provider: compact calls it (the loopback model)
echo '[{"content":"MODELSUMMARY the parser work so far"}]' >"$T/script.json"
start_server "$T/script.json" "$T/rec.jsonl"
rm -rf "$T/hm"
"$LCM" import --home "$T/hm" "$T/b.jsonl" >/dev/null 2>&1 || fail "import hm"
printf '{"summarizer":["fake/sum"],"baseUrls":{"fake":"http://127.0.0.1:%s/v1"},"summaryTokens":200}\n' "$PORT" >"$T/hm/lcm.json"
"$LCM" compact --home "$T/hm" --all --json >"$T/cm.json" 2>"$T/cm.err" || { cat "$T/cm.err"; fail "compact with a model"; }
assert_jsonl "$T/rec.jsonl" "sum(1 for r in rows if r.get('model') == 'sum') >= 1" "compact sent the summaries to the configured model"
assert_jsonl "$T/cm.json" "rows[0]['stores'][0]['leaves'] > 0 and rows[0]['stores'][0]['uncovered'] == 0" "compact with a model covers everything"
"$LCM" grep --home "$T/hm" "MODELSUMMARY" >"$T/mg.txt" 2>&1
python3 -c "import sqlite3,glob,sys; c=sqlite3.connect(glob.glob(sys.argv[1]+'/lcm/*.sqlite')[0]); sys.exit(0 if c.execute(\"select count(*) from summaries where text like '%MODELSUMMARY%'\").fetchone()[0] >= 1 else 1)" "$T/hm" || fail "the model's text is a summary"; ok

# bad arguments: exit 2 and a message
for args in "compact --home $H" "compact --home $H --session $A --all" "export --home $H" \
            "doctor --home $H --bogus" "gc --home $H extra" "heal --home $H --max-nodes 0" \
            "sessions --home $H --json --limit x" "compact --home $H --session ../x" \
            "doctor --home $H --session $A --after $A" "backup --home"; do
    "$LCM" $args >"$T/bad.out" 2>"$T/bad.err"
    rc=$?
    [ $rc -eq 2 ] || fail "lcm $args: exit $rc, expected 2"
    [ -s "$T/bad.err" ] || fail "lcm $args: no message"
    ok
done
"$LCM" --help >"$T/help.txt" || fail "--help"
for v in compact doctor export backup gc migrate heal report "--json" "--after KEY --limit N" "exit codes: 0 ok, 1" "2 usage"; do
    assert_grep "$T/help.txt" "$v" "--help names $v"
done

# progress: a terminal gets the bar with rate and ETA, a pipe nothing
if command -v script >/dev/null 2>&1; then
    rm -rf "$T/h2"
    "$LCM" import --home "$T/h2" "$T/a.jsonl" >/dev/null 2>&1 || fail "import h2"
    script -qc "'$LCM' compact --home '$T/h2' --all" /dev/null >"$T/tty.txt" 2>&1 || fail "compact under script"
    assert_grep "$T/tty.txt" "\[#*\.*\] *[0-9]*% .*messages/s" "a terminal shows the bar with a rate"
    assert_grep "$T/tty.txt" "100% .* done" "the bar ends at 100%"
    script -qc "'$LCM' export --home '$T/h2' --session '$A' --out '$T/tty.jsonl'" /dev/null >"$T/tty2.txt" 2>&1 || fail "export under script"
    assert_grep "$T/tty2.txt" "100%" "export draws the bar on a terminal"
    "$LCM" export --home "$T/h2" --session "$A" --out "$T/pipe.jsonl" 2>&1 | cat >"$T/pipe.txt"
    assert_nogrep "$T/pipe.txt" "%" "a pipe gets no bar"
else
    echo "note: no script(1): the terminal half of the progress check is skipped"
fi
done_ok
