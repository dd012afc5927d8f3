# tests/pg/pg.sh -- sourced by tests that need a real PostgreSQL server: pg_start makes a
# cluster in a temporary folder (initdb as the postgres user when run as root; the folder
# is then owned by postgres), starts it listening only on a private unix socket in that
# folder (no TCP), with trust authentication, creates database `lcm` and exports
# LCM_STORE_URL=postgresql:///lcm?host=DIR&user=postgres. pg_stop stops it and deletes the
# folder; pg_restart restarts it (a server restart in the middle of a run). pg_available
# says whether the binaries exist (Debian: /usr/lib/postgresql/*/bin; tests/deps.sh installs
# the postgresql package). The caller's EXIT trap should call pg_stop.
PG_DIR=""
PG_BIN=""
pg_find_bin() {
    [ -n "$PG_BIN" ] && return 0
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n -r); do
        [ -x "$d/initdb" ] && { PG_BIN=$d; return 0; }
    done
    _i=$(command -v initdb 2>/dev/null) && [ -n "$_i" ] && { PG_BIN=$(dirname "$_i"); return 0; }
    return 1
}
pg_available() { pg_find_bin; }
# pg_begin: a contract test's server, from its first line to its exit (lib.sh sourced first):
# the EXIT trap stops it, a missing server or a failed start fails the test with the reason.
pg_begin() {
    trap 'pg_stop; cleanup' EXIT
    pg_available || fail "no PostgreSQL server binaries (tests/deps.sh installs the postgresql package)"
    pg_start >"$T/pg_start.txt" 2>&1 || { cat "$T/pg_start.txt"; fail "the PostgreSQL server did not start"; }
}
# Run a server binary: as the postgres user when we are root (initdb refuses root).
pg_as() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
pg_start() {
    pg_find_bin || { echo "pg.sh: no initdb/pg_ctl (install the postgresql package)"; return 1; }
    PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/lc-pg.XXXXXX") || return 1
    chmod 0700 "$PG_DIR"
    [ "$(id -u)" = 0 ] && chown postgres: "$PG_DIR"
    pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
        >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log"; return 1; }
    pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
        -o "-c listen_addresses='' -k $PG_DIR -c fsync=off -c max_connections=200" start >/dev/null ||
        { cat "$PG_DIR/server.log"; return 1; }
    pg_as "$PG_BIN/createdb" -h "$PG_DIR" -U postgres lcm || return 1
    export LCM_STORE_URL="postgresql:///lcm?host=$PG_DIR&user=postgres"
    PG_PSQL="$PG_BIN/psql -X -q -A -t -h $PG_DIR -U postgres lcm"
}
pg_restart() {
    pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 -m fast \
        -o "-c listen_addresses='' -k $PG_DIR -c fsync=off -c max_connections=200" restart >/dev/null
}
pg_stop() {
    [ -n "$PG_DIR" ] || return 0
    pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1
    rm -rf "$PG_DIR"
    PG_DIR=""
}
# pg_sql SQL: one query's rows (unaligned, tuples only) on database lcm.
pg_sql() { $PG_PSQL -c "$1"; }
