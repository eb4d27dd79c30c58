#!/usr/bin/env bash
# One device call (about 7 minutes; .gpu carried): llama.toml's Llama d4096-l4 cases three times, one run
# after another on one machine, as three nights of unchanged code would run them. Results into
# $OUT/rK.jsonl with their logs (the device returns at most eight files); spread.py reads them here.
set -u
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
export PYTHONPATH="$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
P=scripts/probes/llama-window
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
rm -rf /tmp/lw
for k in 1 2 3; do
  # A repeat takes about two minutes: the third is left out when it could not finish within the call.
  [ $(( $(date +%s) - T0 )) -gt ${LAST_START:-380} ] && { echo "r$k not started at $(( $(date +%s) - T0 )) s"; break; }
  python3 -m tebench run $P/llama.toml --devices 0 --out /tmp/lw/r$k --quiet --no-report --timeout 150 \
    --only 'llama/d4096-l4/PT-AMP' --only 'llama/d4096-l4/TE-BF16' --only 'llama/d4096-l4/TE-FP8/*' \
    > "$OUT/r$k.log" 2>&1
  echo "r$k rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 "$OUT/r$k.log"
  cp /tmp/lw/r$k/results.jsonl "$OUT/r$k.jsonl"
done
