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
