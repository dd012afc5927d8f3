#!/bin/sh
# Dream with a configured model (the summarizer chain's provider/id entry) over loopback
# HTTP: the scripted model receives the structured prompt with the numbered excerpts, its
# JSON patterns are kept with the lineage of the excerpts they name (an excerpt number the
# chunk does not hold and a kind outside the five are dropped; a secret in an excerpt is
# masked before it leaves); when the model's call fails,
# the phrase rules read the same messages and the output and the report say so.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
W="$T/work"
mkdir -p "$W" "$T/gen"
python3 "$ROOT/tests/contract/dream_history.py" "$T/gen" "$W" || fail "generate the history"
cat > "$T/script.json" <<'JSON'
[
 {"content": "Here are the lessons:\n```json\n{\"patterns\": [{\"kind\": \"convention\", \"text\": \"Indentation in this repo is four spaces, never tabs.\", \"sources\": [1]}, {\"kind\": \"decision\", \"text\": \"The job queue runs on PostgreSQL.\", \"sources\": [\"3\", 99]}, {\"kind\": \"gossip\", \"text\": \"Not a kind.\", \"sources\": [0]}, {\"kind\": \"preference\", \"text\": \"Invented lineage.\", \"sources\": [42]}]}\n```"},
 {"content": "{\"patterns\": []}"},
 {"status": 500, "error": "the scripted model is down"}
]
JSON
start_server "$T/script.json" "$T/record.jsonl"
printf '{"summarizer":["fake/dreamer"],"baseUrls":{"fake":"http://127.0.0.1:%s/v1"}}\n' "$PORT" >"$HOME_DIR/lcm.json"
SECRET=sk-OX9YIMtCFIPzgNZpBdfdYfkM51ZFfOwBsRhae56YuHqQG0EY
hello_session "$T/gen/dream-zz.jsonl" dream-zz "$W" "use $SECRET for the call"
"$LCM" import --home "$HOME_DIR" "$T/gen/dream-s1.jsonl" "$T/gen/dream-zz.jsonl" >/dev/null 2>&1 || fail "import s1"
"$LCM" dream --home "$HOME_DIR" --project "$W" --json >"$T/m1.json" 2>"$T/m1.err" || { cat "$T/m1.err"; fail "lcm dream with a model"; }
assert_jsonl "$T/record.jsonl" "len(rows) == 2 and rows[0]['model'] == 'dreamer' and 'durable lessons' in rows[0]['messages'][0]['content'] and '[1] user: Actually, never use tabs' in rows[0]['messages'][1]['content']" "the model received the structured dream prompt with numbered excerpts of the person's words only"
assert_nogrep "$T/record.jsonl" "$SECRET" "a secret in the history never reaches the model (redactSecrets)"
assert_grep "$T/record.jsonl" "use \[REDACTED\] for the call" "it is masked in the excerpt"
python3 - "$T/m1.json" <<'PY' || fail "the model's patterns kept with the lineage of the excerpts they name"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["extractor"] == "model" and not d["modelFailed"], d
p = {x["text"]: x for x in d["patterns"]}
assert set(p) == {"Indentation in this repo is four spaces, never tabs.", "The job queue runs on PostgreSQL."}, p
assert p["Indentation in this repo is four spaces, never tabs."]["kind"] == "convention"
assert p["Indentation in this repo is four spaces, never tabs."]["lineage"] == [{"session": "dream-s1", "entry_id": "s1u2"}], p
assert p["The job queue runs on PostgreSQL."]["lineage"] == [{"session": "dream-s1", "entry_id": "s1u4"}], p
PY
ok
"$LCM" expand --home "$HOME_DIR" dream-s1 s1u4 >"$T/x.txt" 2>&1 || fail "expand"
assert_grep "$T/x.txt" "We decided to go with PostgreSQL" "the model pattern's lineage reads back the planted message"

# the model fails: the rules read the new session, and both the output and the report say so
"$LCM" import --home "$HOME_DIR" "$T/gen/dream-s2.jsonl" >/dev/null 2>&1 || fail "import s2"
"$LCM" dream --home "$HOME_DIR" --project "$W" >"$T/m2.txt" 2>"$T/m2.err" || { cat "$T/m2.err"; fail "lcm dream with a failing model"; }
assert_jsonl "$T/record.jsonl" "len(rows) == 3" "the second run called the model"
assert_grep "$T/m2.txt" "model call (fake/dreamer).*HTTP 500.*the phrase rules read them instead" "the output says the model failed and the rules ran"
assert_grep "$T/m2.txt" "\[anti-pattern\] #[0-9]* Do not push directly to the main branch" "the rules found the planted lesson"
REPORT=$(sed -n 's/^report: //p' "$T/m2.txt")
assert_grep "$REPORT" "the phrase rules read them instead" "the report says so too"
done_ok
