#!/bin/sh
# Dream's consolidation: two sessions that share most of their messages (a forked session
# keeps its parent's entry ids), each compacted into a leaf, have summaries whose sources
# overlap by more than half: dream records them as merged into one tighter node in the
# home store, and the originals stay exactly where they were -- each summary still expands
# to every message it covers, the session stores keep their summaries, grep finds both.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
W="$T/work"
mkdir -p "$W" "$T/gen"
python3 "$ROOT/tests/contract/dream_history.py" "$T/gen" "$W" --fork || fail "generate the forked history"
"$LCM" import --home "$HOME_DIR" "$T/gen/dream-s1.jsonl" "$T/gen/dream-s3.jsonl" >/dev/null 2>&1 || fail "import"
"$LCM" compact --home "$HOME_DIR" --all >"$T/compact.txt" 2>&1 || { cat "$T/compact.txt"; fail "compact"; }
"$LCM" dream --home "$HOME_DIR" --project "$W" --json >"$T/d.json" 2>"$T/d.err" || { cat "$T/d.err"; fail "dream"; }
python3 - "$T/d.json" "$HOME_DIR/lcm-home/home.sqlite" <<'PY' || fail "one consolidation of the two overlapping leaves, recorded in the home store"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
assert d["consolidations"] == 1, d
db = sqlite3.connect(sys.argv[2])
members = sorted(db.execute("select session, summary_id from consolidation_members").fetchall())
assert members == [("dream-s1", 1), ("dream-s3", 1)], members
(text, tokens, overlap), = db.execute("select text, tokens, overlap from consolidations").fetchall()
assert text and 0.5 < overlap <= 1.0, (text, overlap)
# the decision comes from the person's message; a summary (which retells tool output as
# well) is read for consolidation only, never as a lesson's source
srcs = db.execute("select s.session, s.entry_id, s.summary_id from pattern_sources s join patterns p on p.id = s.pattern_id where p.text like 'We decided to go with PostgreSQL%' order by s.summary_id").fetchall()
assert srcs == [("dream-s1", "s1u4", 0)], srcs
assert not db.execute("select count(*) from pattern_sources where summary_id != 0").fetchone()[0]
PY
ok
for s in dream-s1 dream-s3; do
    "$LCM" expand --home "$HOME_DIR" "$s" "#1" >"$T/x-$s.txt" 2>&1 || { cat "$T/x-$s.txt"; fail "expand $s #1"; }
    assert_grep "$T/x-$s.txt" "Forked question 0 about the parser" "$s's summary still reaches the shared messages"
done
assert_grep "$T/x-dream-s1.txt" "We decided to go with PostgreSQL" "dream-s1's summary still reaches its own messages"
assert_grep "$T/x-dream-s3.txt" "Let's go with pytest" "dream-s3's summary still reaches its own messages"
"$LCM" sessions --home "$HOME_DIR" >"$T/sessions.txt" 2>&1
[ "$(grep -c ' 1 summaries' "$T/sessions.txt")" = 2 ] || { cat "$T/sessions.txt"; fail "both stores keep their summary"; }; ok
"$LCM" grep --home "$HOME_DIR" "Forked question" >"$T/grep.txt" 2>&1 || fail "grep"
assert_grep "$T/grep.txt" "dream-s1" "grep reaches the originals in dream-s1"
assert_grep "$T/grep.txt" "dream-s3" "and in dream-s3"
# a rerun records no second consolidation
"$LCM" dream --home "$HOME_DIR" --project "$W" --json >"$T/d2.json" 2>&1 || fail "rerun"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['consolidations'] == 0 and d['nothingNew'], d" "$T/d2.json" || fail "a rerun consolidates nothing again"; ok
done_ok
