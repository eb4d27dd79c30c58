#!/usr/bin/env bash
# What ran on one H200 for reports/h200-torchao/: the AO-FP8 GPU tests, the d4096 table
# (d4096.toml) and the torchao mutation self-test (mutations.toml). Results go to $OUT.
# Needs Transformer Engine (.gpu/install.sh) and the torchao wheel in .whl/.
set -u
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ao .whl/torchao-*.whl > /dev/null 2>&1
export PYTHONPATH="$PWD:/tmp/ao:$PYTHONPATH" PYTHONUNBUFFERED=1
python3 -c "import torch, torchao; print('torch', torch.__version__, 'torchao', torchao.__version__)" 2>&1 | tail -1
python3 -m tebench env 2>&1 | grep -E "^(device|torch|torchao|Transformer)|AO-FP8" | head -8
echo "== d4096 table"; date -u +%H:%M:%S
timeout 250 python3 -m tebench run scripts/probes/h200-torchao/d4096.toml --devices 0 --out /tmp/w/d4096 --no-report 2>&1 | grep -E "ok |failed|skip|oom|timeout|Error" | tail -12
cp /tmp/w/d4096/results.jsonl "$OUT/d4096.jsonl" 2>/dev/null
echo "== GPU tests (AO-FP8)"; date -u +%H:%M:%S
timeout 160 python3 -m pytest -q -s tests/gpu/test_torchao_gpu.py -p no:cacheprovider 2>&1 | grep -v "^$" | tail -45
echo "== mutations"; date -u +%H:%M:%S
TEBENCH_TEST_FAULT='*AO-FP8/tensorwise=lr-x10;*AO-FP8/rowwise=freeze-layer;*AO-FP8/rowwise_with_gw_hp=fp8-bypass' \
  timeout 140 python3 -m tebench run scripts/probes/h200-torchao/mutations.toml --devices 0 --out /tmp/w/mut --no-report 2>&1 \
  | grep -E "ok |failed|skip|oom|timeout|Error" | tail -8
cp /tmp/w/mut/results.jsonl "$OUT/mutations.jsonl" 2>/dev/null
date -u +%H:%M:%S
