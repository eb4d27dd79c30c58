#!/usr/bin/env bash
# One device call (about 4 minutes; .gpu carried): Llama d4096-l4's reference and two cases, twice with
# the default kernels and twice with deterministic ones (site/sitecustomize.py), then compare.py on each
# pair. The question: does the reference reproduce its curve bit for bit from run to run with deterministic
# kernels, where with the defaults it drifts from step 3 and strays after step 20 (reports/h100-nightly-c763615/),
# and what do deterministic kernels cost a step.
set -u
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
export PYTHONPATH="$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
P=scripts/probes/llama-determinism
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
one() {  # one NAME [deterministic]
  local extra=()
  [ "${2:-}" = deterministic ] && extra=(env TEBENCH_PROBE_DETERMINISTIC=1 CUBLAS_WORKSPACE_CONFIG=:4096:8
      NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 PYTHONPATH="$PWD/$P/site:$PYTHONPATH")
  "${extra[@]}" python3 -m tebench run $P/llama.toml --devices 0 --out "/tmp/ld/$1" --quiet --no-report --timeout 150 \
    --only 'llama/d4096-l4/PT-AMP' --only 'llama/d4096-l4/TE-BF16' --only 'llama/d4096-l4/TE-FP8/current.HYBRID' \
    > "$OUT/$1.log" 2>&1
  echo "$1 rc=$?"; tail -n 3 "$OUT/$1.log"; cp "/tmp/ld/$1/results.jsonl" "$OUT/$1.jsonl"
}
rm -rf /tmp/ld; one a1; one a2; one d1 deterministic; one d2 deterministic
python3 $P/compare.py "$OUT/a1.jsonl" "$OUT/a2.jsonl"
python3 $P/compare.py "$OUT/d1.jsonl" "$OUT/d2.jsonl"
python3 $P/compare.py "$OUT/a1.jsonl" "$OUT/d1.jsonl"
