#!/usr/bin/env bash
# Device call 1: nightly 1 starts (an empty compile cache: it fills it), and beside it, sharing the GPU,
# the mutation self-test and the GPU tests of the frozen check; then it waits for nightly 1 while the
# call lasts. next.sh is the following call.
set -u
source scripts/probes/h200-verdicts/setup.sh
python3 -c "import torch, torchao, transformer_engine; print('torch', torch.__version__, 'torchao', torchao.__version__, 'TE', transformer_engine.__version__)" 2>&1 | tail -1
start_nightly 1
echo "== mutations $(date -u +%H:%M:%S)"
TEBENCH_TEST_FAULT='gpt/tutorial/PT-AMP=swap-layout;*TE-BF16=no-causal;*delayed.E4M3.h16.max=fp8-scale-one;*delayed.HYBRID.h16.max=lr-x10;*current.HYBRID=freeze-layer;*current.E4M3=fp8-bypass;*block.HYBRID=swap-layout' \
  timeout 300 python3 -m tebench run scripts/probes/h200-verdicts/mutations.toml --devices 0 --out $V/mut --quiet 2>&1 | tail -4
cp $V/mut/results.jsonl $OUT/mutations.jsonl 2> /dev/null; cp $V/mut/report/report.md $OUT/mutations.md 2> /dev/null
echo "== GPU tests $(date -u +%H:%M:%S)"
timeout $(( ${LIMIT:-560} - $(el) - 60 )) python3 -m pytest -q -rs tests/gpu/test_gpu.py -k "zipf or frozen or partial or mutation or fp8_proof" -p no:cacheprovider > $OUT/gpu-tests.log 2>&1
tail -n 5 $OUT/gpu-tests.log
wait_nightly 1 $(( ${LIMIT:-560} - $(el) ))
echo "done at $(el) s"
