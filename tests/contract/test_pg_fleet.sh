#!/bin/sh
# Issue #18's acceptance run: four hosts (four agent homes) replay four sessions into one
# real PostgreSQL database at once through LCM_STORE_URL; one is killed with SIGKILL and
# resumed; the server restarts in the middle. Then: every message of every session is in
# the database (as many as a lone SQLite replay stores), `/lcm doctor` is clean for each,
# no SQLite store file was written anywhere, and from a fifth home the fleet scope finds a
# needle of every session (`lcm grep --scope fleet`, MCP `lcm_sessions {"scope":"fleet"}`)
# only when its lcm.json sets "fleetRecall": true -- without it the scope is refused -- over
# one server connection, not one per session.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/pg/pg.sh"
pg_available || { echo "SKIP: no PostgreSQL server binaries (tests/deps.sh installs postgresql)"; exit 1; }
trap 'pg_stop; cleanup' EXIT
LCM="$BUILD/lcm"
# the cluster's folder sits where the postgres user can reach it (not under the test's 0700 T)
pg_start || fail "a PostgreSQL server starts in a temporary folder"
SERVER_URL=$LCM_STORE_URL; unset LCM_STORE_URL
mkdir -p "$T/tmp"; export TMPDIR="$T/tmp"
for s in 1 2 3 4; do
    "$HOST" gen --seed $((40 + s)) --tokens 60000 --needles "$T/n$s.jsonl" "$T/s$s.jsonl" >/dev/null || fail "gen $s"
done
cfg='{"leafChunkTokens":2000,"summaryTokens":200}'
# reference counts: a lone replay of each session into an embedded SQLite store
mkdir -p "$T/ref"; printf '%s\n' "$cfg" > "$T/ref/lcm.json"
for s in 1 2 3 4; do
    "$HOST" --home "$T/ref" --plugin-dir "$PLUGINS" --session "$T/ref-$s.jsonl" --window 16000 \
        replay "$T/s$s.jsonl" >/dev/null 2>&1 || fail "lone replay $s"
done
sid() { head -1 "$1" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])"; }
refcount() { python3 -c "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute('select count(*) from messages').fetchone()[0])" "$T/ref/lcm/$1.sqlite"; }

export LCM_STORE_URL=$SERVER_URL
for s in 1 2 3 4; do mkdir -p "$T/h$s"; printf '%s\n' "$cfg" > "$T/h$s/lcm.json"; done
replay() { "$HOST" --home "$T/h$1" --plugin-dir "$PLUGINS" --session "$T/out-$1.jsonl" \
    --window 16000 replay "$T/s$1.jsonl" > "$T/replay-$1.out" 2>&1; echo $? > "$T/replay-$1.rc"; }
replay 1 & P1=$!
replay 2 & P2=$!
replay 3 & P3=$!
replay 4 & P4=$!
# kill host 4 once it has stored something, restart the server while the others write
i=0
stored() { _n=$(pg_sql "select count(*) from lcm.messages" 2>/dev/null); echo "${_n:-0}"; }
until [ "$(stored)" -gt 200 ] || [ $i -ge 600 ]; do
    sleep 0.1; i=$((i+1))
done
[ "$(stored)" -gt 200 ] || fail "the four hosts store messages in the database"
kill -9 $P4 2>/dev/null; wait $P4 2>/dev/null
pg_restart || fail "the server restarts mid-run"
wait $P1; wait $P2; wait $P3
assert_eq "$(cat "$T/replay-1.rc")$(cat "$T/replay-2.rc")$(cat "$T/replay-3.rc")" "000" \
    "the three replays that were not killed exit 0 across the server restart"
# host 4 resumes its session from its session file (a new process, same session)
"$HOST" --home "$T/h4" --plugin-dir "$PLUGINS" --session "$T/out-4.jsonl" --window 16000 \
    replay "$T/s4.jsonl" > "$T/replay-4b.out" 2>&1 || { cat "$T/replay-4b.out"; fail "host 4 resumes after SIGKILL"; }
