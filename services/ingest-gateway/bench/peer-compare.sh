#!/usr/bin/env bash
# peer-compare.sh: our gateway beside rudder-server's, with the shared load generator, on equal durability.
#
# usage: PEER_SCRIPT=../shared/bench/peer-rudder.sh LOAD_MJS=../shared/bench/load.mjs \
#          services/ingest-gateway/bench/peer-compare.sh [concurrency ...]     (default 4 8 16 32)
#
# Both gateways commit every request to the same PostgreSQL server (the peer script's, Debian's, stock
# settings, fsync on) before their 200: rudder-server its jobs, ours the Postgres-backed log (the embedded
# tier `npm start` runs). Per step, in turn which goes first: a fresh peer database and a fresh one of
# ours (20 organisations, a write key each), then the same load (`load.mjs`: 100 events of 1 KB per
# request, --users 100000, a random loopback X-Forwarded-For per request, our 20 keys in rotation) for
# STEP_S seconds against each. Gateway CPU is read from /proc (user + system) over the step. Prints one
# markdown table. Every process it starts it ends, by pid; everything listens on 127.0.0.1 only.
# env: STEP_S (15), PEER_DIR (/tmp/peer), BUILD (this repository: its dist/ is measured), OURS_WORKERS
# (1: our gateway's GATEWAY_WORKERS), OURS_TIER (postgres; `kafka`: ours on a local broker and registry
# started once for the run, infra/local, full JIT: a 200 then means the broker acknowledged with acks=all
# (one broker, so one copy), the keys and limits still on the same PostgreSQL server), OURS_NODE_ARGS (more
# node options for our gateway, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`: one profile per worker at its exit).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(cd "$here/../../.." && pwd)}
PEER_SCRIPT=${PEER_SCRIPT:?the peer start script (shared bench/peer-rudder.sh)}
LOAD_MJS=${LOAD_MJS:?the shared load generator (shared bench/load.mjs)}
PEER_DIR=${PEER_DIR:-/tmp/peer}
STEP_S=${STEP_S:-15}
STEPS=("$@"); [ ${#STEPS[@]} -gt 0 ] || STEPS=(4 8 16 32)
TICKS=$(getconf CLK_TCK)
OURS_TIER=${OURS_TIER:-postgres}
ours_pid=""
infra_dir=""
cleanup() {
  [ -n "$ours_pid" ] && kill "$ours_pid" 2> /dev/null || true
  bash "$PEER_SCRIPT" stop "$PEER_DIR" > /dev/null 2>&1 || true
  if [ -n "$infra_dir" ]; then
    bash "$BUILD/infra/local/registry.sh" stop "$infra_dir/registry" > /dev/null 2>&1 || true
    bash "$BUILD/infra/local/kafka.sh" stop "$infra_dir/kafka" > /dev/null 2>&1 || true
    rm -rf "$infra_dir"
  fi
}
trap cleanup EXIT

# A process's CPU and its children's (our gateway's workers, with OURS_WORKERS above 1).
cpu_ticks() {
  local pids="$1 $(cat "/proc/$1/task/$1/children" 2> /dev/null)"
  for p in $pids; do awk '{print $14 + $15}' "/proc/$p/stat" 2> /dev/null; done | awk '{s += $1} END {print s}'
}
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
svcctl() { DATABASE_URL=$OURS_DB node "$BUILD/tools/svcctl/dist/main.js" "$@"; }

# One measured run of load.mjs against a gateway whose pid is $1; prints "events_per_s p99 cpu_us_per_event".
measure() {
  local pid=$1 url=$2 auth=$3 conc=$4 before after out
  before=$(cpu_ticks "$pid")
  out=$(node "$LOAD_MJS" --url "$url" --auth "$auth" --xff --concurrency "$conc" --seconds "$STEP_S")
  after=$(cpu_ticks "$pid")
  node -e '
    const r = JSON.parse(process.argv[1]); const ticks = Number(process.argv[2]), hz = Number(process.argv[3]), secs = Number(process.argv[4]);
    const events = r.events_per_s * secs; const bad = Object.entries(r.status).filter(([s]) => s !== "200").reduce((n, [, c]) => n + c, 0);
    console.log([r.events_per_s, r.p99_ms, events ? Math.round((ticks / hz) * 1e6 / events) : 0, bad].join(" "));
  ' "$out" "$((after - before))" "$TICKS" "$STEP_S"
}

ours_bus_env=()
if [ "$OURS_TIER" = kafka ]; then
  infra_dir=$(mktemp -d /tmp/peer-compare-infra.XXXXXX)
  mkdir -p "$infra_dir/kafka" "$infra_dir/registry"
  kafka_port=$(free_port)
  KAFKA_CONTROLLER_PORT=$(free_port) KAFKA_JVM_OPTS='' bash "$BUILD/infra/local/kafka.sh" start "$infra_dir/kafka" "$kafka_port" | tail -1 > "$infra_dir/kafka.env"
  REGISTRY_JVM_OPTS='' bash "$BUILD/infra/local/registry.sh" start "$infra_dir/registry" "$(free_port)" | tail -1 > "$infra_dir/registry.env"
  ours_bus_env=("$(cat "$infra_dir/kafka.env")" "$(cat "$infra_dir/registry.env")" KAFKA_REPLICATION_FACTOR=1 KAFKA_MIN_INSYNC_REPLICAS=1)
fi

echo "| concurrency | ours events/s | rudder events/s | ratio | p99 ours / rudder ms | gateway CPU µs/event ours / rudder | non-200 ours / rudder |"
echo "|---|---|---|---|---|---|---|"
n=0
for conc in "${STEPS[@]}"; do
  bash "$PEER_SCRIPT" stop "$PEER_DIR" > /dev/null 2>&1 || true
  bash "$PEER_SCRIPT" start "$PEER_DIR" --fresh > /dev/null
  # shellcheck disable=SC1091
  . "$PEER_DIR/run/peer.env"
  . "$PEER_DIR/run/state.env"
  peer_pid=$(cat "$PEER_DIR/run/rudder.pid")
  # Our database on the same server, fresh.
  psql -X -q -h "$PEER_DIR/pg/run" -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 \
    -c "drop database if exists svc_bench" -c "do \$\$ begin if not exists (select from pg_roles where rolname = 'svc') then create role svc login password 'svc'; end if; end \$\$" \
    -c "create database svc_bench owner svc" > /dev/null
  OURS_DB="postgresql://svc:svc@127.0.0.1:$PG_PORT/svc_bench"
  svcctl migrate > /dev/null
  auth=""
  for i in $(seq 1 20); do
    org=$(svcctl org create --name "bench $i" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).id))')
    key=$(svcctl key create --org "$org" --type write | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).key))')
    auth+="${auth:+|}Bearer $key"
  done
  port=$(free_port)
  env "${ours_bus_env[@]}" TOPIC_PREFIX="peercmp$n." \
    DATABASE_URL=$OURS_DB HOST=127.0.0.1 PORT=$port LOG_LEVEL=warn TRUSTED_PROXIES=127.0.0.1 GATEWAY_WORKERS=${OURS_WORKERS:-1} \
    RAW_LOG_MASTER_KEY=$(openssl rand -hex 32) IDENTIFIER_HASH_KEYS=$(openssl rand -hex 32) \
    node --max-semi-space-size=64 ${OURS_NODE_ARGS:-} "$BUILD/services/ingest-gateway/dist/main.js" > "${OURS_LOG:-/dev/null}" 2>&1 &
  ours_pid=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" > /dev/null && break; sleep 0.2; done
  url="http://127.0.0.1:$port/functions/v1/v1-batch"
  if [ $((n % 2)) = 0 ]; then
    read -r oe op oc ob <<< "$(measure "$ours_pid" "$url" "$auth" "$conc")"
    read -r pe pp pc pb <<< "$(measure "$peer_pid" "$PEER_URL" "$PEER_AUTH" "$conc")"
  else
    read -r pe pp pc pb <<< "$(measure "$peer_pid" "$PEER_URL" "$PEER_AUTH" "$conc")"
    read -r oe op oc ob <<< "$(measure "$ours_pid" "$url" "$auth" "$conc")"
  fi
  kill "$ours_pid"; wait "$ours_pid" 2> /dev/null || true; ours_pid=""
  ratio=$(node -e "console.log((${oe} / Math.max(1, ${pe})).toFixed(2))")
  echo "| $conc | $oe | $pe | $ratio | $op / $pp | $oc / $pc | $ob / $pb |"
  n=$((n + 1))
done
