#!/usr/bin/env bash
# One device call (.gpu carried): GPT d4096 at the sizes SIZES names (default lr3e-4 lr6e-4; also lr5e-5, calm: d4096.toml), each its PT-AMP reference with
# twins, TE-BF16 and TE-FP8 current HYBRID. Only the results and the log come back (the device returns 8 files).
set -u
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
export PYTHONPATH="$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
for lr in ${SIZES:-lr3e-4 lr6e-4}; do
  python3 -m tebench run scripts/probes/gpt-d4096-steps/d4096.toml --devices 0 --out "/tmp/d4096-$lr" --no-report \
    --timeout 120 --only "gpt/d4096-$lr/PT-AMP" --only "gpt/d4096-$lr/TE-BF16" \
    --only "gpt/d4096-$lr/TE-FP8/current.HYBRID" > "$OUT/d4096-$lr.log" 2>&1
  cp "/tmp/d4096-$lr/results.jsonl" "$OUT/d4096-$lr.jsonl"
done
