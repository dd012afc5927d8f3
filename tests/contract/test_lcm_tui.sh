#!/bin/sh
# `lcm tui` driven the way a person uses it: the real binary in a detached tmux session at
# 80x24, keys sent with send-keys, the screen read with capture-pane. Tab 1 lists the
# imported session; `/`, a needle's key and Enter show a hit, Enter on it the needle's
# key=value (v: the verbatim JSON and back); UTF-8 text (wide characters too) draws as itself; `3` shows "no summaries"
# before `lcm compact` and the DAG by depth after it, Enter drills from the condensed node
# to a child leaf and its verbatim originals, Esc goes back one level at a time; `4` shows
# the stats; a resize to 100x30 redraws at the new size; `q` ends the process (the pane is
# dead, exit status 0); the store's rows are the same before and after (read-only). Every
# wait polls the screen a bounded number of times.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
H="$T/h"
command -v tmux >/dev/null 2>&1 || fail "tmux is not installed (tests/deps.sh installs it)"
SOCK="$T/tmux.sock"
tm() { tmux -S "$SOCK" "$@"; }
trap 'tmux -S "$SOCK" kill-server 2>/dev/null; cleanup' EXIT
export LANG=C.UTF-8 LC_ALL=C.UTF-8

# A session of ~400k tokens (enough for a condensed node) with needles, and one message
# of UTF-8 text appended at the end of its branch.
"$HOST" gen --seed 2 --tokens 400000 --needles "$T/needles.jsonl" "$T/a.jsonl" >/dev/null || fail "gen"
python3 - "$T/a.jsonl" <<'PY' || fail "append the UTF-8 message"
import json, sys
path = sys.argv[1]
last = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()][-1]
e = {"type": "message", "id": "utf8msg1", "parentId": last["id"], "timestamp": "2026-01-01T09:00:00.000Z",
     "message": {"role": "user", "content": [{"type": "text", "text": "UTF8MARK Grüße aus 日本語 café ☃ done"}],
                 "timestamp": 1767258000000}}
with open(path, "a", encoding="utf-8") as f:
    f.write(json.dumps(e, ensure_ascii=False) + "\n")
