#!/usr/bin/env bash
# Launch methods on the GPU-bound goal cases (d2048 and d4096, PT-AMP and TE-FP8), in one
# machine session, ABBA: P = pre-started at the default depth (4 on 16 CPUs), C = --launch cold; one
# warm compile cache. Then validate_probe.py on three cases: how much of validation is one-time.
set -u
source .gpu/install.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
R=/tmp/launch-depth4; mkdir -p $R; [ -d $R/cc ] || (cat .gpu/ccparts/cc.part.* | xz -d | tar xf - -C $R)
ONLY=(--only gpt/d2048/PT-AMP --only "gpt/d2048/TE-FP8/delayed.HYBRID.h1024.max"
      --only gpt/d4096/PT-AMP --only "gpt/d4096/TE-FP8/delayed.HYBRID.h1024.max")
T0=$(date +%s)
one() {  # name, extra args...
  local name=$1; shift
  local t=$(date +%s)
  python3 -m tebench run --preset nightly "${ONLY[@]}" --devices 0 --out $R/$name --quiet --no-report --compile-cache $R/cc "$@" > $R/$name.log 2>&1
  echo "$name rc=$? wall=$(( $(date +%s) - t )) s at $(( $(date +%s) - T0 )) s"
}
one P1
one C1 --launch cold
one C2 --launch cold
one P2
if [ $(( $(date +%s) - T0 )) -lt 420 ]; then
  for c in gpt/tutorial/TE-FP8/delayed.HYBRID.h1024.max gpt/d4096/TE-FP8/delayed.HYBRID.h1024.max gpt/tutorial/PT-AMP; do
    timeout 60 python3 scripts/probes/h200-harness-cost/validate_probe.py $c 2>&1 | tail -1
  done | tee $R/validate-probe.jsonl
fi
tar czf $OUT/launch-depth4.tgz -C $R $(cd $R && ls -d [CP]? *.log *.jsonl 2>/dev/null)
echo "done at $(( $(date +%s) - T0 )) s"
