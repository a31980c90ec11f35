#!/usr/bin/env bash
# Installs Segment's Python library (requirements.txt, every version pinned) into a
# virtualenv cached under ~/.cache/svc-tools, once per requirements file: a second run
# with the same file does nothing. Prints the interpreter's path on its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
digest="$(sha256sum "$here/requirements.txt" | cut -c1-12)"
venv="${SVC_TOOLS_CACHE:-$HOME/.cache/svc-tools}/segment-python-$digest"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.installed" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$here/requirements.txt" >&2
  touch "$venv/.installed"
fi
echo "$venv/bin/python"
