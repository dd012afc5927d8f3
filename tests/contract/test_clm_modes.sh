#!/bin/sh
# Live-context paths beyond the plain edit loop, through the real host, the real plugin and
# the scripted loopback model (fake_openai.py), each asserted from the recorded requests,
# the session file and what the user is told:
#   1. conservative mode: a growing edit, an edit of the first user turn, a removal of the
#      latest one, a reorder and a new-* block are rejected with their notices; a shrinking
#      edit is accepted and carried by the next request; the nonce is fresh per render;
#   2. a failed revision persist (the host's append_custom refuses, AGENT_HOST_FAIL_APPEND):
#      the previous revision stays in force byte for byte, the user is told, nothing is
#      saved, and a later edit persists normally;
#   3. a draft edit that lands after the turn's read is discarded, with a notice naming
#      why, when the baseline moves (/clm reset, /tree, shutdown); nothing is saved from it;
#   4. the max_tokens repair in before_provider_request: raised to the computed room
#      (the model's limit, or window - estimate - 4096), never lowered;
#   5. a new-* block with role=system reaches the provider as user-role text, the system
#      prompt stays byte-identical, and the CLM-mode nonce is stable between accepted edits.
. "$(dirname "$0")/lib.sh"

# the interpreter itself, not a version-manager shim: every step and check starts one
PY=$(python3 -c 'import sys; print(sys.executable)')

. "$ROOT/tests/contract/clm/check.sh"
states() { echo "[r['data']['kind'] for r in rows if r.get('customType') == 'live-context-state']"; }

mkdir -p "$T/work" "$T/tmp" "$T/snap"
export TMPDIR="$T/tmp"
host() { "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --cwd "$T/work" \
    --base-url "http://127.0.0.1:$PORT/v1" --model fake "$@"; }
# a scripted bash call running one step of clm/NAME.py
step() { printf '{"tool_calls":[{"name":"bash","arguments":{"command":"%s %s/%s.py %s"}}]}' \
    "$PY" "$CLMPY" "$1" "$2"; }
say() { printf '{"content":"%s"}' "$1"; }
sh_call() { printf '{"tool_calls":[{"name":"bash","arguments":{"command":"%s"}}]}' "$1"; }

# ---- 1. conservative mode ------------------------------------------------------------------
S="$T/s1.jsonl"
new_session clmmodes-cons "$S"
{
    echo "[$(sh_call 'yes BIGOUT | head -n 300'), $(say ONE_DONE), $(say MID_DONE),"
    echo " $(step modes_edits "snap $T/snap/c1.md"), $(step modes_edits "snap $T/snap/c2.md"),"
    for s in c-grow c-edit-first c-remove-latest c-reorder c-new c-shrink; do
        echo " $(step modes_edits $s),"
    done
    echo " $(say LAST_DONE)]"
} > "$T/script1.json"
start_server "$T/script1.json" "$T/r1.jsonl"
printf '/clm config editingMode conservative\nfirst USER_ONE\nmiddle USER_MID\nlast USER_LAST\n/clm status\n/quit\n' |
    host --session "$S" > "$T/out1.txt" 2> "$T/err1.txt" || { cat "$T/err1.txt"; fail "conservative run"; }
ok
assert_grep "$T/out1.txt" "editingMode = conservative (saved)" "conservative mode is set and saved"
R="$T/r1.jsonl"
check "len(rows) == 12" "conservative: twelve model requests"
C2="'$T/snap/c2.md'"
check "nonce('$T/snap/c1.md') != nonce($C2)" "conservative: the document nonce changes per render"
check "all(('document=' + nonce($C2)) in l for l in open($C2) if l.startswith('[[CTX_TURN '))" "conservative: every header carries the render's nonce"
check "has(rows[5], 'BIGOUT') and not has(rows[5], 'was rejected')" "conservative: request 6 is the context before the edits"
check "has(rows[6], 'conservative mode accepts only edits that shrink the context')" "conservative: a growing edit is rejected"
check "has(rows[7], 'protects the first and latest user turns; id=%s (protected=true)' % block_id($C2, 'USER_ONE'))" "conservative: editing the first user turn is rejected, naming it"
check "has(rows[8], 'protects the first and latest user turns; id=%s (protected=true)' % block_id($C2, 'USER_LAST'))" "conservative: removing the latest user turn is rejected, naming it"
check "block_id($C2, 'USER_ONE') != block_id($C2, 'USER_LAST')" "conservative: first and latest user turns are different blocks"
check "has(rows[9], 'conservative mode keeps source order')" "conservative: a reorder is rejected"
check "has(rows[10], 'conservative mode does not accept new blocks (id=new-c1)')" "conservative: a new-* block is rejected"
check "all(len(idx(rows[i], 'was rejected')) == 1 and has(rows[i], 'BIGOUT') and not has(rows[i], 'USER_MID_SHORT') for i in range(6, 11))" "conservative: each rejection leaves the context unchanged"
check "has(rows[11], 'accepted as revision 1') and not has(rows[11], 'BIGOUT') and any(m['role'] == 'user' and text(m) == 'USER_MID_SHORT' for m in body(rows[11]))" "conservative: the shrinking edit is accepted and the next request carries it"
check "[text(m) for m in body(rows[11]) if m['role'] == 'user' and 'USER_' in text(m) and '[CLM]' not in text(m)] == ['first USER_ONE', 'USER_MID_SHORT', 'last USER_LAST']" "conservative: the protected turns are carried unchanged"
assert_jsonl "$S" "$(states) == ['reject'] * 5 + ['accept']" "conservative: five slim rejections, then the accept"
assert_grep "$T/out1.txt" "conservative mode" "conservative: status names the mode"
assert_grep "$T/out1.txt" "edits: revision 1 in force" "conservative: status shows revision 1"

# ---- 2. a failed revision persist ------------------------------------------------------------
S="$T/s2.jsonl"
new_session clmmodes-persist "$S"
echo "[$(sh_call 'echo MARK_A_OUTPUT'), $(step edits drop-and-note), $(say A_DONE)]" > "$T/script2a.json"
start_server "$T/script2a.json" "$T/r2a.jsonl"
host --session "$S" -p "persist task USER_ONE" > "$T/out2a.txt" 2> "$T/err2a.txt" ||
    { cat "$T/err2a.txt"; fail "persist run A"; }
ok
assert_jsonl "$S" "$(states) == ['accept']" "persist: revision 1 is saved first"
echo "[$(sh_call 'echo B_OUTPUT'), $(step modes_edits note-two), $(sh_call 'echo AFTER_FAIL'),
 $(step modes_edits note-three), $(say B_DONE)]" > "$T/script2b.json"
