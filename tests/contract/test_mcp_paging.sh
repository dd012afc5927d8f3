#!/bin/sh
# Cross-session lcm_grep pages for real (issue 14.8), through the MCP server (build/lcm
# mcp): three past sessions with 25 matching messages each. At offsets 0 / 20 / 40 the
# pages are the windows of one sequence (page 20 starts where page 0's 21st hit is), the
# pages at 0, 40, 80 together hold all 75 hits once each (query and pattern mode), the
# header counts 75, and the order survives a store's mtime changing between calls.
# Before the fix every offset returned the hits of offset 0.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
for k in 1 2 3; do
    python3 - "$T/s$k.jsonl" "$k" <<'PY'
import json, sys
path, k = sys.argv[1], int(sys.argv[2])
out = [{"type": "session", "version": 3, "id": "pg-session-%d" % k,
        "timestamp": "2026-01-0%dT00:00:00.000Z" % k, "cwd": "/work/pg%d" % k}]
parent = None
for i in range(50):
    eid = "e%d%03d" % (k, i)
    role = "user" if i % 2 == 0 else "assistant"
    word = "pagingword PG%d_%d" % (k, i) if i % 2 == 0 else "an answer without the term"
    msg = {"role": role, "content": [{"type": "text", "text": "note %s here" % word}], "timestamp": 1767225600000 + i}
    out.append({"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:%02d.000Z" % (i % 60), "message": msg})
    parent = eid
open(path, "w").write("".join(json.dumps(o) + "\n" for o in out))
PY
    "$LCM" import --home "$HOME_DIR" "$T/s$k.jsonl" >"$T/imp$k.txt" 2>&1 || { cat "$T/imp$k.txt"; fail "import $k"; }
done
ok
python3 - "$LCM" "$HOME_DIR" <<'PY' || fail "cross-session paging"
import json, os, re, subprocess, sys, glob
lcm, home = sys.argv[1:3]
p = subprocess.Popen([lcm, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
rid = [0]
def call(args):
    rid[0] += 1
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid[0], "method": "tools/call",
                              "params": {"name": "lcm_grep", "arguments": args}}) + "\n"); p.stdin.flush()
    r = json.loads(p.stdout.readline())
    return r["result"]["content"][0]["text"]
def hits(text):
    return re.findall(r"^- (\S+) \[\w+\] \(past session (\S+),", text, re.M)
def check(cond, what, text=""):
    if not cond:
        print("FAIL:", what); print(text[:3000]); sys.exit(1)
for mode in ({"query": "pagingword"}, {"pattern": r"PG\d_\d+"}):
    t0 = call(dict(mode, offset=0)); h0 = hits(t0)
    # another session writes to its store: its mtime changes, the order must not
    for f in glob.glob(home + "/lcm/*.sqlite"): os.utime(f)
    os.utime(sorted(glob.glob(home + "/lcm/*.sqlite"))[0], (0, 0))
    t20 = call(dict(mode, offset=20)); h20 = hits(t20)
    t40 = call(dict(mode, offset=40)); h40 = hits(t40)
    t80 = call(dict(mode, offset=80)); h80 = hits(t80)
    check(len(h0) == 40 and "showing 1-40" in t0, "%s: offset 0 shows 40 hits" % mode, t0)
    check("showing 21-" in t20 and h20[:20] == h0[20:40], "%s: offset 20 continues the sequence" % mode, t0 + t20)
    check("showing 41-" in t40 and h40[:20] == h20[20:40] and not set(h40) & set(h0), "%s: offset 40 is the next page" % mode, t40)
    allh = h0 + h40 + h80
    want = {("e%d%03d" % (k, i), "pg-session-%d" % k) for k in (1, 2, 3) for i in range(0, 50, 2)}
    check(len(allh) == 75 and set(allh) == want, "%s: pages 0/40/80 hold all 75 hits once (%d)" % (mode, len(allh)), t0 + t40 + t80)
    check("call again with offset 40" in t0 and "call again" not in t80, "%s: 'more' says where the next page starts, and the last has none" % mode, t0 + t80)
    if "query" in mode:
        check("75 hit(s)" in t0, "query: the header counts every hit across the stores", t0)
p.stdin.close(); p.wait()
PY
ok
done_ok
