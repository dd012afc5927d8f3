#!/bin/sh
# lcm.json's file-handle settings reach the store: largeFileChars lowers the size from which
# a tool result is kept as a file handle, externalizeFiles false keeps every result inline,
# and `lcm import` of the same session under the same lcm.json stores the same handles as
# the plugin living through it.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
"$HOST" gen --seed 9 --messages 400 "$T/in.jsonl" >/dev/null || fail "gen"
handles() { python3 -c "import glob,sqlite3,sys; (p,)=glob.glob(sys.argv[1]+'/lcm/*.sqlite'); print(sqlite3.connect(p).execute('select count(*) from file_handles').fetchone()[0])" "$1"; }
run() { # NAME LCM_JSON: replay into T/NAME, import into T/NAME-imp, both with that lcm.json
    mkdir -p "$T/$1" "$T/$1-imp"
    [ -n "$2" ] && printf '%s\n' "$2" >"$T/$1/lcm.json" && cp "$T/$1/lcm.json" "$T/$1-imp/lcm.json"
    "$HOST" --home "$T/$1" --plugin-dir "$PLUGINS" --session "$T/$1.jsonl" --window 1000000 \
        replay "$T/in.jsonl" >"$T/$1.txt" 2>&1 || { cat "$T/$1.txt"; fail "replay $1"; }
    "$LCM" import --home "$T/$1-imp" "$T/in.jsonl" >"$T/$1-imp.txt" 2>&1 || { cat "$T/$1-imp.txt"; fail "import $1"; }
}
run default ""
run small '{"largeFileChars":1000}'
run inline '{"externalizeFiles":false}'
D=$(handles "$T/default") S=$(handles "$T/small") I=$(handles "$T/inline")
[ "$S" -gt "$D" ] || fail "largeFileChars 1000 makes more file handles than the default 32,000 (got $S, default $D)"
ok
assert_eq "$I" "0" "externalizeFiles false keeps every tool result inline"
assert_eq "$(handles "$T/default-imp")" "$D" "lcm import stores the plugin's handles (default)"
assert_eq "$(handles "$T/small-imp")" "$S" "lcm import applies largeFileChars like the plugin"
assert_eq "$(handles "$T/inline-imp")" "0" "lcm import applies externalizeFiles like the plugin"
assert_nogrep "$T/small.txt" "largeFileChars" "no config problem reported for the key"
done_ok
