#!/usr/bin/env bash
# Device call 1 (2026-12-04; first tried 2026-12-03, night): the nightly preset end to end on the H200 with the record model on
# pydantic (workers build their parts as models; the parent reads each line once into its model), its
# report included. Started detached; this call waits for it as long as it may, call2.sh collects it.
set -u
source scripts/probes/h200-verdicts/setup.sh
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
python3 -c "import torch, pydantic, transformer_engine; print('torch', torch.__version__, 'pydantic', pydantic.VERSION, 'TE', transformer_engine.__version__)" 2>&1 | tail -1
rm -rf $V/n1 $V/src1
start_nightly 1
wait_nightly 1 560
echo "done at $(el) s"
