#!/bin/sh
# `lcm hooks install --agent codex` on config.toml shapes real users have (issue 24, items 4
# and 11), with the real build/lcm in a temp HOME. For each: the installed file parses
# (python3's tomllib) with the user's content unchanged plus features.codex_hooks = true and
# [mcp_servers.lcm]; a second install changes nothing; uninstall gives the user's bytes back
# (their own [features] header included). Shapes lcm cannot add to without guessing are
# refused with a message and exit 1, every file left as it was.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
U="$T/user"
S="$T/store"
C="$U/.codex/config.toml"
SELF=$(readlink -f "$LCM")
mkdir -p "$U/.codex"

# roundtrip NAME: config.toml is $T/NAME.toml; install, check, install again, uninstall.
roundtrip() {
    cp "$T/$1.toml" "$C"
    HOME="$U" "$LCM" hooks install --agent codex --home "$S" >"$T/$1.in" 2>&1 || { cat "$T/$1.in"; fail "$1: install"; }
    python3 - "$T/$1.toml" "$C" "$SELF" "$S" <<'PY' || fail "$1: the installed config.toml parses, the user's content unchanged"
import sys, tomllib
orig, new, lcm, home = sys.argv[1:]
o = tomllib.load(open(orig, "rb"))
n = tomllib.load(open(new, "rb"))
assert n["features"]["codex_hooks"] is True, n
assert n["mcp_servers"]["lcm"] == {"command": lcm, "args": ["mcp", "--home", home]}, n
del n["features"]["codex_hooks"]
o.get("features", {}).pop("codex_hooks", None)
if not n["features"] and "features" not in o: del n["features"]
del n["mcp_servers"]["lcm"]
if not n["mcp_servers"] and "mcp_servers" not in o: del n["mcp_servers"]
assert n == o, (n, o)
PY
    ok
    cp "$C" "$T/$1.once"
    HOME="$U" "$LCM" hooks install --agent codex --home "$S" >/dev/null 2>&1 || fail "$1: install twice"
    cmp -s "$C" "$T/$1.once" || fail "$1: a second install changed config.toml"
    ok
    HOME="$U" "$LCM" hooks uninstall --agent codex --home "$S" >"$T/$1.un" 2>&1 || { cat "$T/$1.un"; fail "$1: uninstall"; }
    cmp -s "$C" "$T/$1.toml" || { diff "$T/$1.toml" "$C"; fail "$1: uninstall gives the user's bytes back"; }
    ok
    rm -f "$C.bak"
}

# a dotted key that turns the hooks off
printf 'model = "o3"\nfeatures.codex_hooks = false # not yet\nfeatures.web_search = true\n\n[mcp_servers.docs]\ncommand = "docs"\n' >"$T/dotted.toml"
roundtrip dotted
assert_nogrep "$T/dotted.once" "^\[features\]" "dotted: no [features] table next to the dotted keys"
# dotted features keys without codex_hooks
printf 'features.web_search = true\nmodel = "o3"\n' >"$T/dotted2.toml"
roundtrip dotted2
# [features] last, no final newline
printf 'model = "o3"\n\n[features]' >"$T/eof.toml"
roundtrip eof
# [features] last with a key, no final newline
printf '[features]\nweb_search = true' >"$T/eof2.toml"
roundtrip eof2
# a multi-line string holding lines that look like ours: they are text, never edited
cat >"$T/multi.toml" <<'TOML'
model = "o3"
developer_instructions = """
[features]
codex_hooks = false
[mcp_servers.lcm]
"""
notes = '''
codex_hooks = false
'''

[features]
web_search = true
TOML
roundtrip multi
python3 - "$T/multi.once" <<'PY' || fail "multi: the strings are unchanged"
import sys, tomllib
t = tomllib.load(open(sys.argv[1], "rb"))
assert t["developer_instructions"] == "[features]\ncodex_hooks = false\n[mcp_servers.lcm]\n", t
assert t["notes"] == "codex_hooks = false\n", t
PY
ok
# an inline table that already has the hooks on
printf 'features = { codex_hooks = true, web_search = true }\n' >"$T/inline_on.toml"
roundtrip inline_on
# CRLF and comments: kept byte for byte (item 11)
printf 'model = "o3"\r\n# the user'"'"'s comment\r\n\r\n[features]  # theirs\r\n  web_search = true # keep\r\n  codex_hooks = false\r\n' >"$T/crlf.toml"
roundtrip crlf
python3 - "$T/crlf.once" <<'PY' || fail "crlf: every installed line ends in CRLF"
import sys
b = open(sys.argv[1], "rb").read()
assert b.count(b"\n") == b.count(b"\r\n"), b
assert b"# the user's comment\r\n" in b and b"[features]  # theirs\r\n" in b
PY
ok
# quoted keys and an array over lines with comments
cat >"$T/quoted.toml" <<'TOML'
"model" = "o3"
[ "features" ]
"codex_hooks" = false
list = [
  "a", # ]
  "b",
]
TOML
roundtrip quoted

# refused: nothing is changed, the message says what to do
refuse() {
    cp "$T/$1.toml" "$C"
    rm -f "$U/.codex/hooks.json"
    HOME="$U" "$LCM" hooks install --agent codex --home "$S" >"$T/$1.out" 2>&1
    assert_eq "$?" "1" "$1: install refuses"
    assert_grep "$T/$1.out" "$2" "$1: the message says why"
    cmp -s "$C" "$T/$1.toml" || fail "$1: config.toml unchanged"
    [ ! -e "$U/.codex/hooks.json" ] && [ ! -e "$C.bak" ] || fail "$1: no other file written"
    ok
}
printf 'features = { web_search = true }\n' >"$T/inline.toml"
refuse inline "features is an inline table"
printf 'mcp_servers = { docs = { command = "docs" } }\n' >"$T/inline_mcp.toml"
refuse inline_mcp "mcp_servers is an inline table"
printf 'model = "o3\n' >"$T/broken.toml"
refuse broken "cannot be edited safely"
printf '[[features]]\nx = 1\n' >"$T/arrtable.toml"
refuse arrtable "features is not a table"
done_ok