ok
cat "$T"/replay-*.out > "$T/all.out"
assert_nogrep "$T/all.out" "database is locked\|deadlock\|could not serialize" "no lock error reaches a user"

# A host whose run ended while the server was down kept its messages in its session file;
# the next time the session opens (here: to run /lcm doctor) the catch-up stores them.
for s in 1 2 3 4; do
    SID=$(sid "$T/s$s.jsonl")
    "$HOST" --home "$T/h$s" --plugin-dir "$PLUGINS" --session "$T/out-$s.jsonl" --command "/lcm doctor" > "$T/doc-$s" 2>&1
    assert_grep "$T/doc-$s" "^faults: 0" "session $s: /lcm doctor is clean over the database"
    got=$(pg_sql "select count(*) from lcm.messages m join lcm.sessions x on x.sid = m.sid where x.session_id = '$SID'")
    assert_eq "$got" "$(refcount "$SID")" "session $s: every message is in the database (as a lone replay stores)"
done
find "$T" -name '*.sqlite*' -not -path "$T/ref/*" > "$T/sqlite-files"
[ -s "$T/sqlite-files" ] && { cat "$T/sqlite-files"; fail "no SQLite store is written when LCM_STORE_URL is set"; }
ok

# the fleet scope from a fifth home
mkdir -p "$T/reader"
"$LCM" grep --home "$T/reader" --scope fleet "$(python3 -c "import json,sys;print(json.loads(open(sys.argv[1]).readline())['key'])" "$T/n1.jsonl")" \
    > "$T/refused.out" 2>&1; rc=$?
assert_eq "$rc" "2" "lcm grep --scope fleet is refused (exit 2) without fleetRecall"
assert_grep "$T/refused.out" "fleetRecall" "the refusal names the setting"
printf '{"fleetRecall": true}\n' > "$T/reader/lcm.json"
for s in 1 2 3 4; do
    kv=$(python3 -c "import json,sys;n=json.loads(open(sys.argv[1]).readline());print(n['key']+'='+n['value'])" "$T/n$s.jsonl")
    key=${kv%%=*}
    "$LCM" grep --home "$T/reader" --scope fleet "$key" > "$T/fleet-$s.out" 2>&1 || { cat "$T/fleet-$s.out"; fail "fleet grep $s exits 0"; }
    assert_grep "$T/fleet-$s.out" "$kv" "fleet grep finds session $s's needle ($kv)"
done
# A fleet grep reads every session over one server connection, not a connection (a server
# backend started, its caches cold) per session: the server's count of sessions started.
conns() { pg_sql "select pg_stat_clear_snapshot(); select sessions from pg_stat_database where datname = 'lcm'" | tail -1; }
c0=$(conns)
"$LCM" grep --home "$T/reader" --scope fleet "$key" > "$T/fleet-conns.out" 2>&1 || fail "fleet grep exits 0"
sleep 1
c1=$(conns)
# each conns() is one psql session of its own
used=$((c1 - c0 - 1))
echo "server sessions a fleet grep over 4 sessions started: $used"
[ "$used" -ge 1 ] && [ "$used" -le 2 ] || fail "a fleet grep over 4 sessions starts at most 2 server sessions (started $used)"
python3 - "$LCM" "$T/reader" "$T" <<'PY' || fail "MCP lcm_sessions with scope fleet lists all four sessions"
import json, subprocess, sys
lcm, home, t = sys.argv[1:4]
sids = [json.loads(open("%s/s%d.jsonl" % (t, i)).readline())["id"] for i in range(1, 5)]
p = subprocess.Popen([lcm, "mcp", "--home", home], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"); p.stdin.flush()
r = call(2, "tools/call", {"name": "lcm_sessions", "arguments": {"scope": "fleet"}})
text = r["result"]["content"][0]["text"]
missing = [s for s in sids if s not in text]
p.stdin.close(); p.wait()
if missing or r["result"].get("isError"):
    print(text); print("missing:", missing); sys.exit(1)
PY
ok
done_ok
