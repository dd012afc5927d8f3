#!/bin/sh
# Loading plugins: the example plugin loads from a plugin directory; a plugin built for
# ABI version 2 is refused with both versions named (by its manifest, by its own init,
# and when named with --plugin); a broken manifest or a missing library is reported and
# the host still runs the plugins that did load.
. "$(dirname "$0")/lib.sh"
EX="$BUILD/tests/example-plugin.so"
ABI2="$BUILD/tests/abi2-plugin.so"
P="$T/plugins"
mkdir -p "$P/example" "$P/abi2-manifest" "$P/abi2-liar" "$P/broken" "$P/nolib"
cp "$EX" "$P/example/example-plugin.so"
printf '{"name":"example","version":"1.0.0","abiVersion":1,"library":"example-plugin.so","entry":"agent_plugin_init","commands":["example"],"tools":["example_echo"]}\n' >"$P/example/plugin.json"
cp "$ABI2" "$P/abi2-manifest/abi2-plugin.so"
printf '{"name":"abi2-manifest","version":"1.0.0","abiVersion":2,"library":"abi2-plugin.so"}\n' >"$P/abi2-manifest/plugin.json"
# The manifest claims version 1; the library itself refuses the host.
cp "$ABI2" "$P/abi2-liar/abi2-plugin.so"
printf '{"name":"abi2-liar","version":"1.0.0","abiVersion":1,"library":"abi2-plugin.so"}\n' >"$P/abi2-liar/plugin.json"
printf '{"name": "broken", "abiVersion": 1, "library": \n' >"$P/broken/plugin.json"
printf '{"name":"nolib","version":"1.0.0","abiVersion":1,"library":"missing.so"}\n' >"$P/nolib/plugin.json"

"$HOST" --home "$HOME_DIR" --plugin-dir "$P" --session "$T/s.jsonl" --command "/example" \
    >"$T/out" 2>"$T/err"
assert_eq "$?" "0" "the host runs despite plugins that fail to load"
assert_grep "$T/out" "example plugin: 0 context calls" "the example plugin loaded and its command ran"
assert_grep "$T/err" "plugin 'abi2-manifest' was built for ABI version 2; this host speaks ABI version 1 (API level 3)" \
    "manifest ABI mismatch names both versions"
assert_grep "$T/err" "plugin 'abi2-liar' refused this host (ABI version 1, API level 3): .*version 2" \
    "the plugin's own refusal is reported with both versions"
assert_grep "$T/err" "plugin folder 'broken':.*not a valid manifest" "broken plugin.json reported"
assert_grep "$T/err" "plugin 'nolib': library .*missing.so is missing" "missing library reported"
assert_grep "$T/s.jsonl" '"type":"session","version":3' "a new session file got its header"

# --plugin loads a .so directly; the ABI-2 build is refused, the example still loads.
"$HOST" --home "$HOME_DIR" --plugin "$ABI2" --plugin "$EX" --session "$T/s2.jsonl" \
    --command "/example" >"$T/out2" 2>"$T/err2"
assert_eq "$?" "0" "--plugin: host runs"
assert_grep "$T/err2" "plugin 'abi2-plugin.so' refused this host (ABI version 1, API level 3): .*2" \
    "--plugin refusal names both versions"
assert_grep "$T/out2" "example plugin" "--plugin loaded the example"

# The example's tool is offered and callable; the call is recorded in the session.
"$HOST" --home "$HOME_DIR" --plugin "$EX" --session "$T/s2.jsonl" \
    --tool example_echo '{"word":"hello"}' >"$T/tool" 2>"$T/tool.err"
assert_eq "$?" "0" "--tool exits 0"
assert_grep "$T/tool" '"word":"hello"' "the tool's text is printed"
assert_jsonl "$T/s2.jsonl" "any(r.get('message',{}).get('role')=='toolResult' and r['message']['toolName']=='example_echo' for r in rows)" \
    "the tool result is recorded in the session"
assert_jsonl "$T/s2.jsonl" "any(r.get('message',{}).get('role')=='assistant' and r['message']['content'][0]['type']=='toolCall' for r in rows)" \
    "the tool call is recorded as an assistant toolCall"

# Unknown command / tool / option: non-zero with a one-line reason.
"$HOST" --home "$HOME_DIR" --plugin "$EX" --session "$T/s2.jsonl" --command "/nope" >/dev/null 2>"$T/e3"
[ "$?" -ne 0 ] || fail "unknown command fails"; ok
assert_grep "$T/e3" "unknown command /nope" "unknown command named"
"$HOST" --home "$HOME_DIR" --session "$T/s2.jsonl" --tool nope '{}' >/dev/null 2>"$T/e4"
[ "$?" -ne 0 ] || fail "unknown tool fails"; ok
"$HOST" --bogus >/dev/null 2>"$T/e5"
[ "$?" -ne 0 ] || fail "unknown option fails"; ok
assert_eq "$(wc -l <"$T/e5" | tr -d ' ')" "1" "one-line reason"
"$HOST" --help >"$T/help" || fail "--help exits 0"; ok
for form in "replay IN.jsonl" "--command" "--tool NAME" "-p PROMPT" "--trace FILE" "gen --seed"; do
    assert_grep "$T/help" "$form" "--help documents $form"
done
done_ok
