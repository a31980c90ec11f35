#!/usr/bin/env bash
# Kafka requests in pure bash, for the start-up probes of kafka.sh and
# kafka-cluster.sh (no client jar, no JVM start-up). Sourced; expects HOST.

# Builds a request: header v1 (correlation id 42, client id "probe") + body.
# Prints it, size-prefixed, as printf \xNN escapes.
kafka_request() {
  local key=$1 ver=$2 body=$3 msg
  msg="$(printf '%04x%04x%08x0005%s%s' "$key" "$ver" 42 70726f6265 "$body")"
  msg="$(printf '%08x' $((${#msg} / 2)))$msg"
  # shellcheck disable=SC2001
  sed 's/../\\x&/g' <<<"$msg"
}

# One Kafka request/response in pure bash (no client jar, no JVM start-up):
# kafka_call <port> <api_key> <api_version> <body-hex> <bytes-to-read>
# Prints the first <bytes-to-read> bytes of the reply (size prefix included)
# as hex.
kafka_call() {
  local port=$1 n=$5
  # shellcheck disable=SC2016  # single quotes on purpose: gets $0..$3
  timeout 5 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "$2" >&3
    head -c "$3" <&3 | od -An -v -tx1 | tr -d " \n"
  ' "$HOST" "$port" "$(kafka_request "$2" "$3" "$4")" "$n" 2>/dev/null
}

# Like kafka_call, but prints the whole reply as hex, without the size prefix.
kafka_call_full() {
  local port=$1
  # shellcheck disable=SC2016  # single quotes on purpose: gets $0..$2
  timeout 5 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "$2" >&3
    size="$(head -c 4 <&3 | od -An -v -tx1 | tr -d " \n")"
    [[ ${#size} -eq 8 ]] || exit 1
    head -c "$((16#$size))" <&3 | od -An -v -tx1 | tr -d " \n"
  ' "$HOST" "$port" "$(kafka_request "$2" "$3" "$4")" 2>/dev/null
}

# Metadata v4 (all topics): reply = size, correlation id, throttle, #brokers.
# The broker only answers once request processing is enabled, which KRaft does
# after the broker has caught up with the metadata log and been unfenced.
metadata_ok() {
  local r
  r="$(kafka_call "$1" 3 4 ffffffff00 16)" || return 1
  [[ ${#r} -eq 32 && ${r:8:8} == 0000002a && ${r:24:8} != 00000000 && ${r:24:8} != ffffffff ]]
}

# Warm-up, so the first client neither waits for nor logs errors about lazy
# internal state: FindCoordinator v1 for a group creates __consumer_offsets
# (with its replication factor: on a cluster it needs every broker), for a
# transactional id __transaction_state; InitProducerId v1 (no transactional
# id) makes the broker fetch its first producer-id block. Each passes once
# the reply's error code (bytes 12-13) is 0.
warm_ok() {
  local r key
  key="0010$(printf svc-infra-warmup | od -An -v -tx1 | tr -d ' \n')"
  r="$(kafka_call "$1" 10 1 "${key}00" 14)" && [[ ${r:24:4} == 0000 ]] || return 1
  r="$(kafka_call "$1" 10 1 "${key}01" 14)" && [[ ${r:24:4} == 0000 ]] || return 1
  r="$(kafka_call "$1" 22 1 ffff0000ea60 14)" && [[ ${r:24:4} == 0000 ]] || return 1
}
