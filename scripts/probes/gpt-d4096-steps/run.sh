#!/usr/bin/env bash
# One device call (.gpu carried): the GPT d4096 probe (d4096.toml), results into $OUT/d4096.jsonl (the device
# returns at most eight files: the run folder stays in /tmp).
set -u
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
export PYTHONPATH="$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
python3 -m tebench run scripts/probes/gpt-d4096-steps/d4096.toml --devices 0 --out /tmp/d4096 --no-report \
  --timeout 120 --only 'gpt/d4096/PT-AMP' --only 'gpt/d4096/PT-AMP+compile' --only 'gpt/d4096/TE-BF16' \
  --only 'gpt/d4096/TE-FP8/current.HYBRID' --only 'gpt/d4096/TE-FP8/delayed.HYBRID.h1024.max.cal8'
cp /tmp/d4096/results.jsonl "$OUT/d4096.jsonl"
