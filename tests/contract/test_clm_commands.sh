#!/bin/sh
# The /clm commands through the real host and plugin, no model: settings are validated and
# saved as a live-context-settings entry of non-default values before they take effect,
# and come back on resume; /clm config reset; status is three lines; on/off is persisted;
# /clm-compact refuses a second request while one waits; the text pages answer.
. "$(dirname "$0")/lib.sh"
FX="$ROOT/tests/contract/fixtures/branch.jsonl"
S="$T/s.jsonl"
# the fixture's deliberately torn lines are left out: this test reads the file back as JSONL
python3 -c "
import json, sys
for l in open(sys.argv[1]):
    try: json.loads(l); sys.stdout.write(l)
    except ValueError: pass" "$FX" > "$S"
mkdir -p "$T/tmp"
export TMPDIR="$T/tmp"
run() { "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$S" "$@" 2>"$T/err" \
    || { cat "$T/err"; fail "host run: $*"; }; }

run --command "/clm config sizeTrailer on" --command "/clm config budget 12" \
    --command "/clm config observationCap 10000:0.5" > "$T/set.txt"
ok
assert_grep "$T/set.txt" "sizeTrailer = on (saved)" "a valid setting is saved"
assert_grep "$T/set.txt" "budget must be a token count of at least 1000" "an invalid value is refused with the rule"
assert_grep "$T/set.txt" "the settings in force are unchanged" "a refused value changes nothing"
assert_jsonl "$S" "[r['data']['overrides'] for r in rows if r.get('customType') == 'live-context-settings'][-1] == {'sizeTrailer': 'on', 'observationCap': '10000:0.5'}" "the entry holds only the non-default values"

run --command "/clm status" --command "/clm settings" > "$T/resume.txt"
ok
assert_grep "$T/resume.txt" "settings changed: observationCap=10000:0.5, sizeTrailer=on" "settings come back on resume"
assert_grep "$T/resume.txt" "\* sizeTrailer" "the settings page marks a changed setting"
assert_grep "$T/resume.txt" "guard limit:" "the settings page shows the guard limit"
run --command "/clm status" > "$T/status.txt"
assert_eq "$(grep -c . "$T/status.txt")" "3" "/clm status prints three lines"

run --command "/clm config reset" --command "/clm status" > "$T/reset.txt"
ok
assert_grep "$T/reset.txt" "back to the defaults" "config reset answers"
assert_grep "$T/reset.txt" "settings: defaults" "after reset the defaults are in force"
assert_jsonl "$S" "[r['data']['overrides'] for r in rows if r.get('customType') == 'live-context-settings'][-1] == {}" "reset stores an empty override set"

run --command "/clm-compact keep the numbers" --command "/clm-compact" > "$T/compact.txt"
ok
assert_grep "$T/compact.txt" "goes out with the next request" "/clm-compact queues the prompt"
assert_grep "$T/compact.txt" "already waiting" "a second /clm-compact is refused"

run --command "/clm off" --command "/clm status" > "$T/off.txt"
ok
assert_grep "$T/off.txt" "live context: off" "/clm off answers"
run --command "/clm status" > "$T/off2.txt"
assert_grep "$T/off2.txt" "live context: off (raw context)" "off is persisted across a resume"
run --command "/clm on" > "$T/on.txt"
assert_grep "$T/on.txt" "live context: on" "/clm on answers"
assert_jsonl "$S" "[r['data']['enabled'] for r in rows if r.get('customType') == 'live-context-state' and r['data']['kind'] == 'toggle'] == [False, True]" "toggles are slim state entries"

run --command "/clm overview" --command "/clm edits" --command "/clm input" --command "/clm bogus" > "$T/pages.txt"
ok
assert_grep "$T/pages.txt" "^overview" "the overview page answers"
assert_grep "$T/pages.txt" "switched off" "the edits page lists the toggles"
assert_grep "$T/pages.txt" "input: " "the input page answers"
assert_grep "$T/pages.txt" "unknown subcommand 'bogus'" "an unknown subcommand is named"
done_ok
