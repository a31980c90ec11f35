#!/bin/bash
# Start-up of the Kafka stand-in, as the apache/kafka image's: every KAFKA_*
# variable (but the JVM's *_OPTS and the image's own settings) becomes a
# server.properties entry, named as that image names it: KAFKA_ dropped,
# lower case, "___" -> "-", "__" -> "_", "_" -> "." (KAFKA_NODE_ID ->
# node.id). Storage is formatted once with CLUSTER_ID; then the broker runs in
# the foreground (PID 1).
set -euo pipefail
props=/opt/kafka/config/server.properties
: >"$props"
while IFS='=' read -r name value; do
  case "$name" in
    KAFKA_*_OPTS | KAFKA_VERSION | KAFKA_LOG4J_* | KAFKA_TOOLS_* | KAFKA_JMX_*) continue ;;
    KAFKA_*)
      key="$(tr '[:upper:]' '[:lower:]' <<<"${name#KAFKA_}" | sed -e 's/___/-/g' -e 's/__/@/g' -e 's/_/./g' -e 's/@/_/g')"
      printf '%s=%s\n' "$key" "$value" >>"$props" ;;
  esac
done < <(env)

read -r -a heap <<<"${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}"
read -r -a perf <<<"${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20}"
java=(java "${heap[@]}" "${perf[@]}" -Djava.awt.headless=true
  -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp '/opt/kafka/libs/*')

log_dir="$(sed -n 's/^log\.dirs=//p' "$props")"
if [[ ! -f "${log_dir:-/tmp/kraft-combined-logs}/meta.properties" ]]; then
  "${java[@]}" kafka.tools.StorageTool format -t "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" -c "$props"
fi
exec "${java[@]}" kafka.Kafka "$props"
