#!/bin/sh
# What is never stored, on every write path: the real host replaying a session through the
# plugin, `lcm import` of a Pi session file and `lcm hook stop` of a Claude Code transcript.
# Each carries a <private> span and a provider key. On the raw bytes of the store files
# (and the WAL): the private word never, the key only without redactAtIngest (so the grep can
# see a key when it is there), the public words of the same messages always. An `exclude`d
# folder's session leaves no store on any path. With a PostgreSQL server (tests/pg), the
# same on the rows of lcm.messages.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/pg/pg.sh"
LCM="$BUILD/lcm"
KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789
TEXT="PUBLICWORD keep this <private>PRIVWORD my diagnosis</private> and the key $KEY"

# bytes HOME WORD: how many store files (and their logs) of HOME hold WORD in their bytes
bytes() { cat "$1"/lcm/*.sqlite* 2>/dev/null | grep -a -c -- "$2"; }

# one_home HOME CWD: the three paths write one session each into HOME, in folder CWD
one_home() {
    _h=$1 _cwd=$2
    mkdir -p "$_h"
    hello_session "$T/host.jsonl" 5e55a0e1-0000-4000-8000-0000000000a1 "$_cwd" "$TEXT"
    "$HOST" --home "$_h" --plugin-dir "$PLUGINS" --session "$_h$(echo "$_cwd" | tr / _).out.jsonl" replay "$T/host.jsonl" \
        >"$T/replay.out" 2>&1 || { cat "$T/replay.out"; fail "host replay"; }
    hello_session "$T/pi.jsonl" 5e55a0e1-0000-4000-8000-0000000000b2 "$_cwd" "$TEXT"
    "$LCM" import --home "$_h" "$T/pi.jsonl" >"$T/import.out" 2>&1 || { cat "$T/import.out"; fail "lcm import"; }
    rm -f "$T/cc.jsonl"
    python3 "$ROOT/tests/contract/claude_transcript.py" "$T/cc.jsonl" --messages 4 \
        --session 5e55a0e1-0000-4000-8000-0000000000c3 --cwd "$_cwd" --tag "$TEXT"
    printf '{"session_id":"5e55a0e1-0000-4000-8000-0000000000c3","transcript_path":"%s","cwd":"%s","hook_event_name":"Stop"}' \
        "$T/cc.jsonl" "$_cwd" | "$LCM" hook stop --home "$_h" || fail "lcm hook stop exit"
}

# Verbatim by default: the key is stored (the grep sees it), the private span is not.
one_home "$T/plain" /proj/p
assert_eq "$(ls "$T/plain"/lcm/*.sqlite | wc -l | tr -d ' ')" "3" "three stores: host, import, hook"
assert_eq "$(bytes "$T/plain" PUBLICWORD)" "3" "every path stored the message's public words"
assert_eq "$(bytes "$T/plain" "$KEY")" "3" "without redactAtIngest the key is stored verbatim"
assert_eq "$(bytes "$T/plain" PRIVWORD)" "0" "no store file holds the private span's text"
"$LCM" grep --home "$T/plain" PUBLICWORD >"$T/g.txt"
assert_grep "$T/g.txt" "\[private\]" "recall shows the mark where the span was"
assert_nogrep "$T/g.txt" "PRIVWORD" "recall never shows the private text"
# The session file is the host's: left as the host wrote it.
assert_grep "$T/pi.jsonl" "PRIVWORD" "the session file keeps the private span"

# redactAtIngest: the key never reaches a store either.
mkdir -p "$T/red"
printf '{"redactAtIngest": true}\n' >"$T/red/lcm.json"
one_home "$T/red" /proj/r
assert_eq "$(bytes "$T/red" PUBLICWORD)" "3" "every path stored the public words"
assert_eq "$(bytes "$T/red" "$KEY")" "0" "redactAtIngest: no store file holds the key"
assert_eq "$(bytes "$T/red" PRIVWORD)" "0" "redactAtIngest: no store file holds the private text"

# exclude: an excluded folder's session leaves no store on any path.
mkdir -p "$T/ex"
printf '{"exclude": ["%s/secret-*"]}\n' "$T" >"$T/ex/lcm.json"
one_home "$T/ex" "$T/secret-client/src"
assert_eq "$(ls "$T/ex/lcm/" 2>/dev/null | grep -c 'sqlite')" "0" "an excluded folder's sessions leave no store"
assert_grep "$T/import.out" "skipped" "lcm import says it skipped the excluded session"
assert_grep "$T/ex/lcm/hooks.log" "exclude" "the hook's log says why nothing was stored"
one_home "$T/ex" "$T/public/src"
assert_eq "$(ls "$T/ex/lcm/" | grep -c '\.sqlite$')" "3" "a folder outside the globs is stored as ever"

# PostgreSQL: the same on the rows.
if pg_available; then
    pg_begin
    mkdir -p "$T/pg"
    printf '{"redactAtIngest": true}\n' >"$T/pg/lcm.json"
    one_home "$T/pg" /proj/pg
    rows() { pg_sql "SELECT count(*) FROM lcm.messages WHERE raw_json LIKE '%$1%' OR text LIKE '%$1%'"; }
    assert_eq "$(rows PUBLICWORD)" "3" "PostgreSQL: every path stored the public words"
    assert_eq "$(rows PRIVWORD)" "0" "PostgreSQL: no row holds the private text"
    assert_eq "$(rows "$KEY")" "0" "PostgreSQL: redactAtIngest, no row holds the key"
else
    echo "note: no PostgreSQL binaries here; the PostgreSQL half was not run"
fi
done_ok
