#!/bin/sh
# Dream and behavior contracts over a generated history with planted lessons (three Pi
# sessions imported with `lcm import`): `lcm dream` without a model finds every planted
# correction and decision with lineage that `lcm expand` reads back to the planted
# message; a rerun with nothing new adds nothing; the home store and the report are
# private and never listed as a session; a proposed contract is approved, rides in the
# next `lcm hook session-start` bundle, and is retracted with a reason that stays in the
# trail; lcm_contracts over MCP changes nothing without "confirm": true; `lcm status`
# counts contracts; /lcm dream and /lcm contracts run in the real host; autoDream at
# session-end (off by default) dreams in the background.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
W="$T/work"
mkdir -p "$W" "$T/gen"
python3 "$ROOT/tests/contract/dream_history.py" "$T/gen" "$W" || fail "generate the history"
"$LCM" import --home "$HOME_DIR" "$T/gen"/dream-s*.jsonl >"$T/import.txt" 2>&1 || { cat "$T/import.txt"; fail "import"; }

# ---- without a model: every planted lesson, with lineage that expands to it -----------------
"$LCM" dream --home "$HOME_DIR" --project "$W" --json >"$T/d1.json" 2>"$T/d1.err" || { cat "$T/d1.err"; fail "lcm dream"; }
python3 - "$T/d1.json" "$T/gen/planted.json" "$LCM" "$HOME_DIR" <<'PY' || fail "each planted lesson found with lineage that lcm expand reads back"
import json, subprocess, sys
doc = json.load(open(sys.argv[1]))
planted = json.load(open(sys.argv[2]))
lcm, home = sys.argv[3], sys.argv[4]
assert doc["extractor"] == "heuristics" and not doc["modelFailed"], doc
for p in planted:
    hits = [x for x in doc["patterns"] if any(l["session"] == p["session"] and l.get("entry_id") == p["entry_id"] for l in x["lineage"])]
    assert hits, ("not found", p)
    assert any(h["kind"] == p["kind"] for h in hits), ("wrong kind", p, hits)
    out = subprocess.run([lcm, "expand", "--home", home, p["session"], p["entry_id"]], capture_output=True, text=True)
    assert out.returncode == 0 and p["text"] in out.stdout, ("expand", p, out.stdout, out.stderr)
kinds = {x["kind"] for x in doc["patterns"]}
assert {"correction", "decision"} <= kinds, kinds
assert doc["report"] and doc["contracts"], doc
PY
ok
REPORT=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['report'])" "$T/d1.json")
assert_grep "$REPORT" "lcm expand dream-s1 s1u2" "the report lists each pattern's lineage"
[ "$(stat -c %a "$REPORT")" = 600 ] || fail "the report is 0600"; ok
[ "$(stat -c %a "$HOME_DIR/lcm-home")" = 700 ] || fail "the home store's folder is 0700"; ok
[ "$(stat -c %a "$HOME_DIR/lcm-home/home.sqlite")" = 600 ] || fail "the home store is 0600"; ok
"$LCM" sessions --home "$HOME_DIR" >"$T/sessions.txt" 2>&1
assert_grep "$T/sessions.txt" "^3 stores under" "the home store is not listed as a session"
assert_nogrep "$T/sessions.txt" "lcm-home" "nor named among them"

# ---- a rerun with nothing new adds nothing ---------------------------------------------------
"$LCM" dream --home "$HOME_DIR" --project "$W" --json >"$T/d2.json" 2>&1 || fail "rerun"
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['nothingNew'] and d['patternsNew'] == 0 and d['sourcesNew'] == 0 and not d.get('contracts') and 'report' not in d, d
" "$T/d2.json" || fail "a rerun with nothing new adds no pattern, source, contract or report"; ok
[ "$(ls "$HOME_DIR/lcm-home/reports" | wc -l)" = 1 ] || fail "one report after two runs"; ok

