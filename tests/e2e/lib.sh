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
# the lock changes or NODE_DIR/node_modules/.bin/BIN is missing. WHAT names them in
# messages; npm's output goes to LOG (shown when it fails, which fails the script).
e2e_pinned() {
    _src=$1 _dir=$2 _bin=$3 _what=$4 _log=$5
    mkdir -p "$_dir"
    _stamp=$(cat "$_src/package.json" "$_src/package-lock.json" | sha256sum | cut -c1-16)
    if [ "$(cat "$_dir/.stamp" 2>/dev/null)" != "$_stamp" ] || [ ! -x "$_dir/node_modules/.bin/$_bin" ]; then
        echo "installing the pinned $_what into $_dir"
        cp "$_src/package.json" "$_src/package-lock.json" "$_dir/"
        (cd "$_dir" && npm ci --no-audit --no-fund --loglevel=error) >"$_log" 2>&1 ||
            { cat "$_log"; echo "FAIL: npm ci of the pinned $_what failed"; exit 1; }
        echo "$_stamp" >"$_dir/.stamp"
    fi
}
