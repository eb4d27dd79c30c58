#!/usr/bin/env bash
# The nightly's torchao comparison in one device call (2026-12-02):
# 1) fill an empty compile cache with the nightly's torch.compile cases (PT-AMP+compile, AO-FP8), two
#    shards at once on the one GPU: compiling is host work (16 CPUs) and these results are not kept;
# 2) on that warm cache, the nightly's four GPU-bound sizes with PT-AMP, PT-AMP+compile, AO-FP8 and
#    TE-FP8 delayed HYBRID (calibrated where the nightly has it), one case at a time -> $OUT/sizes.jsonl;
# 3) the torchao and one-GPU data-parallel GPU tests in the time left.
set -u
source scripts/probes/h200-torchao-nightly/setup.sh
python3 -c "import torch, torchao; print('torch', torch.__version__, 'torchao', torchao.__version__)" 2>&1 | tail -1
rm -rf $CCDIR /tmp/ao-nightly/warm*; mkdir -p $CCDIR; date -u +%H:%M:%S
for i in 1 2; do
  timeout 215 python3 -m tebench run --preset nightly --devices 0 --only '*/PT-AMP+compile' --only '*/AO-FP8/*' \
    --shard $i/2 --out /tmp/ao-nightly/warm$i --quiet --no-report --compile-cache $CCDIR > /tmp/ao-nightly/warm$i.log 2>&1 &
done
wait
echo "warm done at $(el) s"; du -sh $CCDIR; grep -h -E "^\[" /tmp/ao-nightly/warm1.log /tmp/ao-nightly/warm2.log | cut -c1-110
cat /tmp/ao-nightly/warm1/results.jsonl /tmp/ao-nightly/warm2/results.jsonl > $OUT/warm-shards.jsonl 2>/dev/null
only=()
for s in gpt/d2048 gpt/d4096 llama/d2048-l16 llama/d4096-l4; do
  only+=(--only "$s/PT-AMP" --only "$s/PT-AMP+compile" --only "$s/AO-FP8/*" --only "$s/TE-FP8/delayed.HYBRID.h1024.max*")
done
date -u +%H:%M:%S; T1=$(date +%s)
timeout $(( 500 - $(el) )) python3 -m tebench run --preset nightly --devices 0 "${only[@]}" --out /tmp/ao-nightly/sizes \
  --quiet --no-report --compile-cache $CCDIR > /tmp/ao-nightly/sizes.log 2>&1
echo "sizes rc=$? in $(( $(date +%s) - T1 )) s, done at $(el) s"; grep -E "^\[" /tmp/ao-nightly/sizes.log | cut -c1-150
cp /tmp/ao-nightly/sizes/results.jsonl $OUT/sizes.jsonl; cp /tmp/ao-nightly/sizes.log $OUT/
timeout $(( 578 - $(el) )) python3 -m pytest -q -rs tests/gpu/test_distributed_gpu.py tests/gpu/test_torchao_gpu.py -p no:cacheprovider > /tmp/ao-tests.log 2>&1
echo "pytest exit $? at $(el) s" >> /tmp/ao-tests.log; grep -E "passed|failed|Error|assert" /tmp/ao-tests.log | tail -12; cp /tmp/ao-tests.log $OUT/
echo "done at $(el) s"
