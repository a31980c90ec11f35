# Sourced by the install scripts of the Go tools the tests run (promtool, the OpenTelemetry
# Collector): `go_tool_installed <binary> [--if-installed]` prints the binary and exits when it is
# built (or exits 1 when only asked), and `go_tool_build <binary> <go arguments...>` runs `go` with
# throwaway module and build caches (a few GB; only the binary is kept) and prints the binary.
go_tool_installed() {
  if [ -x "$1" ]; then
    echo "$1"
    exit 0
  fi
  [ "${2:-}" = "--if-installed" ] && exit 1
  return 0
}

go_tool_build() {
  local binary="$1"
  shift
  go="$(command -v go || echo /usr/local/go/bin/go)"
  [ -x "$go" ] || { echo "$(basename "$binary"): Go is needed to build it; none found" >&2; exit 1; }
  scratch="$(mktemp -d)"
  trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
  mkdir -p "$(dirname "$binary")"
  GOMODCACHE="$scratch/mod" GOCACHE="$scratch/build" GOTOOLCHAIN=local nice "$go" "$@" >&2
  echo "$binary"
}
