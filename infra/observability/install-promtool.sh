#!/usr/bin/env bash
# Builds promtool from its Go module (github.com/prometheus/prometheus, pinned below) into
# ~/.cache/svc-tools once; a second run finds it and does nothing. Prints the binary's path on
# its last line. `--if-installed` only prints it, and exits 1 when it is not built yet.
set -euo pipefail
version=v0.316.0 # Prometheus 3.x's Go module version
bin_dir="${SVC_TOOLS_CACHE:-$HOME/.cache/svc-tools}/promtool-$version"
promtool="$bin_dir/promtool"
if [ -x "$promtool" ]; then
  echo "$promtool"
  exit 0
fi
[ "${1:-}" = "--if-installed" ] && exit 1
go="$(command -v go || echo /usr/local/go/bin/go)"
[ -x "$go" ] || { echo "install-promtool: Go is needed to build promtool (go install); none found" >&2; exit 1; }
# The module and build caches of this one build are thrown away afterwards (a few GB); only the binary is kept.
scratch="$(mktemp -d)"
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
mkdir -p "$bin_dir"
GOBIN="$bin_dir" GOMODCACHE="$scratch/mod" GOCACHE="$scratch/build" GOFLAGS=-mod=mod GOTOOLCHAIN=local \
  nice "$go" install "github.com/prometheus/prometheus/cmd/promtool@$version" >&2
echo "$promtool"
