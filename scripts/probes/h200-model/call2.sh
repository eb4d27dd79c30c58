#!/usr/bin/env bash
# Device call 2 (2026-12-04), on the machine call 1 left warm: the nightly's end collected, then every
# GPU test (`-m "gpu or te or torchao" tests/gpu`) with the record model.
set -u
source scripts/probes/h200-verdicts/setup.sh
wait_nightly 1 240
grep -E "^\[" $V/n1/nightly.log | awk '{print $2}' | sort | uniq -c
echo "== GPU tests $(el) s"
timeout 330 python3 -m pytest -q -rs -m "gpu or te or torchao" tests/gpu -p no:cacheprovider > $OUT/gpu-tests.log 2>&1
echo "pytest rc=$?"; grep -E "^SKIPPED|passed|failed|^FAILED|Error" $OUT/gpu-tests.log | tail -20
echo "done at $(el) s"
