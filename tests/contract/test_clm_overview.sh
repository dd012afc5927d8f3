#!/bin/sh
# /clm overview through the real host and plugin: the chart is built from session entries
# alone (provider usage, compaction entries, accepted revisions), and its zoom and
# selection (the panel's `z` and `← →`) are arguments: fit buckets the whole branch,
# requests shows one column per request around the selection, turns one column per user
# turn; `at K` selects an event; bad arguments are refused with the usage.
. "$(dirname "$0")/lib.sh"
S="$T/s.jsonl"
"$HOST" gen --seed 3 --tokens 200000 "$T/in.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" replay "$T/in.jsonl" \
    --window 32000 >/dev/null 2>"$T/err" || { cat "$T/err"; fail "replay"; }
page() { "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" \
    --command "/clm overview $1" > "$2" 2>"$T/err" || { cat "$T/err"; fail "overview $1"; }; }

# What the page must show, computed independently from the session file.
read -r NREQ NTURN NCOMP <<EOF2
$(python3 - "$S" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
byid = {r.get('id'): r for r in rows}
# the branch is the parent chain of the last entry
branch, e = [], rows[-1]
while e is not None:
    branch.append(e); e = byid.get(e.get('parentId'))
branch.reverse()
req = turns = comp = 0
for e in branch:
    if e.get('type') == 'compaction': comp += 1
    if e.get('type') != 'message': continue
    m = e['message']
    if m.get('role') == 'user': turns += 1
    if (m.get('usage') or {}).get('totalTokens', 0) > 0: req += 1
print(req, turns, comp)
PY
)
EOF2
[ "$NREQ" -gt 60 ] || fail "the generated branch has too few requests ($NREQ) for a zoom test"
[ "$NCOMP" -ge 2 ] || fail "the replay made too few compactions ($NCOMP)"

page "" "$T/fit.txt"
assert_grep "$T/fit.txt" "overview (fit): $NREQ provider-reported requests on this branch in $NTURN user turns" "fit counts every request and user turn of the branch"
assert_grep "$T/fit.txt" "one column per bucket of" "fit buckets a branch wider than the chart"
assert_grep "$T/fit.txt" "now: request $NREQ of $NREQ" "the page opens on now"
assert_eq "$(grep -c 'compaction after request' "$T/fit.txt")" "$NCOMP" "every compaction point is listed"
assert_grep "$T/fit.txt" " budget$" "the budget line is drawn"

page "requests" "$T/req.txt"
assert_grep "$T/req.txt" "overview (requests)" "requests zoom answers"
assert_grep "$T/req.txt" "one column per request: requests $((NREQ - 59))-$NREQ of $NREQ" "requests zoom shows the last 60 requests, pinned to now"

# Select the first compaction: the window pans to centre it.
AT=$(sed -n 's/^ *1\. compaction after request \([0-9]*\):.*/\1/p' "$T/fit.txt")
page "requests at 1" "$T/at.txt"
assert_grep "$T/at.txt" "  > 1. compaction after request $AT" "the selected event is marked"
assert_grep "$T/at.txt" "selected event: request $AT of $NREQ" "the selection is the request the event followed"
LO=$(sed -n 's/^one column per request: requests \([0-9]*\)-.*/\1/p' "$T/at.txt")
[ "$LO" -le "$AT" ] && [ "$AT" -le $((LO + 59)) ] || fail "the requests window ($LO..) does not hold the selected request $AT"
ok
# the '^' marker sits under the selected column
COL=$(awk '/^ +\^ *$/ {print index($0, "^") - 9; exit}' "$T/at.txt")
assert_eq "$COL" "$((AT - LO))" "the marker sits under the selected request's column"

page "turns" "$T/turns.txt"
assert_grep "$T/turns.txt" "overview (turns)" "turns zoom answers"
assert_grep "$T/turns.txt" "user turn" "turns zoom counts columns in user turns"

page "at 999" "$T/bad-at.txt"
assert_grep "$T/bad-at.txt" "there is no event 999" "a missing event is named and the page shows now"
page "sideways" "$T/bad.txt"
assert_grep "$T/bad.txt" "unknown argument 'sideways' (usage: /clm overview" "an unknown argument is refused with the usage"
done_ok
