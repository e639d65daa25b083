#!/usr/bin/env bash
# A PostgreSQL server of CI's own for the session store tests (io-tokio feature `postgres`):
# the distribution's package (installed when `initdb` is missing, as nginx.sh installs
# nginx-light), a data directory of its own in DIR, listening on a free loopback port only
# (its socket in DIR too), trust authentication for the `postgres` role. Run as the
# invoking user, or as `postgres` when that is root (PostgreSQL refuses root).
#
#   .ci/postgres.sh start DIR   # prints the URL: postgres://postgres@127.0.0.1:PORT/postgres
#   .ci/postgres.sh stop DIR
#
# `.ci/run` starts it before the tests, exports the URL as MCP_TEST_PG_URL (the tests'
# `pg_support` reads it; tests that stop the database start servers of their own with
# the same binaries), and stops it at exit.
set -euo pipefail
cmd="${1:?start or stop}"
dir="${2:?a directory for the data}"

bindir() {
  if command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return
  fi
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    bin="$(bindir || true)"
    if [ -z "$bin" ]; then
      (apt-get install -y postgresql || sudo apt-get install -y postgresql) >/dev/null
      bin="$(bindir)"
    fi
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    as_pg "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-locale --no-sync >/dev/null
    as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >/dev/null \
      || { cat "$dir/log" >&2; exit 1; }
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    bin="$(bindir || true)"
    if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
      as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
