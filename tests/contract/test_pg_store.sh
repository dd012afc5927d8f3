#!/bin/sh
# The shared store on a real PostgreSQL server (tests/pg/pg.sh: a private cluster on a
# unix socket, started and stopped here). With LCM_STORE_URL set:
#   1. the backend-neutral unit suites pass against it (the DAG and its progress numbers,
#      recall, ingest and its round trips, the projection and its state, the background
#      worker, the catalog, hybrid recall's vectors and their cache);
#      their few cases about SQLite's own files say so and check nothing;
#   2. the real host replays a generated session through the .so: no .sqlite file is
#      written, every message is in the database, `/lcm doctor` is clean, `lcm grep` finds
#      a planted needle and `lcm sessions` lists the session;
#   3. a second agent home's session is its own; a server restart in the middle of a
#      replay loses nothing;
#   4. the password of the URI never appears in any output or error.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/pg/pg.sh"
pg_begin
LCM="$BUILD/lcm"

# 1. the unit suites against the server (PG_UNIT_SUITES names others; empty skips them)
for t in ${PG_UNIT_SUITES-test_dag test_dag_progress test_recall test_search_stems test_ingest test_pg_ingest test_project test_projstate test_worker test_catalog test_lease test_hybrid test_vecindex}; do
    "$BUILD/tests/$t" >"$T/$t.txt" 2>&1 || { tail -30 "$T/$t.txt"; fail "$t on PostgreSQL"; }
    ok
done

# 2. the real host and .so, replaying a generated session into the database
IN="$T/in.jsonl"
OUT="$T/out.jsonl"
"$HOST" gen --seed 5 --tokens 80000 "$IN" >/dev/null || fail "gen"
printf '{"leafChunkTokens":3000,"summaryTokens":300}\n' > "$HOME_DIR/lcm.json"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --window 16000 replay "$IN" \
    > "$T/replay.txt" 2>&1 || { cat "$T/replay.txt"; fail "replay into PostgreSQL"; }
assert_grep "$T/replay.txt" "replayed" "the replay ran to its end"
[ -z "$(find "$HOME_DIR" -name '*.sqlite*' 2>/dev/null)" ] || { find "$HOME_DIR" -name '*.sqlite*'; fail "no SQLite store file is written with LCM_STORE_URL"; }
ok
SID=$(head -1 "$OUT" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
NMSG=$(python3 - "$OUT" <<'PY'
import json, sys
print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l).get("type") == "message"))
PY
)
STORED=$(pg_sql "SELECT count(*) FROM lcm.messages m JOIN lcm.sessions s ON s.sid = m.sid WHERE s.session_id = '$SID'")
[ "$STORED" -ge "$NMSG" ] && [ "$NMSG" -gt 50 ] || fail "every message of the session is in the database ($STORED of $NMSG)"
ok
SUMS=$(pg_sql "SELECT count(*) FROM lcm.summaries m JOIN lcm.sessions s ON s.sid = m.sid WHERE s.session_id = '$SID'")
[ "$SUMS" -gt 0 ] || fail "the DAG's summaries are in the database"
ok
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --command "/lcm doctor" > "$T/doctor.txt" 2>&1
assert_grep "$T/doctor.txt" "^faults: 0" "/lcm doctor is clean over the database"
assert_grep "$T/doctor.txt" "postgresql://" "doctor names the shared store"
NEEDLE=$(grep -o 'Remember N[0-9]*=[0-9]*' "$IN" | head -1 | sed 's/Remember //')
KEY=${NEEDLE%=*}
VAL=${NEEDLE#*=}
[ -n "$KEY" ] || fail "the generated session plants a needle"
"$LCM" grep --home "$HOME_DIR" "\"$KEY $VAL\"" > "$T/grep.txt" 2>&1 || { cat "$T/grep.txt"; fail "lcm grep ran"; }
assert_grep "$T/grep.txt" "$KEY=$VAL" "lcm grep finds the needle in the database"
"$LCM" grep --home "$HOME_DIR" --regex "$KEY=$VAL" > "$T/grep_re.txt" 2>&1 || { cat "$T/grep_re.txt"; fail "lcm grep --regex ran"; }
assert_grep "$T/grep_re.txt" "$KEY=$VAL" "pattern mode streams the session's rows and finds the needle"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --window 16000 \
    --tool lcm_grep "{\"query\":\"fts5:$KEY NEAR($VAL)\"}" > "$T/near.txt" 2>&1
assert_grep "$T/near.txt" "NEAR() has no PostgreSQL full-text form" "an FTS5 form with no tsquery is refused with a sentence"
# The same query language on PostgreSQL: a question with punctuation and a hyphenated name is
# a query (never a syntax error), and the time, role and order filters apply.
"$LCM" grep --home "$HOME_DIR" "what's $KEY's value, the one-time needle?" > "$T/pg_plain.txt" 2>&1 ||
    { cat "$T/pg_plain.txt"; fail "a plain question on PostgreSQL"; }
assert_grep "$T/pg_plain.txt" "$KEY=$VAL" "a plain question finds the needle in the database"
"$LCM" grep --home "$HOME_DIR" --role user --sort oldest --since 2000-01-01 "$KEY" > "$T/pg_filt.txt" 2>&1 ||
    { cat "$T/pg_filt.txt"; fail "filters on PostgreSQL"; }
assert_grep "$T/pg_filt.txt" "$KEY=$VAL" "role, sort and since on PostgreSQL"
"$LCM" grep --home "$HOME_DIR" --role tool "$KEY" > "$T/pg_role.txt" 2>&1 || fail "role tool on PostgreSQL"
assert_nogrep "$T/pg_role.txt" "\[user\]" "role tool leaves the user's message out"
"$LCM" sessions --home "$HOME_DIR" > "$T/sessions.txt" 2>&1 || { cat "$T/sessions.txt"; fail "lcm sessions ran"; }
assert_grep "$T/sessions.txt" "^$(printf %.8s "${SID#claude-}") " "lcm sessions lists the session from the database (by its short id)"
# importing the same session file again adds nothing (idempotent writes)
STORED=$(pg_sql "SELECT count(*) FROM lcm.messages m JOIN lcm.sessions s ON s.sid = m.sid WHERE s.session_id = '$SID'")
"$LCM" import --home "$HOME_DIR" "$OUT" > "$T/reimport.txt" 2>&1 || { cat "$T/reimport.txt"; fail "lcm import of the stored session"; }
AGAIN=$(pg_sql "SELECT count(*) FROM lcm.messages m JOIN lcm.sessions s ON s.sid = m.sid WHERE s.session_id = '$SID'")
assert_eq "$AGAIN" "$STORED" "storing the session again writes no second copy of a message"
assert_grep "$T/reimport.txt" " 0 new" "the import found every message stored"

# 3. another agent home: its session is its own; only every-home listing shows both
H2="$T/home2"
mkdir -p "$H2"
hello_session "$T/h2.jsonl" "other-home-session" "$T/work" "OTHERHOMEWORD from the second home"
"$LCM" import --home "$H2" "$T/h2.jsonl" > "$T/import.txt" 2>&1 || { cat "$T/import.txt"; fail "lcm import into the database"; }
"$LCM" sessions --home "$HOME_DIR" > "$T/s1.txt" 2>&1
assert_nogrep "$T/s1.txt" "other-home-session" "a home lists only the sessions it wrote"
"$LCM" grep --home "$H2" OTHERHOMEWORD > "$T/g2.txt" 2>&1
assert_grep "$T/g2.txt" "OTHERHOMEWORD" "the second home finds its own session's words"
HOMES=$(pg_sql "SELECT count(DISTINCT agent) FROM lcm.sessions WHERE session_id IN ('$SID', 'other-home-session')")
assert_eq "$HOMES" "2" "the sessions table knows both agent homes"

# 3b. a server restart in the middle of a replay loses nothing: the connection is reset and
# the statement retried, or the write waits for the next turn's catch-up
IN3="$T/in3.jsonl"
OUT3="$T/out3.jsonl"
"$HOST" gen --seed 9 --tokens 150000 "$IN3" >/dev/null || fail "gen"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT3" --window 16000 replay "$IN3" \
    > "$T/replay3.txt" 2>&1 &
RPID=$!
sleep 2
pg_restart || fail "pg_ctl restart"
wait "$RPID" || { tail -20 "$T/replay3.txt"; fail "the replay survives a server restart"; }
ok
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT3" --command "/lcm doctor" > "$T/doctor3.txt" 2>&1
assert_grep "$T/doctor3.txt" "^faults: 0" "doctor is clean after the restart"
SID3=$(head -1 "$OUT3" | python3 -c "import json,sys;print(json.load(sys.stdin)['id'])")
N3=$(python3 - "$OUT3" <<'PY'
import json, sys
print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l).get("type") == "message"))
PY
)
S3=$(pg_sql "SELECT count(*) FROM lcm.messages m JOIN lcm.sessions s ON s.sid = m.sid WHERE s.session_id = '$SID3'")
[ "$S3" -ge "$N3" ] || fail "every message of the restarted replay is stored ($S3 of $N3)"
ok

