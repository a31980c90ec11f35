#!/usr/bin/env bash
# Three-node Apache Kafka cluster (KRaft, every node a combined
# broker+controller, a controller quorum of all three) on 127.0.0.1, run
# straight from the Maven Central jars fetched by fetch.sh. No Docker.
# For the replicated shape (RF=3, min.insync.replicas=2) and fault tests.
#
# Usage: kafka-cluster.sh start     <workdir> <port1> <port2> <port3>
#                                   -> last stdout line:
#                                   KAFKA_BROKERS=127.0.0.1:<port1>,127.0.0.1:<port2>,127.0.0.1:<port3>
#        kafka-cluster.sh stop      <workdir>          (all nodes)
#        kafka-cluster.sh kill      <workdir> <node>   (SIGKILL, data kept)
#        kafka-cluster.sh stop-node <workdir> <node>   (SIGTERM, SIGKILL after 30 s)
#        kafka-cluster.sh restart   <workdir> <node>   (start it again, wait for metadata)
#        kafka-cluster.sh leader    <workdir> <topic>  (node id leading most partitions)
#        kafka-cluster.sh pids      <workdir>          ("<node> <pid>" per running node)
# <node> is 1, 2 or 3 (its node.id); node N lives in <workdir>/node<N>.
#
# Env: KAFKA_CONTROLLER_PORTS (c1,c2,c3; default: free ports picked at the
#        first start, then reused), KAFKA_START_TIMEOUT (s, default 120),
#      KAFKA_HEAP_OPTS (per node, default "-Xms128m -Xmx384m"),
#      KAFKA_JVM_OPTS (default "-XX:TieredStopAtLevel=1"; set "" for full C2 JIT),
#      KAFKA_AUTO_CREATE_TOPICS (default false: create topics via the admin API).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOST=127.0.0.1 # never bind anything else
NODES=(1 2 3)

log() { printf '[kafka-cluster] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() {
  die "usage: $0 start <workdir> <port1> <port2> <port3> | stop <workdir>" \
    "| kill|stop-node|restart <workdir> <node> | leader <workdir> <topic> | pids <workdir>"
}

# shellcheck source=infra/local/lib-daemon.sh
source "$HERE/lib-daemon.sh"
# shellcheck source=infra/local/lib-kafka.sh
source "$HERE/lib-kafka.sh"
# shellcheck source=infra/local/kafka-probe.sh
source "$HERE/kafka-probe.sh"

# Seconds since $1 (a now_ms value), as "4.2s".
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }
since() { local d=$(($(now_ms) - $1)); printf '%d.%ds' $((d / 1000)) $((d % 1000 / 100)); }

node_dir() { printf '%s/node%s\n' "$1" "$2"; }

# PID of node N's JVM, from its pidfile.
running_pid() {
  local nd
  nd="$(node_dir "$1" "$2")"
  pidfile_pid "$nd/kafka.pid" "kafka.Kafka $nd/server.properties"
}

node_port() { cat "$(node_dir "$1" "$2")/kafka.port" 2>/dev/null; }

# Absolute workdir that must already hold a cluster.
existing_wd() {
  [[ -f "$1/cluster.id" ]] || die "no cluster in $1 (kafka-cluster.sh start it first)"
  (cd "$1" && pwd)
}

check_node() { [[ "$1" =~ ^[123]$ ]] || die "node must be 1, 2 or 3: $1"; }

# A free port in 20000-32767 (below Linux's ephemeral range), not in "$@".
free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 12768))
    [[ " $* " == *" $p "* ]] && continue
    port_open "$p" && continue
    printf '%s\n' "$p"
    return 0
  done
  die "could not find a free controller port"
}

# Sets JVM to the java command line that runs a node's classes.
build_jvm() { build_kafka_jvm "-Xms128m -Xmx384m"; }

# Starts node N's JVM in the background (server.properties must exist).
launch_node() {
  local nd
  nd="$(node_dir "$1" "$2")"
  start_detached "$nd/kafka.pid" "$nd/kafka.out" "${JVM[@]}" "-Dlog4j2.configurationFile=$nd/log4j2.properties" \
    kafka.Kafka "$nd/server.properties" || die "node $2 did not start; see $nd/kafka.out"
}

tail_logs() {
  local nd
  nd="$(node_dir "$1" "$2")"
  log "node $2: tail of logs:"
  tail -n 30 "$nd/kafka.out" "$nd/kafka.log" >&2 2>/dev/null || true
}