start_server "$T/script2b.json" "$T/r2b.jsonl"
AGENT_HOST_FAIL_APPEND=live-context-state host --session "$S" -p "second USER_TWO" \
    > "$T/out2b.txt" 2> "$T/err2b.txt" || { cat "$T/err2b.txt"; fail "persist run B"; }
ok
R="$T/r2b.jsonl"
check "len(rows) == 5" "persist: five model requests"
check "has(rows[1], 'NOTE_ONE') and not has(rows[1], 'MARK_A_OUTPUT')" "persist: revision 1 is in force before the edit"
check "[json.dumps(m) for m in body(rows[2])[:len(body(rows[1]))]] == [json.dumps(m) for m in body(rows[1])]" "persist: the request after the failed persist carries the old context byte for byte"
check "not has(rows[2], 'NOTE_TWO') and has(rows[2], 'NOTE_ONE')" "persist: the unsaved edit is not in force"
check "has(rows[2], 'was valid but could not be saved (appending a session entry failed: injected failure); the previous context stays in force')" "persist: the model is told the edit was not saved"
check "not has(rows[3], 'could not be saved') and has(rows[3], 'NOTE_ONE') and not has(rows[3], 'NOTE_TWO')" "persist: the notice is one-shot and revision 1 stays"
check "has(rows[4], 'accepted as revision 2') and has(rows[4], 'NOTE_THREE') and not has(rows[4], 'NOTE_ONE')" "persist: a later edit persists normally"
assert_grep "$T/err2b.txt" "live context: \[CLM\] Your edit of LIVE_CONTEXT.md was valid but could not be saved (appending a session entry failed: injected failure)" "persist: the user gets a notice"
assert_jsonl "$S" "$(states) == ['accept', 'accept'] and [r['data']['revision'] for r in rows if r.get('customType') == 'live-context-state'] == [1, 2]" "persist: no entry for the failed persist; the later one is revision 2"
assert_jsonl "$S" "not any('NOTE_TWO' in json.dumps(r) for r in rows if r.get('type') == 'custom')" "persist: nothing of the unsaved edit is in the session file"

