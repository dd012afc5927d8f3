#!/bin/sh
# Out-of-range numbers and oversized requests are refused, never wrapped or echoed (issue
# 14.10), through the real host + .so and the MCP server: an offset of 2^63, 2^64 or 1e300
# is refused with the range named (before: "call again with offset 9223372036854775808",
# or read as 0); MCP: the same for lcm_grep / lcm_sessions, a request id 1e999 (which no
# double holds: it came back as id null) is refused as an Invalid Request, and a 9 MiB
# line is answered with a short parse error (not read whole, not echoed), after which the
# server still answers. Ids are read the same way (issue 24.13): a contract id or a
# summary_id of 1e300, 2^63-1, 2^63, -1 or 1.5 is refused naming the range, never turned
# into -9223372036854775808 (an overflowing cast) or some other id.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
"$HOST" gen --seed 4 --messages 80 "$T/in.jsonl" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" replay "$T/in.jsonl" >/dev/null 2>&1 || fail "replay"
for off in 9223372036854775808 18446744073709551616 1e300; do
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" \
        --tool lcm_grep "{\"query\":\"the\",\"offset\":$off}" >"$T/g.txt" 2>&1
    assert_grep "$T/g.txt" "offset is an integer from 0 to 1000000000" "plugin: offset $off is refused naming the range"
    assert_nogrep "$T/g.txt" "showing" "plugin: offset $off returns no page"
done
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" \
    --tool lcm_expand_query '{"entry_id":"x","char_offset":1e300}' >"$T/x.txt" 2>&1
assert_grep "$T/x.txt" "integers from 0 to 1000000000" "plugin: char_offset 1e300 is refused"
python3 - "$LCM" "$HOME_DIR" <<'PY' || fail "MCP bounds"
import json, subprocess, sys
lcm, home = sys.argv[1:3]
p = subprocess.Popen([lcm, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
def raw(line):
    p.stdin.write(line + "\n"); p.stdin.flush()
    return p.stdout.readline()
def check(c, what, got=""):
    if not c: print("FAIL:", what, str(got)[:800]); sys.exit(1)
for off in ("9223372036854775808", "18446744073709551616", "1e300", '"99999999999999999999"'):
    a = raw('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lcm_grep","arguments":{"query":"the","offset":%s}}}' % off)
    r = json.loads(a)
    check(r["result"].get("isError") and "from 0 to 1000000000" in r["result"]["content"][0]["text"], "lcm_grep offset %s refused" % off, a)
a = json.loads(raw('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lcm_sessions","arguments":{"limit":1e300}}}'))
check(a["result"].get("isError"), "lcm_sessions limit 1e300 refused", a)
a = raw('{"jsonrpc":"2.0","id":1e999,"method":"ping"}')
r = json.loads(a)
check("error" in r and r["error"]["code"] == -32600 and "id" in r["error"]["message"], "id 1e999 is refused, not answered as id null", a)
big = '{"jsonrpc":"2.0","id":3,"method":"' + "x" * (9 << 20) + '"}'
a = raw(big)
check(len(a) < 1000 and json.loads(a)["error"]["code"] == -32700, "a 9 MiB line gets a short parse error", a[:300])
a = json.loads(raw('{"jsonrpc":"2.0","id":"after","method":"ping"}'))
check(a == {"jsonrpc": "2.0", "id": "after", "result": {}}, "the server answers after the oversized line", a)
a = raw('{"jsonrpc":"2.0","id":4,"method":"' + "y" * 5000 + '"}')
check(len(a) < 400, "an unknown method is not echoed whole", a[:300])
for bad in ("1e300", "9223372036854775807", "9223372036854775808", "-1", "1.5", '"9223372036854775808"', '"#1e3"'):
    for action in ("show", "reject"):  # approve is refused over MCP whatever the id
        a = raw('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"lcm_contracts","arguments":{"action":"%s","id":%s,"confirm":true}}}' % (action, bad))
        r = json.loads(a)
        t = r["result"]["content"][0]["text"]
        check(r["result"].get("isError") and "from 1 to 9007199254740991" in t and "-9223372036854775808" not in t,
              "lcm_contracts %s id %s refused naming the range" % (action, bad), a)
    for tool, args in (("lcm_grep", '"query":"the",'), ("lcm_expand", ""), ("lcm_describe", "")):
        a = raw('{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"%s","arguments":{%s"summary_id":%s}}}' % (tool, args, bad))
        r = json.loads(a)
        t = r["result"]["content"][0]["text"]
        check(r["result"].get("isError") and "summary_id is an integer from 1" in t, "%s summary_id %s refused" % (tool, bad), a)
p.stdin.close(); p.wait()
PY
ok
for bad in 1e300 9223372036854775807 -1; do
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" \
        --tool lcm_grep "{\"query\":\"the\",\"summary_id\":$bad}" >"$T/sg.txt" 2>&1
    assert_grep "$T/sg.txt" "summary_id is an integer from 1" "plugin: lcm_grep summary_id $bad is refused naming the range"
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" \
        --tool lcm_expand_query "{\"summary_id\":$bad}" >"$T/sx.txt" 2>&1
    assert_grep "$T/sx.txt" "summary_id is an integer from 1" "plugin: lcm_expand_query summary_id $bad is refused naming the range"
done
done_ok
