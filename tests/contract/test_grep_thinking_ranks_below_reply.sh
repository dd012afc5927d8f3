#!/bin/sh
# Across sessions, a message found only by its thinking ranks below a reply that says the
# same words (recall.c, RECALL_THINKING_WEIGHT): the agent's reasoning restates what it was
# asked ("the user asks how big the vault is"), the reply states what was found ("the vault
# is big: 2.3 GB"). The thinking is still found.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
cat >"$T/a.jsonl" <<'J'
{"type":"session","version":3,"id":"5a0e1d2c-0000-4000-8000-0000000ce601","timestamp":"2026-02-03T10:00:00.000Z","cwd":"/work/notes"}
{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-02-03T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"look at the notes folder"}],"timestamp":1770112801000}}
{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-02-03T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"The vault: how big is the vault? I should list the vault first."},{"type":"text","text":"Let me list the folder first."}],"stopReason":"stop","timestamp":1770112802000}}
J
cat >"$T/b.jsonl" <<'J'
{"type":"session","version":3,"id":"5a0e1d2c-0000-4000-8000-0000000ce602","timestamp":"2026-02-04T10:00:00.000Z","cwd":"/work/notes"}
{"type":"message","id":"b0000001","parentId":null,"timestamp":"2026-02-04T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"measure the notes folder"}],"timestamp":1770199201000}}
{"type":"message","id":"b0000002","parentId":"b0000001","timestamp":"2026-02-04T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"The vault is big: 2.3 GB in 14,000 files, mostly attachments."}],"stopReason":"stop","timestamp":1770199202000}}
J
"$LCM" import --home "$T/h" "$T/a.jsonl" "$T/b.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "import"; }
"$LCM" grep --home "$T/h" "how big is the vault?" >"$T/g.txt" 2>&1 || { cat "$T/g.txt"; fail "lcm grep"; }
first=$(grep -m1 '^- ' "$T/g.txt")
case "$first" in
*b0000002*) ok ;;
*) cat "$T/g.txt"; fail "the reply is the first hit, above the thinking (first: $first)" ;;
esac
assert_grep "$T/g.txt" "a0000002.*thinking" "the thinking is still found, labelled"
done_ok
