#!/bin/bash
# Start-up of the postgres stand-in, as the official image's for what compose
# uses: on an empty PGDATA, initdb with POSTGRES_USER and POSTGRES_PASSWORD,
# create POSTGRES_DB, accept password (SCRAM) logins from the network; then
# run the server in the foreground as the postgres user (PID 1).
set -euo pipefail
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

mkdir -p "$PGDATA"
chown postgres:postgres "$PGDATA"
chmod 700 "$PGDATA"
if [[ ! -s "$PGDATA/PG_VERSION" ]]; then
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  if [[ "$db" != postgres ]]; then
    # Single-user mode: no server, no socket, nothing to wait for.
    echo "CREATE DATABASE \"$db\" OWNER \"$user\";" | as_postgres postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "postgres stand-in: initialised $PGDATA (user $user, database $db)"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" -c listen_addresses='*' "$@"
