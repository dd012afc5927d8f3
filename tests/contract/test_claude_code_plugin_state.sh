#!/bin/sh
# The Claude Code plugin without Claude Code: its launcher (host/claude-code/scripts/lcm-run)
# run from a copy, as Claude Code's cache holds it, and `lcm hooks doctor` reading the install
# records Claude Code writes (hand-made files of the shapes `claude plugin install` 2.1.332
# leaves: installed_plugins.json version 2, and the older one-object form; enabledPlugins in
# user, project and local settings). The pinned CLI's own install is tests/e2e/claude-code/plugin.sh.
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
[ -x "$LCM" ] || fail "$LCM missing (run make)"
U="$T/u"
P="$T/project"
C="$U/.claude/plugins/cache/lossless-context/lossless-context/0.1.0"
mkdir -p "$U/.claude/plugins" "$P" "$(dirname "$C")"
cp -r "$ROOT/host/claude-code" "$C"
rm -f "$C/scripts/lcm-path"
NOLCM=/usr/bin:/bin
if env PATH=$NOLCM sh -c 'command -v lcm' >/dev/null 2>&1; then
    echo "SKIP: an lcm is installed in /usr/bin or /bin; the launcher would start it"
    exit 0
fi

# --- the launcher ---
(cd "$P" && env HOME="$U" PATH=$NOLCM "$C/scripts/lcm-run" status) >"$T/none.out" 2>"$T/none.err" &&
    fail "the launcher succeeded with no lcm anywhere"
assert_grep "$T/none.err" "lcm was not found; run make" "with no lcm the launcher says what to run"
echo "$LCM" >"$C/scripts/lcm-path"
# status reads an existing home (a missing one is an error of its own)
mkdir -p "$U/.agent/lcm" "$T/other/lcm"
(cd "$P" && env HOME="$U" PATH=$NOLCM "$C/scripts/lcm-run" status) >"$T/rec.out" 2>&1 ||
    fail "the launcher did not start the recorded build: $(cat "$T/rec.out")"
assert_grep "$T/rec.out" "stores: $U/.agent/lcm" "the recorded build runs, on lcm's default home"
(cd "$P" && env HOME="$U" PATH=$NOLCM LCM_HOME="$T/other" "$C/scripts/lcm-run" status) >"$T/home.out" 2>&1 ||
    fail "the launcher with LCM_HOME: $(cat "$T/home.out")"
assert_grep "$T/home.out" "stores: $T/other/lcm" "LCM_HOME is the home the launcher passes"
echo '{}' | (cd "$P" && env HOME="$U" PATH=$NOLCM LCM_HOME="$T/other" "$C/scripts/lcm-run" hook stop) >/dev/null 2>&1 ||
    fail "the launcher's hook call failed"
[ -f "$T/other/lcm/hooks.log" ] || [ -n "$(ls -A "$T/other/lcm" 2>/dev/null)" ] ||
    fail "lcm hook through the launcher did not use LCM_HOME"
ok

# --- the doctor, from the records ---
doctor() { (cd "$P" && env HOME="$U" PATH=$NOLCM "$LCM" hooks doctor --agent claude-code) >"$T/doc.txt" 2>&1; }
installed() { # installed_plugins.json with one install of SCOPE [PROJECT_PATH]
    pp=""; [ -n "${2:-}" ] && pp=", \"projectPath\": \"$2\""
    cat >"$U/.claude/plugins/installed_plugins.json" <<J
{ "version": 2, "plugins": { "lossless-context@lossless-context": [
  { "scope": "$1", "installPath": "$C", "version": "0.1.0"$pp } ] } }
J
}
enabled() { mkdir -p "$(dirname "$1")"; printf '{ "enabledPlugins": { "lossless-context@lossless-context": %s } }\n' "$2" >"$1"; }

installed user
enabled "$U/.claude/settings.json" true
doctor || fail "doctor with the plugin enabled: $(cat "$T/doc.txt")"
assert_grep "$T/doc.txt" "^active: the Claude Code plugin lossless-context@lossless-context" "doctor names the plugin active"
assert_grep "$T/doc.txt" "the plugin's launcher starts the build make recorded: $LCM" "doctor says which lcm the launcher starts"
assert_nogrep "$T/doc.txt" "active: lcm hooks install" "no hooks install is reported"

enabled "$P/.claude/settings.local.json" false
doctor && fail "doctor passes with the plugin disabled in local settings: $(cat "$T/doc.txt")"
assert_grep "$T/doc.txt" "is installed but not enabled" "local settings disabling the plugin win over the user's"
rm -f "$P/.claude/settings.local.json"

cat >"$U/.claude/plugins/installed_plugins.json" <<J
{ "version": 1, "plugins": { "lossless-context@elsewhere": { "scope": "user", "installPath": "$C" } } }
J
printf '{ "enabledPlugins": { "lossless-context@elsewhere": true } }\n' >"$U/.claude/settings.json"
doctor || fail "doctor with the one-object form from another marketplace: $(cat "$T/doc.txt")"
assert_grep "$T/doc.txt" "^active: the Claude Code plugin lossless-context@elsewhere" "any marketplace's lossless-context is ours"

installed project "$T/another"
enabled "$U/.claude/settings.json" true
doctor && fail "a project install of another folder counts here: $(cat "$T/doc.txt")"
assert_grep "$T/doc.txt" "note neither is set up" "doctor says neither way is set up"
installed project "$P"
rm -f "$U/.claude/settings.json"
enabled "$P/.claude/settings.json" true
doctor || fail "doctor with a project install of this folder: $(cat "$T/doc.txt")"
assert_grep "$T/doc.txt" "enabled (scope project)" "a project install enabled in the project's settings is active"

sed -i 's/hook stop"/hook stopp"/' "$C/hooks/hooks.json"
doctor && fail "doctor passes with the plugin's Stop hook changed: $(cat "$T/doc.txt")"
assert_grep "$T/doc.txt" "missing Stop (reinstall the plugin)" "doctor names the plugin's missing hook"

echo 'not json' >"$U/.claude/plugins/installed_plugins.json"
doctor && fail "doctor passes with Claude Code's plugin record unreadable: $(cat "$T/doc.txt")"
assert_grep "$T/doc.txt" "FAIL Claude Code's plugin records: .*installed_plugins.json is not a JSON object" \
    "doctor says the plugin record cannot be read"
done_ok
