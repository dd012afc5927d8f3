#!/bin/sh
# `lcm hooks install / uninstall` keep the user's own files (issue 24, items 5 and 11), with
# the real build/lcm in a temp HOME: a symlinked settings.json (dotfiles) stays a link and
# its target gets the change; CRLF, a 4-space layout, a BOM, 12345678901234567891 and
# "\u0000" survive install and come back byte for byte from uninstall; the .bak holds the
# user's original even after a second install; a read-only settings file, a FIFO, /dev/zero
# and an invalid ~/.claude.json are refused with a message and nothing written; a user's
# chained command that runs lcm is never deleted; a user who had no config has none left.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
S="$T/store"
SELF=$(readlink -f "$LCM")
inst() { HOME="$1" "$LCM" hooks install --agent "${3:-claude-code}" --home "${2:-$S}"; }
uninst() { HOME="$1" "$LCM" hooks uninstall --agent "${2:-claude-code}" --home "$S"; }

# ---- a symlinked settings.json (dotfiles) -----------------------------------------------
U="$T/u1"
mkdir -p "$U/.claude" "$U/dotfiles"
printf '{\n  "model": "opus"\n}\n' >"$U/dotfiles/settings.json"
cp "$U/dotfiles/settings.json" "$T/dot.orig"
ln -s ../dotfiles/settings.json "$U/.claude/settings.json"
inst "$U" >"$T/l.out" 2>&1 || { cat "$T/l.out"; fail "install through a symlink"; }
[ -L "$U/.claude/settings.json" ] || fail "the settings.json link stays a link"; ok
assert_grep "$U/dotfiles/settings.json" "hook stop --home" "the link's target gets the hooks"
cmp -s "$U/.claude/settings.json.bak" "$T/dot.orig" || fail "the .bak holds the user's original"; ok
uninst "$U" >"$T/l2.out" 2>&1 || { cat "$T/l2.out"; fail "uninstall through a symlink"; }
[ -L "$U/.claude/settings.json" ] || fail "uninstall: the link stays a link"; ok
cmp -s "$U/dotfiles/settings.json" "$T/dot.orig" || fail "uninstall gives the target's bytes back"; ok

# ---- CRLF, 4 spaces, a BOM, a big number, \u0000 -------------------------------------------
U="$T/u2"
mkdir -p "$U/.claude"
printf '\357\273\277{\r\n    "big": 12345678901234567891,\r\n    "nul": "a\\u0000b",\r\n    "hooks": {\r\n        "Stop": [\r\n            {\r\n                "hooks": [\r\n                    {\r\n                        "type": "command",\r\n                        "command": "'"$SELF"' hook stop --home /old && ./my-script.sh"\r\n                    }\r\n                ]\r\n            }\r\n        ]\r\n    }\r\n}\r\n' >"$U/.claude/settings.json"
printf '{"numStartups": 3, "x": 1.50}' >"$U/.claude.json"
cp "$U/.claude/settings.json" "$T/s2.orig"
cp "$U/.claude.json" "$T/c2.orig"
inst "$U" >"$T/i2.out" 2>&1 || { cat "$T/i2.out"; fail "install over a CRLF settings.json"; }
python3 - "$U/.claude/settings.json" "$SELF" "$S" <<'PY' || fail "installed: CRLF, the layout, the BOM, the values kept; the chained command kept"
import json, sys
p, lcm, home = sys.argv[1:]
b = open(p, "rb").read()
assert b.startswith(b"\xef\xbb\xbf"), b[:8]
assert b.count(b"\n") == b.count(b"\r\n"), b
assert b'"big": 12345678901234567891,' in b and b'"nul": "a\\u0000b"' in b, b
for line in b.decode("utf-8-sig").split("\r\n"):
    ind = len(line) - len(line.lstrip(" "))
    assert ind % 4 == 0, repr(line)
s = json.loads(b.decode("utf-8-sig"))
stop = [h["command"] for g in s["hooks"]["Stop"] for h in g["hooks"]]
assert stop[0].endswith("&& ./my-script.sh") and stop[1] == lcm + " hook stop --home " + home, stop
assert s["hooks"]["SessionStart"][0]["hooks"][0]["command"] == lcm + " hook session-start --home " + home
PY
ok
cmp -s "$U/.claude/settings.json.bak" "$T/s2.orig" || fail "the .bak is the user's original"; ok
inst "$U" "$T/other-store" >/dev/null 2>&1 || fail "install for another home"
cmp -s "$U/.claude/settings.json.bak" "$T/s2.orig" || fail "after a second install the .bak is still the user's original"; ok
uninst "$U" >"$T/u2.out" 2>&1 || { cat "$T/u2.out"; fail "uninstall"; }
cmp -s "$U/.claude/settings.json" "$T/s2.orig" || { od -c "$U/.claude/settings.json" | head -20; fail "uninstall gives the user's bytes back"; }
ok
cmp -s "$U/.claude.json" "$T/c2.orig" || { cat "$U/.claude.json"; fail "uninstall gives ~/.claude.json back"; }
ok
assert_grep "$U/.claude/settings.json" "my-script.sh" "the chained command is never deleted"

# ---- the user's own empty containers ("hooks": {}, "Stop": [], "mcpServers": {}) stay -------
U="$T/u6"
mkdir -p "$U/.claude"
printf '{\n  "hooks": {\n    "Stop": []\n  },\n  "model": "opus"\n}\n' >"$U/.claude/settings.json"
printf '{"mcpServers": {}, "numStartups": 1}\n' >"$U/.claude.json"
cp "$U/.claude/settings.json" "$T/s6.orig"
cp "$U/.claude.json" "$T/c6.orig"
inst "$U" >/dev/null 2>&1 || fail "install over empty containers"
cp "$U/.claude/settings.json" "$T/s6.once"
cp "$U/.claude.json" "$T/c6.once"
inst "$U" >"$T/i6.out" 2>&1 || fail "install twice over empty containers"
cmp -s "$U/.claude/settings.json" "$T/s6.once" && cmp -s "$U/.claude.json" "$T/c6.once" ||
    { cat "$U/.claude/settings.json"; fail "a second install changes nothing (the user's empty containers stay in place)"; }
