#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the trace tests run (infra/observability/otelcol: the OTLP
# receiver, the batch processor, the OTLP/HTTP and debug exporters, from the collector's Go
# modules pinned in its go.mod and go.sum) into ~/.cache/svc-tools once; a second run finds it and
# does nothing. Prints the binary's path on its last line. `--if-installed` only prints it, and
# exits 1 when it is not built yet.
set -euo pipefail
. "$(dirname "$0")/go-tool.sh"
src="$(cd "$(dirname "$0")/otelcol" && pwd)"
# The cache entry is named by what it is built from, so a change of pins builds it again.
digest="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
otelcol="${SVC_TOOLS_CACHE:-$HOME/.cache/svc-tools}/otelcol-$digest/svc-otelcol"
go_tool_installed "$otelcol" "${1:-}"
cd "$src"
GOFLAGS=-mod=readonly go_tool_build "$otelcol" build -trimpath -o "$otelcol" .