# ---- contracts: approve -> in the bundle; retract with a reason -> in the trail ----------------
"$LCM" contracts --home "$HOME_DIR" list >"$T/list.txt" 2>&1 || fail "contracts list"
assert_grep "$T/list.txt" "\[Pending\] forbid: Never use tabs for indentation" "dream proposed the planted correction as a Pending forbid"
CID=$(sed -n 's/^#\([0-9]*\) \[Pending\] forbid: Never use tabs.*/\1/p' "$T/list.txt")
[ -n "$CID" ] || fail "the proposed contract's id"
echo "{\"cwd\":\"$W\",\"session_id\":\"next-1\"}" | "$LCM" hook session-start --home "$HOME_DIR" >"$T/b0.json"
assert_nogrep "$T/b0.json" "contract #$CID" "a Pending contract is not in the bundle"
"$LCM" contracts --home "$HOME_DIR" approve "$CID" >"$T/ap.txt" 2>&1 || { cat "$T/ap.txt"; fail "approve"; }
assert_grep "$T/ap.txt" "\[Active\]" "approve makes it Active"
"$LCM" contracts --home "$HOME_DIR" approve "$CID" >"$T/ap2.txt" 2>&1 && fail "approving an Active contract is refused"
assert_grep "$T/ap2.txt" "is Active" "the refusal names the state"
echo "{\"cwd\":\"$W\",\"session_id\":\"next-2\"}" | "$LCM" hook session-start --home "$HOME_DIR" >"$T/b1.json"
python3 - "$T/b1.json" "$CID" <<'PY' || fail "the approved contract rides in the next session-start bundle, after the recovery line"
import json, sys
ctx = json.load(open(sys.argv[1]))["hookSpecificOutput"]["additionalContext"]
assert ctx.startswith("[lossless-context]"), ctx[:200]
assert "[contract #%s, forbid] Never use tabs for indentation" % sys.argv[2] in ctx, ctx
assert "Previous session in this folder" in ctx, ctx
# a pattern no person approved does not ride by default
assert "We decided to go with PostgreSQL" not in ctx and "Patterns dream noticed" not in ctx, ctx
PY
ok
printf '{"dreamUnapprovedPatterns": true}\n' >"$HOME_DIR/lcm.json"
echo "{\"cwd\":\"$W\",\"session_id\":\"next-2b\"}" | "$LCM" hook session-start --home "$HOME_DIR" >"$T/b1b.json"
rm -f "$HOME_DIR/lcm.json"
python3 - "$T/b1b.json" <<'PY' || fail "with dreamUnapprovedPatterns the patterns ride, marked as no person's approval"
import json, sys
ctx = json.load(open(sys.argv[1]))["hookSpecificOutput"]["additionalContext"]
assert "no person approved them" in ctx and "] We decided to go with PostgreSQL" in ctx, ctx
PY
ok
"$LCM" contracts --home "$HOME_DIR" retract "$CID" >"$T/r0.txt" 2>&1 && fail "retract without a reason is refused"
assert_grep "$T/r0.txt" "reason" "the refusal asks for a reason"
"$LCM" contracts --home "$HOME_DIR" retract "$CID" --reason "the repo moved to tabs in 2026" >"$T/r1.txt" 2>&1 || { cat "$T/r1.txt"; fail "retract"; }
"$LCM" contracts --home "$HOME_DIR" show "$CID" >"$T/show.txt" 2>&1 || fail "show"
assert_grep "$T/show.txt" "\[Retracted\]" "retracted"
assert_grep "$T/show.txt" "retract by .*Active -> Retracted; reason: the repo moved to tabs in 2026" "the reason stays in the trail"
assert_grep "$T/show.txt" "approve by .*Pending -> Active" "the approval stays in the trail"
echo "{\"cwd\":\"$W\",\"session_id\":\"next-3\"}" | "$LCM" hook session-start --home "$HOME_DIR" >"$T/b2.json"
assert_nogrep "$T/b2.json" "contract #$CID" "a retracted contract leaves the bundle"

# supersede: the old one points at a new Active one
"$LCM" contracts --home "$HOME_DIR" list --state Pending >"$T/p.txt"
C2=$(sed -n 's/^#\([0-9]*\) \[Pending\].*/\1/p' "$T/p.txt" | head -1)
[ -n "$C2" ] || fail "another Pending contract"
"$LCM" contracts --home "$HOME_DIR" approve "$C2" >/dev/null 2>&1 || fail "approve $C2"
"$LCM" contracts --home "$HOME_DIR" supersede "$C2" --body "Open a pull request for every change to main." --reason "clearer" >"$T/s.txt" 2>&1 || { cat "$T/s.txt"; fail "supersede"; }
assert_grep "$T/s.txt" "superseded by #" "supersede names the new contract"
"$LCM" contracts --home "$HOME_DIR" show "$C2" >"$T/s2.txt"
assert_grep "$T/s2.txt" "\[Superseded\].*superseded by #" "the old contract points at the new one"

# ---- lcm status counts contracts ---------------------------------------------------------------
"$LCM" status --home "$HOME_DIR" >"$T/status.txt" 2>&1 || fail "status"
assert_grep "$T/status.txt" "contracts: .*1 Active, 0 Rejected, 1 Retracted, 1 Superseded" "lcm status counts contracts by state"

"$LCM" status --home "$HOME_DIR" --json >"$T/status.json" 2>&1 || fail "status --json"
python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))['contracts']
assert (c['Active'], c['Retracted'], c['Superseded']) == (1, 1, 1) and c['patterns'] == 6, c
" "$T/status.json" || fail "lcm status --json counts contracts by state"; ok

