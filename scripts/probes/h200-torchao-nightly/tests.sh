#!/usr/bin/env bash
# 3) The GPU tests: tests/gpu/ whole (Transformer Engine, torchao, the one-GPU data-parallel cases).
set -u
source scripts/probes/h200-torchao-nightly/setup.sh
timeout ${LIMIT:-280} python3 -m pytest -q -rs tests/gpu -p no:cacheprovider > /tmp/gpu-tests.log 2>&1
echo "pytest exit $?" >> /tmp/gpu-tests.log; tail -25 /tmp/gpu-tests.log; cp /tmp/gpu-tests.log $OUT/
echo "done at $(el) s"
