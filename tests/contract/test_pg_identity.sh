#!/bin/sh
# Two machines of one host name and one home path on a shared PostgreSQL store are two
# identities (issue 24.17). One host here plays both: the home folder H is machine A's, then
# is moved aside and a fresh H at the same path is machine B's (same host name, same
# realpath), then A's comes back. Each installation's identity is random, made once and
# kept (H/lcm/installation-id); with fleetRecall off (the default) neither machine lists nor
# greps the other's sessions, `--scope fleet` with fleetRecall on finds both. A session row
# written under the key of earlier builds ("host:path") is read by the home whose machine
# holds its session file, and not by the other.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/pg/pg.sh"
pg_begin
LCM="$BUILD/lcm"
H="$T/home"
mkdir -p "$T/a" "$T/b" "$T/work"
# machine A
hello_session "$T/a/sa.jsonl" "session-of-a" "$T/work" "ALPHAWORD written on machine A"
"$LCM" import --home "$H" "$T/a/sa.jsonl" >"$T/ia.txt" 2>&1 || { cat "$T/ia.txt"; fail "import on A"; }
[ -s "$H/lcm/installation-id" ] || fail "the installation's identity is kept in the home"
ok
IDA=$(cat "$H/lcm/installation-id")
assert_eq "$(stat -c %a "$H/lcm/installation-id")" "600" "the identity file is private"
"$LCM" sessions --home "$H" >/dev/null 2>&1
assert_eq "$(cat "$H/lcm/installation-id")" "$IDA" "the identity is made once and kept"
# machine B: same host name, same home path, its own installation
mv "$H" "$T/home-of-a"
hello_session "$T/b/sb.jsonl" "session-of-b" "$T/work" "BRAVOWORD written on machine B"
"$LCM" import --home "$H" "$T/b/sb.jsonl" >"$T/ib.txt" 2>&1 || { cat "$T/ib.txt"; fail "import on B"; }
IDB=$(cat "$H/lcm/installation-id")
[ "$IDA" != "$IDB" ] || fail "two installations have two identities"
ok
"$LCM" sessions --home "$H" >"$T/lb.txt" 2>&1
assert_grep "$T/lb.txt" "session-of-b" "B lists its own session"
assert_nogrep "$T/lb.txt" "session-of-a" "B (fleetRecall off) does not list A's session"
"$LCM" grep --home "$H" ALPHAWORD >"$T/gb.txt" 2>&1
assert_nogrep "$T/gb.txt" "written on machine A" "B's plain grep does not read A's session"
"$LCM" grep --home "$H" BRAVOWORD >"$T/gb2.txt" 2>&1
assert_grep "$T/gb2.txt" "written on machine B" "B's grep finds its own session"
"$LCM" grep --home "$H" --scope fleet ALPHAWORD >"$T/fb.txt" 2>&1
assert_nogrep "$T/fb.txt" "written on machine A" "the fleet scope is refused without fleetRecall"
printf '{"fleetRecall": true}\n' >"$H/lcm.json"
"$LCM" grep --home "$H" --scope fleet ALPHAWORD >"$T/fb2.txt" 2>&1
assert_grep "$T/fb2.txt" "written on machine A" "with fleetRecall the fleet scope reads A's session"
rm "$H/lcm.json"
# machine A again
mv "$H" "$T/home-of-b"
mv "$T/home-of-a" "$H"
"$LCM" sessions --home "$H" >"$T/la.txt" 2>&1
assert_grep "$T/la.txt" "session-of-a" "A lists its own session"
assert_nogrep "$T/la.txt" "session-of-b" "A does not list B's session"
"$LCM" grep --home "$H" BRAVOWORD >"$T/ga.txt" 2>&1
assert_nogrep "$T/ga.txt" "written on machine B" "A's plain grep does not read B's session"
# a row of an earlier build's key: A's when its session file is on A's machine
"$LCM" import --home "$T/scratch" "$T/a/sa.jsonl" >/dev/null 2>&1 # any store row to relabel
LEGACY="$(hostname):$(realpath "$H")"
touch "$T/a/old-own.jsonl"
pg_sql "UPDATE lcm.sessions SET agent = '$LEGACY', session_id = 'old-own', session_file = '$T/a/old-own.jsonl' WHERE agent LIKE '%scratch%'" >/dev/null
pg_sql "DELETE FROM lcm.meta WHERE key = 'session_file' AND sid = (SELECT sid FROM lcm.sessions WHERE session_id = 'old-own')" >/dev/null
"$LCM" import --home "$T/scratch2" "$T/b/sb.jsonl" >/dev/null 2>&1
pg_sql "UPDATE lcm.sessions SET agent = '$LEGACY', session_id = 'old-elsewhere', session_file = '/nonexistent/old.jsonl' WHERE agent LIKE '%scratch2%'" >/dev/null
pg_sql "DELETE FROM lcm.meta WHERE key = 'session_file' AND sid = (SELECT sid FROM lcm.sessions WHERE session_id = 'old-elsewhere')" >/dev/null
"$LCM" sessions --home "$H" >"$T/la2.txt" 2>&1
assert_grep "$T/la2.txt" "old-own" "an earlier build's row whose session file is here is listed"
assert_nogrep "$T/la2.txt" "old-elsewhere" "an earlier build's row whose session file is elsewhere is not"
done_ok
