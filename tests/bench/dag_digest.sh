#!/bin/sh
# The summary DAG of one stored session as one digest: its summaries (every column but the
# wall-clock `created`), summary_messages, summary_children and summary_spans, read back
# through `lcm export`, canonicalised (sorted keys, sorted rows) and hashed. Two compactions
# of the same imported store that build the same DAG row for row print the same digest;
# a compaction change is checked by comparing it before and after.
# Usage: sh tests/bench/dag_digest.sh BUILD HOME SESSION
BUILD=${1:?BUILD}
HOME_DIR=${2:?HOME}
SID=${3:?SESSION}
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-dag-digest.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$BUILD/lcm" export --home "$HOME_DIR" --session "$SID" --out "$T/e.jsonl" >/dev/null || exit 1
python3 - "$T/e.jsonl" <<'PY'
import hashlib, json, sys
keep = {"summaries", "summary_messages", "summary_children", "summary_spans"}
rows = {k: [] for k in keep}
for line in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(line)
    t = d.get("table")
    if t in keep:
        r = d["row"]
        r.pop("created", None)
        rows[t].append(json.dumps(r, sort_keys=True, ensure_ascii=False))
h = hashlib.sha256()
for t in sorted(rows):
    for r in sorted(rows[t]):
        h.update((t + "\t" + r + "\n").encode("utf-8"))
print("%s  %s" % (h.hexdigest(), " ".join("%s=%d" % (t, len(rows[t])) for t in sorted(rows))))
PY
