#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for tests and benchmarks, on 127.0.0.1 with trust auth.
#   scripts/pg-test-server.sh start   -> prints two lines: the database URL, then the cluster folder
#   scripts/pg-test-server.sh stop DIR -> stops that cluster and removes its folder
# PostgreSQL refuses to run as root, so as root the cluster runs as the 'postgres' user (Debian's package creates it).
set -euo pipefail

bindir() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  if command -v pg_ctl >/dev/null 2>&1; then dirname "$(readlink -f "$(command -v pg_ctl)")"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$d" ]; then echo "pg-test-server: PostgreSQL not found (apt-get install -y postgresql)" >&2; exit 3; fi
  echo "$d"
}

as_pg() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

cmd=${1:-start}
case "$cmd" in
  start)
    BIN=$(bindir)
    DIR=$(mktemp -d /tmp/rft-pg.XXXXXX)
    OK=0
    # A failed start leaves nothing behind: no running server, no folder.
    trap 'if [ "$OK" != 1 ]; then as_pg "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$DIR"; fi' EXIT
    chmod 755 "$DIR"
    if [ "$(id -u)" = "0" ]; then chown postgres: "$DIR"; fi
    as_pg "$BIN/initdb" -D "$DIR/data" -A trust -U postgres -E UTF8 --no-sync >"$DIR/initdb.log" 2>&1 \
      || { cat "$DIR/initdb.log" >&2 || true; exit 4; }
    for attempt in 1 2 3; do
      PORT=$(free_port)
      if as_pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 \
          -o "-h 127.0.0.1 -p $PORT -k $DIR -c max_connections=200" start >/dev/null 2>&1; then
        break
      fi
      PORT=""
    done
    if [ -z "$PORT" ]; then cat "$DIR/server.log" >&2 || true; exit 5; fi
    as_pg "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres rft_test
    OK=1
    echo "postgres://postgres@127.0.0.1:$PORT/rft_test"
    echo "$DIR"
    ;;
  stop)
    DIR=${2:?usage: pg-test-server.sh stop DIR}
    case "$DIR" in /tmp/rft-pg.*) ;; *) echo "pg-test-server: refusing to remove '$DIR'" >&2; exit 2;; esac
    BIN=$(bindir)
    as_pg "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
    ;;
  *) echo "usage: $0 start | stop DIR" >&2; exit 2;;
esac
