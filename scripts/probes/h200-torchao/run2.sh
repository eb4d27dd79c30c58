#!/usr/bin/env bash
# The second H200 call for reports/h200-torchao/: the AO-FP8 GPU tests; the nightly's GPT d2048
# (PT-AMP, PT-AMP+compile, AO-FP8 tensorwise, TE-FP8 delayed HYBRID); and the crossover's
# AO-FP8 at s2048 with and without CUDA graphs (torch.compile mode="reduce-overhead").
set -u
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ao .whl/torchao-*.whl > /dev/null 2>&1
export PYTHONPATH="$PWD:/tmp/ao:$PYTHONPATH" PYTHONUNBUFFERED=1
echo "== GPU tests (AO-FP8)"; date -u +%H:%M:%S
timeout 150 python3 -m pytest -q -s tests/gpu/test_torchao_gpu.py -p no:cacheprovider -p no:logging 2>&1 \
  | grep -E "proof|passed|failed|Error|assert|^gpt" | tail -30
echo "== nightly d2048"; date -u +%H:%M:%S
timeout 200 python3 -m tebench run --preset nightly --only 'gpt/d2048/PT-AMP' --only 'gpt/d2048/PT-AMP+compile' \
  --only 'gpt/d2048/AO-FP8/*' --only 'gpt/d2048/TE-FP8/delayed.HYBRID.h1024.max' --devices 0 --out /tmp/w/d2048 \
  --no-report 2>&1 | grep -E "ok |failed|skip|oom|timeout|Error" | tail -10
cp /tmp/w/d2048/results.jsonl "$OUT/nightly-d2048.jsonl" 2>/dev/null
echo "== crossover s2048 AO-FP8, graphs off/on"; date -u +%H:%M:%S
timeout 150 python3 -m tebench run --preset crossover --only 'gpt/s2048/AO-FP8/*' --only 'gpt/s2048/PT-AMP+compile' \
  --devices 0 --out /tmp/w/cross --no-report 2>&1 | grep -E "ok |failed|skip|oom|timeout|Error" | tail -8
cp /tmp/w/cross/results.jsonl "$OUT/crossover-s2048.jsonl" 2>/dev/null
date -u +%H:%M:%S
