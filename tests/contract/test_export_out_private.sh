#!/bin/sh
# `lcm export --out F` (issue 24, item 9): its temp file is its own (created exclusively
# under a random name beside F), so a symlink planted at F.tmp is never written through and
# a world-writable F.tmp left by someone else never lends its mode; F ends 0600 whatever
# the umask, and nothing but F is left behind.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
replay_hellos exp-000 EXPNEEDLE /work/p
mkdir -p "$T/out"
printf 'victim\n' >"$T/victim"
ln -s "$T/victim" "$T/out/a.jsonl.tmp"
(umask 000 && "$LCM" export --home "$HOME_DIR" --session exp-0001 --out "$T/out/a.jsonl" >"$T/a.txt" 2>&1) ||
    { cat "$T/a.txt"; fail "export beside a planted symlink"; }
ok
assert_eq "$(cat "$T/victim")" "victim" "the file a planted F.tmp link points at is never written"
[ -L "$T/out/a.jsonl.tmp" ] || fail "the planted link is left alone"; ok
assert_grep "$T/out/a.jsonl" "EXPNEEDLE_1" "the export holds the session"
assert_eq "$(stat -c %a "$T/out/a.jsonl")" "600" "the export is 0600 under umask 000"
# an existing F.tmp of mode 0666
: >"$T/out/b.jsonl.tmp"
chmod 666 "$T/out/b.jsonl.tmp"
(umask 000 && "$LCM" export --home "$HOME_DIR" --session exp-0002 --out "$T/out/b.jsonl" >"$T/b.txt" 2>&1) ||
    { cat "$T/b.txt"; fail "export beside an existing F.tmp"; }
ok
assert_eq "$(stat -c %a "$T/out/b.jsonl")" "600" "the export is 0600 though a 0666 F.tmp was there"
assert_grep "$T/b.txt" "mode 0600" "export says 0600"
assert_eq "$(ls -A "$T/out" | sort | tr '\n' ' ')" "a.jsonl a.jsonl.tmp b.jsonl b.jsonl.tmp " "no temp file is left behind"
done_ok
