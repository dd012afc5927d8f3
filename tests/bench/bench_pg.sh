#!/bin/sh
# tests/bench/bench_pg.sh BUILD [MAX]: bench_store's figures (ingest throughput, one more turn
# at growing history, query and pattern latency; MAX messages, default 100000) on a private
# PostgreSQL server (tests/pg/pg.sh) beside the same run on SQLite files, then WRITERS
# concurrent writers (default 8, BENCH_PG_WRITERS; BENCH_PG_WRITER_MSGS messages each,
# default 5000) on each backend, each twice (BENCH_WRITERS_WARM=1: a cold round, then a warm
# one into sessions of their own: a server as it runs in use, not its first minute). Skipped, with a line saying so, when the server binaries
# are missing.
BUILD=${1:-build}
MAX=${2:-${BENCH_PG_MAX:-100000}}
. tests/pg/pg.sh
pg_available || { echo "skipped: no PostgreSQL server binaries (the postgresql package)"; exit 0; }
pg_start >/dev/null || { echo "the PostgreSQL server did not start"; exit 1; }
trap pg_stop EXIT
URL=$LCM_STORE_URL
echo "### SQLite ($MAX messages)"
env -u LCM_STORE_URL "$BUILD/bench/bench_store" "$MAX" || exit 1
echo "### PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on a unix socket ($MAX messages)"
LCM_STORE_URL=$URL "$BUILD/bench/bench_store" "$MAX" || exit 1
W=${BENCH_PG_WRITERS:-8}
WM=${BENCH_PG_WRITER_MSGS:-5000}
echo "### $W concurrent writers, SQLite (a file per session) beside PostgreSQL (one database)"
env -u LCM_STORE_URL BENCH_WRITERS_WARM=1 "$BUILD/bench/bench_writers" "$W" "$WM" || exit 1
LCM_STORE_URL=$URL BENCH_WRITERS_WARM=1 "$BUILD/bench/bench_writers" "$W" "$WM" || exit 1
