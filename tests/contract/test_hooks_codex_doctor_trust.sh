#!/bin/sh
# Codex runs a hook of hooks.json only once the user trusted it (its /hooks view records
# [hooks.state."<hooks.json>:<event>:<group>:<handler>"] trusted_hash = ... in config.toml),
# so `lcm hooks doctor --agent codex` fails until each of lcm's hooks has its trust recorded
# under the key Codex gives it -- which counts the user's own hooks before ours -- and says how
# to give it. (tests/e2e/codex/live.sh checks the same keys against the real Codex.)
. "$(dirname "$0")/lib.sh"
LCM="$BUILD/lcm"
U="$T/u"
S="$T/store"
mkdir -p "$U/.codex"
printf 'model = "gpt-5-codex"\n' >"$U/.codex/config.toml"
# the user's own Stop hook is group 0 of Stop: lcm's is group 1
printf '{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}]}}\n' >"$U/.codex/hooks.json"
HOME="$U" "$LCM" hooks install --agent codex --home "$S" >"$T/install.txt" || fail "install"
assert_grep "$T/install.txt" "trust them (its /hooks view)" "install says the hooks need the user's trust"
doctor() { PATH="$BUILD:$PATH" HOME="$U" "$LCM" hooks doctor --agent codex --home "$S" >"$T/doc$1.txt"; echo $?; }
K="$U/.codex/hooks.json"

assert_eq "$(doctor 1)" "1" "doctor fails while no hook of lcm is trusted"
assert_grep "$T/doc1.txt" "^FAIL Codex trusts the SessionStart hook ($K:session_start:0:0 " "the SessionStart key"
assert_grep "$T/doc1.txt" "^FAIL Codex trusts the Stop hook ($K:stop:1:0 " "the Stop key counts the user's own group"
assert_grep "$T/doc1.txt" "type /hooks and trust" "the failure says how to trust"

# trust as /hooks writes it, for SessionStart, and for the user's own Stop hook (not ours)
printf '\n[hooks.state."%s:session_start:0:0"]\ntrusted_hash = "sha256:aa"\n\n[hooks.state."%s:stop:0:0"]\ntrusted_hash = "sha256:bb"\n' \
    "$K" "$K" >>"$U/.codex/config.toml"
assert_eq "$(doctor 2)" "1" "doctor still fails: lcm's Stop hook is not trusted"
assert_grep "$T/doc2.txt" "^ok   Codex trusts the SessionStart hook" "SessionStart is trusted"
assert_grep "$T/doc2.txt" "^FAIL Codex trusts the Stop hook" "the user's own Stop hook's trust is not lcm's"

# an inline table under [hooks.state] is the same record
printf '\n[hooks.state]\n"%s:stop:1:0" = { trusted_hash = "sha256:cc" }\n' "$K" >>"$U/.codex/config.toml"
assert_eq "$(doctor 3)" "0" "doctor passes once every hook of lcm is trusted ($(cat "$T/doc3.txt"))"
assert_grep "$T/doc3.txt" "^ok   Codex trusts the Stop hook ($K:stop:1:0 " "the Stop hook is trusted"
done_ok
