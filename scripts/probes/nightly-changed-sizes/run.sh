#!/usr/bin/env bash
# One device call (about 6 minutes; .gpu and .whl carried): the nightly preset's two sizes whose settings changed on
# 2026-12-07, GPT d2048 (lr 1e-4 over a 16-step warm-up, 28 steps) and Llama d4096-l4 (50 steps), every case of
# each as the nightly runs it (its twins, PT-AMP+compile, torchao included), on a cold compile cache.
# Results and log into $OUT (the device returns at most eight files).
set -u
source scripts/probes/h200-power/setup.sh
versions
python3 -m tebench run --preset nightly --only 'gpt/d2048/*' --only 'llama/d4096-l4/*' --devices 0 --out $V/sizes \
  --quiet --compile-cache $CCDIR > $OUT/sizes.log 2>&1
echo "rc=$? at $(el) s"; tail -n 30 $OUT/sizes.log
cp $V/sizes/results.jsonl $OUT/sizes.jsonl; cp $V/sizes/report/report.md $OUT/sizes.md
