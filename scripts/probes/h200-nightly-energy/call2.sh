#!/usr/bin/env bash
# Device call 2 of 3, at once after call1.sh on the same machine: the energy monitor's overhead (sampling
# on against off, ROUNDS rounds, the GPU to itself), then the whole nightly on the compile cache call 1
# filled, detached so that it outlives this call; call3.sh waits for it.
set -u
source scripts/probes/h200-verdicts/setup.sh
[ -d $CCDIR ] && [ -n "$(ls -A $CCDIR)" ] || { echo "call2.sh: no compile cache on this machine (a fresh machine?)" >&2; exit 2; }
rm -rf /tmp/e
for side in off sampled; do
  timeout 200 python3 -m tebench run scripts/probes/h200-energy/$side.toml --devices 0 --rounds ${ROUNDS:-3} --out /tmp/e/$side --quiet --no-report 2>&1 | tail -2
  cp /tmp/e/$side/results.jsonl $OUT/overhead-$side.jsonl
done
python3 -m tebench compare /tmp/e/off /tmp/e/sampled > $OUT/overhead-compare.md 2>&1; tail -25 $OUT/overhead-compare.md
echo "overhead done at $(el) s"
start_nightly 3
