#!/usr/bin/env bash
# Running Debian's PostgreSQL binaries, for postgres.sh and postgres-ha.sh.
# Sourced; expects die.

# PostgreSQL refuses to run as root: as root, everything runs as `postgres`.
as_pg() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pg_workdir <dir>: as root, hands <dir> (absolute) to the postgres user,
# readable by it alone, and lets it walk down to it.
pg_workdir() {
  [[ $(id -u) -eq 0 ]] || return 0
  id postgres >/dev/null 2>&1 || die "no postgres user (apt-get install postgresql)"
  chown postgres: "$1"
  chmod 700 "$1"
  local d="$1"
  while [[ "$d" != / ]]; do d="$(dirname "$d")"; chmod o+x "$d" 2>/dev/null || true; done
}

# A new password: 18 random bytes in base64, without '+' or '/' so it needs no
# escaping in a URL.
new_password() { head -c 18 /dev/urandom | base64 | tr '+/' 'xy'; }
