#!/usr/bin/env bash
# Fetch (once) everything the local Kafka broker and schema registry need, into
# ${SVC_INFRA_CACHE:-$HOME/.cache/svc-infra}. Only java + mvn are required; all
# artifacts come from Maven Central through the ordinary `mvn` client.
# A marker file per component makes a second run a fast no-op.
#
# Usage: fetch.sh                      fetch everything (idempotent)
#        fetch.sh --print-dir kafka    fetch, then print the Kafka libs dir
#        fetch.sh --print-dir registry fetch, then print the Apicurio app dir
# (kafka.sh / registry.sh use --print-dir so versions live only in this file.)
set -euo pipefail

# Versions. Bumping one re-fetches only that component (markers are versioned).
# Kafka 4.x runs (and requires) Java 17+; it is KRaft-only.
KAFKA_VERSION="${KAFKA_VERSION:-4.3.1}"
# Kafka 4.3.1's kafka-server pulls log4j-api/core 2.25.4 but no SLF4J binding;
# log4j-slf4j-impl (SLF4J 1.x -> log4j2) must match that log4j version.
LOG4J_VERSION="${LOG4J_VERSION:-2.25.4}"
# Apicurio Registry 3.0.9 is the newest 3.x on Central whose classes run on
# Java 17 (3.3.x is compiled for Java 21). Its "all" tar.gz is a runnable
# Quarkus app (runner jar + lib/).
APICURIO_VERSION="${APICURIO_VERSION:-3.0.9}"
# 2.8 on purpose: its `get -Dtransitive=false` downloads a single artifact
# without reading its POM. Newer versions insist on the artifact descriptor,
# and the registry mirror used here lacks io.apicurio:apicurio-registry:3.0.9
# (the parent POM), which makes them fail. 2.8 is also Maven 3.8's default.
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:2.8"

CACHE="${SVC_INFRA_CACHE:-$HOME/.cache/svc-infra}"
KAFKA_DIR="$CACHE/kafka-$KAFKA_VERSION"
APICURIO_DIR="$CACHE/apicurio-registry-$APICURIO_VERSION"
KAFKA_MARK="$CACHE/.ok-kafka-$KAFKA_VERSION-log4j-$LOG4J_VERSION"
APICURIO_MARK="$CACHE/.ok-apicurio-$APICURIO_VERSION"

log() { printf '[fetch] %s\n' "$*" >&2; }

PRINT=""
case "${1:-}" in
  "") ;;
  --print-dir)
    case "${2:-}" in
      kafka) PRINT="$KAFKA_DIR" ;;
      registry) PRINT="$APICURIO_DIR" ;;
      *) log "usage: $0 [--print-dir kafka|registry]"; exit 2 ;;
    esac ;;
  *) log "usage: $0 [--print-dir kafka|registry]"; exit 2 ;;
esac
finish() { [[ -z "$PRINT" ]] || printf '%s\n' "$PRINT"; exit 0; }

# Fast path: nothing to do (no lock, no JVM, no network).
if [[ -f "$KAFKA_MARK" && -f "$APICURIO_MARK" ]]; then
  finish
fi

command -v java >/dev/null || { log "java not found on PATH"; exit 1; }
command -v mvn >/dev/null || { log "mvn not found on PATH"; exit 1; }
mkdir -p "$CACHE"

# Serialize concurrent fetches (parallel test jobs) when flock exists.
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.lock"
  flock 9
  # Another process may have finished the job while we waited.
  if [[ -f "$KAFKA_MARK" && -f "$APICURIO_MARK" ]]; then
    finish
  fi
fi

# A private local Maven repository keeps the cache self-contained and makes
# "empty cache" mean a genuinely fresh fetch; it is deleted once all is done.
M2="$CACHE/m2"
MVN=(mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$M2")
# Remove half-done temp dirs on any exit; completed ones were already moved.
# shellcheck disable=SC2317  # invoked via trap
cleanup() { rm -rf "$CACHE"/.tmp-*; }
trap cleanup EXIT
# Maven's chatter (and its ANSI resets) goes to a log that is shown on failure.
mvn_run() {
  local out="$CACHE/.tmp-mvn.log"
  if ! "${MVN[@]}" "$@" >"$out" 2>&1; then
    tail -n 40 "$out" >&2
    log "mvn failed: $*"
    exit 1
  fi
}

if [[ ! -f "$KAFKA_MARK" ]]; then
  log "fetching Kafka $KAFKA_VERSION (kafka_2.13 + runtime deps) ..."
  work="$(mktemp -d "$CACHE/.tmp-kafka.XXXXXX")"
  # Tiny throw-away pom: only used to resolve the runtime classpath.
  cat >"$work/pom.xml" <<EOF
<project>
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.svc-infra</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
  mvn_run -f "$work/pom.xml" "$DEP_PLUGIN:copy-dependencies" \
    -DincludeScope=runtime -DoutputDirectory="$work/libs"
  ls "$work/libs/kafka_2.13-$KAFKA_VERSION.jar" >/dev/null
  rm -rf "$KAFKA_DIR"
  mv "$work/libs" "$KAFKA_DIR"   # atomic-ish: dir appears only when complete
  rm -rf "$work"
  touch "$KAFKA_MARK"
fi

if [[ ! -f "$APICURIO_MARK" ]]; then
  log "fetching Apicurio Registry $APICURIO_VERSION (app 'all' tar.gz, ~110 MB) ..."
  work="$(mktemp -d "$CACHE/.tmp-apicurio.XXXXXX")"
  mvn_run "$DEP_PLUGIN:get" -Dtransitive=false \
    -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION:tar.gz:all"
  mkdir -p "$work/app"
  tar -xzf "$M2/io/apicurio/apicurio-registry-app/$APICURIO_VERSION/apicurio-registry-app-$APICURIO_VERSION-all.tar.gz" \
    -C "$work/app"
  ls "$work/app/apicurio-registry-app-$APICURIO_VERSION-runner.jar" >/dev/null
  rm -rf "$APICURIO_DIR"
  mv "$work/app" "$APICURIO_DIR"
  rm -rf "$work"
  touch "$APICURIO_MARK"
fi

# Everything runnable now lives outside m2; drop the Maven repo to save space.
rm -rf "$M2"
log "done: $(du -sh "$CACHE" 2>/dev/null | cut -f1) in $CACHE"
finish
