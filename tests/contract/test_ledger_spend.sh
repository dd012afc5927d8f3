#!/bin/sh
# What LCM's own model calls spend, and whether its requests keep the provider's cache
# (issue 29 items 1-2), through the real host and the real .so on loopback models that
# report usage (tests/contract/fake_openai.py, fake_embed.py):
#   1. a session with a `provider/id` summarizer and an embeddings endpoint (background
#      worker): `lcm report` shows the ledger's tokens and cost per kind (summary, embed; the
#      cost from lcm.json's `prices`), `/lcm status` the last 24 hours' spend; the report
#      shows the share of requests that extended the previous one byte for byte and, from the
#      provider's usage (the fake caches prefixes: --prefix-cache), the cached-token share;
#   2. a tiny daily limit (summaries on the host thread, summaryWorker false): one summarizer
#      call reaches the model, then the passes are extractive; the notice is given once, the
#      ledger says when and why, and a second run of the same home says nothing again;
#   3. a replay: the report's prefix-extension share counts every request after the first,
#      beside the same share of the host's input as it came (the session without LCM).
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
EMBED_PID=""
trap '[ -n "$EMBED_PID" ] && kill "$EMBED_PID" 2>/dev/null; cleanup' EXIT
: >"$T/eport"
python3 "$ROOT/tests/contract/fake_embed.py" --port 0 --record "$T/embed.jsonl" >"$T/eport" 2>"$T/embed.err" &
EMBED_PID=$!
i=0; while [ ! -s "$T/eport" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
EPORT=$(head -n 1 "$T/eport"); [ -n "$EPORT" ] || { cat "$T/embed.err"; fail "the embeddings server did not start"; }
mkdir -p "$T/work"

# ---- 1. the ledger per kind, the status line, the cache effect ------------------------------
start_fake "$T/rec1.jsonl" --tool-rounds 14 --tool-bytes 3000 --agent-delay 0.1 --prefix-cache
cat >"$HOME_DIR/lcm.json" <<EOF
{"summarizer": ["loop/sum"], "baseUrls": {"loop": "http://127.0.0.1:$PORT/v1"},
 "leafChunkTokens": 2000, "summaryTokens": 300,
 "embeddings": {"url": "http://127.0.0.1:$EPORT", "model": "embed-a"},
 "prices": {"loop/sum": {"input": 3, "output": 15}, "embed-a": {"input": 0.02, "output": 0}}}
EOF
new_session led-1 "$T/s1.jsonl"
run_prompt "$T/s1.jsonl" "$T/out1.txt" "$T/err1.txt" "the session run" \
    "Run the checks, one round at a time, until they are all done." --window 16000 --max-turns 30
"$LCM" report --home "$HOME_DIR" --session led-1 >"$T/report1.txt" 2>&1 || { cat "$T/report1.txt"; fail "lcm report"; }
assert_grep "$T/report1.txt" "by kind summary: [1-9][0-9]* calls, [1-9][0-9]* in" \
    "lcm report: the summarizer's calls and tokens (kind summary)"
assert_grep "$T/report1.txt" "by kind embed: [1-9][0-9]* calls, [1-9][0-9]* in" \
    "lcm report: the embeddings endpoint's calls and tokens (kind embed)"
assert_grep "$T/report1.txt" "by model summary loop/sum: .*\$0\.[0-9]*[1-9]" \
    "lcm report: the summarizer's cost from the price table"
assert_grep "$T/report1.txt" "by session led-1: " "lcm report: the spend per session"
assert_grep "$T/report1.txt" "by day 20[0-9-]*: " "lcm report: the spend per day"
"$LCM" report --home "$HOME_DIR" --session led-1 --json >"$T/report1.json" 2>&1 || fail "lcm report --json"
python3 - "$T/report1.json" "$T/rec1.jsonl" <<'PY' || fail "the ledger's summary tokens are what the loopback model reported"
import json, sys
j = json.load(open(sys.argv[1]))
doc = j["stores"][0] if "stores" in j else j
kind = doc["ledger"]["kind"]
# every summarizer request the model answered is one ledger call
summ = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
summ = [r for r in summ if r.get("_fake", {}).get("kind") == "summary"]
assert kind["summary"]["calls"] == len(summ), (kind["summary"], len(summ))
assert kind["summary"]["input"] > 0 and kind["summary"]["output"] > 0, kind
assert kind["embed"]["input"] > 0, kind
PY
ok
# the cache effect: requests that kept the previous bytes, and what the provider served cached
assert_grep "$T/report1.txt" "prompt cache: [1-9][0-9]* of [1-9][0-9]* requests extended the previous request byte for byte" \
    "lcm report: the share of requests that extended the previous one"
assert_grep "$T/report1.txt" "the provider served [1-9][0-9.]*% of input tokens from its cache" \
    "lcm report: the cached-token share the provider reported"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/s1.jsonl" --cwd "$T/work" --command "/lcm status" \
    >"$T/status1.txt" 2>&1 || { cat "$T/status1.txt"; fail "/lcm status"; }
assert_grep "$T/status1.txt" "spend (24 h):.*embed [1-9][0-9]* calls" "/lcm status: the embeddings' spend"
assert_grep "$T/status1.txt" "spend (24 h):.*summary [1-9][0-9]* calls, [1-9][0-9]* tokens, \$0\.[0-9]*" \
    "/lcm status: the summaries' spend"
"$LCM" status --home "$HOME_DIR" >"$T/lstatus1.txt" 2>&1
assert_grep "$T/lstatus1.txt" "spend (24 h):.*summary" "lcm status: the summaries' spend"

# ---- 2. a tiny daily limit: one call, then extractive, said once ------------------------------
HOME_DIR="$T/home2"; mkdir -p "$HOME_DIR"
start_fake "$T/rec2.jsonl" --tool-rounds 10 --tool-bytes 3000
cat >"$HOME_DIR/lcm.json" <<EOF
{"summarizer": ["loop/sum"], "baseUrls": {"loop": "http://127.0.0.1:$PORT/v1"},
 "leafChunkTokens": 2000, "summaryTokens": 300, "keepRecentTokens": 2000, "summaryWorker": false,
 "limits": {"summary": {"tokensPerDay": 1}}}
EOF
new_session led-2 "$T/s2.jsonl"
run_prompt "$T/s2.jsonl" "$T/out2.txt" "$T/err2.txt" "the limited run" \
    "Run the checks, one round at a time, until they are all done." --window 16000 --max-turns 30
cat "$T/out2.txt" "$T/err2.txt" >"$T/all2.txt"
assert_jsonl "$T/rec2.jsonl" "sum(r.get('_fake', {}).get('kind') == 'summary' for r in rows) == 1" \
    "one summarizer call reaches the model; after it the limit holds"
assert_eq "$(grep -c 'spend limit reached' "$T/all2.txt")" 1 "the limit's notice is given once"
assert_grep "$T/all2.txt" "limits.summary.tokensPerDay 1.*summaries are extractive" "the notice says which limit and what follows"
assert_jsonl "$HOME_DIR/lcm/metrics.jsonl" "[r.get('first') for r in rows if r['kind'] == 'summarizer-limited'][:1] == [True]" \
    "the refusal is in the metrics, the first of its window"
assert_jsonl "$HOME_DIR/lcm/metrics.jsonl" "sum(r.get('leaves', 0) for r in rows if r['kind'] == 'compaction-pass') >= 2" \
    "summaries were still made after the limit (extractive): more leaves than model calls"
"$LCM" report --home "$HOME_DIR" --session led-2 >"$T/report2.txt" 2>&1 || { cat "$T/report2.txt"; fail "lcm report 2"; }
assert_grep "$T/report2.txt" "limit reached 20[0-9-]* [0-9:]*Z (session led-2): summary: [0-9]* tokens in the last 24 hours reached limits.summary.tokensPerDay 1" \
    "the ledger says when and why the limit was reached"
assert_grep "$T/report2.txt" "by kind summary: 1 calls, .*1 refused by a limit" "the ledger holds one call and one refusal"
# a second run of the same home: still limited, no second notice in the window
start_fake "$T/rec3.jsonl" --tool-rounds 10 --tool-bytes 3000
sed "s/127.0.0.1:[0-9]*/127.0.0.1:$PORT/" "$HOME_DIR/lcm.json" >"$T/lcm3.json" && cp "$T/lcm3.json" "$HOME_DIR/lcm.json"
new_session led-3 "$T/s3.jsonl"
run_prompt "$T/s3.jsonl" "$T/out3.txt" "$T/err3.txt" "the second limited run" \
    "Run the checks, one round at a time, until they are all done." --window 16000 --max-turns 30
assert_nogrep "$T/out3.txt" "spend limit reached" "no second notice in the same window (stdout)"
assert_nogrep "$T/err3.txt" "spend limit reached" "no second notice in the same window (stderr)"
assert_jsonl "$T/rec3.jsonl" "sum(r.get('_fake', {}).get('kind') == 'agent' for r in rows) > 5 and not any(r.get('_fake', {}).get('kind') == 'summary' for r in rows)" \
    "the second run's summaries reach no model either"
assert_jsonl "$HOME_DIR/lcm/metrics.jsonl" "any(r['kind'] == 'compaction-pass' and r.get('leaves', 0) for r in rows if r['session'] == 'led-3')" \
    "the second run's passes made summaries (extractive)"
assert_jsonl "$HOME_DIR/lcm/metrics.jsonl" "[r.get('first') for r in rows if r['kind'] == 'summarizer-limited' and r['session'] == 'led-3'][:1] == [False]" \
    "the second run's passes were refused by the limit, not told again"

# ---- 3. a replay: the prefix-extension share ------------------------------------------------
HOME_DIR="$T/home3"; mkdir -p "$HOME_DIR"
"$HOST" gen --seed 5 --tokens 60000 "$T/in3.jsonl" >/dev/null || fail "gen"
printf '{"leafChunkTokens":2000,"summaryTokens":300}\n' >"$HOME_DIR/lcm.json"
"$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out3.jsonl" --window 16000 replay "$T/in3.jsonl" \
    >"$T/replay3.txt" 2>&1 || { cat "$T/replay3.txt"; fail "replay"; }
SID3=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["id"])' "$T/out3.jsonl")
"$LCM" report --home "$HOME_DIR" --session "$SID3" >"$T/report3.txt" 2>&1 || { cat "$T/report3.txt"; fail "lcm report 3"; }
python3 - "$T/report3.txt" "$HOME_DIR/lcm/metrics.jsonl" <<'PY' || fail "the replay's share counts every request after the first"
import json, re, sys
m = re.search(r"prompt cache: (\d+) of (\d+) requests extended", open(sys.argv[1]).read())
assert m, "no prompt cache line"
ext, compared = int(m.group(1)), int(m.group(2))
req = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
req = [r for r in req if r["kind"] == "request"]
assert compared == len(req) - 1 > 10, (compared, len(req))
# the projection swaps at the window's lines: not every request keeps the previous bytes,
# and most do
assert 0 < ext < compared and ext * 2 > compared, (ext, compared)
# the same session without LCM: the host's input as it came (it changes only at the host's
# compactions, which LCM supplies here), at least as stable as what LCM sent
w = re.search(r"without LCM (\d+) of (\d+)", open(sys.argv[1]).read())
assert w and int(w.group(2)) == compared and ext <= int(w.group(1)) <= compared, w and w.groups()
PY
ok
done_ok
