#!/usr/bin/env bash
# Confluent-compatible schema registry on 127.0.0.1: Apicurio Registry 3.0.9
# (Quarkus app from Maven Central, fetched by fetch.sh) with its `ccompat`
# API, which implements the Confluent Schema Registry REST API under
# /apis/ccompat/v7. No Docker.
#
# Usage: registry.sh start <workdir> <port> [<kafka-bootstrap>]
#          -> last stdout line: SCHEMA_REGISTRY_URL=http://127.0.0.1:<port>/apis/ccompat/v7
#        registry.sh stop <workdir>
#
# Storage (REGISTRY_STORAGE):
#   mem (default)  in-memory H2: empty on every start, needs nothing else,
#                  starts fastest. <kafka-bootstrap> is accepted and ignored.
#   kafkasql       journal kept in Kafka topics on <kafka-bootstrap> (like
#                  Confluent's _schemas); survives restarts. Topics:
#                  ${REGISTRY_KAFKASQL_TOPIC:-kafkasql-journal} (+ -snapshots),
#                  created through the admin API.
# Env: REGISTRY_START_TIMEOUT (s, default 90),
#      REGISTRY_DEFAULT_COMPATIBILITY (default BACKWARD, like Confluent),
#      REGISTRY_HEAP_OPTS (default "-Xms64m -Xmx384m"),
#      REGISTRY_JVM_OPTS (default "-XX:TieredStopAtLevel=1"; set "" for full C2 JIT).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOST=127.0.0.1 # never bind anything else
API_PATH=/apis/ccompat/v7

