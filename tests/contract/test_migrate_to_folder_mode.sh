#!/bin/sh
# `lcm migrate --to file://DIR` (issue 24, item 19) never changes the mode of a DIR/lcm it
# did not create: an existing 0755 DIR/lcm (someone else's folder) is refused with a message
# naming the fix, left 0755 with nothing copied into it; a DIR/lcm the copy creates is 0700.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
replay_hellos migm-000 MIGMNEEDLE /work/p
H2="$T/home2"
mkdir -p "$H2/lcm"
chmod 755 "$H2/lcm"
echo mine >"$H2/lcm/notes.txt"
"$LCM" migrate --home "$HOME_DIR" --to "file://$H2" --apply >"$T/a.out" 2>&1
assert_eq "$?" "1" "a copy into an existing 0755 DIR/lcm is refused"
assert_grep "$T/a.out" "mode 0755" "the refusal names the folder's mode"
assert_grep "$T/a.out" "chmod 700" "the refusal says the fix"
assert_eq "$(stat -c %a "$H2/lcm")" "755" "the existing folder keeps its mode"
assert_eq "$(ls -A "$H2/lcm")" "notes.txt" "nothing is copied into it"
"$LCM" migrate --home "$HOME_DIR" --to "file://$H2" >"$T/d.out" 2>&1
assert_eq "$?" "1" "the dry run says the same"
assert_grep "$T/d.out" "mode 0755" "the dry run names the mode"
assert_eq "$(stat -c %a "$H2/lcm")" "755" "the dry run leaves the mode"
# a target whose lcm folder the copy creates
H3="$T/home3"
mkdir -p "$H3"
"$LCM" migrate --home "$HOME_DIR" --to "file://$H3" --apply >"$T/b.out" 2>&1 || { cat "$T/b.out"; fail "copy into a new home"; }
ok
assert_eq "$(stat -c %a "$H3/lcm")" "700" "a folder the copy creates is 0700"
done_ok
