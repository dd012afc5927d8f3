#!/bin/sh
# Hostile and malformed input through the real host and plugin: a session with malformed and
# truncated lines, a 20 MB message, JSON nested 100,000 deep, invalid UTF-8 and NUL bytes, an
# unknown role and block type, a tool result with no call, a missing parent and a parent
# cycle (tests/contract/hostile_session.py) is replayed and opened as a session; a config with
# every key of the wrong type; hostile lcm_grep queries and patterns. Each gets a clear
# warning or sane behaviour, the host never dies, and every whole message reaches the store
# byte for byte.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/tmp"
export TMPDIR="$T/tmp"
IN="$T/in.jsonl"
python3 "$ROOT/tests/contract/hostile_session.py" "$IN" > "$T/good.txt" || fail "generator"
cp "$IN" "$T/in.orig"

"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" replay "$IN" \
    > "$T/replay.out" 2> "$T/replay.err" || { cat "$T/replay.err"; fail "replay of the hostile session exits 0"; }
ok
cmp -s "$IN" "$T/in.orig" || fail "the input session is never modified"; ok
assert_grep "$T/replay.out" "5 skipped as malformed" "replay counts the malformed, cut and too-deep lines"
for l in 4 5 10 11 27; do
    assert_grep "$T/replay.err" "in.jsonl:$l: malformed JSON; line skipped" "line $l is named as skipped"
done
assert_grep "$T/replay.err" "parent no-such-id of entry orph1 is unknown" "a missing parent is named"

DB="$HOME_DIR/lcm/hostile-0001.sqlite"
PYTHONPATH="$ROOT/tests/contract" python3 - "$DB" "$T/good.txt" "$T/out.jsonl" <<'PY' || fail "every whole message is in the store byte for byte (the session file's bytes)"
import hashlib, json, re, sqlite3, sys
import store_raw
db = sqlite3.connect(sys.argv[1])
stored = {e: r.encode("utf-8", "surrogateescape") if isinstance(r, str) else r
          for e, r in store_raw.rows(db, ["entry_id", "raw_bytes"])}
good = open(sys.argv[2]).read().split()
missing = [g for g in good if g not in stored]
assert not missing, "missing: %s" % missing
lines = {}
for raw in open(sys.argv[3], "rb"):
    m = re.search(rb'"id":\s*"([^"]*)"', raw)
    if m:
        lines[m.group(1).decode()] = raw
# The host hands the plugin each message re-serialized compactly (cJSON), so the digest is
# over the canonical form: the same JSON value, byte for byte once canonicalized.
canon = lambda v: hashlib.sha256(json.dumps(v, sort_keys=True, ensure_ascii=False).encode(
    "utf-8", "surrogateescape")).hexdigest()
for g in good:
    want = json.loads(lines[g].decode("utf-8", "surrogateescape"))["message"]
    got = json.loads(stored[g].decode("utf-8", "surrogateescape"))
    assert canon(got) == canon(want), "stored message %s differs from the session's" % g
assert len(stored["h00005"]) > 20 * 1000 * 1000, "the 20 MB message is stored whole"
PY
ok

lcm() { "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out.jsonl" "$@"; }
lcm --command "/lcm doctor" > "$T/doctor" 2>&1 || fail "doctor on the hostile store exits 0"
assert_grep "$T/doctor" "^faults: 0" "the hostile session leaves a clean store"
lcm --tool lcm_grep '{"query":"wizard"}' > "$T/g1" 2>&1 || fail "grep exits 0"
assert_grep "$T/g1" "h00011" "an unknown role is stored and searchable"
assert_grep "$T/g1" "bound: the index holds the first 100000 characters" "the 20 MB message's index bound is named"
lcm --tool lcm_grep '{"query":"hologram beside"}' > "$T/g2" 2>&1 || fail "grep exits 0"
assert_grep "$T/g2" "h00012" "a message with an unknown block type is searchable by its text"
lcm --tool lcm_grep '{"query":"nul inside"}' > "$T/g3" 2>&1 || fail "grep exits 0"
assert_grep "$T/g3" "h00009" "a message with NUL bytes is searchable"
lcm --tool lcm_grep '{"pattern":"orphan result"}' > "$T/g4" 2>&1 || fail "grep exits 0"
assert_grep "$T/g4" "h00014" "a tool result with no call is stored"
# hostile search input: an error the model can act on, never a crash
for args in '{"query":"\"unterminated AND OR NOT ("}' '{"pattern":"["}' '{"pattern":"(a+)+$"}' \
            '{"query":""}' '{"query":42}' '{"pattern":"(?<=a+)b"}'; do
    lcm --tool lcm_grep "$args" > "$T/gh" 2>&1
    rc=$?
    [ $rc -le 1 ] || { cat "$T/gh"; fail "lcm_grep $args kills the host (status $rc)"; }
    [ -s "$T/gh" ] || fail "lcm_grep $args answers something"
    ok
done

# the hostile file opened as the session itself: warnings, nothing rewritten
cp "$T/in.orig" "$T/s.jsonl"
"$HOST" --home "$T/home2" --plugin-dir "$PLUGINS" --session "$T/s.jsonl" --command "/lcm status" \
    > "$T/open.out" 2> "$T/open.err" || { cat "$T/open.err"; fail "opening the hostile session exits 0"; }
ok
assert_grep "$T/open.err" "malformed JSON; line skipped (the file is left as it is)" "a bad line is named and left"
assert_grep "$T/open.err" "entry orph1 names a parent no-such-id that is not in the file" "a missing parent is named"
assert_grep "$T/open.out" "^LCM: " "status answers on a hostile session"
cmp -s "$T/s.jsonl" "$T/in.orig" || fail "opening a session never rewrites it"; ok

# a config with every key of the wrong type: each named, defaults in force, nothing fails
cat > "$HOME_DIR/lcm.json" <<'JSON'
{"swapAtRatio":"high","swapAtTokens":[1],"smartZone":"yes","recutAtRatio":{},"recutAtTokens":true,
 "keepRecentTokens":"many","summaryTokens":-5.5,"leafChunkTokens":null,"asyncChunkTokens":"x",
 "summarizer":42,"baseUrls":"http://x","externalizeFiles":"no","largeFileChars":[],"redactSecrets":1,
 "healSourceTokens":"h","summarizerTokensPerCall":{},"summarizerTokensPerHeal":false,
 "summarizerTokensPerPass":"p","zones":7}
JSON
lcm --command "/lcm status" > "$T/cfg.out" 2> "$T/cfg.err" || fail "a wrong-typed config never stops the session"
ok
for k in swapAtRatio swapAtTokens smartZone recutAtRatio recutAtTokens keepRecentTokens summaryTokens \
         leafChunkTokens asyncChunkTokens summarizer baseUrls externalizeFiles largeFileChars redactSecrets \
         healSourceTokens summarizerTokensPerCall summarizerTokensPerHeal summarizerTokensPerPass zones; do
    assert_grep "$T/cfg.err" "lcm.json: $k: .*ignored" "wrong-typed key $k is named and ignored"
done
assert_grep "$T/cfg.out" "^thresholds: swap 70% / recut 85%" "the defaults stay in force"
printf '{"swapAtRatio": 0.5,' > "$HOME_DIR/lcm.json"
lcm --command "/lcm status" > "$T/cfg2.out" 2> "$T/cfg2.err" || fail "a truncated config never stops the session"
ok
assert_grep "$T/cfg2.err" "lcm.json" "a truncated config is named"
done_ok
