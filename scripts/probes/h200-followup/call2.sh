#!/usr/bin/env bash
# Device call 2 (2026-12-03): the two TE self-tests that failed in call 1 (leak-next, init-default), with their
# output; the protocol pipe under pre-started CUDA workers; the module cases after the te_other census fix.
set -u
source scripts/probes/h200-verdicts/setup.sh
rm -rf $V/mod
echo "== module cases $(el) s"
timeout 150 python3 -m tebench run --preset gpu-smoke --devices 0 --only 'module/*' --out $V/mod --no-report > $OUT/module.log 2>&1
echo "run rc=$?"; grep -E "^\[" $OUT/module.log | tail -12
grep -l '"progress"\|"event": "ready"' $V/mod/logs/* 2> /dev/null | head -3 | sed 's/^/protocol line in log: /'
echo "== GPU tests $(el) s"
timeout 380 python3 -m pytest -q -rA --tb=short -s tests/gpu/test_gpu.py -k "prestarted_cuda or (every_te_mutation_fails and (leak or init))" -p no:cacheprovider > $OUT/gpu-tests.log 2>&1
echo "pytest rc=$?"; grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|^E " $OUT/gpu-tests.log | tail -25
echo "done at $(el) s"
