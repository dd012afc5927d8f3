#!/bin/sh
# Install what the build needs if it is missing: Debian packages, apt-get when root,
# otherwise print the exact line to run. Quiet when everything is present.
pkgs=""
have() { pkg-config --exists "$1" 2>/dev/null; }
command -v pkg-config >/dev/null 2>&1 || pkgs="$pkgs pkg-config"
have sqlite3 || pkgs="$pkgs libsqlite3-dev"
have libcjson || pkgs="$pkgs libcjson-dev"
have libcurl || pkgs="$pkgs libcurl4-openssl-dev"
have cmocka || pkgs="$pkgs libcmocka-dev"
have libpcre2-8 || pkgs="$pkgs libpcre2-dev"
command -v cc >/dev/null 2>&1 || pkgs="$pkgs gcc"
command -v python3 >/dev/null 2>&1 || pkgs="$pkgs python3"
[ -z "$pkgs" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "installing:$pkgs"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq $pkgs >/dev/null || {
        echo "apt-get install failed for:$pkgs"; exit 1; }
else
    echo "missing packages; run:  sudo apt-get install -y$pkgs"
    exit 1
fi
