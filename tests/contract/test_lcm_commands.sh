#!/bin/sh
# The /lcm command suite through the real host and plugin on a replayed generated session:
# status lines, the settings cockpit and a live edit written to lcm.json with its .bak,
# backup (a readable copy), export (every message verbatim), doctor finding a broken FTS
# index and --repair fixing it, gc of a retired store (export then delete), report,
# diagnose (<= 8 KB, no body, no outside path, --save at 0600), migrate.
. "$(dirname "$0")/lib.sh"

lcm() { HOME="$T" "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" "$@"; }
LCMDIR="$HOME_DIR/lcm"

"$HOST" gen --seed 11 --tokens 40000 "$T/gen.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" \
    replay "$T/gen.jsonl" --window 32000 >/dev/null 2>"$T/replay.err" || fail "replay"
STORE=$(ls "$LCMDIR"/*.sqlite | head -1)
NMSG=$(python3 -c "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute('select count(*) from messages').fetchone()[0])" "$STORE")

# status
lcm --command "/lcm status" >"$T/status" 2>&1 || fail "status exits 0"
assert_grep "$T/status" "^LCM: $NMSG messages, [0-9]* summaries, [0-9]* KB$" "status counts the stored messages"
assert_grep "$T/status" "^projection: " "status names the projection"
assert_grep "$T/status" "^context: [0-9]*% of " "status gives occupancy over the window"
assert_grep "$T/status" "^thresholds: swap 70% / recut 85%$" "status gives the resolved default lines"
assert_grep "$T/status" "^window: " "status names the window"
lcm --command "/lcm" >"$T/bare" 2>&1
assert_grep "$T/bare" "^LCM: $NMSG messages" "bare /lcm is status"

# settings: the cockpit, then a live edit that keeps the replaced file as .bak
lcm --command "/lcm settings" >"$T/settings" 2>&1
for k in swapAtRatio swapAtTokens smartZone recutAtRatio recutAtTokens keepRecentTokens summaryTokens leafChunkTokens asyncChunkTokens; do
    assert_grep "$T/settings" "^  $k " "cockpit row $k"
done
printf '{"summaryTokens": 1500}' >"$HOME_DIR/lcm.json"
lcm --command "/lcm settings swapAtRatio 0.6" --command "/lcm status" >"$T/set" 2>&1
assert_grep "$T/set" "set swapAtRatio = 0.6" "settings confirms the change"
assert_grep "$T/set" "^thresholds: swap 60% / recut 85%" "the change applies at once in the same session"
python3 -c "import json,sys;d=json.load(open(sys.argv[1]));sys.exit(0 if d['swapAtRatio']==0.6 and d['summaryTokens']==1500 else 1)" "$HOME_DIR/lcm.json" || fail "lcm.json written, other keys kept"; ok
assert_eq "$(cat "$HOME_DIR/lcm.json.bak")" '{"summaryTokens": 1500}' "the replaced file is kept as lcm.json.bak"
lcm --command "/lcm settings recutAtRatio 0.9" >/dev/null 2>&1
assert_eq "$(cat "$HOME_DIR/lcm.json.bak")" '{"summaryTokens": 1500}' "an existing .bak is never replaced"
cp "$HOME_DIR/lcm.json" "$T/before.json"
lcm --command "/lcm settings swapAtRatio 7" >"$T/bad" 2>&1
assert_grep "$T/bad" "not changed" "an out-of-range value is refused"
cmp -s "$HOME_DIR/lcm.json" "$T/before.json" || fail "a refused value writes nothing"; ok
lcm --command "/lcm status" >"$T/status2" 2>&1
assert_grep "$T/status2" "^thresholds: swap 60% / recut 90%" "a new session reads the written config"

# backup: a standalone readable copy beside the stores, mode 0600
lcm --command "/lcm backup" >"$T/backup" 2>&1
assert_grep "$T/backup" "^backup: " "backup reports its file"
BK=$(ls "$LCMDIR"/lcm-backup-*.db | head -1)
[ -n "$BK" ] || fail "backup file exists"; ok
assert_eq "$(stat -c %a "$BK")" "600" "backup mode 0600"
assert_eq "$(python3 -c "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute('select count(*) from messages').fetchone()[0])" "$BK")" "$NMSG" "backup holds every message"

# export: every message's bytes verbatim
lcm --command "/lcm export" >"$T/export" 2>&1
assert_grep "$T/export" "^export: [0-9]* rows to " "export reports rows and file"
EX=$(ls "$LCMDIR"/lcm-export-*.jsonl | grep -v -- -gc- | head -1)
assert_eq "$(stat -c %a "$EX")" "600" "export mode 0600"
PYTHONPATH="$ROOT/tests/contract" python3 - "$EX" "$STORE" <<'PY' || fail "export carries every message verbatim"
import json, sqlite3, sys
import store_raw
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert "lcmExport" in rows[0]
got = {r["row"]["entry_id"]: r["row"]["raw_json"] for r in rows[1:] if r["table"] == "messages"}
db = sqlite3.connect(sys.argv[2])
want = dict(store_raw.rows(db, ["entry_id", "raw_json"]))
assert got == want, "messages differ"
PY
ok

# doctor: clean, then a broken FTS index found and repaired
lcm --command "/lcm doctor" >"$T/doctor" 2>&1
assert_grep "$T/doctor" "^fts: ok" "doctor checks the index"
assert_grep "$T/doctor" "^faults: 0" "a fresh store has no faults"
assert_grep "$T/doctor" "^summarizer chain that runs: auto -> extractive" "doctor prints the chain that runs"
assert_grep "$T/doctor" "^footprint: " "doctor reports the footprint"
# (The index's tokenizer is the store's own, which python's sqlite3 cannot load: the
# index's per-row records are emptied behind its back.)
python3 -c "import sqlite3,sys;c=sqlite3.connect(sys.argv[1]);c.execute('delete from messages_fts_docsize');c.commit()" "$STORE"
lcm --command "/lcm doctor" >"$T/doctor2" 2>&1
assert_grep "$T/doctor2" "^fts: $NMSG (m" "doctor finds the emptied index with sample ids"
lcm --command "/lcm doctor --repair" >"$T/repair" 2>&1
assert_grep "$T/repair" "^repair: full-text index rebuilt" "repair rebuilds the index"
assert_grep "$T/repair" "^faults: 0" "no faults after repair"
lcm --command "/lcm doctor" >"$T/doctor3" 2>&1
assert_grep "$T/doctor3" "^fts: ok" "the repair persisted"

# gc: a store whose session file is gone is retired; dry run lists, --apply exports then deletes
"$HOST" gen --seed 12 --tokens 8000 "$T/gen2.jsonl" >/dev/null || fail "gen2"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/gone.jsonl" \
    replay "$T/gen2.jsonl" >/dev/null 2>&1 || fail "replay2"
GONE=$(python3 -c "import json,sys;print(json.loads(open(sys.argv[1]).readline())['id'])" "$T/gone.jsonl")
rm -f "$T/gone.jsonl" "$T/gen2.jsonl"  # the generated input carries the same session id
lcm --command "/lcm gc" >"$T/gc" 2>&1
assert_grep "$T/gc" "gc (dry run): 1 retired stores" "gc lists the retired store"
assert_grep "$T/gc" "session $GONE" "gc names it"
[ -f "$LCMDIR/$GONE.sqlite" ] || fail "a dry run deletes nothing"; ok
lcm --command "/lcm gc --apply" >"$T/gc2" 2>&1
assert_grep "$T/gc2" "^gc: exported 1 stores to " "gc --apply exports first"
[ ! -f "$LCMDIR/$GONE.sqlite" ] || fail "the retired store is deleted"; ok
[ -f "$STORE" ] || fail "the live store is kept"; ok
GCX=$(ls "$LCMDIR"/lcm-export-gc-*.jsonl | head -1)
assert_grep "$GCX" "\"store\":\"$GONE\"" "the gc export holds the retired store"

# report and diagnose
lcm --command "/lcm report" >"$T/report" 2>&1
assert_grep "$T/report" "metric rows" "report counts rows"
assert_grep "$T/report" "^model-fallback: " "report names model-fallback"
assert_grep "$T/report" "^heal runs: " "report summarizes heal runs"
assert_grep "$T/report" "maintenance=" "report tallies this session's maintenance rows"
lcm --command "/lcm diagnose" >"$T/diag" 2>&1
assert_grep "$T/diag" "^version: lossless-context " "diagnose carries versions"
assert_grep "$T/diag" "^store: ~/home/lcm/" "paths under home print with ~"
assert_nogrep "$T/diag" "$T" "no absolute path in the block"
BODY=$(python3 -c "
import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l); m=r.get('message') or {}
    c=m.get('content')
    if m.get('role')=='user' and isinstance(c,str) and len(c)>30: print(c[:30]); break
    if m.get('role')=='user' and isinstance(c,list) and c and c[0].get('type')=='text' and len(c[0]['text'])>30: print(c[0]['text'][:30]); break
" "$T/out.jsonl")
[ -n "$BODY" ] || fail "found a message body to look for"; ok
assert_nogrep "$T/diag" "$BODY" "no message body in the block"
[ "$(wc -c <"$T/diag")" -le 8300 ] || fail "block within 8 KB (plus the host's framing)"; ok
lcm --command "/lcm diagnose --save $T/diag.txt" >"$T/diagsave" 2>&1
assert_grep "$T/diagsave" "written to $T/diag.txt" "--save names the file"
assert_eq "$(stat -c %a "$T/diag.txt")" "600" "--save writes mode 0600"
[ "$(wc -c <"$T/diag.txt")" -le 8193 ] || fail "saved block within 8 KB + newline"; ok
lcm --command "/lcm diagnose --save" >"$T/diagnone" 2>&1
assert_grep "$T/diagnone" "give a file path" "--save without a path is refused"

# migrate: nothing to do on current stores; an older one is listed and upgraded
# heal: a node the mechanical truncation wrote is found by the dry run (which spends
# nothing) and re-derived by --apply within its budgets
DBH=$(ls "$HOME_DIR"/lcm/*.sqlite | grep -v old | head -1)
python3 - "$DBH" <<'PY' || fail "plant a truncated summary"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
row = c.execute("SELECT id FROM summaries ORDER BY id LIMIT 1").fetchone()
assert row, "the replay made no summary"
c.execute("UPDATE summaries SET text = '[lcm:truncated] ' || substr(text, 1, 80) WHERE id = ?", row)
c.commit()
PY
ok
lcm --command "/lcm heal" --command "/lcm heal --apply --max-nodes 1" --command "/lcm heal --max-nodes x" >"$T/heal" 2>&1
assert_grep "$T/heal" "heal (dry run): 1 mechanical node(s), 0 healed" "heal dry run finds the truncated node"
assert_grep "$T/heal" "heal (apply): 1 mechanical node(s), 1 healed" "heal --apply re-derives it"
assert_grep "$T/heal" "--max-nodes takes a positive number" "a bad --max-nodes is refused"
lcm --command "/lcm migrate" >"$T/mig" 2>&1
assert_grep "$T/mig" "every store is at schema" "migrate dry run on current stores"
python3 -c "import sqlite3,sys;c=sqlite3.connect(sys.argv[1]);c.execute('create table legacy(x)');c.commit()" "$LCMDIR/old.sqlite"
lcm --command "/lcm migrate" --command "/lcm migrate --apply" --command "/lcm migrate" >"$T/mig2" 2>&1
assert_grep "$T/mig2" "migrate (dry run): 1 stores below schema" "an older store is listed"
assert_grep "$T/mig2" "migrate: 1 of 1 stores upgraded" "--apply upgrades it"
assert_eq "$(grep -c 'every store is at schema' "$T/mig2")" "1" "after --apply nothing is left"
done_ok