# ---- 3. discarded drafts ---------------------------------------------------------------------
S="$T/s3.jsonl"
new_session clmmodes-draft "$S"
echo "[$(sh_call 'echo MARK_A_OUTPUT'), $(say D1_DONE), $(say D2_DONE), $(say D3_DONE)]" > "$T/script3.json"
start_server "$T/script3.json" "$T/r3.jsonl"
DRAFT="$PY $CLMPY/edits.py drop-and-note"
cat > "$T/steps3" <<EOF
> draft task USER_ONE
=
! $DRAFT
> /clm reset
> second USER_TWO
=
! $DRAFT
>! $PY -c "import json; rows = [json.loads(l) for l in open('$S')]; print('/tree ' + [r['id'] for r in rows if r.get('type') == 'message' and 'D1_DONE' in json.dumps(r['message'])][0])"
> third USER_THREE
=
! $DRAFT
EOF
"$PY" "$CLMPY/drive.py" "$T/steps3" "$T/out3.txt" -- "$HOST" --home "$HOME_DIR" \
    --plugin-dir "$PLUGINS" --cwd "$T/work" --base-url "http://127.0.0.1:$PORT/v1" --model fake \
    --session "$S" > /dev/null 2> "$T/err3.txt" || { cat "$T/err3.txt"; fail "draft run"; }
ok
R="$T/r3.jsonl"
check "len(rows) == 4" "draft: four model requests"
check "has(rows[2], 'discarded before it was read: the live context changed under it (the user reset the live context). Nothing from it was saved')" "draft: /clm reset discards the draft, naming why"
check "has(rows[2], 'The user reset the live context') and has(rows[2], 'MARK_A_OUTPUT') and not has(rows[2], 'NOTE_ONE')" "draft: after the reset the context is raw, without the draft"
check "has(rows[3], 'discarded before it was read: the live context changed under it (tree move') and not has(rows[3], 'NOTE_ONE') and not has(rows[3], 'USER_TWO')" "draft: a /tree move discards the draft, naming why"
check "not any(has(r, 'was accepted') or has(r, 'was rejected') for r in rows)" "draft: no draft is ever applied"
assert_eq "$(grep -c 'an unread edit of LIVE_CONTEXT.md was discarded' "$T/err3.txt")" "3" "draft: the user is told of each discarded draft"
assert_grep "$T/err3.txt" "was discarded (the user reset the live context)" "draft: the user notice names the reset"
assert_grep "$T/err3.txt" "was discarded (the session shut down)" "draft: the user notice names the shutdown"
assert_jsonl "$S" "$(states) == ['reset']" "draft: nothing is persisted from a draft"
[ ! -d "$T/tmp/lossless-context-clmmodes-draft" ] || fail "draft: the mirror folder is removed at shutdown"; ok

# ---- 4. max_tokens repair --------------------------------------------------------------------
# The reference host sends --max-tokens as the request's max_tokens; AGENT_HOST_MODEL_MAX_TOKENS
# reports a higher model limit, as a host that clamps requests (pi-ai) would.
BIG=$("$PY" -c "print('LONG ' * 700)")
echo "[$(say M1_DONE), $(say "$BIG"), $(say M2_DONE), $(say M3_DONE)]" > "$T/script4.json"
start_server "$T/script4.json" "$T/r4.jsonl"
S="$T/s4a.jsonl"
new_session clmmodes-max-a "$S"
printf 'raise USER_ONE\n/clm settings\n/quit\n' | AGENT_HOST_MODEL_MAX_TOKENS=3000 \
    host --session "$S" --max-tokens 64 > "$T/out4a.txt" 2> "$T/err4a.txt" || { cat "$T/err4a.txt"; fail "max_tokens run A"; }
