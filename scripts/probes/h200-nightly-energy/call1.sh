#!/usr/bin/env bash
# Device call 1 of 3 (2026-12-03). Fills an empty compile cache with the nightly's compile cases (two
# shards in the background, sharing the GPU; their timings are not the measurement), and beside it:
#  - the new GPT d4096 size (vocab 32000): PT-AMP with its seeds, TE-BF16, TE-FP8 delayed HYBRID (both);
#  - the tutorial mutation self-test (h200-verdicts/mutations.toml), now with the context check;
#  - the GPU tests of the zipf-markov verdicts and of the energy record.
set -u
source scripts/probes/h200-verdicts/setup.sh
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv,noheader
python3 -c "import torch, torchao, transformer_engine, pynvml; print('torch', torch.__version__, 'torchao', torchao.__version__, 'TE', transformer_engine.__version__)" 2>&1 | tail -1
rm -rf $CCDIR $V/warm* $V/d4096 $V/mut; mkdir -p $CCDIR
for i in 1 2; do
  timeout ${WARM_LIMIT:-420} python3 -m tebench run --preset nightly --devices 0 --only '*/PT-AMP+compile' --only '*/AO-FP8/*' \
    --shard $i/2 --out $V/warm$i --quiet --no-report --compile-cache $CCDIR > $V/warm$i.log 2>&1 &
done
show() {  # show RESULTS: each case's status, verdict, reason and loss curve
  python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") != "case":
        continue
    p = r.get("parity") or {}
    curve = [round(x, 2) for x in (r.get("loss") or {}).get("per_step", [])]
    v = r.get("validation") or {}
    print(f"{r['case_id']:48s} {r['status']:6s} {p.get('verdict')!s:12s} ctx {v.get('context_kl')} causal {v.get('causal_kl')} batch {v.get('batch_kl')}")
    print(f"    {p.get('reason', r.get('reason'))}")
    print(f"    loss {curve}")
PY
}
echo "== d4096 $(el) s"
timeout 240 python3 -m tebench run --preset nightly --devices 0 --only 'gpt/d4096/PT-AMP' --only 'gpt/d4096/TE-BF16' \
  --only 'gpt/d4096/TE-FP8/delayed.HYBRID.h1024.max*' --out $V/d4096 --quiet --no-report 2>&1 | tail -3
cp $V/d4096/results.jsonl $OUT/d4096.jsonl 2> /dev/null; show $V/d4096/results.jsonl
echo "== mutations $(el) s"
TEBENCH_TEST_FAULT='gpt/tutorial/PT-AMP=swap-layout;*TE-BF16=no-causal;*delayed.E4M3.h16.max=fp8-scale-one;*delayed.HYBRID.h16.max=lr-x10;*current.HYBRID=freeze-layer;*current.E4M3=fp8-bypass;*block.HYBRID=swap-layout' \
  timeout 300 python3 -m tebench run scripts/probes/h200-verdicts/mutations.toml --devices 0 --out $V/mut --quiet --no-report 2>&1 | tail -3
cp $V/mut/results.jsonl $OUT/mutations.jsonl 2> /dev/null; show $V/mut/results.jsonl | grep -v "^    loss"
echo "== GPU tests $(el) s"
timeout $(( ${LIMIT:-560} - $(el) - 40 )) python3 -m pytest -q -rs -s tests/gpu/test_gpu.py -k "zipf or energy" -p no:cacheprovider > $OUT/gpu-tests.log 2>&1
grep -E "energy:|passed|failed|Error" $OUT/gpu-tests.log | tail -8
echo "== waiting for the warm shards $(el) s"; wait
du -sh $CCDIR; tail -n 2 $V/warm1.log $V/warm2.log
cat $V/warm1/results.jsonl $V/warm2/results.jsonl > $OUT/warm.jsonl 2> /dev/null
echo "done at $(el) s"
