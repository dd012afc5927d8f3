#!/bin/sh
# The plugin's files call downward only (plugin/plugin.h): no file of plugin/ reaches
# itself through the calls between them, read from the built objects' symbols
# (tests/plugin_calls.py). The check holds on the build, and refuses a circle planted in
# two small objects of its own (so it can fail), naming the files and the symbols.
. "$(dirname "$0")/lib.sh"
CHECK="$ROOT/tests/plugin_calls.py"

python3 "$CHECK" "$BUILD/obj/plugin" "$ROOT/plugin" >"$T/tree.txt" 2>&1 || { cat "$T/tree.txt"; fail "plugin/ calls in a circle"; }
assert_grep "$T/tree.txt" "no circle in" "the plugin's files form layers"
# The callbacks are the top; the host calls the bottom.
assert_grep "$T/tree.txt" "layers from the top: plugin.c |" "plugin.c is the top layer"
assert_grep "$T/tree.txt" "| hostcall.c$" "hostcall.c is the bottom layer"

# A planted circle: top.c calls helper.c, helper.c calls back into top.c.
mkdir -p "$T/circle" "$T/layers"
cat >"$T/top.c" <<'C'
int helper_log(int x);
int top_window(void) { return 7; }
int top_event(int x) { return helper_log(x) + 1; }
C
cat >"$T/helper.c" <<'C'
int top_window(void);
int helper_log(int x) { return x * top_window(); }
C
cat >"$T/helper_down.c" <<'C'
int helper_log(int x) { return x * 2; }
C
cc -c "$T/top.c" -o "$T/circle/top.o" && cc -c "$T/helper.c" -o "$T/circle/helper.o" || fail "compiling the planted files"
cp "$T/circle/top.o" "$T/layers/top.o" && cc -c "$T/helper_down.c" -o "$T/layers/helper.o" || fail "compiling the layered files"
if python3 "$CHECK" "$T/circle" >"$T/circle.txt" 2>&1; then cat "$T/circle.txt"; fail "a circle was accepted"; fi; ok
assert_grep "$T/circle.txt" "a circle among helper.c, top.c" "the circle's files are named"
assert_grep "$T/circle.txt" "helper.c -> top.c (top_window)" "the call that closes it is named"
python3 "$CHECK" "$T/layers" >"$T/layers.txt" 2>&1 || { cat "$T/layers.txt"; fail "two layered files refused"; }
assert_grep "$T/layers.txt" "layers from the top: top.c | helper.c" "calls that only go down are accepted"

done_ok
