#!/bin/sh
# Install what the build needs if it is missing: Debian packages, apt-get when root,
# otherwise print the exact line to run. Quiet when everything is present. Run by
# `make` (once per build folder, tests/contract/test_deps.sh), `make demo`, `make test`.
# For tests, three variables stand in for the machine: DEPS_MISSING="pkg ..." is the
# missing list (instead of probing), DEPS_UID the user id (instead of `id -u`), and
# DEPS_DRY_RUN=1 prints the apt-get commands the root path would run instead of running them.
pkgs=""
have() { pkg-config --exists "$1" 2>/dev/null; }
if [ -n "${DEPS_MISSING+set}" ]; then
    for p in $DEPS_MISSING; do pkgs="$pkgs $p"; done
else
    command -v pkg-config >/dev/null 2>&1 || pkgs="$pkgs pkg-config"
    have sqlite3 || pkgs="$pkgs libsqlite3-dev"
    have zlib || pkgs="$pkgs zlib1g-dev"
    have libcjson || pkgs="$pkgs libcjson-dev"
    have libcurl || pkgs="$pkgs libcurl4-openssl-dev"
    have cmocka || pkgs="$pkgs libcmocka-dev"
    have libpcre2-8 || pkgs="$pkgs libpcre2-dev"
    have libpq || pkgs="$pkgs libpq-dev"
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 ||
        pkgs="$pkgs postgresql"
    have ncursesw || pkgs="$pkgs libncurses-dev"
    command -v tmux >/dev/null 2>&1 || pkgs="$pkgs tmux"
    command -v cc >/dev/null 2>&1 || pkgs="$pkgs gcc"
    command -v python3 >/dev/null 2>&1 || pkgs="$pkgs python3"
    command -v tmux >/dev/null 2>&1 || pkgs="$pkgs tmux"
fi
[ -z "$pkgs" ] && exit 0
if [ "${DEPS_UID:-$(id -u)}" = 0 ]; then
    echo "installing:$pkgs"
    if [ -n "${DEPS_DRY_RUN:-}" ]; then
        echo "would run:  apt-get update -qq && apt-get install -y -qq$pkgs"
        exit 0
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq $pkgs >/dev/null || {
        echo "apt-get install failed for:$pkgs"; exit 1; }
else
    echo "missing packages; run:  sudo apt-get install -y$pkgs"
    exit 1
fi
