#!/bin/sh
# A word searched alone ranks the messages that say it as written above its other forms:
# the index holds each word's stem and, beside it, the word as written (store_sqlite_tok.c,
# lcm_forms), and recall weighs the form written (recall_query.c). "importing" finds every
# "import", "imports" and "imported" (stems), and the one message that says "importing" is
# the first hit although the others say "import" more often and are shorter.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
{
    echo '{"type":"session","version":3,"id":"5a0e1d2c-0000-4000-8000-0000000cab11","timestamp":"2026-02-03T10:00:00.000Z","cwd":"/work/app"}'
    prev=null
    i=1
    for text in "fix the imports" "import import the import" "the imports are sorted now" \
                "imported the module and the import works" "Let me check what they are importing locally, then run the whole suite again" \
                "import again" "imports imports"; do
        id=$(printf 'e%07d' $i)
        printf '{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-02-03T10:00:%02d.000Z","message":{"role":"assistant","content":[{"type":"text","text":"%s"}],"stopReason":"stop","timestamp":%d}}\n' \
            "$id" "$prev" "$i" "$text" $((1770112800000 + i * 1000))
        prev="\"$id\""
        i=$((i + 1))
    done
} >"$T/s.jsonl"
"$LCM" import --home "$T/h" "$T/s.jsonl" >"$T/imp.txt" 2>&1 || { cat "$T/imp.txt"; fail "import"; }
"$LCM" grep --home "$T/h" importing >"$T/g.txt" 2>&1 || { cat "$T/g.txt"; fail "lcm grep"; }
first=$(grep -m1 '^- ' "$T/g.txt")
case "$first" in
*e0000005*) ok ;;
*) cat "$T/g.txt"; fail "the message saying 'importing' is the first hit (first: $first)" ;;
esac
assert_eq "$(grep -c '^- ' "$T/g.txt")" "7" "every form of the word is found"
# In a question the form is grammar: the same words, asked, still find every form.
"$LCM" grep --home "$T/h" "which module was imported?" >"$T/q.txt" 2>&1 || { cat "$T/q.txt"; fail "lcm grep question"; }
first=$(grep -m1 '^- ' "$T/q.txt")
case "$first" in
*e0000004*) ok ;;
*) cat "$T/q.txt"; fail "the message holding both 'imported' and 'module' is the first hit (first: $first)" ;;
esac
done_ok
