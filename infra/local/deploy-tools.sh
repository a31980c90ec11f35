#!/usr/bin/env bash
# Builds (once) the tools the deployment checks run, from their registries,
# into ${SVC_DEPLOY_CACHE:-$HOME/.cache/svc-deploy}/tools, and prints one
# NAME=path line per tool:
#
#   helm            helm.sh/helm/v3/cmd/helm, Go module (go install)
#   docker-compose  github.com/docker/compose/v2/cmd, Go module; built inside
#                   the module's own directory, since its go.mod carries
#                   exclude directives that `go install pkg@version` refuses
#   kubernetes-validate  PyPI package in a venv; it bundles the Kubernetes
#                   JSON schemas, so validating needs no download
#
# A second run finds every binary in place and takes milliseconds. Versions
# live here only; bumping one rebuilds only that tool (paths are versioned).
set -euo pipefail

HELM_VERSION=v3.22.0
COMPOSE_VERSION=v2.40.3
KUBERNETES_VALIDATE_VERSION=1.37.0

CACHE="${SVC_DEPLOY_CACHE:-$HOME/.cache/svc-deploy}/tools"
log() { printf '[deploy-tools] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# Go from PATH, else where the machine's image keeps it.
GO="$(command -v go || true)"
[[ -n "$GO" ]] || GO=/usr/local/go/bin/go
[[ -x "$GO" ]] || die "go not found (on PATH or /usr/local/go/bin)"

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9

helm="$CACHE/helm-$HELM_VERSION/helm"
if [[ ! -x "$helm" ]]; then
  log "building helm $HELM_VERSION (go install; a minute or two, once)"
  GOBIN="$(dirname "$helm")" "$GO" install -trimpath "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi

compose="$CACHE/compose-$COMPOSE_VERSION/docker-compose"
if [[ ! -x "$compose" ]]; then
  log "building docker compose $COMPOSE_VERSION (about two minutes, once)"
  module="github.com/docker/compose/v2@$COMPOSE_VERSION"
  dir="$("$GO" mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir" ]] || die "go mod download $module gave no directory"
  (cd "$dir" && "$GO" build -trimpath -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" -o "$compose" ./cmd)
fi

venv="$CACHE/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
if [[ ! -x "$venv/bin/kubernetes-validate" ]]; then
  log "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION (pip, once)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi

echo "helm=$helm"
echo "docker-compose=$compose"
echo "kubernetes-validate=$venv/bin/kubernetes-validate"
