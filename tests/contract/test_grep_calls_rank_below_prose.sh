#!/bin/sh
# A question's answer in what was said ranks above a tool call that only carries the same
# words as its arguments (a file written, an edit's text): calls with no prose weigh like tool
# output (recall.c, RECALL_TOOL_WEIGHT). Two sessions in one home, asked across them: the
# agent's answer "the vault holds 2.3 GB" is the first hit, above a Write call whose file says
# "vault" three times and "big" once.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
cat >"$T/a.jsonl" <<'J'
{"type":"session","version":3,"id":"5a0e1d2c-0000-4000-8000-0000000cab01","timestamp":"2026-02-03T10:00:00.000Z","cwd":"/work/notes"}
{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-02-03T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"write the vault notes file please"}],"timestamp":1770112801000}}
{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-02-03T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"write","arguments":{"path":"vault-notes.md","content":"# Vault notes\nthe vault is big\nsee the vault folders"}}],"stopReason":"toolUse","timestamp":1770112802000}}
{"type":"message","id":"a0000003","parentId":"a0000002","timestamp":"2026-02-03T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"write","content":[{"type":"text","text":"wrote vault-notes.md"}],"isError":false,"timestamp":1770112803000}}
J
cat >"$T/b.jsonl" <<'J'
{"type":"session","version":3,"id":"5a0e1d2c-0000-4000-8000-0000000cab02","timestamp":"2026-02-04T10:00:00.000Z","cwd":"/work/notes"}
{"type":"message","id":"b0000001","parentId":null,"timestamp":"2026-02-04T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"measure the notes folder"}],"timestamp":1770199201000}}
{"type":"message","id":"b0000002","parentId":"b0000001","timestamp":"2026-02-04T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"The vault holds 2.3 GB in 14,000 files; it is big mostly because of attachments."}],"stopReason":"stop","timestamp":1770199202000}}
J
"$LCM" import --home "$T/h" "$T/a.jsonl" "$T/b.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "import"; }
"$LCM" grep --home "$T/h" "how big is the vault?" >"$T/g.txt" 2>&1 || { cat "$T/g.txt"; fail "lcm grep"; }
first=$(grep -m1 '^- ' "$T/g.txt")
case "$first" in
*b0000002*) ok ;;
*) cat "$T/g.txt"; fail "the answer said in prose is the first hit (first: $first)" ;;
esac
assert_grep "$T/g.txt" "a0000002" "the write call is still found"
done_ok
