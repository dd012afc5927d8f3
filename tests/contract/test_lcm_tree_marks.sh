#!/bin/sh
# Removed-branch marks kept incrementally across tree moves: the plugin walks parent links
# from the old and the new leaf to their common ancestor (host get_entry) instead of
# comparing the whole branch. After a replay with many moves, a stored message is marked
# removed exactly when it is not on the final active branch, and the DAG's progress
# numbers (watermark, pending tokens) equal a full recount.
. "$(dirname "$0")/lib.sh"
"$HOST" gen --seed 5 --messages 1500 "$T/in.jsonl" >/dev/null || fail "gen"
out=$("$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" \
    replay "$T/in.jsonl" --window 60000) || fail "replay"
moves=$(echo "$out" | sed -n 's/.* \([0-9]*\) tree moves.*/\1/p')
[ "${moves:-0}" -ge 5 ] || fail "the generated session has tree moves (got '${moves:-}')"
ok
db=$(ls "$HOME_DIR"/lcm/*.sqlite | head -n 1)
python3 - "$T/out.jsonl" "$db" <<'PY' || fail "removed marks or DAG progress disagree with the final branch"
import json, sqlite3, sys
entries, last = {}, None
for line in open(sys.argv[1], encoding="utf-8"):
    e = json.loads(line)
    if e.get("type") == "session":
        continue
    entries[e["id"]] = e
    last = e["id"]
branch, x = set(), last
while x:
    branch.add(x)
    x = entries[x].get("parentId")
db = sqlite3.connect(sys.argv[2])
rows = db.execute("SELECT entry_id, removed FROM messages").fetchall()
wrong = [eid for eid, rem in rows if (eid in branch) == bool(rem)]
removed = sum(1 for _, rem in rows if rem)
if wrong or removed == 0:
    print("rows", len(rows), "removed", removed, "wrong marks", wrong[:10])
    sys.exit(1)
meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
unc = (" FROM messages m WHERE m.removed = 0 AND m.role NOT IN ('compactionSummary','branchSummary')"
       " AND NOT EXISTS (SELECT 1 FROM summary_messages sm WHERE sm.entry_id = m.entry_id)")
pending = db.execute("SELECT coalesce(sum(m.tokens), 0)" + unc).fetchone()[0]
below = db.execute("SELECT count(*)" + unc + " AND m.ordinal < ?", (int(meta["dag_watermark"]),)).fetchone()[0]
leaves = db.execute("SELECT count(*) FROM summaries").fetchone()[0]
if int(meta["dag_pending"]) != pending or below != 0 or leaves == 0:
    print("pending", meta["dag_pending"], "recount", pending, "uncovered below watermark", below, "summaries", leaves)
    sys.exit(1)
PY
ok
done_ok
