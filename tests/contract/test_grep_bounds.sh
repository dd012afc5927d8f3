#!/bin/sh
# lcm_grep's pattern mode is bounded inside matching, and a bound is never taken for "no
# match" (issue 14, item 1). A store holding "a"*199990+"!" (the subject that made one
# pcre2_match of (a|aa){1,14}! run 23 s) answers within the one-second bound and names it,
# with the message it stopped inside; (a|aa)+c over "aaa...ab and then aac" hits PCRE2's
# match limit and the output names the limit and the message instead of "no more
# matches"; a plain pattern still finds what follows. The same through the MCP server
# across sessions (its 1.5-second bound). Wall time is not asserted (a shared machine);
# the output's named bound is.
. "$(dirname "$0")/lib.sh"
python3 "$ROOT/tests/contract/bomb_session.py" "$T/in.jsonl" bomb-0001 || fail "generator"
lcm() { "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" "$@"; }
lcm replay "$T/in.jsonl" > "$T/replay.out" 2>&1 || { cat "$T/replay.out"; fail "replay"; }
ok

# bounded_grep OUT WHAT PATTERN BOUND WHERE: lcm_grep for PATTERN (a JSON string body) to
# OUT survives (status 0 or 1), names BOUND and the message WHERE it stopped, and never reads
# as a plain miss ("no more matches", "no hits"). WHAT names the call in the messages.
bounded_grep() {
    _out=$1 _what=$2
    lcm --tool lcm_grep "{\"pattern\":\"$3\"}" > "$_out" 2>&1
    rc=$?
    [ $rc -le 1 ] || { cat "$_out"; fail "$_what kills the host (status $rc)"; }
    ok
    assert_grep "$_out" "$4" "$_what: the bound is named"
    assert_grep "$_out" "$5" "$_what: the message it stopped on is named"
    assert_nogrep "$_out" "no more matches" "$_what: a call stopped by its bound never says there are no more matches"
    assert_nogrep "$_out" ": no hits$" "$_what: a call stopped by its bound never says plainly that there are no hits"
}

bounded_grep "$T/g1" "the regex bomb (a|aa){1,14}!" '(a|aa){1,14}!' \
    "bound: stopped at the one-second pattern limit" "inside entry m00002"
# On an idle machine PCRE2's match limit comes first; on a loaded one the one-second bound
# may: either is a named bound on m00003, never a miss.
bounded_grep "$T/g2" "(a|aa)+c at PCRE2's match limit" '(a|aa)+c' \
    "bound: the PCRE2 match limit\|bound: stopped at the one-second pattern limit" "entry m00003"

lcm --tool lcm_grep '{"pattern":"GREP_MARKER_\\w+"}' > "$T/g3" 2>&1 || { cat "$T/g3"; fail "plain pattern"; }
assert_grep "$T/g3" "m00004 \[assistant\]" "a plain pattern past the long message still finds its hit"
assert_grep "$T/g3" "no more matches" "an unbounded call still says when there are no more matches"
assert_nogrep "$T/g3" "^bound: " "a call that hit no bound names none"

# The MCP server searches every store (this one is a past session to it): its bound holds.
python3 - "$BUILD/lcm" "$HOME_DIR" <<'PY' || fail "MCP bounded pattern"
import json, subprocess, sys, time
lcm, home = sys.argv[1:3]
p = subprocess.Popen([lcm, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     text=True, bufsize=1)
def rpc(obj):
    p.stdin.write(json.dumps(obj) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
t0 = time.time()
r = rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "lcm_grep", "arguments": {"pattern": "(a|aa){1,14}!"}}})
took = time.time() - t0
text = r["result"]["content"][0]["text"]
ping = rpc({"jsonrpc": "2.0", "id": 3, "method": "ping"})
p.stdin.close(); p.wait()
print("mcp bomb: %.2f s" % took, file=sys.stderr)
assert "bound: stopped at the 3-second limit" in text, text
assert "no more matches" not in text, text
assert ping.get("id") == 3 and "result" in ping, ping
r2 = text
PY
ok
done_ok
