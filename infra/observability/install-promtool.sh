#!/usr/bin/env bash
# Builds promtool from its Go module (github.com/prometheus/prometheus, pinned below) into
# ~/.cache/svc-tools once; a second run finds it and does nothing. Prints the binary's path on
# its last line. `--if-installed` only prints it, and exits 1 when it is not built yet.
set -euo pipefail
. "$(dirname "$0")/go-tool.sh"
version=v0.316.0 # Prometheus 3.x's Go module version
bin_dir="${SVC_TOOLS_CACHE:-$HOME/.cache/svc-tools}/promtool-$version"
go_tool_installed "$bin_dir/promtool" "${1:-}"
GOBIN="$bin_dir" GOFLAGS=-mod=mod go_tool_build "$bin_dir/promtool" install "github.com/prometheus/prometheus/cmd/promtool@$version"