# 4. the password never shows: a URI with one (trust auth ignores it), then a database that
# does not exist (every error path names the store)
PW="pw-Zq81-secret"
GOOD="postgresql://postgres:$PW@/lcm?host=$PG_DIR"
BAD="postgresql://postgres:$PW@/no_such_db?host=$PG_DIR"
PARAM="postgresql:///no_such_db?host=$PG_DIR&user=postgres&password=$PW"
LCM_STORE_URL=$GOOD "$LCM" status --home "$HOME_DIR" > "$T/pw1.txt" 2>&1
LCM_STORE_URL=$GOOD "$LCM" sessions --home "$HOME_DIR" >> "$T/pw1.txt" 2>&1
LCM_STORE_URL=$GOOD "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --command "/lcm status" >> "$T/pw1.txt" 2>&1
LCM_STORE_URL=$GOOD "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --command "/lcm doctor" >> "$T/pw1.txt" 2>&1
assert_grep "$T/pw1.txt" "postgresql://postgres:\*\*\*@" "the store is named with its password redacted"
LCM_STORE_URL=$BAD "$LCM" grep --home "$HOME_DIR" word > "$T/pw2.txt" 2>&1
LCM_STORE_URL=$BAD "$LCM" status --home "$HOME_DIR" >> "$T/pw2.txt" 2>&1
LCM_STORE_URL=$BAD "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --command "/lcm status" >> "$T/pw2.txt" 2>&1
LCM_STORE_URL=$PARAM "$LCM" grep --home "$HOME_DIR" word >> "$T/pw2.txt" 2>&1
LCM_STORE_URL=$PARAM "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$OUT" --command "/lcm doctor" >> "$T/pw2.txt" 2>&1
assert_grep "$T/pw2.txt" "offline\|no_such_db" "an unreachable database is reported"
assert_nogrep "$T/pw1.txt" "$PW" "the password never appears in output (a working store)"
assert_nogrep "$T/pw2.txt" "$PW" "the password never appears in an error"
done_ok