# SIGTERMs the given nodes' JVMs at once (controlled shutdown), waits up to
# 30 s for all of them to exit, then SIGKILLs what is left. A broker's
# controlled shutdown needs the controller quorum (2 of 3 up): a node that is
# the only one left up can never finish it (Kafka's own system tests kill such
# nodes too), so it gets 5 s to finish what it was doing, then SIGKILL.
stop_nodes() {
  local wd=$1 n pid i left up lone=-1
  shift
  local -A pids=()
  for n in "$@"; do
    if pid="$(running_pid "$wd" "$n")"; then
      pids[$n]=$pid
      log "node $n: SIGTERM to pid $pid"
      kill -TERM "$pid" 2>/dev/null || true
    else
      log "node $n: not running"
    fi
  done
  for ((i = 0; i < 300; i++)); do
    left=0
    for pid in "${pids[@]}"; do alive "$pid" && left=1; done
    ((left)) || break
    up=0
    for n in "${NODES[@]}"; do running_pid "$wd" "$n" >/dev/null && up=$((up + 1)); done
    if ((up <= 1)); then
      ((lone >= 0)) || lone=$i
      if ((i - lone >= 50)); then
        log "last node up: no controller quorum to finish its controlled shutdown"
        break
      fi
    fi
    sleep 0.1
  done
  for n in "${!pids[@]}"; do
    pid=${pids[$n]}
    if alive "$pid"; then
      log "node $n: still alive after $((i / 10))s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for n in "${!pids[@]}"; do
    pid=${pids[$n]}
    for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && die "node $n: pid $pid survived SIGKILL"
    rm -f "$(node_dir "$wd" "$n")/kafka.pid"
  done
}

do_stop() {
  local wd=$1
  [[ -d "$wd" ]] || { log "no workdir $wd; nothing to stop"; return 0; }
  wd="$(cd "$wd" && pwd)"
  # All at once: stopping them one by one would leave the last node without
  # a controller quorum for its controlled shutdown.
  stop_nodes "$wd" "${NODES[@]}"
  log "stopped"
}

