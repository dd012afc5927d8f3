#!/bin/sh
# Store paths never follow a link (issue 14, item 3). Through the real host and plugin: a
# symlink planted at HOME/lcm/SESSION.sqlite, a symlinked HOME/lcm/ folder and a dangling
# link at the store path are each refused with a message naming the path (shown to the
# user at start and in /lcm status, LCM not active), the link's target keeps its mode and
# content (the old code chmod'ed it 0600 / 0700), and nothing is created outside the
# private folder. A plain home still gets its store.
. "$(dirname "$0")/lib.sh"
SID=links-0001
IN="$T/in.jsonl"
hello_session "$IN" links-0001 /work/links "hello LINKS_MARKER"
mkdir -p "$T/outside"
host() { # HOME OUT ARGS...
    h=$1; o=$2; shift 2
    "$HOST" --home "$h" --plugin-dir "$PLUGINS" --session "$T/$(basename "$h").jsonl" "$@" > "$o" 2>&1
}
mode() { stat -c %a "$1"; }

# 1. a symlinked store file: its target is a file of the user's, mode 0644
H1="$T/h1"; mkdir -p "$H1/lcm"; chmod 0700 "$H1/lcm"
printf 'VICTIM_CONTENT\n' > "$T/outside/victim"; chmod 0644 "$T/outside/victim"
ln -s "$T/outside/victim" "$H1/lcm/$SID.sqlite"
host "$H1" "$T/r1" replay "$IN" || { cat "$T/r1"; fail "replay with a symlinked store exits 0"; }
ok
assert_grep "$T/r1" "store: the store file $H1/lcm/$SID.sqlite is a symlink (to $T/outside/victim), which is never followed; LCM is not active" "the user is told the store file link is refused, naming it"
host "$H1" "$T/s1" --command "/lcm status" || { cat "$T/s1"; fail "/lcm status"; }
assert_grep "$T/s1" "^LCM: store not open (.*$H1/lcm/$SID.sqlite is a symlink" "/lcm status says LCM is not active and why"
assert_eq "$(mode "$T/outside/victim")" "644" "the link's target keeps its mode"
assert_eq "$(cat "$T/outside/victim")" "VICTIM_CONTENT" "the link's target keeps its content"
[ -L "$H1/lcm/$SID.sqlite" ] || fail "the link itself is left as it was"; ok

# 2. a symlinked lcm/ folder: its target is a folder of the user's, mode 0755
H2="$T/h2"; mkdir -p "$H2" "$T/outside/dir"; chmod 0755 "$T/outside/dir"
ln -s "$T/outside/dir" "$H2/lcm"
host "$H2" "$T/r2" replay "$IN" || { cat "$T/r2"; fail "replay with a symlinked folder exits 0"; }
ok
assert_grep "$T/r2" "store: the store folder $H2/lcm is a symlink (to $T/outside/dir), which is never followed; LCM is not active" "the folder link is refused, naming it"
host "$H2" "$T/s2" --command "/lcm status" || fail "/lcm status"
assert_grep "$T/s2" "^LCM: store not open (.*store folder $H2/lcm is a symlink" "/lcm status names the folder link"
assert_eq "$(mode "$T/outside/dir")" "755" "the folder link's target keeps its mode"
assert_eq "$(ls -A "$T/outside/dir" | wc -l)" "0" "nothing is created in the folder link's target"

# 3. a dangling link at the store path: refused, nothing created at its target
H3="$T/h3"; mkdir -p "$H3/lcm"
ln -s "$T/outside/created-by-store.sqlite" "$H3/lcm/$SID.sqlite"
host "$H3" "$T/r3" replay "$IN" || { cat "$T/r3"; fail "replay with a dangling link exits 0"; }
ok
assert_grep "$T/r3" "store: the store file $H3/lcm/$SID.sqlite is a symlink (to $T/outside/created-by-store.sqlite)" "a dangling link is refused, naming it"
[ ! -e "$T/outside/created-by-store.sqlite" ] || fail "a dangling link creates nothing outside the private folder"; ok
host "$H3" "$T/g3" --tool lcm_grep '{"query":"LINKS_MARKER"}'
assert_grep "$T/g3" "the store is not open" "recall says the store is not open"

# 4. a plain home: the store is made, private, and holds the session
H4="$T/h4"
host "$H4" "$T/r4" replay "$IN" || { cat "$T/r4"; fail "plain replay"; }
assert_nogrep "$T/r4" "symlink" "a plain home warns of no link"
assert_eq "$(mode "$H4/lcm")" "700" "the store folder is 0700"
assert_eq "$(mode "$H4/lcm/$SID.sqlite")" "600" "the store file is 0600"
host "$H4" "$T/g4" --tool lcm_grep '{"query":"LINKS_MARKER"}' || { cat "$T/g4"; fail "grep"; }
assert_grep "$T/g4" "u1 \[user\]" "the plain store holds the session"
done_ok
