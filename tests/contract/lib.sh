# Shared helpers for contract tests (sourced). Each test gets a fresh temp folder T
# with an agent home, and the built plugin directory. Any failed check exits 1.
set -u
BUILD=${BUILD:-$(pwd)/build}
ROOT=${ROOT:-$(pwd)}
HOST="$BUILD/agent-host"
PLUGINS="$BUILD/plugins"
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-contract.XXXXXX")
HOME_DIR="$T/home"
mkdir -p "$HOME_DIR"
# SERVER_PID (the fake model) and HOST_PID (a host in the background), when set, are
# stopped at exit; KEEP=1 keeps T.
SERVER_PID=""
HOST_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
    [ -n "$HOST_PID" ] && kill "$HOST_PID" 2>/dev/null
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
checks=0
fail() { echo "FAIL: $*"; exit 1; }
ok() { checks=$((checks+1)); }
# assert_contains FILE_OR_TEXT NEEDLE DESCRIPTION
assert_grep() { grep -q -- "$2" "$1" || { echo "--- $1:"; head -c 3000 "$1"; fail "$3"; }; ok; }
assert_nogrep() { ! grep -q -- "$2" "$1" || { echo "--- $1:"; head -c 3000 "$1"; fail "$3"; }; ok; }
assert_eq() { [ "$1" = "$2" ] || fail "$3 (got '$1', expected '$2')"; ok; }
# jq-free JSON checks: run a python expression over a JSONL file; `rows` is the list.
pyjsonl() { python3 - "$@" <<'PY'
import json, sys
path, expr = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
ok = eval(expr, {"rows": rows, "json": json})
sys.exit(0 if ok else 1)
PY
}
assert_jsonl() { pyjsonl "$1" "$2" || fail "$3"; ok; }
done_ok() { echo "ok: $checks checks"; }
# start_fake RECORD [OPTIONS...]: (re)start the loopback model (tests/contract/fake_openai.py)
# recording to RECORD, with those options (unscripted: its default agent); sets PORT. The
# EXIT trap stops it.
start_fake() {
    _record=$1
    shift
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    : > "$T/port"
    python3 "$ROOT/tests/contract/fake_openai.py" --port 0 --record "$_record" "$@" \
        > "$T/port" 2>"$T/server.err" &
    SERVER_PID=$!
    i=0
    # Python's start takes seconds on a loaded machine: wait up to 30 s unless it died.
    while [ ! -s "$T/port" ] && [ $i -lt 600 ] && kill -0 "$SERVER_PID" 2>/dev/null; do
        sleep 0.05; i=$((i+1))
    done
    PORT=$(head -n 1 "$T/port")
    [ -n "$PORT" ] || { cat "$T/server.err"; fail "fake model server did not start"; }
}
# start_server SCRIPT RECORD [OPTIONS...]: start_fake answering from the script SCRIPT.
start_server() {
    _script=$1 _rec=$2
    shift 2
    start_fake "$_rec" --script "$_script" "$@"
}
# run_prompt SESSION OUT ERR WHY PROMPT [ARGS...]: one prompt through the host with the
# plugins, on the fake model at PORT, cwd T/work, with ARGS; stdout to OUT, stderr to ERR.
# A failed run shows both and fails saying WHY.
run_prompt() {
    _session=$1 _out=$2 _err=$3 _why=$4 _prompt=$5
    shift 5
    "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$_session" --cwd "$T/work" \
        --base-url "http://127.0.0.1:$PORT/v1" --model fake "$@" -p "$_prompt" \
        > "$_out" 2> "$_err" || { cat "$_out" "$_err"; fail "$_why"; }
    ok
}
# start_host_fifo SESSION OUT ERR [ARGS...]: the host in the background (HOST_PID) on the
# fake model at PORT, with session SESSION, cwd T/work and ARGS, reading its prompts from the
# fifo T/in, which fd 3 holds open for writing (`echo PROMPT >&3`; `exec 3>&-` ends it);
# stdout to OUT, stderr to ERR.
start_host_fifo() {
    _session=$1 _out=$2 _err=$3
    shift 3
    mkfifo "$T/in"
    "$HOST" --home "$HOME_DIR" --session "$_session" --cwd "$T/work" \
        --base-url "http://127.0.0.1:$PORT/v1" --model fake "$@" <"$T/in" >"$_out" 2>"$_err" &
    HOST_PID=$!
    exec 3>"$T/in"
}
# hello_session FILE ID CWD TEXT: a Pi session file (version 3) of two messages: the user's
# TEXT (entry u1) and the assistant's "hi" (entry a1, with usage).
hello_session() {
    cat > "$1" <<JSONL
{"type":"session","version":3,"id":"$2","timestamp":"2026-01-01T00:00:00.000Z","cwd":"$3"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"$4"}],"timestamp":1767225601000}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"openai-completions","provider":"generated","model":"gen-1","stopReason":"stop","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15},"timestamp":1767225602000}}
JSONL
}
# new_session SID FILE: an empty Pi session file (version 3) with the id SID and cwd T/work.
new_session() {
    printf '{"type":"session","version":3,"id":"%s","timestamp":"2025-11-29T17:00:00.000Z","cwd":"%s"}\n' \
        "$1" "$T/work" > "$2"
}
# clm_session SID: the live-context tests' start: T/work, T/tmp as TMPDIR (where the plugin
# keeps its mirrors), the session file S (new_session SID) and MIRROR, the path of the
# LIVE_CONTEXT.md the plugin writes for it. A known id makes the mirror's path known in advance.
clm_session() {
    mkdir -p "$T/work" "$T/tmp"
    export TMPDIR="$T/tmp"
    SID=$1
    MIRROR="$T/tmp/lossless-context-$SID/LIVE_CONTEXT.md"
    S="$T/s.jsonl"
    new_session "$SID" "$S"
}
# replay_hellos ID NEEDLE CWD: three sessions replayed into the agent home (T/outN.jsonl):
# hello_session N of id IDN, cwd CWDN and the text "NEEDLE_N planted", N = 1..3.
replay_hellos() {
    for _n in 1 2 3; do
        hello_session "$T/in$_n.jsonl" "$1$_n" "$3$_n" "$2_$_n planted"
        "$HOST" --home "$HOME_DIR" --plugin-dir "$PLUGINS" --session "$T/out$_n.jsonl" replay "$T/in$_n.jsonl" \
            >"$T/r$_n.out" 2>&1 || { cat "$T/r$_n.out"; fail "replay $_n"; }
    done
    ok
}
# -- a terminal program in tmux, read back from its screen --------------------------------
# tui_start NAME SCRIPT STDERR: `sh SCRIPT` in a detached 120x40 tmux session NAME, on a tmux
# server of the test's own (its socket in T, so no other session is touched; killed at exit).
# STDERR is the program's stderr file, shown with the screen when a wait fails.
tui_start() {
    TUI=$1 TUI_SCRIPT=$2 TUI_STDERR=$3
    TM="tmux -S $T/tmux.sock"
    trap tui_cleanup EXIT
    $TM new-session -d -s "$TUI" -x 120 -y 40 "sh $TUI_SCRIPT" || fail "tmux cannot start a session"
}
# tui_restart: the script started again in a new session (TUI names it), then the old one
# killed with its program. In that order: killing the server's only session makes the server
# exit, and a new-session racing that exit fails with "server exited unexpectedly".
tui_restart() {
    _tui_old=$TUI
    TUI=$TUI-again
    $TM new-session -d -s "$TUI" -x 120 -y 40 "sh $TUI_SCRIPT" || fail "tmux cannot start a second session"
    $TM kill-session -t "$_tui_old"
}
tui_cleanup() { $TM kill-server 2>/dev/null; cleanup; }
screen() { $TM capture-pane -p -t "$TUI"; }
keys() { $TM send-keys -t "$TUI" "$@"; }
tui_dump() {
    [ -n "${TUI:-}" ] || return 0
    echo "--- screen:"; screen
    echo "--- stderr:"; tail -n 20 "$TUI_STDERR" 2>/dev/null
}
# poll WHAT CMD [ARGS...]: CMD again every 0.1 s (at most 200 times) until it succeeds; else
# the screen (after tui_start) and a FAIL saying WHAT.
poll() {
    _what=$1
    shift
    _i=0
    until "$@"; do
        _i=$((_i + 1))
        [ $_i -le 200 ] || { tui_dump; fail "$_what"; }
        sleep 0.1
    done
    ok
}
shows() { screen | grep -qF -- "$1"; }
hides() { ! screen | grep -qF -- "$1"; }
shows_re() { screen | grep -q -- "$1"; }
# wait_for TEXT WHAT / wait_gone TEXT WHAT: until the screen shows TEXT (a fixed string) /
# no longer shows it.
wait_for() { poll "$2" shows "$1"; }
wait_gone() { poll "$2" hides "$1"; }
# dreamed_contract: dream's generated history (dream_history.py) for the project $T/work2,
# imported and dreamed in HOME_DIR; sets W2 (the project) and CID (the first Pending contract).
dreamed_contract() {
    W2="$T/work2"
    mkdir -p "$W2" "$T/gen"
    python3 "$ROOT/tests/contract/dream_history.py" "$T/gen" "$W2" || fail "generate the history"
    "$BUILD/lcm" import --home "$HOME_DIR" "$T/gen"/dream-s*.jsonl >/dev/null 2>&1 || fail "import the history"
    "$BUILD/lcm" dream --home "$HOME_DIR" --project "$W2" >/dev/null 2>&1 || fail "dream the history"
    "$BUILD/lcm" contracts --home "$HOME_DIR" list --state Pending >"$T/p.txt" 2>&1
    CID=$(sed -n 's/^#\([0-9]*\) \[Pending\].*/\1/p' "$T/p.txt" | head -1)
    [ -n "$CID" ] || { cat "$T/p.txt"; fail "a Pending contract to work with"; }
}
