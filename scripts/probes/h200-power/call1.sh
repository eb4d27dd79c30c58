#!/usr/bin/env bash
# Device call 1: the nightly's first shard (cold machine, empty compile cache), then the new
# "same structure, different training" mutations at the GPT tutorial size.
set -u
source scripts/probes/h200-power/setup.sh
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
python3 -c "import torch, pydantic, transformer_engine, torchao; print('torch', torch.__version__, 'pydantic', pydantic.VERSION, 'TE', transformer_engine.__version__, 'torchao', torchao.__version__)" 2>&1 | tail -1
start_run n1s1 --preset nightly --shard 1/2 --no-report
wait_run n1s1 480
export TEBENCH_TEST_FAULT="$MUTATIONS"; start_run mut1 --preset nightly $MUT_ONLY; unset TEBENCH_TEST_FAULT
wait_run mut1 $(( 570 - $(el) ))
echo "done at $(el) s"
