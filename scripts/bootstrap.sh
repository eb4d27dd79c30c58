#!/usr/bin/env bash
# Set up tebench in ./.venv on a fresh machine.
#
#   bash scripts/bootstrap.sh          # the harness (torch + pandas/jinja2/matplotlib)
#   bash scripts/bootstrap.sh --test   # plus pytest, pytest-benchmark, pyyaml
#
# torch: if the system Python already has one (an NGC container, a CUDA
# machine set up by hand), the venv sees it and nothing is downloaded, so your
# CUDA build and Transformer Engine are used as they are. Otherwise the CPU
# build torch==${TEBENCH_TORCH_VERSION:-2.13.0} is installed; a GPU user without
# torch should install the build for their CUDA first (https://pytorch.org).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=""
[ "${1:-}" = "--test" ] && EXTRAS="[test]"
if [ ! -x .venv/bin/python ]; then
  if "$PY" -c "import torch" >/dev/null 2>&1; then
    echo "bootstrap: using the system torch ($("$PY" -c 'import torch; print(torch.__version__)'))"
    "$PY" -m venv --system-site-packages .venv
  else
    "$PY" -m venv .venv
  fi
fi
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  echo "bootstrap: installing torch==${TEBENCH_TORCH_VERSION:-2.13.0} (CPU build where the index serves one)"
  .venv/bin/python -m pip install -q "torch==${TEBENCH_TORCH_VERSION:-2.13.0}"
fi
# Build-backend chatter goes to a log; it is shown only if the install fails. The log lives outside
# .venv, so that a failure which took .venv with it still shows pip's own words.
LOG=$(mktemp "${TMPDIR:-/tmp}/tebench-install.XXXXXX")
if ! .venv/bin/python -m pip install -q -e ".${EXTRAS}" > "$LOG" 2>&1; then
  cat "$LOG"; rm -f "$LOG"; exit 1
fi
rm -f "$LOG"
.venv/bin/python -c "import transformer_engine.pytorch" >/dev/null 2>&1 \
  && echo "bootstrap: Transformer Engine found" \
  || echo "bootstrap: Transformer Engine not importable: TE modes will be reported as skipped (see README: Installing)"
# The browser tests need a system Chromium; a package manager's job, not this script's (it needs root).
if [ -n "$EXTRAS" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
    && ! command -v google-chrome >/dev/null 2>&1; then
  echo "bootstrap: no Chromium: the browser tests will skip (Debian: apt-get install chromium; CI=true makes them fail)"
fi
echo "bootstrap: ready: .venv/bin/tebench"
