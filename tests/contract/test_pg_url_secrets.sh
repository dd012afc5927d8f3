#!/bin/sh
# A PostgreSQL password is never printed, however the URI spells its key: libpq decodes
# percent-escapes in a parameter's name as in its value (`pass%77ord=` is `password=`), so
# the masking must read names the same way. Every surface that names the store is run
# against a real server (tests/pg/pg.sh) with such a URI: `lcm status`, `lcm doctor`, MCP
# `lcm_status`, the host's `/lcm status` and `/lcm diagnose`; also the password in the user
# part when it holds a '?' (libpq reads the user part up to '@', not up to '?').
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/pg/pg.sh"
pg_begin
LCM="$BUILD/lcm"
hello_session "$T/in.jsonl" "pw-session" "$T/work" "hello over a shared store"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" replay "$T/in.jsonl" \
    > "$T/replay.txt" 2>&1 || { cat "$T/replay.txt"; fail "replay into PostgreSQL"; }
ok
PW="pw-Kx72-secret"
# trust authentication ignores the password, so each URI reaches the database
for url in "postgresql:///lcm?host=$PG_DIR&user=postgres&pass%77ord=$PW" \
           "postgresql:///lcm?host=$PG_DIR&user=postgres&%70%61%73%73%77%6f%72%64=$PW" \
           "postgresql:///lcm?host=$PG_DIR&user=postgres&sslpassword=$PW" \
           "postgresql://postgres:$PW?x@/lcm?host=$PG_DIR"; do
    : > "$T/out.txt"
    LCM_STORE_URL=$url "$LCM" status --home "$HOME_DIR" >> "$T/out.txt" 2>&1
    LCM_STORE_URL=$url "$LCM" doctor --home "$HOME_DIR" >> "$T/out.txt" 2>&1
    LCM_STORE_URL=$url python3 - "$LCM" "$HOME_DIR" >> "$T/out.txt" 2>&1 <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--home", sys.argv[2]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"); p.stdin.flush()
print(json.dumps(call(2, "tools/call", {"name": "lcm_status", "arguments": {}})))
p.stdin.close(); p.wait()
PY
    for cmd in "/lcm status" "/lcm diagnose"; do
        LCM_STORE_URL=$url "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" \
            --command "$cmd" >> "$T/out.txt" 2>&1
    done
    assert_grep "$T/out.txt" "lcm_status\|store: postgresql" "the surfaces ran and named the store ($url)"
    assert_grep "$T/out.txt" '\*\*\*' "the secret is shown masked ($url)"
    assert_nogrep "$T/out.txt" "$PW" "no surface prints the password ($url)"
done
done_ok