do_start() {
  local wd=$1 n
  shift
  local -a ports=("$@") cports=()
  for n in "${ports[@]}"; do [[ "$n" =~ ^[0-9]+$ ]] || die "port must be a number: $n"; done
  [[ ${ports[0]} != "${ports[1]}" && ${ports[0]} != "${ports[2]}" && ${ports[1]} != "${ports[2]}" ]] ||
    die "the three ports must differ"
  local timeout_s="${KAFKA_START_TIMEOUT:-120}"
  local brokers="$HOST:${ports[0]},$HOST:${ports[1]},$HOST:${ports[2]}"

  mkdir -p "$wd"
  wd="$(cd "$wd" && pwd)" # absolute: it ends up in configs and in the cmdline check

  local pid running=0 same=1
  for n in "${NODES[@]}"; do
    if running_pid "$wd" "$n" >/dev/null; then
      running=$((running + 1))
      [[ "$(node_port "$wd" "$n")" == "${ports[n - 1]}" ]] && metadata_ok "${ports[n - 1]}" || same=0
    fi
  done
  if ((running == 3 && same)); then
    # Idempotent start: the same workdir already runs this cluster.
    log "already running"
    echo "KAFKA_BROKERS=$brokers"
    return 0
  fi
  ((running == 0)) ||
    die "$running node(s) of $wd already running; stop it first (or use restart <node>)"

  # Controller ports: from the env, else those of the last start if still
  # free, else new free ones.
  if [[ -n "${KAFKA_CONTROLLER_PORTS:-}" ]]; then
    IFS=, read -r -a cports <<<"$KAFKA_CONTROLLER_PORTS"
    [[ ${#cports[@]} -eq 3 ]] || die "KAFKA_CONTROLLER_PORTS must be c1,c2,c3"
  else
    for n in "${NODES[@]}"; do
      cports+=("$(cat "$(node_dir "$wd" "$n")/controller.port" 2>/dev/null || true)")
    done
    for n in "${NODES[@]}"; do
      if ! [[ "${cports[n - 1]}" =~ ^[0-9]+$ ]] || port_open "${cports[n - 1]}" ||
        [[ " ${ports[*]} " == *" ${cports[n - 1]} "* ]]; then
        cports[n - 1]="$(free_port "${ports[@]}" "${cports[@]}")"
      fi
    done
  fi
  for n in "${cports[@]}"; do [[ "$n" =~ ^[0-9]+$ ]] || die "controller port must be a number: $n"; done
  local all=" ${ports[*]} ${cports[*]} "
  for n in "${ports[@]}" "${cports[@]}"; do
    [[ "${all/ $n / }" != *" $n "* ]] || die "port $n is given twice (broker and controller ports must all differ)"
  done
  for n in "${ports[@]}"; do port_open "$n" && die "port $n is already in use"; done
  for n in "${cports[@]}"; do
    port_open "$n" && die "controller port $n is already in use (set KAFKA_CONTROLLER_PORTS)"
  done
  local voters="1@$HOST:${cports[0]},2@$HOST:${cports[1]},3@$HOST:${cports[2]}"

  build_jvm

  local cid
  if [[ -s "$wd/cluster.id" ]]; then
    cid="$(<"$wd/cluster.id")"
  else
    cid="$(new_cluster_id)"
    echo "$cid" >"$wd/cluster.id"
  fi

  local nd port cport
  local -a fmt_pids=()
  for n in "${NODES[@]}"; do
    nd="$(node_dir "$wd" "$n")" port=${ports[n - 1]} cport=${cports[n - 1]}
    mkdir -p "$nd"
    write_log4j2 "$nd"
    # Regenerated on every start so port changes apply; the data dir persists.
    # restart <node> reuses it as it is.
    {
      echo "# Generated by infra/local/kafka-cluster.sh. Node $n of 3, KRaft, combined roles."
      # Three brokers: replicate everything 3 ways, acks=all needs 2 in sync.
      node_properties "$nd" "$n" "$voters" "$port" "$cport" 3 2 3
      cat <<EOF
unclean.leader.election.enable=false
# Three JVMs on 2 cores: small thread pools; the log cleaner's dedupe buffer
# (heap, allocated at start, 128 MB by default) sized for a small heap.
num.network.threads=2
num.io.threads=2
background.threads=2
num.replica.fetchers=1
num.recovery.threads.per.data.dir=1
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=16777216
EOF
    } >"$nd/server.properties"
    echo "$port" >"$nd/kafka.port"
    echo "$cport" >"$nd/controller.port"
    # Format storage once, with the cluster's id (in parallel: JVM start-ups).
    if [[ ! -f "$nd/data/meta.properties" ]]; then
      log "node $n: formatting $nd/data (cluster id $cid)"
      "${JVM[@]}" kafka.tools.StorageTool format -t "$cid" \
        -c "$nd/server.properties" >>"$nd/kafka.out" 2>&1 &
      fmt_pids+=("$!:$n")
    fi
  done
  local fp
  for fp in "${fmt_pids[@]}"; do
    wait "${fp%%:*}" || { tail -n 30 "$(node_dir "$wd" "${fp#*:}")/kafka.out" >&2; die "node ${fp#*:}: storage format failed"; }
  done

  log "starting nodes on $brokers (controllers ${cports[*]}), logs in $wd/node{1,2,3}"
  local t0=$SECONDS ms0
  ms0=$(now_ms)
  for n in "${NODES[@]}"; do launch_node "$wd" "$n"; done

  # Wait for all three to answer Metadata, then for the warm-up.
  local -A ready=()
  local warm=0
  while :; do
    for n in "${NODES[@]}"; do
      pid="$(<"$(node_dir "$wd" "$n")/kafka.pid")"
      if ! alive "$pid"; then
        log "node $n exited during start-up"
        tail_logs "$wd" "$n"
        do_stop "$wd"
        exit 1
      fi
      if [[ -z "${ready[$n]:-}" ]] && metadata_ok "${ports[n - 1]}"; then
        ready[$n]=1
        log "node $n answers metadata after $(since "$ms0")"
      fi
    done
    if ((${#ready[@]} == 3)) && warm_ok "${ports[0]}"; then warm=1; fi
    ((warm)) && break
    if ((SECONDS - t0 >= timeout_s)); then
      log "not ready after ${timeout_s}s (nodes answering: ${!ready[*]})"
      for n in "${NODES[@]}"; do tail_logs "$wd" "$n"; done
      do_stop "$wd"
      exit 1
    fi
    sleep 0.3
  done
  log "ready in $(since "$ms0") (pids $(do_pids "$wd" | cut -d' ' -f2 | tr '\n' ' '| sed 's/ $//'))"
  echo "KAFKA_BROKERS=$brokers"
}

do_kill() {
  local wd n=$2 pid i
  wd="$(existing_wd "$1")"
  pid="$(running_pid "$wd" "$n")" || { log "node $n: not running"; return 0; }
  log "node $n: SIGKILL pid $pid"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
  alive "$pid" && die "node $n: pid $pid survived SIGKILL for 10s"
  rm -f "$(node_dir "$wd" "$n")/kafka.pid"
  log "node $n: killed (data kept)"
}

do_stop_node() {
  local wd
  wd="$(existing_wd "$1")"
  stop_nodes "$wd" "$2"
  log "node $2: stopped (data kept)"
}

do_restart() {
  local wd n=$2 nd port cport pid t0 ms0 timeout_s="${KAFKA_START_TIMEOUT:-120}"
  wd="$(existing_wd "$1")"
  nd="$(node_dir "$wd" "$n")"
  [[ -f "$nd/server.properties" && -f "$nd/data/meta.properties" ]] ||
    die "node $n was never started in $wd"
  port="$(node_port "$wd" "$n")"
  cport="$(cat "$nd/controller.port")"
  if pid="$(running_pid "$wd" "$n")"; then
    log "node $n: already running (pid $pid)"
  else
    port_open "$port" && die "node $n: port $port is already in use"
    port_open "$cport" && die "node $n: controller port $cport is already in use"
    build_jvm
    log "node $n: starting on $HOST:$port (controller $HOST:$cport)"
    launch_node "$wd" "$n"
  fi
  pid="$(<"$nd/kafka.pid")"
  t0=$SECONDS ms0=$(now_ms)
  until metadata_ok "$port"; do
    if ! alive "$pid"; then
      log "node $n exited during start-up"
      tail_logs "$wd" "$n"
      rm -f "$nd/kafka.pid"
      exit 1
    fi
    if ((SECONDS - t0 >= timeout_s)); then
      tail_logs "$wd" "$n"
      die "node $n: no metadata after ${timeout_s}s (still running as pid $pid)"
    fi
    sleep 0.3
  done
  log "node $n: answers metadata after $(since "$ms0") (pid $pid)"
}

do_pids() {
  local wd=$1 n pid
  [[ -d "$wd" ]] || return 0
  wd="$(cd "$wd" && pwd)"
  for n in "${NODES[@]}"; do
    if pid="$(running_pid "$wd" "$n")"; then printf '%s %s\n' "$n" "$pid"; fi
  done
}

# Metadata v4 for one topic from the first running node that answers, parsed
# in bash; prints the node id leading the most partitions (lowest id on a tie).
do_leader() {
  local wd topic=$2 n port r="" name
  wd="$(existing_wd "$1")"
  [[ "$topic" =~ ^[A-Za-z0-9._-]{1,249}$ ]] || die "not a valid topic name: $topic"
  name="$(printf %s "$topic" | od -An -v -tx1 | tr -d ' \n')"
  for n in "${NODES[@]}"; do
    running_pid "$wd" "$n" >/dev/null || continue
    port="$(node_port "$wd" "$n")"
    r="$(kafka_call_full "$port" 3 4 "00000001$(printf %04x ${#topic})${name}00")" && [[ -n "$r" ]] && break
    r=""
  done
  [[ -n "$r" ]] || die "no node of $wd answers metadata"

  # Cursor over the hex reply (2 hex chars per byte).
  local -i o=0
  i16() { v=$((16#${r:o:4})); o+=4; }
  i32() {
    v=$((16#${r:o:8}))
    ((v < 2147483648)) || v=$((v - 4294967296))
    o+=8
  }
  str() { # (nullable) string: skip it
    i16
    ((v == 65535)) || o+=$((v * 2))
  }
  local v c i p err leader
  o+=16 # correlation id, throttle_time_ms
  i32
  c=$v
  for ((i = 0; i < c; i++)); do o+=8; str; o+=8; str; done # brokers: id host port rack
  str      # cluster_id
  o+=8     # controller_id
  i32      # topics: we asked for one
  ((v == 1)) || die "unexpected metadata reply"
  i16
  err=$v
  ((err == 0)) || die "topic $topic: error code $err (3 = unknown topic)"
  str
  o+=2 # name, is_internal
  i32
  c=$v
  local -A count=()
  for ((p = 0; p < c; p++)); do
    o+=4 # partition error code
    o+=8 # partition index
    i32
    leader=$v
    ((leader < 0)) || count[$leader]=$((${count[$leader]:-0} + 1))
    i32
    o+=$((v * 8)) # replicas
    i32
    o+=$((v * 8)) # isr
  done
  ((${#count[@]} > 0)) || die "topic $topic: no partition has a leader"
  local best="" bestc=0
  for n in $(printf '%s\n' "${!count[@]}" | sort -n); do
    ((count[$n] > bestc)) && best=$n bestc=${count[$n]}
  done
  echo "$best"
}

case "${1:-}" in
  start) [[ $# -eq 5 ]] || usage; do_start "$2" "$3" "$4" "$5" ;;
  stop) [[ $# -eq 2 ]] || usage; do_stop "$2" ;;
  kill) [[ $# -eq 3 ]] || usage; check_node "$3"; do_kill "$2" "$3" ;;
  stop-node) [[ $# -eq 3 ]] || usage; check_node "$3"; do_stop_node "$2" "$3" ;;
  restart) [[ $# -eq 3 ]] || usage; check_node "$3"; do_restart "$2" "$3" ;;
  leader) [[ $# -eq 3 ]] || usage; do_leader "$2" "$3" ;;
  pids) [[ $# -eq 2 ]] || usage; do_pids "$2" ;;
  *) usage ;;
esac
