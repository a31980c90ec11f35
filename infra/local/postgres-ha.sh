#!/usr/bin/env bash
# PostgreSQL 15 (Debian's binaries) with one synchronous standby, failed over by
# Patroni (one etcd member as its DCS), behind HAProxy that routes to whichever
# node is primary now. Everything listens on 127.0.0.1 only. This shape is for
# durability tests: fsync=on, synchronous_commit=on, and Patroni's
# synchronous_mode, so a commit returns only once the standby has it.
#
# Usage: postgres-ha.sh start <workdir> <haproxy-port>
#          -> last stdout line: DATABASE_URL=postgres://svc:<password>@127.0.0.1:<haproxy-port>/postgres (a superuser)
#        postgres-ha.sh primary <workdir>              prints the node that is primary now (pg1 or pg2)
#        postgres-ha.sh kill-primary <workdir>         SIGKILLs the primary's Patroni and postgres, prints its name
#        postgres-ha.sh restart-node <workdir> <node>  starts that node's Patroni again, waits until it is a sync standby
#        postgres-ha.sh stop <workdir>
# Env: PG_BIN (default /usr/lib/postgresql/15/bin); PGHA_TIMEOUT (s, default 120)
#      bounds start and restart-node; ports other than HAProxy's are free ones
#      picked at the first start (or PGHA_ETCD_PORT, PGHA_ETCD_PEER_PORT,
#      PGHA_PG1_PORT, PGHA_PG2_PORT, PGHA_REST1_PORT, PGHA_REST2_PORT) and kept
#      in <workdir>/ports.env.
# Needs: apt-get install postgresql patroni etcd-server haproxy (their systemd
# units stay disabled: this script runs its own processes).
set -euo pipefail

