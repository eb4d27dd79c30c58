#!/usr/bin/env bash
# One device call: the GPT d2048 warm-up probe (d2048.toml), results into $OUT/d2048.jsonl (the device returns
# at most eight files: the run folder stays in /tmp). Needs
# Transformer Engine (.gpu/install.sh); no torchao (the probe has no AO-FP8 case).
set -u
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
export PYTHONPATH="$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
python3 -m tebench run scripts/probes/gpt-d2048-warmup/d2048.toml --devices 0 --out /tmp/d2048 --no-report \
  --timeout 120 --only 'gpt/d2048/PT-AMP' --only 'gpt/d2048/PT-AMP+compile' --only 'gpt/d2048/TE-BF16' \
  --only 'gpt/d2048/TE-FP8/*' --only 'gpt/d2048-lr1e-4/PT-AMP' --only 'gpt/d2048-lr1e-4/TE-BF16' \
  --only 'gpt/d2048-lr1e-4/TE-FP8/current.HYBRID'
cp /tmp/d2048/results.jsonl "$OUT/d2048.jsonl"
