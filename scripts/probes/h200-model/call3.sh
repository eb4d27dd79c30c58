#!/usr/bin/env bash
# Device call 3 (2026-12-04): the nightly does not fit in one 600 s call (calls 1, twice), so the record
# model's GPU path is checked in two calls instead. This one: a GPU smoke run through the CLI (the
# gpt and distill cases of `--preset gpu-smoke`: PT, TE-BF16, every TE-FP8 recipe, AO-FP8, graphs,
# fp8-weights; workers build their parts as models, the parent reads them into its models and renders
# the report), then the GPU tests for as long as the call allows; those that passed are listed in
# /tmp/v/passed.txt for call 4.
set -u
source scripts/probes/h200-verdicts/setup.sh
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
python3 -c "import torch, pydantic, transformer_engine; print('torch', torch.__version__, 'pydantic', pydantic.VERSION, 'TE', transformer_engine.__version__)" 2>&1 | tail -1
rm -rf $V/smoke $V/passed.txt
echo "== smoke run $(el) s"
timeout 200 python3 -m tebench run --preset gpu-smoke --devices 0 --only 'gpt/*' --only 'distill/*' \
  --out $V/smoke --compile-cache $CCDIR > $OUT/smoke.log 2>&1
echo "run rc=$?"; tail -n 12 $OUT/smoke.log
cp $V/smoke/results.jsonl $OUT/smoke.jsonl 2> /dev/null; cp $V/smoke/report/report.md $OUT/smoke.md 2> /dev/null
echo "== GPU tests $(el) s"
timeout -s INT $(( 575 - $(el) )) python3 -m pytest -v -rs -m "gpu or te or torchao" tests/gpu -p no:cacheprovider > $OUT/gpu-tests-1.log 2>&1
echo "pytest rc=$?"; grep -E " PASSED" $OUT/gpu-tests-1.log | sed 's/ PASSED.*//' > $V/passed.txt
grep -cE " PASSED" $OUT/gpu-tests-1.log; grep -E "FAILED|ERROR|passed|failed" $OUT/gpu-tests-1.log | tail -8
echo "done at $(el) s"