PY
"$LCM" import --home "$H" "$T/a.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "import"; }
SID=$(sed -n 's/.*: session \([^,]*\),.*/\1/p' "$T/imp.txt")
[ -n "$SID" ] || fail "the import names its session"
SHORT=$(printf %.8s "$SID")   # tab 1 lists a session by its short id (lcm takes it back)
# A needle on the active branch in a user prompt: its key is in one message only.
set -- $(python3 -c "
import json, sys
n = [json.loads(l) for l in open(sys.argv[1])]
n = [x for x in n if x['where'] == 'user']
print(n[0]['key'], n[0]['value'])" "$T/needles.jsonl")
KEY=$1 VAL=$2
[ -n "$KEY" ] && [ -n "$VAL" ] || fail "a needle to look for"

rows_digest() {
    python3 -c "
import glob, hashlib, sqlite3, sys
db = sqlite3.connect('file:' + glob.glob(sys.argv[1] + '/lcm/*.sqlite')[0] + '?mode=ro', uri=True)
h = hashlib.sha256()
for t in ('messages', 'summaries', 'summary_children', 'summary_messages', 'meta'):
    for r in db.execute('SELECT * FROM %s ORDER BY 1, 2' % t):
        h.update(repr(r).encode())
print(h.hexdigest())" "$H"
}

# screen: the pane's text now, into $T/screen.txt.
screen() { tm capture-pane -p -t tui >"$T/screen.txt" 2>/dev/null; }
# wait_for TEXT DESCRIPTION [LINE]: poll until the screen (or its line LINE) shows TEXT.
wait_for() {
    _i=0
    while [ $_i -lt 200 ]; do
        screen
        if [ -n "${3:-}" ]; then
            sed -n "${3}p" "$T/screen.txt" | grep -qF -- "$1" && { ok; return 0; }
        else
            grep -qF -- "$1" "$T/screen.txt" && { ok; return 0; }
        fi
        sleep 0.05
        _i=$((_i + 1))
    done
    echo "--- the screen:"
    cat "$T/screen.txt"
    fail "$2"
}
keys() { tm send-keys -t tui "$@"; }

# the pane's shell writes lcm's exit status to a file: tmux's pane_dead_status can stay
# empty a long while on a loaded machine
tm new-session -d -s tui -x 80 -y 24 "'$LCM' tui --home '$H'; echo \$? > '$T/tui.rc'" || fail "tmux starts lcm tui"
tm set-option -t tui remain-on-exit on >/dev/null
assert_eq "$(tm display -p -t tui '#{pane_width}x#{pane_height}')" "80x24" "the pane is 80x24"

# 1: the stores, newest first
wait_for "$SHORT " "tab 1 lists the imported session"
wait_for "1 session under $H/lcm" "tab 1's title counts the stores"
wait_for "q quit" "the key help is on the last line at 80x24" 24

# 3 before any compaction: nothing yet, and how to get there
keys 3
wait_for "no summaries yet (lcm compact --session $SID" "tab 3 says there are no summaries yet"
"$LCM" compact --home "$H" --all >"$T/compact.txt" 2>&1 || { cat "$T/compact.txt"; fail "lcm compact"; }
assert_grep "$T/compact.txt" "[1-9][0-9]* condensed" "the compaction makes a condensed node"
BEFORE=$(rows_digest)

# 3 again reads the DAG: by depth, deepest first
keys 3
wait_for "-- depth 1: 1 summary --" "tab 3 shows the depth-1 summaries after lcm compact"
wait_for "-- depth 0: " "tab 3 shows the depth-0 summaries"
wait_for " condensed " "the condensed node is listed"
# The cursor starts on the condensed node (the first row Enter opens): its drill-down
keys Enter
wait_for "-- children --" "Enter on the condensed node lists its children"
wait_for "verbatim messages under it" "the drill-down offers the verbatim originals"
# text row, originals row, (the heading is skipped) the first child
keys j j Enter
wait_for "depth 0 leaf" "Enter on a child opens the leaf"
wait_for "verbatim originals --" "the leaf lists its verbatim originals"
keys j Enter
wait_for "message #" "Enter on an original shows the message whole"
keys Escape
wait_for "verbatim originals --" "Esc goes back to the leaf"
keys Escape
wait_for "-- children --" "Esc goes back to the condensed node"
keys Escape
wait_for "-- depth 1: 1 summary --" "Esc goes back to the summaries by depth"

# / from this tab: the needle's key, Enter: the hit; Enter: the message with key=value
keys /
wait_for "query in all sessions" "/ opens the search prompt" 24
keys "$KEY"
wait_for "$KEY" "the typed query is on the prompt line" 24
keys Enter
wait_for "query \"$KEY\" in all sessions: 1 hit" "the search shows the needle's hit"
wait_for " user " "the hit names its role"
keys Enter
wait_for "$KEY=$VAL" "Enter on the hit shows the needle's key=value"
wait_for "message #" "the message view's title"
keys v
wait_for "the verbatim JSON (v: the text)" "v shows the message's verbatim JSON"
wait_for '"role":"user"' "the stored AgentMessage bytes are on the screen"
keys v
wait_for "(v: the verbatim JSON)" "v again goes back to the text"
wait_for "$KEY=$VAL" "the text again"
keys Escape
wait_for "query \"$KEY\" in all sessions: 1 hit" "Esc goes back to the hits"

# Tab in the prompt: the selected session only
keys / Tab "$KEY" Enter
wait_for "query \"$KEY\" in $SID: 1 hit" "Tab scopes the search to the selected session"

# UTF-8: wide characters and accents draw as themselves
keys / UTF8MARK Enter
wait_for "UTF8MARK" "the UTF-8 message is found"
keys Enter
wait_for "UTF8MARK Grüße aus 日本語 café ☃ done" "UTF-8 text draws as itself in the message view"

# 4: the stats
keys 4
wait_for "backend      sqlite" "tab 4 names the backend"
wait_for "summaries by depth" "tab 4 has the depth histogram"
wait_for "depth 1 " "the histogram has the depth-1 row"

# a resize redraws at the new size
keys 1
wait_for "$SHORT " "back on tab 1"
tm resize-window -t tui -x 100 -y 30
assert_eq "$(tm display -p -t tui '#{pane_width}x#{pane_height}')" "100x30" "the pane is 100x30"
wait_for "q quit" "after the resize the key help is on line 30" 30
wait_for "$SHORT " "after the resize tab 1 still lists the session"

# q: the process ends with exit status 0 and the pane is dead
keys q
_i=0
while [ $_i -lt 600 ] && { [ ! -s "$T/tui.rc" ] || [ "$(tm display -p -t tui '#{pane_dead}')" != 1 ]; }; do
    sleep 0.05
    _i=$((_i + 1))
done
assert_eq "$(cat "$T/tui.rc" 2>/dev/null)" "0" "q ends lcm tui with exit status 0"
assert_eq "$(tm display -p -t tui '#{pane_dead}')" "1" "q ends lcm tui (the pane is dead)"
assert_eq "$(rows_digest)" "$BEFORE" "browsing changed no row of the store"

# not a terminal: a sentence, exit 1
"$LCM" tui --home "$H" </dev/null >"$T/nt.txt" 2>&1 && fail "lcm tui without a terminal exits 1"
assert_grep "$T/nt.txt" "needs a terminal" "lcm tui says it needs a terminal"
"$LCM" --help >"$T/help.txt" || fail "lcm --help"
assert_grep "$T/help.txt" "^  tui " "lcm --help lists tui"
done_ok
