#!/usr/bin/env bash
# Device call 4 (2026-12-04): the 11 GPU tests that failed in call 3, after the fix. They failed in the test
# code, not in tebench: they subscripted the worker's Measurements model (`raw["loss"]["per_step"]`),
# which no longer imitates a dict; they now read it by attribute.
set -u
source scripts/probes/h200-verdicts/setup.sh
echo "== GPU tests $(el) s"
timeout -s INT $(( ${LIMIT:-290} - $(el) )) python3 -m pytest -v -rs tests/gpu/test_gpu.py -p no:cacheprovider \
  -k "scaling_state_and_busy_fraction or cuda_graphs_train_like_eager or fp8_weights_train_like_high_precision or llama_compiled_pytorch" \
  > $OUT/gpu-tests-2.log 2>&1
echo "pytest rc=$?"; grep -E "PASSED|FAILED|ERROR|passed|failed" $OUT/gpu-tests-2.log | tail -14
echo "done at $(el) s"
