#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the trace tests run (infra/observability/otelcol: the OTLP
# receiver, the batch processor, the OTLP/HTTP and debug exporters, from the collector's Go
# modules pinned in its go.mod and go.sum) into ~/.cache/svc-tools once; a second run finds it and
# does nothing. Prints the binary's path on its last line. `--if-installed` only prints it, and
# exits 1 when it is not built yet.
set -euo pipefail
src="$(cd "$(dirname "$0")/otelcol" && pwd)"
# The cache entry is named by what it is built from, so a change of pins builds it again.
digest="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
bin_dir="${SVC_TOOLS_CACHE:-$HOME/.cache/svc-tools}/otelcol-$digest"
otelcol="$bin_dir/svc-otelcol"
if [ -x "$otelcol" ]; then
  echo "$otelcol"
  exit 0
fi
[ "${1:-}" = "--if-installed" ] && exit 1
go="$(command -v go || echo /usr/local/go/bin/go)"
[ -x "$go" ] || { echo "install-otelcol: Go is needed to build the collector; none found" >&2; exit 1; }
# The module and build caches of this one build are thrown away afterwards; only the binary is kept.
scratch="$(mktemp -d)"
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
mkdir -p "$bin_dir"
(cd "$src" && GOMODCACHE="$scratch/mod" GOCACHE="$scratch/build" GOFLAGS=-mod=readonly GOTOOLCHAIN=local \
  nice "$go" build -trimpath -o "$scratch/svc-otelcol" . >&2)
mv "$scratch/svc-otelcol" "$otelcol"
echo "$otelcol"