HOST=127.0.0.1
NODES=(pg1 pg2)
SCOPE=svc-ha
TIMEOUT="${PGHA_TIMEOUT:-120}"
log() { printf '[postgres-ha] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() { die "usage: $0 start <workdir> <haproxy-port> | primary <workdir> | kill-primary <workdir> | restart-node <workdir> <pg1|pg2> | stop <workdir>"; }

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY=python3

# shellcheck source=infra/local/lib-postgres.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-postgres.sh"

# --- processes -----------------------------------------------------------------

cmdline() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" || true; }

# pid_of <pidfile> <substring>...: the pid in the file if that process is alive
# and its command line holds every substring (so a reused pid is never signalled).
pid_of() {
  local f="$1" pid cl s
  shift
  [[ -s "$f" ]] || return 1
  pid="$(<"$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  cl="$(cmdline "$pid")"
  [[ -n "$cl" ]] || return 1
  for s in "$@"; do [[ "$cl" == *"$s"* ]] || return 1; done
  echo "$pid"
}

# run_detached <pidfile> <logfile> <as-postgres:0|1> <cmd...>: a new session,
# stdin from /dev/null, the pid of <cmd> itself (not of setsid/runuser) in <pidfile>.
run_detached() {
  local pidf="$1" logf="$2" aspg="$3"
  shift 3
  # shellcheck disable=SC2016 # expanded by the inner bash
  local wrap=(bash -c 'echo $$ >"$0"; exec "$@"' "$pidf" "$@")
  rm -f "$pidf"
  if [[ "$aspg" == 1 && $(id -u) -eq 0 ]]; then
    setsid runuser -u postgres -- "${wrap[@]}" </dev/null >>"$logf" 2>&1 &
  else
    setsid "${wrap[@]}" </dev/null >>"$logf" 2>&1 &
  fi
  local i
  for ((i = 0; i < 50; i++)); do [[ -s "$pidf" ]] && return 0; sleep 0.1; done
  die "no pid file $pidf (see $logf)"
}

# term_wait <pid> <seconds>: SIGTERM, then SIGKILL after <seconds>.
term_wait() {
  local pid="$1" secs="$2" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < secs * 10; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  log "pid $pid still alive after ${secs}s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

etcd_pid() { pid_of "$WD/etcd.pid" etcd "--data-dir=$WD/etcd "; }
haproxy_pid() { pid_of "$WD/haproxy.pid" haproxy "$WD/haproxy.cfg "; }
patroni_pid() { pid_of "$WD/$1.pid" patroni "$WD/$1.yml "; }
# The postmaster of a node: the first line of postmaster.pid, if that process runs PG_BIN/postgres on that data dir.
postmaster_pid() {
  local data="$WD/$1" pid
  [[ -r "$data/postmaster.pid" ]] || return 1
  pid="$(head -n 1 "$data/postmaster.pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$PG_BIN/postgres" ]] || return 1
  [[ "$(cmdline "$pid")" == *"-D $data "* ]] || return 1
  echo "$pid"
}

# --- state ---------------------------------------------------------------------

set_wd() {
  [[ -d "$1" ]] || die "no workdir $1"
  WD="$(cd "$1" && pwd)"
}

load_state() {
  [[ -f "$WD/ports.env" ]] || die "$WD was not set up by $0 start"
  # shellcheck disable=SC1091
  source "$WD/ports.env"
  PASSWORD="$(<"$WD/password")"
}

node_pg_port() { if [[ "$1" == pg1 ]]; then echo "$PG1_PORT"; else echo "$PG2_PORT"; fi; }
node_rest_port() { if [[ "$1" == pg1 ]]; then echo "$REST1_PORT"; else echo "$REST2_PORT"; fi; }

free_ports() { # free_ports <n> <excluded port>: n distinct free loopback ports
  "$PY" - "$1" "$2" <<'PY'
import socket, sys
n, excl = int(sys.argv[1]), int(sys.argv[2])
socks, ports = [], []
while len(ports) < n:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
    p = s.getsockname()[1]
    if p != excl:
        ports.append(p)
print(" ".join(map(str, ports)))
PY
}

port_free() {
  "$PY" -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}

# --- health --------------------------------------------------------------------

# rest_code <node> <path>: the HTTP status of Patroni's REST API (000 if down).
rest_code() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$HOST:$(node_rest_port "$1")$2" 2>/dev/null || true
}

current_primary() {
  local n
  for n in "${NODES[@]}"; do
    patroni_pid "$n" >/dev/null || continue
    [[ "$(rest_code "$n" /primary)" == 200 ]] && { echo "$n"; return 0; }
  done
  return 1
}

# psql through HAProxy, bounded.
hsql() {
  PGPASSWORD="$PASSWORD" PGCONNECT_TIMEOUT=3 timeout 10 \
    psql -h "$HOST" -p "$HAPROXY_PORT" -U svc -d postgres -XAtq -v ON_ERROR_STOP=1 -c "$1" 2>/dev/null
}

# is_sync_standby <node>: Patroni's /sync key names it (GET /sync answers 200), so
# it is the node Patroni may promote when the primary dies.
is_sync_standby() { [[ "$(rest_code "$1" /sync)" == 200 ]]; }

# wait_sync [<node>]: a primary answers through HAProxy, and (that node as) a
# standby streams synchronously there and is the sync standby in etcd.
wait_sync() {
  local node="${1:-}" deadline=$((SECONDS + TIMEOUT)) q n
  q="select string_agg(application_name, ' ') from pg_stat_replication where sync_state = 'sync' and state = 'streaming'"
  [[ -n "$node" ]] && q+=" and application_name = '$node'"
  while ((SECONDS < deadline)); do
    if [[ "$(hsql "select pg_is_in_recovery()::text || ':' || coalesce(($q), '')" || true)" =~ ^false:(.+)$ ]]; then
      for n in ${BASH_REMATCH[1]}; do is_sync_standby "$n" && return 0; done
    fi
    sleep 0.5
  done
  return 1
}

dump_logs() {
  local f
  for f in "$WD"/etcd.log "$WD"/pg1.log "$WD"/pg2.log "$WD"/haproxy.log; do
    [[ -f "$f" ]] && { log "--- tail $f"; tail -n 25 "$f" >&2; }
  done
}

# --- config --------------------------------------------------------------------

write_patroni_yml() {
  local n="$1" f="$WD/$1.yml" pgport restport
  pgport="$(node_pg_port "$n")"
  restport="$(node_rest_port "$n")"
  cat >"$f.tmp" <<YML
# Generated by infra/local/postgres-ha.sh; rewritten at every start.
scope: $SCOPE
namespace: /service/
name: $n
log:
  level: INFO
restapi:
  listen: $HOST:$restport
  connect_address: $HOST:$restport
etcd3:
  hosts: $HOST:$ETCD_PORT
watchdog:
  mode: off
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 5
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: false
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 200
        fsync: 'on'
        synchronous_commit: 'on'
        full_page_writes: 'on'
        wal_log_hints: 'on'
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth: scram-sha-256
postgresql:
  listen: $HOST:$pgport
  connect_address: $HOST:$pgport
  data_dir: $WD/$n
  bin_dir: $PG_BIN
  pgpass: $WD/$n.pgpass
  use_unix_socket: false
  authentication:
    superuser:
      username: svc
      password: '$PASSWORD'
    replication:
      username: replicator
      password: '$REPL_PASSWORD'
  parameters:
    unix_socket_directories: ''
    password_encryption: scram-sha-256
  pg_hba:
    - host all svc $HOST/32 scram-sha-256
    - host replication replicator $HOST/32 scram-sha-256
  remove_data_directory_on_rewind_failure: false
  remove_data_directory_on_diverged_timelines: false
YML
  chmod 600 "$f.tmp"
  [[ $(id -u) -eq 0 ]] && chown postgres: "$f.tmp"
  mv "$f.tmp" "$f"
}

write_haproxy_cfg() {
  cat >"$WD/haproxy.cfg" <<CFG
# Generated by infra/local/postgres-ha.sh: TCP to whichever Patroni node answers GET /primary with 200.
global
  maxconn 400
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 2s
listen postgres
  bind $HOST:$HAPROXY_PORT
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions
  server pg1 $HOST:$PG1_PORT maxconn 200 check port $REST1_PORT
  server pg2 $HOST:$PG2_PORT maxconn 200 check port $REST2_PORT
CFG
}

# --- commands ------------------------------------------------------------------

start_patroni() {
  local n="$1"
  if patroni_pid "$n" >/dev/null; then return 0; fi
  log "starting Patroni $n (postgres on $HOST:$(node_pg_port "$n"), REST API on $HOST:$(node_rest_port "$n"))"
  run_detached "$WD/$n.pid" "$WD/$n.log" 1 patroni "$WD/$n.yml"
}

do_start() {
  local wd="$1" hport="$2"
  [[ "$hport" =~ ^[0-9]+$ ]] || usage
  local b
  for b in etcd patroni haproxy psql curl; do command -v "$b" >/dev/null || die "no $b (apt-get install patroni etcd-server haproxy postgresql-client curl)"; done
  [[ -x "$PG_BIN/postgres" ]] || die "no PostgreSQL binaries in $PG_BIN (apt-get install postgresql-15); set PG_BIN"
  mkdir -p "$wd"
  WD="$(cd "$wd" && pwd)"
  pg_workdir "$WD"
  if [[ ! -f "$WD/ports.env" ]]; then
    local p
    read -r -a p <<<"$(free_ports 6 "$hport")"
    cat >"$WD/ports.env" <<ENV
ETCD_PORT=${PGHA_ETCD_PORT:-${p[0]}}
ETCD_PEER_PORT=${PGHA_ETCD_PEER_PORT:-${p[1]}}
PG1_PORT=${PGHA_PG1_PORT:-${p[2]}}
PG2_PORT=${PGHA_PG2_PORT:-${p[3]}}
REST1_PORT=${PGHA_REST1_PORT:-${p[4]}}
REST2_PORT=${PGHA_REST2_PORT:-${p[5]}}
HAPROXY_PORT=$hport
ENV
  fi
  [[ -s "$WD/password" ]] || new_password >"$WD/password"
  [[ -s "$WD/repl-password" ]] || new_password >"$WD/repl-password"
  chmod 600 "$WD/password" "$WD/repl-password"
  # shellcheck disable=SC1091
  source "$WD/ports.env"
  PASSWORD="$(<"$WD/password")"
  REPL_PASSWORD="$(<"$WD/repl-password")"
  if [[ "$HAPROXY_PORT" != "$hport" ]]; then
    haproxy_pid >/dev/null && die "HAProxy already runs on $HAPROXY_PORT in $WD; stop first"
    sed -i "s/^HAPROXY_PORT=.*/HAPROXY_PORT=$hport/" "$WD/ports.env"
    HAPROXY_PORT="$hport"
  fi

  local started=$SECONDS
  if ! haproxy_pid >/dev/null; then
    port_free "$HAPROXY_PORT" || die "port $HAPROXY_PORT is taken"
  fi

  if ! etcd_pid >/dev/null; then
    { port_free "$ETCD_PORT" && port_free "$ETCD_PEER_PORT"; } || die "etcd's port $ETCD_PORT or $ETCD_PEER_PORT is taken"
    log "starting etcd on $HOST:$ETCD_PORT (peer $ETCD_PEER_PORT)"
    run_detached "$WD/etcd.pid" "$WD/etcd.log" 0 etcd --name=etcd0 --data-dir="$WD/etcd" \
      --listen-client-urls="http://$HOST:$ETCD_PORT" --advertise-client-urls="http://$HOST:$ETCD_PORT" \
      --listen-peer-urls="http://$HOST:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://$HOST:$ETCD_PEER_PORT" \
      --initial-cluster="etcd0=http://$HOST:$ETCD_PEER_PORT" --initial-cluster-state=new \
      --initial-cluster-token="$SCOPE" --logger=zap --log-outputs=stderr
  fi
  local deadline=$((SECONDS + 30))
  until [[ "$(curl -s --max-time 2 "http://$HOST:$ETCD_PORT/health" 2>/dev/null)" == *'"health":"true"'* ]]; do
    etcd_pid >/dev/null || { dump_logs; die "etcd exited"; }
    ((SECONDS < deadline)) || { dump_logs; do_stop_all; die "etcd not healthy within 30s"; }
    sleep 0.2
  done

  local n
  for n in "${NODES[@]}"; do write_patroni_yml "$n"; done
  # pg1 first, so that a fresh cluster bootstraps there and pg2 copies it.
  start_patroni pg1
  if [[ ! -f "$WD/pg2/PG_VERSION" ]]; then
    deadline=$((SECONDS + TIMEOUT))
    until [[ "$(rest_code pg1 /primary)" == 200 ]]; do
      patroni_pid pg1 >/dev/null || { dump_logs; do_stop_all; die "Patroni pg1 exited"; }
      ((SECONDS < deadline)) || { dump_logs; do_stop_all; die "pg1 not primary within ${TIMEOUT}s"; }
      sleep 0.5
    done
  fi
  start_patroni pg2

  if ! haproxy_pid >/dev/null; then
    write_haproxy_cfg
    haproxy -c -q -f "$WD/haproxy.cfg" >>"$WD/haproxy.log" 2>&1 || { dump_logs; do_stop_all; die "bad haproxy.cfg"; }
    log "starting HAProxy on $HOST:$HAPROXY_PORT"
    run_detached "$WD/haproxy.pid" "$WD/haproxy.log" 0 haproxy -db -f "$WD/haproxy.cfg"
  fi

  if ! wait_sync; then
    dump_logs
    do_stop_all
    die "no primary with a synchronous standby through $HOST:$HAPROXY_PORT within ${TIMEOUT}s"
  fi
  log "ready after $((SECONDS - started))s: primary $(current_primary || echo '?'), standby streaming synchronously"
  echo "DATABASE_URL=postgres://svc:$PASSWORD@$HOST:$HAPROXY_PORT/postgres"
}

do_primary() {
  set_wd "$1"
  load_state
  current_primary || die "no primary now"
}

do_kill_primary() {
  set_wd "$1"
  load_state
  local n ppid pm pids=() p pp
  n="$(current_primary)" || die "no primary now"
  ppid="$(patroni_pid "$n")" || die "Patroni $n is not running"
  # The postmaster and its children (backends, walsenders, checkpointer...: each
  # in a session of its own), all at once, as a dying machine would.
  if pm="$(postmaster_pid "$n")"; then
    pids=("$pm")
    while read -r p pp; do
      [[ "$pp" == "$pm" && "$(readlink "/proc/$p/exe" 2>/dev/null)" == "$PG_BIN/postgres" ]] && pids+=("$p")
    done < <(ps -eo pid=,ppid=)
  fi
  kill -KILL "$ppid" "${pids[@]}" 2>/dev/null || true
  log "killed $n: Patroni $ppid, postgres ${pids[*]:-(none running)}"
  echo "$n"
}

do_restart_node() {
  set_wd "$1"
  load_state
  local n="$2" started=$SECONDS
  [[ "$n" == pg1 || "$n" == pg2 ]] || usage
  patroni_pid "$n" >/dev/null && die "Patroni $n is already running"
  etcd_pid >/dev/null || die "etcd is not running in $WD"
  start_patroni "$n"
  wait_sync "$n" || { dump_logs; die "$n is not a synchronous standby within ${TIMEOUT}s"; }
  log "$n streams synchronously again after $((SECONDS - started))s"
}

# Stops everything started in $WD (ports.env may be missing after a failed first start).
do_stop_all() {
  local pid n order=()
  if pid="$(haproxy_pid)"; then term_wait "$pid" 10; fi
  # Replicas first, so that stopping the primary does not fail over to them.
  local prim=""
  if [[ -f "$WD/ports.env" ]]; then
    # shellcheck disable=SC1091
    source "$WD/ports.env"
    prim="$(current_primary || true)"
  fi
  for n in "${NODES[@]}"; do [[ "$n" != "$prim" ]] && order+=("$n"); done
  [[ -n "$prim" ]] && order+=("$prim")
  for n in "${order[@]}"; do
    if pid="$(patroni_pid "$n")"; then term_wait "$pid" 60; fi
    # A postgres left without its Patroni (e.g. Patroni was killed alone).
    if postmaster_pid "$n" >/dev/null; then
      as_pg "$PG_BIN/pg_ctl" -D "$WD/$n" -m fast -w -t 60 stop >/dev/null 2>&1 || true
    fi
  done
  if pid="$(etcd_pid)"; then term_wait "$pid" 20; fi
  rm -f "$WD"/{haproxy,pg1,pg2,etcd}.pid
}

do_stop() {
  [[ -d "$1" ]] || { log "nothing to stop in $1"; return 0; }
  set_wd "$1"
  do_stop_all
  log "stopped"
}

case "${1:-}" in
  start) [[ $# -eq 3 ]] || usage; do_start "$2" "$3" ;;
  primary) [[ $# -eq 2 ]] || usage; do_primary "$2" ;;
  kill-primary) [[ $# -eq 2 ]] || usage; do_kill_primary "$2" ;;
  restart-node) [[ $# -eq 3 ]] || usage; do_restart_node "$2" "$3" ;;
  stop) [[ $# -eq 2 ]] || usage; do_stop "$2" ;;
  *) usage ;;
esac
