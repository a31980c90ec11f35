#!/usr/bin/env bash
# What a KRaft node (broker and controller in one JVM) needs, whether it is
# kafka.sh's single node or one of kafka-cluster.sh's three. Sourced; expects
# HOST, HERE (this directory) and die.

# build_kafka_jvm <default heap opts>: sets JVM to the java command line that
# runs Kafka's classes (the jars fetch.sh brings), heap from KAFKA_HEAP_OPTS.
build_kafka_jvm() {
  local libs heap jvm_extra
  libs="$("$HERE/fetch.sh" --print-dir kafka)"
  command -v java >/dev/null || die "java not found on PATH"
  read -r -a heap <<<"${KAFKA_HEAP_OPTS:-$1}"
  # C1-only JIT: broker start-up on 2 cores drops from ~8 s to ~4 s; test
  # traffic is far too small for C2's peak throughput to matter.
  read -r -a jvm_extra <<<"${KAFKA_JVM_OPTS--XX:TieredStopAtLevel=1}"
  # shellcheck disable=SC2034  # the sourcing script runs it
  JVM=(java "${heap[@]}" "${jvm_extra[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
    -Djava.net.preferIPv4Stack=true -cp "$libs/*")
}

# A new cluster id: 16 random bytes, base64url without padding, with no
# leading '-' that the storage tool would read as an option.
new_cluster_id() {
  local cid
  cid="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
  printf 'A%s\n' "${cid:1}"
}

# write_log4j2 <node dir>: a quiet log4j2 config: WARN+ to <node dir>/kafka.log,
# plus the one INFO line that says the server started (handy when reading the log).
write_log4j2() {
  cat >"$1/log4j2.properties" <<EOF
status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $1/kafka.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = FILE
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
EOF
}

# node_properties <node dir> <node id> <quorum voters> <port> <controller port>
# <replicas> <min in-sync> <internal topic partitions>: the server.properties
# lines of a combined broker+controller: its plaintext listener on
# HOST:<port>, data in <node dir>/data, and <replicas> copies of every topic,
# the internal ones included.
node_properties() {
  local nd=$1 id=$2 voters=$3 port=$4 cport=$5 rf=$6 isr=$7 parts=$8
  cat <<EOF
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://$HOST:$port,CONTROLLER://$HOST:$cport
advertised.listeners=PLAINTEXT://$HOST:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$nd/data
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=$parts
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=$parts
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
# Tests want consumers to join immediately.
group.initial.rebalance.delay.ms=0
# Topics are created explicitly via the admin API (override with env).
auto.create.topics.enable=${KAFKA_AUTO_CREATE_TOPICS:-false}
EOF
}
