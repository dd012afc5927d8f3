#!/bin/sh
# `make install PREFIX=P` (and DESTDIR) puts lcm at P/bin/lcm; `P/bin/lcm hooks install`
# points the hooks and the MCP entry at the installed binary, not at the build tree; the
# default home is the same (~/.agent) for import, hooks and the MCP entry.
. "$(dirname "$0")/lib.sh"
P="$T/prefix"
make -s -C "$ROOT" install BUILD="$BUILD" PREFIX="$P" >"$T/make.out" 2>&1 || { cat "$T/make.out"; fail "make install"; }
[ -x "$P/bin/lcm" ] || fail "make install puts lcm in PREFIX/bin"
"$P/bin/lcm" --version >/dev/null 2>&1 || fail "the installed lcm runs"
ok
make -s -C "$ROOT" install BUILD="$BUILD" PREFIX=/usr/local DESTDIR="$T/stage" >"$T/make2.out" 2>&1 \
    || { cat "$T/make2.out"; fail "make install DESTDIR"; }
[ -x "$T/stage/usr/local/bin/lcm" ] || fail "DESTDIR stages under DESTDIR/PREFIX"
ok
U="$T/user"
mkdir -p "$U/.claude"
HOME="$U" "$P/bin/lcm" hooks install --agent claude-code >"$T/inst" 2>&1 || { cat "$T/inst"; fail "hooks install"; }
assert_grep "$U/.claude/settings.json" "$P/bin/lcm" "the hooks run the installed lcm"
assert_nogrep "$U/.claude/settings.json" "$BUILD/lcm" "the hooks do not run the build tree's lcm"
assert_grep "$U/.claude.json" "$P/bin/lcm" "the MCP entry runs the installed lcm"
assert_grep "$U/.claude/settings.json" "$U/.agent" "the hooks use the default home ~/.agent"
# import's default home is the hooks' home: an import without --home is what the hooks read
python3 "$ROOT/tests/contract/claude_transcript.py" "$T/a.jsonl" --messages 4
HOME="$U" "$P/bin/lcm" import "$T/a.jsonl" >"$T/imp" 2>&1 || { cat "$T/imp"; fail "import to the default home"; }
[ -d "$U/.agent/lcm" ] || fail "import's default home is ~/.agent"
# the build tree's lcm says where an installed one would be stable
HOME="$U" "$BUILD/lcm" hooks install --agent claude-code --dry-run >"$T/dry" 2>&1
assert_grep "$T/dry" "make install" "hooks install from a build tree suggests make install"
done_ok
