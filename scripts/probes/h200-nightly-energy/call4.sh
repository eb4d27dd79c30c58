#!/usr/bin/env bash
# Device call 4 (a fresh machine): the structural checks with FP8 switched off. The GPU tests of the
# zipf-markov verdicts (TE-BF16, TE-FP8 delayed and current, TE mutations), then the two cases whose
# causal_kl read 0.003 with FP8 on in the nightly: Llama d4096 TE-FP8 current and AO-FP8 tensorwise.
set -u
source scripts/probes/h200-verdicts/setup.sh
timeout 200 python3 -m pytest -q -rs -s tests/gpu/test_gpu.py -k "zipf" -p no:cacheprovider > $OUT/gpu-tests-zipf.log 2>&1
grep -E "^  |passed|failed|Error" $OUT/gpu-tests-zipf.log | tail -20
rm -rf $V/fp8off
timeout $(( ${LIMIT:-400} - $(el) )) python3 -m tebench run --preset nightly --devices 0 --only 'llama/d4096-l4/TE-FP8/current.HYBRID' \
  --only 'llama/d4096-l4/AO-FP8/tensorwise' --out $V/fp8off --quiet --no-report 2>&1 | tail -3
cp $V/fp8off/results.jsonl $OUT/fp8off.jsonl 2> /dev/null
python3 - <<'PY'
import json
for line in open("/tmp/v/fp8off/results.jsonl"):
    r = json.loads(line)
    if r.get("type") == "case":
        v = r.get("validation") or {}
        print(r["case_id"], r["status"], {k: v.get(k) for k in ("causal_kl", "batch_kl", "context_kl", "structure_fp8", "heldout_loss")})
PY
echo "done at $(el) s"