log() { printf '[registry] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() { die "usage: $0 start <workdir> <port> [<kafka-bootstrap>] | stop <workdir>"; }

# shellcheck source=infra/local/lib-daemon.sh
source "$HERE/lib-daemon.sh"

# HTTP status of <method> <path> [<json body>] in pure bash (a fresh machine
# may lack curl). HTTP/1.0 so the server closes the connection after replying.
http_status() {
  # shellcheck disable=SC2016  # single quotes on purpose: expands in the child
  timeout 5 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "%s %s HTTP/1.0\r\nHost: %s:%s\r\nAccept: application/json\r\nContent-Type: application/vnd.schemaregistry.v1+json\r\nContent-Length: %d\r\n\r\n%s" \
      "$2" "$3" "$0" "$1" "${#4}" "$4" >&3
    IFS=" " read -r _ code _ <&3 && printf "%s" "$code"
  ' "$HOST" "$1" "$2" "$3" "${4:-}" 2>/dev/null
}

# Our JVM carries -Dsvc.infra.workdir=<wd>: that marks it as this workdir's.
running_pid() { pidfile_pid "$1/registry.pid" " -Dsvc.infra.workdir=$1 "; }

do_stop() { stop_server "$1" registry 20; }

# Ready = the Confluent API answers 200 (storage initialised, HTTP up).
registry_ready() { [[ "$(http_status "$1" GET "$API_PATH/subjects")" == 200 ]]; }

do_start() {
  local wd="$1" port="$2" bootstrap="${3:-}"
  [[ "$port" =~ ^[0-9]+$ ]] || die "port must be a number: $port"
  local storage="${REGISTRY_STORAGE:-mem}"
  local timeout_s="${REGISTRY_START_TIMEOUT:-90}"
  local compat="${REGISTRY_DEFAULT_COMPATIBILITY:-BACKWARD}"
  local url="http://$HOST:$port$API_PATH"
  read -r -a heap <<<"${REGISTRY_HEAP_OPTS:--Xms64m -Xmx384m}"
  read -r -a jvm_extra <<<"${REGISTRY_JVM_OPTS--XX:TieredStopAtLevel=1}"

  mkdir -p "$wd"
  wd="$(cd "$wd" && pwd)"

  if already_serving "$wd" registry registry "$port" registry_ready "$port"; then
    echo "SCHEMA_REGISTRY_URL=$url"
    return 0
  fi
  port_open "$port" && die "port $port is already in use"

  local -a storage_opts
  case "$storage" in
    mem)
      # Default Apicurio storage is SQL on an in-memory H2 database.
      storage_opts=(-Dapicurio.storage.kind=sql -Dapicurio.storage.sql.kind=h2) ;;
    kafkasql)
      [[ -n "$bootstrap" ]] || die "REGISTRY_STORAGE=kafkasql needs <kafka-bootstrap>"
      local topic="${REGISTRY_KAFKASQL_TOPIC:-kafkasql-journal}"
      storage_opts=(-Dapicurio.storage.kind=kafkasql
        "-Dapicurio.kafkasql.bootstrap.servers=$bootstrap"
        "-Dapicurio.kafkasql.topic=$topic"
        "-Dapicurio.kafkasql.snapshots.topic=$topic-snapshots") ;;
    *) die "REGISTRY_STORAGE must be mem or kafkasql, not $storage" ;;
  esac

  local app
  app="$("$HERE/fetch.sh" --print-dir registry)"
  local jar
  jar="$(find "$app" -maxdepth 1 -name 'apicurio-registry-app-*-runner.jar' | head -n 1)"
  [[ -n "$jar" ]] || die "runner jar not found in $app"
  command -v java >/dev/null || die "java not found on PATH"
  echo "$port" >"$wd/registry.port"

  # REGISTRY_JVM_OPTS' default -XX:TieredStopAtLevel=1 (C1 only) halves
  # start-up on 2 cores (~5 s vs ~11 s); test load never needs C2.
  # Deletion is enabled because Apicurio 3 forbids it by default, while the
  # Confluent API (DELETE /subjects/...) is routinely used by test clean-up.
  # The default global compatibility rule is BACKWARD, as in Confluent
  # (Apicurio's own default is no rule at all).
  local -a cmd=(java "${heap[@]}" "${jvm_extra[@]}" -XX:+UseSerialGC
    -Djava.net.preferIPv4Stack=true
    "-Dsvc.infra.workdir=$wd"
    "-Dquarkus.http.host=$HOST"
    "-Dquarkus.http.port=$port"
    -Dquarkus.http.access-log.enabled=false
    -Dquarkus.log.console.enable=false
    -Dquarkus.log.file.enable=true
    -Dquarkus.log.file.json=false
    "-Dquarkus.log.file.path=$wd/registry.log"
    -Dquarkus.log.level=WARN
    '-Dquarkus.log.category."io.apicurio".level=WARN'
    "-Dapicurio.rules.global.compatibility=$compat"
    -Dapicurio.rest.deletion.group.enabled=true
    -Dapicurio.rest.deletion.artifact.enabled=true
    -Dapicurio.rest.deletion.artifact-version.enabled=true
    "-Dapicurio.storage.snapshot.location=$wd"
    "${storage_opts[@]}"
    -jar "$jar")

  log "starting Apicurio ($storage storage) on $HOST:$port, logs in $wd"
  local t0=$SECONDS
  cd "$wd" # the registry's relative paths resolve in its workdir
  start_detached "$wd/registry.pid" "$wd/registry.out" "${cmd[@]}" ||
    die "process did not start; see $wd/registry.out"
  await_ready "$wd" registry registry "$t0" "$timeout_s" registry_ready "$port"
  if [[ "$storage" == mem ]]; then
    # The default rule above is enforced, but GET /config reports NONE until
    # a global rule is stored; store it so the API reads like Confluent's.
    # (Fresh in-memory state, so this never overwrites a user's setting.)
    http_status "$port" PUT "$API_PATH/config" "{\"compatibility\":\"$compat\"}" >/dev/null || true
  fi
  log "ready in $((SECONDS - t0))s (pid $(<"$wd/registry.pid"))"
  echo "SCHEMA_REGISTRY_URL=$url"
}

case "${1:-}" in
  start) [[ $# -eq 3 || $# -eq 4 ]] || usage; do_start "$2" "$3" "${4:-}" ;;
  stop) [[ $# -eq 2 ]] || usage; do_stop "$2" ;;
  *) usage ;;
esac
