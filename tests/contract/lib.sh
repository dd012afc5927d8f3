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
SERVER_PID=""
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"; }
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
    while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
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
