#!/usr/bin/env bash
# What the energy monitor costs, on a GPU: the same cases with NVML sampling on and off, 5 rounds each,
# then `tebench compare` of the two runs (the gate's statistics; the target is under 1%). Then the
# nightly's energy table: see docs/findings/ once it has run. Needs Transformer Engine (.gpu/).
set -u
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
export PYTHONPATH="$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
python3 -c "import pynvml; pynvml.nvmlInit(); print('NVML', pynvml.nvmlSystemGetDriverVersion())"
for side in off sampled; do
  python3 -m tebench run scripts/probes/h200-energy/$side.toml --devices 0 --rounds 5 --out /tmp/e/$side --quiet --no-report
  cp /tmp/e/$side/results.jsonl $OUT/$side.jsonl
done
python3 -m tebench compare /tmp/e/off /tmp/e/sampled | tee $OUT/compare.md | tail -25
