#!/bin/sh
# A fresh machine (issue 17 item 6): plain `make` checks the packages before it compiles,
# installing them as root or naming them otherwise (tests/deps.sh), instead of failing on
# a missing header; the check runs once per build folder (a stamp), and never twice in one
# command (the sub-makes of asan/demo/test skip it). A test cannot uninstall packages, so
# tests/deps.sh's stand-ins play the machine: DEPS_MISSING (the missing list), DEPS_UID
# (the user), DEPS_DRY_RUN (the root path prints its apt-get line instead of running it).
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || fail "cd ROOT"

# tests/deps.sh itself: the "name them" path and the root path, exactly.
DEPS_MISSING="libcjson-dev libcmocka-dev" DEPS_UID=1000 sh tests/deps.sh >"$T/user.txt" 2>&1; st=$?
assert_eq "$st" "1" "a user with packages missing: deps.sh fails"
assert_eq "$(cat "$T/user.txt")" "missing packages; run:  sudo apt-get install -y libcjson-dev libcmocka-dev" "the exact install line"
DEPS_MISSING="libcjson-dev libcmocka-dev" DEPS_UID=0 DEPS_DRY_RUN=1 sh tests/deps.sh >"$T/root.txt" 2>&1; st=$?
assert_eq "$st" "0" "root, dry run: succeeds"
assert_eq "$(sed -n 1p "$T/root.txt")" "installing: libcjson-dev libcmocka-dev" "root says what it installs"
assert_eq "$(sed -n 2p "$T/root.txt")" "would run:  apt-get update -qq && apt-get install -y -qq libcjson-dev libcmocka-dev" "root's apt-get line"
sh tests/deps.sh >"$T/real.txt" 2>&1; st=$?
assert_eq "$st" "0" "this machine has every package"
assert_eq "$(cat "$T/real.txt")" "" "and the check is quiet"

# Plain `make` (all) names the packages before compiling anything.
B="$T/b"
DEPS_MISSING="libcjson-dev" DEPS_UID=1000 make --no-print-directory -j2 BUILD="$B" >"$T/make1.txt" 2>&1; st=$?
[ "$st" != 0 ] || fail "make succeeded with packages missing"; ok
assert_grep "$T/make1.txt" "missing packages; run:  sudo apt-get install -y libcjson-dev" "plain make names the missing package"
assert_nogrep "$T/make1.txt" " -c " "nothing was compiled"
assert_nogrep "$T/make1.txt" "cJSON.h" "no missing-header error"
[ ! -e "$B/.deps-ok" ] || fail "a failed check left a stamp"; ok
# As root it would install them, then compile (dry run: the line, then the build goes on).
DEPS_MISSING="libcjson-dev" DEPS_UID=0 DEPS_DRY_RUN=1 make --no-print-directory BUILD="$B" "$B/obj/engine/util/util.o" >"$T/make2.txt" 2>&1 ||
    { cat "$T/make2.txt"; fail "make as root (dry run)"; }
assert_grep "$T/make2.txt" "apt-get install -y -qq libcjson-dev" "plain make as root installs"
[ "$(grep -n 'apt-get' "$T/make2.txt" | head -1 | cut -d: -f1)" -lt "$(grep -n ' -c ' "$T/make2.txt" | head -1 | cut -d: -f1)" ] ||
    fail "the install comes before the first compile"; ok
[ -e "$B/.deps-ok" ] || fail "the check's stamp"; ok
# Incremental: the stamp stands, the check is not run again (even with a "missing" list).
rm -f "$B/obj/engine/util/util.o"
DEPS_MISSING="libcjson-dev" DEPS_UID=1000 make --no-print-directory BUILD="$B" "$B/obj/engine/util/util.o" >"$T/make3.txt" 2>&1 ||
    { cat "$T/make3.txt"; fail "an incremental make re-ran the check"; }
assert_nogrep "$T/make3.txt" "apt-get" "no check on an incremental build"

# One check per command: asan's sub-make (another BUILD) and plain make, under make -n.
make -n --no-print-directory BUILD="$T/n" asan >"$T/n-asan.txt" 2>&1 || { tail "$T/n-asan.txt"; fail "make -n asan"; }
assert_eq "$(grep -c 'tests/deps.sh' "$T/n-asan.txt")" "1" "make asan checks once"
# (whether build-asan is built already or not: `make asan` itself runs this test there)
assert_grep "$T/n-asan.txt" "LC_DEPS_DONE=1 BUILD=build-asan" "(the asan sub-make ran under -n)"
make -n --no-print-directory BUILD="$T/n" >"$T/n-all.txt" 2>&1 || fail "make -n"
assert_eq "$(grep -c 'tests/deps.sh' "$T/n-all.txt")" "1" "plain make checks once"
[ "$(grep -n 'tests/deps.sh' "$T/n-all.txt" | cut -d: -f1)" -lt "$(grep -n ' -c ' "$T/n-all.txt" | head -1 | cut -d: -f1)" ] ||
    fail "plain make checks before it compiles"; ok
make -n --no-print-directory BUILD="$T/n" test >"$T/n-test.txt" 2>&1 || fail "make -n test"
assert_eq "$(grep -c 'tests/deps.sh' "$T/n-test.txt")" "1" "make test checks once"
done_ok