ok
uninst "$U" >/dev/null 2>&1 || fail "uninstall from empty containers"
cmp -s "$U/.claude/settings.json" "$T/s6.orig" || { cat "$U/.claude/settings.json"; fail "uninstall keeps the user's empty hooks and Stop"; }
cmp -s "$U/.claude.json" "$T/c6.orig" || { cat "$U/.claude.json"; fail "uninstall keeps the user's empty mcpServers"; }
ok

# ---- refusals: nothing written ---------------------------------------------------------------
U="$T/u3"
mkdir -p "$U/.claude"
printf '{\n  "model": "opus"\n}\n' >"$U/.claude/settings.json"
chmod 444 "$U/.claude/settings.json"
inst "$U" >"$T/ro.out" 2>&1
assert_eq "$?" "1" "a read-only settings.json is refused"
assert_grep "$T/ro.out" "read-only" "the refusal says read-only"
assert_eq "$(stat -c %a "$U/.claude/settings.json")" "444" "it stays read-only (not replaced)"
assert_nogrep "$U/.claude/settings.json" "hook" "it is not written"
[ ! -e "$U/.claude.json" ] || fail "nothing else is written"; ok
chmod 644 "$U/.claude/settings.json"
# an invalid ~/.claude.json: settings.json is not written either
printf '{ "numStartups": ' >"$U/.claude.json"
cp "$U/.claude/settings.json" "$T/s3.orig"
inst "$U" >"$T/bad.out" 2>&1
assert_eq "$?" "1" "an invalid ~/.claude.json is refused"
assert_grep "$T/bad.out" "not a JSON object" "the refusal names the file"
cmp -s "$U/.claude/settings.json" "$T/s3.orig" || fail "settings.json is not written when ~/.claude.json is invalid"; ok
[ ! -e "$U/.claude/settings.json.bak" ] || fail "no .bak either"; ok
rm -f "$U/.claude.json"
# a NUL byte inside: refused, not cut there
printf '{"model": "opus"}\000{"more": 1}\n' >"$U/.claude/settings.json"
cp "$U/.claude/settings.json" "$T/nul.orig"
inst "$U" >"$T/nul.out" 2>&1
assert_eq "$?" "1" "a settings.json holding a NUL byte is refused"
cmp -s "$U/.claude/settings.json" "$T/nul.orig" || fail "the file with a NUL byte is left as it is"; ok
# a FIFO and /dev/zero: refused at once
rm -f "$U/.claude/settings.json"
mkfifo "$U/.claude/settings.json"
timeout 20 sh -c 'HOME="$1" "$2" hooks install --agent claude-code --home "$3"' sh "$U" "$LCM" "$S" >"$T/fifo.out" 2>&1
assert_eq "$?" "1" "a FIFO settings.json is refused (not a hang)"
assert_grep "$T/fifo.out" "not a regular file" "the refusal says why"
rm -f "$U/.claude/settings.json"
ln -s /dev/zero "$U/.claude/settings.json"
timeout 20 sh -c 'HOME="$1" "$2" hooks install --agent claude-code --home "$3"' sh "$U" "$LCM" "$S" >"$T/zero.out" 2>&1
assert_eq "$?" "1" "/dev/zero as settings.json is refused"
assert_grep "$T/zero.out" "not a regular file" "the /dev/zero refusal says why"
[ ! -e "$U/.claude.json" ] || fail "nothing else is written"; ok

# ---- empty files: read as empty (a settings.json of 0 bytes, a config.toml of 0 bytes) -------
U="$T/u5"
mkdir -p "$U/.claude" "$U/.codex"
: >"$U/.claude/settings.json"
: >"$U/.codex/config.toml"
inst "$U" >"$T/e1.out" 2>&1 || { cat "$T/e1.out"; fail "install over an empty settings.json"; }
inst "$U" "$S" codex >"$T/e2.out" 2>&1 || { cat "$T/e2.out"; fail "install over an empty config.toml"; }
python3 -c "import json,sys; assert 'Stop' in json.load(open(sys.argv[1]))['hooks']" "$U/.claude/settings.json" || fail "empty settings.json: hooks in"
python3 -c "import tomllib,sys; assert tomllib.load(open(sys.argv[1],'rb'))['features']['codex_hooks'] is True" "$U/.codex/config.toml" || fail "empty config.toml: codex_hooks in"
ok

# ---- a user with no config: nothing left after install + uninstall -------------------------
U="$T/u4"
mkdir -p "$U"
inst "$U" >/dev/null 2>&1 || fail "install into nothing"
[ -f "$U/.claude/settings.json" ] && [ -f "$U/.claude.json" ] || fail "install wrote both files"; ok
uninst "$U" >"$T/u4.out" 2>&1 || { cat "$T/u4.out"; fail "uninstall"; }
assert_eq "$(find "$U" -type f | sort | tr '\n' ' ')" "" "no {} and no .bak are left (claude-code)"
inst "$U" "$S" codex >/dev/null 2>&1 || fail "codex install into nothing"
uninst "$U" codex >"$T/u4c.out" 2>&1 || { cat "$T/u4c.out"; fail "codex uninstall"; }
assert_eq "$(find "$U" -type f | sort | tr '\n' ' ')" "" "no file is left (codex)"
done_ok