ok
S="$T/s4b.jsonl"
new_session clmmodes-max-b "$S"
printf 'small USER_ONE\n/clm settings\nbig USER_TWO\n/clm settings\n/quit\n' | AGENT_HOST_MODEL_MAX_TOKENS=100000 \
    host --session "$S" --max-tokens 64 --window 12000 > "$T/out4b.txt" 2> "$T/err4b.txt" || { cat "$T/err4b.txt"; fail "max_tokens run B"; }
ok
S="$T/s4c.jsonl"
new_session clmmodes-max-c "$S"
printf 'enough USER_ONE\n/clm settings\n/quit\n' | \
    host --session "$S" --max-tokens 7900 --window 12000 > "$T/out4c.txt" 2> "$T/err4c.txt" || { cat "$T/err4c.txt"; fail "max_tokens run C"; }
ok
R="$T/r4.jsonl"
EST=$(sed -n 's/^sizes: next request ~\([0-9]*\) tokens.*/\1/p' "$T/out4b.txt" | tr '\n' ' ')
set -- $EST
[ $# -eq 2 ] || fail "max_tokens: two estimates on the settings pages (got '$EST')"; ok
check "len(rows) == 4" "max_tokens: four model requests"
check "rows[0]['max_tokens'] == 3000" "max_tokens: raised from 64 to the model's limit when the window has room"
assert_grep "$T/out4a.txt" "max_tokens raised 1 time(s)" "max_tokens: the settings page counts the repair"
check "$2 > $1 + 500 and rows[1]['max_tokens'] == 12000 - 4096 - $1 and rows[2]['max_tokens'] == 12000 - 4096 - $2" "max_tokens: raised to window - estimate - 4096 (estimates $1, $2)"
check "rows[3]['max_tokens'] == 7900" "max_tokens: a host max_tokens above the room is left alone (never lowered)"
assert_grep "$T/out4c.txt" "max_tokens raised 0 time(s)" "max_tokens: no repair counted when none was needed"

# ---- 5. new-* block with role=system; CLM-mode nonce -----------------------------------------
S="$T/s5.jsonl"
new_session clmmodes-sys "$S"
echo "[$(sh_call 'echo MARK_S'), $(step modes_edits "snap $T/snap/m1.md"), $(step modes_edits "snap $T/snap/m2.md"),
 $(step modes_edits sys-insert), $(step modes_edits "snap $T/snap/m3.md"), $(say S_DONE)]" > "$T/script5.json"
start_server "$T/script5.json" "$T/r5.jsonl"
host --session "$S" -p "system task USER_ONE" > "$T/out5.txt" 2> "$T/err5.txt" ||
    { cat "$T/err5.txt"; fail "system-role run"; }
ok
R="$T/r5.jsonl"
check "len(rows) == 6" "system: six model requests"
check "nonce('$T/snap/m1.md') == nonce('$T/snap/m2.md')" "system: the CLM-mode nonce is stable across renders without an accepted edit"
check "nonce('$T/snap/m2.md') != nonce('$T/snap/m3.md')" "system: an accepted edit changes the nonce"
check "has(rows[4], 'accepted as revision 1')" "system: the role=system insert is accepted"
check "[m['role'] for m in rows[4]['messages'] if 'SYSTEM_INJECT' in text(m)] == ['user']" "system: the inserted block reaches the provider as user-role text"
check "all([m['role'] for m in r['messages']].count('system') == 1 and r['messages'][0]['role'] == 'system' for r in rows)" "system: one system message per request, first"
check "all(json.dumps(r['messages'][0]) == json.dumps(rows[0]['messages'][0]) for r in rows) and 'SYSTEM_INJECT' not in rows[4]['messages'][0]['content']" "system: the system prompt is byte-identical before and after"
check "'role=system id=' in open('$T/snap/m3.md').read() and 'SYSTEM_INJECT' in open('$T/snap/m3.md').read()" "system: the block renders back under its role label"
assert_jsonl "$S" "any(m.get('role') == 'custom' and m.get('details', {}).get('contextRole') == 'system' and 'SYSTEM_INJECT' in m.get('content', '') for r in rows if r.get('customType') == 'live-context-state' for m in [json.loads(x) if isinstance(x, str) else x for x in r['data'].get('messages', [])])" "system: the revision stores it as a custom message with contextRole=system"

done_ok
