#!/usr/bin/env bash
# Device call 1 (2026-12-03, evening): what was written after the last H200 call and had run on the CPU only.
#  - every GPU test (`pytest -m "gpu or te" tests/gpu`): the leak-next and init-default TE self-tests among them;
#  - a GPU smoke run through the CLI, with its report: workers started with PYTHONSAFEPATH, absolute
#    paths, the output pump and the probe run from tebench's root;
#  - the stored H200 nightly read back from its .jsonl.gz and its report rendered.
set -u
source scripts/probes/h200-verdicts/setup.sh
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
python3 -c "import torch, torchao, transformer_engine, pynvml; print('torch', torch.__version__, 'torchao', torchao.__version__, 'TE', transformer_engine.__version__)" 2>&1 | tail -1
rm -rf $V/smoke $V/rep
echo "== GPU tests $(el) s"
timeout 330 python3 -m pytest -q -rs -m "gpu or te or torchao" tests/gpu -p no:cacheprovider > $OUT/gpu-tests.log 2>&1
echo "pytest rc=$?"; grep -E "^SKIPPED|passed|failed|Error" $OUT/gpu-tests.log | tail -15
echo "== smoke run $(el) s"
timeout 220 python3 -m tebench run --preset gpu-smoke --devices 0 --out $V/smoke > $OUT/smoke.log 2>&1
echo "run rc=$?"; tail -n 12 $OUT/smoke.log
cp $V/smoke/results.jsonl $OUT/smoke.jsonl 2> /dev/null; cp $V/smoke/report/report.md $OUT/smoke.md 2> /dev/null
echo "== stored nightly from .gz $(el) s"
timeout 60 python3 -m tebench report reports/h200-nightly-energy --out $V/rep > $OUT/report.log 2>&1
echo "report rc=$?"; tail -n 3 $OUT/report.log; cmp $V/rep/report.md reports/h200-nightly-energy/report.md && echo "report.md identical"
echo "done at $(el) s"
