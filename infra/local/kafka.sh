#!/usr/bin/env bash
# Single-node Apache Kafka (KRaft, combined broker+controller) on 127.0.0.1,
# run straight from the Maven Central jars fetched by fetch.sh. No Docker.
#
# Usage: kafka.sh start <workdir> <port>   -> last stdout line: KAFKA_BROKERS=127.0.0.1:<port>
#        kafka.sh stop  <workdir>
#
# Env: KAFKA_CONTROLLER_PORT (default port+1), KAFKA_START_TIMEOUT (s, default 90),
#      KAFKA_HEAP_OPTS (default "-Xms256m -Xmx512m"),
#      KAFKA_JVM_OPTS (default "-XX:TieredStopAtLevel=1"; set "" for full C2 JIT),
#      KAFKA_AUTO_CREATE_TOPICS (default false: create topics via the admin API).
# Secured listeners (beside <port>, which stays the broker's own plaintext
# listener on 127.0.0.1 for its start-up probe):
#      KAFKA_TLS_DIR       certificates from certs.sh (server.pem, ca.crt)
#      KAFKA_SASL_SSL_PORT a SASL_SSL listener: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
#      KAFKA_MTLS_PORT     an SSL listener that demands a client certificate
#      KAFKA_SCRAM_USERS   SCRAM users, stored at format: `MECH=name:password ...`
#                          (e.g. "SCRAM-SHA-512=svc:secret SCRAM-SHA-256=svc256:other")
#      KAFKA_PLAIN_USERS   PLAIN users: `name:password ...`
# Passwords must not contain spaces, quotes, commas, ']' or ':'.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOST=127.0.0.1 # never bind anything else