# ---- MCP: list reads; reject needs confirm; approve is a person's act --------------------------------------------------
python3 - "$LCM" "$HOME_DIR" <<'PY' || fail "lcm_contracts over MCP"
import json, subprocess, sys
lcm, home = sys.argv[1], sys.argv[2]
def calls(*reqs):
    lines = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})]
    for i, (name, args) in enumerate(reqs):
        lines.append(json.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {"name": name, "arguments": args}}))
    out = subprocess.run([lcm, "mcp", "--home", home], input="\n".join(lines) + "\n", capture_output=True, text=True).stdout
    res = [json.loads(l) for l in out.splitlines() if l.strip()]
    return [r["result"] for r in res if r.get("id", 0) >= 10]
lst, = calls(("lcm_contracts", {"action": "list", "state": "Pending"}))
assert not lst.get("isError") and "[Pending]" in lst["content"][0]["text"], lst
cid = int(lst["content"][0]["text"].split()[0][1:])
no, show = calls(("lcm_contracts", {"action": "approve", "id": cid}), ("lcm_contracts", {"action": "show", "id": cid}))
assert no.get("isError") and "only through a person" in no["content"][0]["text"], no
assert "[Pending]" in show["content"][0]["text"], show
self_ok, show = calls(("lcm_contracts", {"action": "approve", "id": cid, "confirm": True}), ("lcm_contracts", {"action": "show", "id": cid}))
assert self_ok.get("isError") and "only through a person" in self_ok["content"][0]["text"], self_ok
assert "[Pending]" in show["content"][0]["text"], show
no2, = calls(("lcm_contracts", {"action": "reject", "id": cid}))
assert no2.get("isError") and "confirm" in no2["content"][0]["text"], no2
yes, = calls(("lcm_contracts", {"action": "reject", "id": cid, "confirm": True}))
assert not yes.get("isError") and "[Rejected]" in yes["content"][0]["text"] and "mcp client" in yes["content"][0]["text"], yes
PY
ok

# ---- /lcm dream and /lcm contracts in the real host -----------------------------------------------
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/host.jsonl" --cwd "$W" \
    --command "/lcm dream" --command "/lcm contracts list" >"$T/host.txt" 2>&1 || { cat "$T/host.txt"; fail "/lcm dream in the host"; }
assert_grep "$T/host.txt" "nothing new since the last dream" "/lcm dream runs the same dream (nothing new here)"
assert_grep "$T/host.txt" "\[Retracted\] forbid: Never use tabs" "/lcm contracts lists the same contracts"

# ---- dreamSystemPrompt (off by default): a new session's system prompt in the real host -----
printf '[{"content": "fine."}, {"content": "fine again."}]\n' >"$T/script.json"
start_server "$T/script.json" "$T/record.jsonl"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/sp0.jsonl" --cwd "$W" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "hello" >/dev/null 2>&1 || fail "host run without the setting"
printf '{"dreamSystemPrompt": true}\n' >"$HOME_DIR/lcm.json"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/sp1.jsonl" --cwd "$W" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake -p "hello" >/dev/null 2>&1 || fail "host run with dreamSystemPrompt"
rm -f "$HOME_DIR/lcm.json"
assert_jsonl "$T/record.jsonl" "len(rows) == 2 and 'Open a pull request for every change to main.' not in rows[0]['messages'][0]['content']" "without dreamSystemPrompt the system prompt carries no contract"
assert_jsonl "$T/record.jsonl" "'[contract #' in rows[1]['messages'][0]['content'] and 'Open a pull request for every change to main.' in rows[1]['messages'][0]['content'] and 'LIVE_CONTEXT.md' in rows[1]['messages'][0]['content']" "with it a new session's system prompt carries the active contracts"

# ---- autoDream at session-end (off by default, then on) -------------------------------------------
H2="$T/h2"
mkdir -p "$H2"
"$LCM" import --home "$H2" "$T/gen"/dream-s*.jsonl >/dev/null 2>&1 || fail "import into a second home"
echo "{\"cwd\":\"$W\",\"session_id\":\"x\"}" | "$LCM" hook session-end --home "$H2"
sleep 1
[ ! -e "$H2/lcm-home" ] || fail "without autoDream session-end dreams nothing (no home store)"; ok
printf '{"autoDream": true, "dreamAfterSessions": 2}\n' >"$H2/lcm.json"
echo "{\"cwd\":\"$W\",\"session_id\":\"x\"}" | "$LCM" hook session-end --home "$H2"
i=0
while [ $i -lt 100 ] && ! ls "$H2/lcm-home/reports/"*.md >/dev/null 2>&1; do sleep 0.1; i=$((i+1)); done
ls "$H2/lcm-home/reports/"*.md >/dev/null 2>&1 || { cat "$H2/lcm/hooks.log" 2>/dev/null; fail "autoDream wrote a report in the background"; }
ok
i=0
while [ $i -lt 50 ] && ! grep -q "autoDream: 6 new patterns" "$H2/lcm/hooks.log" 2>/dev/null; do sleep 0.1; i=$((i+1)); done
assert_grep "$H2/lcm/hooks.log" "autoDream: 6 new patterns" "the hooks log says what autoDream found"
done_ok
