#!/usr/bin/env bash
# Install optlog into .venv and run its main job: `optlog demo`, a real experiment on this machine
# (llama.cpp's llama-server serving Gemma 3 270M, built and fetched once by scripts/llama-server.sh:
# about 6 minutes on 2 cores the first time, cached after; then hypothesis and rival, a launched
# sweep with telemetry, verdicts, the pivot, ranked plans, a report) in a new workspace.
#
#   bash scripts/demo.sh [PATH]              # PATH: a new folder (default: a new temporary folder)
#   bash scripts/demo.sh --simulated [PATH]  # the offline story on optlog's simulated server (seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import ensurepip' >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  # Debian's python3 ships without ensurepip; venv needs it.
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq python3-venv git >/dev/null
fi
command -v git >/dev/null || { echo "demo.sh: git is needed (apt-get install git)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
echo "demo.sh: installing optlog into .venv" >&2
log=$(mktemp)
.venv/bin/python -m pip install -q -e . >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"  # setuptools' warnings about an editable install are not the user's business
export PYTHON="$PWD/.venv/bin/python"   # scripts/llama-server.sh fetches with this Python's pip
exec .venv/bin/optlog demo "$@"