log() { printf '[kafka] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() { die "usage: $0 start <workdir> <port> | stop <workdir>"; }

# True if something accepts TCP connections on HOST:$1.
port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# shellcheck source=infra/local/kafka-probe.sh
source "$HERE/kafka-probe.sh"

# PID from the pidfile if that process is still our broker (guards against
# a stale pidfile whose PID was reused by something else).
running_pid() {
  local wd="$1" pid
  [[ -f "$wd/kafka.pid" ]] || return 1
  pid="$(<"$wd/kafka.pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "kafka.Kafka $wd/server.properties" || return 1
  printf '%s\n' "$pid"
}

do_stop() {
  local wd="$1" pid i
  [[ -d "$wd" ]] || { log "no workdir $wd; nothing to stop"; return 0; }
  wd="$(cd "$wd" && pwd)"
  if ! pid="$(running_pid "$wd")"; then
    rm -f "$wd/kafka.pid"
    log "not running"
    return 0
  fi
  log "stopping pid $pid (SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  # Controlled shutdown of a single combined node normally takes a few seconds.
  for ((i = 0; i < 300; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still alive after 30s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$wd/kafka.pid"
  log "stopped"
}

# The SASL_SSL and mTLS listeners' lines for server.properties, when asked for.
secured_listeners() {
  local wd="$1" sasl_port="${KAFKA_SASL_SSL_PORT:-}" mtls_port="${KAFKA_MTLS_PORT:-}"
  [[ -n "$sasl_port$mtls_port" ]] || return 0
  local tls="${KAFKA_TLS_DIR:?KAFKA_TLS_DIR is required with KAFKA_SASL_SSL_PORT or KAFKA_MTLS_PORT}"
  tls="$(cd "$tls" && pwd)"
  local listeners="" map="" user plain=""
  [[ -n "$sasl_port" ]] && listeners+=",SASL_SSL://$HOST:$sasl_port" && map+=",SASL_SSL:SASL_SSL"
  [[ -n "$mtls_port" ]] && listeners+=",MTLS://$HOST:$mtls_port" && map+=",MTLS:SSL"
  for user in ${KAFKA_PLAIN_USERS:-}; do plain+=" user_${user%%:*}=\"${user#*:}\""; done
  cat <<PROPS
# Secured listeners (kafka.sh: KAFKA_SASL_SSL_PORT, KAFKA_MTLS_PORT).
listeners=PLAINTEXT://$HOST:$port,CONTROLLER://$HOST:$cport$listeners
advertised.listeners=PLAINTEXT://$HOST:$port$listeners
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT$map
ssl.keystore.type=PEM
ssl.keystore.location=$tls/server.pem
ssl.truststore.type=PEM
ssl.truststore.location=$tls/ca.crt
listener.name.mtls.ssl.client.auth=required
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
PROPS
}

do_start() {
  local wd="$1" port="$2"
  [[ "$port" =~ ^[0-9]+$ ]] || die "port must be a number: $port"
  local cport="${KAFKA_CONTROLLER_PORT:-$((port + 1))}"
  local timeout_s="${KAFKA_START_TIMEOUT:-90}"
  local auto_create="${KAFKA_AUTO_CREATE_TOPICS:-false}"
  read -r -a heap <<<"${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
  # C1-only JIT: broker start-up on 2 cores drops from ~8 s to ~4 s; test
  # traffic is far too small for C2's peak throughput to matter.
  read -r -a jvm_extra <<<"${KAFKA_JVM_OPTS--XX:TieredStopAtLevel=1}"

  mkdir -p "$wd"
  wd="$(cd "$wd" && pwd)" # absolute: it ends up in configs and in the cmdline check

  local pid
  if pid="$(running_pid "$wd")"; then
    # Idempotent start: same workdir already has a live broker.
    if [[ "$(cat "$wd/kafka.port" 2>/dev/null)" == "$port" ]] && metadata_ok "$port"; then
      log "already running (pid $pid)"
      echo "KAFKA_BROKERS=$HOST:$port"
      return 0
    fi
    die "a broker from $wd is already running (pid $pid) on another port; stop it first"
  fi
  port_open "$port" && die "port $port is already in use"
  port_open "$cport" && die "controller port $cport is already in use (set KAFKA_CONTROLLER_PORT)"

  local libs
  libs="$("$HERE/fetch.sh" --print-dir kafka)"
  command -v java >/dev/null || die "java not found on PATH"

  # Quiet log4j2 config: WARN+ to kafka.log, plus the one INFO line that says
  # the server started (handy when reading the log).
  cat >"$wd/log4j2.properties" <<EOF
status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $wd/kafka.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = FILE
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
EOF

  # Regenerated on every start so port changes apply; the data dir persists.
  cat >"$wd/server.properties" <<EOF
# Generated by infra/local/kafka.sh. Single node, KRaft, combined roles.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$cport
listeners=PLAINTEXT://$HOST:$port,CONTROLLER://$HOST:$cport
advertised.listeners=PLAINTEXT://$HOST:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$wd/data
# Single node: every internal topic must have RF=1; few partitions = fast start.
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# Tests want consumers to join immediately.
group.initial.rebalance.delay.ms=0
# Topics are created explicitly via the admin API (override with env).
auto.create.topics.enable=$auto_create
# 2-core machine: keep thread pools small.
num.network.threads=2
num.io.threads=4
background.threads=2
num.recovery.threads.per.data.dir=1
EOF
  secured_listeners "$wd" >>"$wd/server.properties"
  echo "$port" >"$wd/kafka.port"

  local -a jvm=(java "${heap[@]}" "${jvm_extra[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
    -Djava.net.preferIPv4Stack=true
    "-Dlog4j2.configurationFile=$wd/log4j2.properties"
    -cp "$libs/*")

  # Format storage once (KRaft needs a cluster id + meta.properties).
  if [[ ! -f "$wd/data/meta.properties" ]]; then
    local cid
    # Kafka cluster ids are 16 random bytes, base64url without padding; avoid
    # a leading '-' that the CLI would read as an option.
    cid="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    cid="A${cid:1}"
    log "formatting storage in $wd/data (cluster id $cid)"
    local -a scram=()
    local user
    for user in ${KAFKA_SCRAM_USERS:-}; do
      local mech="${user%%=*}" cred="${user#*=}"
      scram+=(--add-scram "$mech=[name=${cred%%:*},password=${cred#*:}]")
    done
    "${jvm[@]}" kafka.tools.StorageTool format -t "$cid" \
      -c "$wd/server.properties" "${scram[@]}" >>"$wd/kafka.out" 2>&1 ||
      { tail -n 30 "$wd/kafka.out" >&2; die "storage format failed"; }
  fi

  log "starting broker on $HOST:$port (controller $HOST:$cport), logs in $wd"
  local t0=$SECONDS
  rm -f "$wd/kafka.pid" # stale one from a killed run would fool the wait below
  # setsid: detach from the caller's session/process group so the broker
  # survives the calling script. The inner bash writes its own PID and then
  # execs java (same PID), after closing inherited fds > 2 so a caller that
  # waits on a pipe (e.g. $(...) or a test runner) is never held open.
  # shellcheck disable=SC2016  # single quotes on purpose: expands in the child
  setsid bash -c '
    pidfile=$1; shift
    for fd in /proc/$$/fd/*; do
      n=${fd##*/}
      if ((n > 2)); then eval "exec $n>&-" 2>/dev/null || true; fi
    done
    echo $$ >"$pidfile"
    exec "$@"
  ' _ "$wd/kafka.pid" "${jvm[@]}" kafka.Kafka "$wd/server.properties" \
    </dev/null >>"$wd/kafka.out" 2>&1 &

  # Wait for the pidfile, then for a real metadata response.
  local i
  for ((i = 0; i < 50; i++)); do [[ -s "$wd/kafka.pid" ]] && break; sleep 0.1; done
  [[ -s "$wd/kafka.pid" ]] || die "process did not start; see $wd/kafka.out"
  pid="$(<"$wd/kafka.pid")"
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "broker exited during start-up; tail of logs:"
      tail -n 40 "$wd/kafka.out" "$wd/kafka.log" >&2 2>/dev/null || true
      rm -f "$wd/kafka.pid"
      exit 1
    fi
    if metadata_ok "$port" && warm_ok "$port"; then break; fi
    if ((SECONDS - t0 >= timeout_s)); then
      log "not ready after ${timeout_s}s; tail of logs:"
      tail -n 40 "$wd/kafka.out" "$wd/kafka.log" >&2 2>/dev/null || true
      do_stop "$wd"
      exit 1
    fi
    sleep 0.3
  done
  log "ready in $((SECONDS - t0))s (pid $pid)"
  echo "KAFKA_BROKERS=$HOST:$port"
}

case "${1:-}" in
  start) [[ $# -eq 3 ]] || usage; do_start "$2" "$3" ;;
  stop) [[ $# -eq 2 ]] || usage; do_stop "$2" ;;
  *) usage ;;
esac
