#!/usr/bin/env bash
# Launch methods on launch-bound and GPU-bound cases, alternated in one machine session:
# C cold, P pre-started depth 2 with the pause, N depth 2 without it, T as P with
# TORCHINDUCTOR_COMPILE_THREADS=1 (no inductor compile-worker pool started by TE's first step).
set -u
source .gpu/install.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
R=/tmp/r17; mkdir -p $R
ONLY=(--only gpt/tutorial/PT-AMP --only gpt/tutorial/TE-BF16 --only "gpt/tutorial/TE-FP8/delayed.HYBRID.h1024.max"
      --only distill/tutorial/PT-AMP --only distill/tutorial/TE-BF16 --only "distill/tutorial/TE-FP8/delayed.HYBRID.h1024.max"
      --only gpt/d4096/PT-AMP --only "gpt/d4096/TE-FP8/delayed.HYBRID.h1024.max")
T0=$(date +%s)
one() {  # name, extra args...
  local name=$1; shift
  local t=$(date +%s)
  python3 -m tebench run --preset nightly "${ONLY[@]}" --devices 0 --out $R/$name --quiet --no-report --compile-cache $R/cc "$@" > $R/$name.log 2>&1
  echo "$name rc=$? wall=$(( $(date +%s) - t )) s at $(( $(date +%s) - T0 )) s"
}
one C1 --launch cold
one P1 --launch prestarted --prestart-depth 2
one N1 --launch prestarted --prestart-depth 2 --no-pause
TORCHINDUCTOR_COMPILE_THREADS=1 one T1 --launch prestarted --prestart-depth 2
one P2 --launch prestarted --prestart-depth 2
one N2 --launch prestarted --prestart-depth 2 --no-pause
[ $(( $(date +%s) - T0 )) -lt 440 ] && one C2 --launch cold
[ $(( $(date +%s) - T0 )) -lt 500 ] && TORCHINDUCTOR_COMPILE_THREADS=1 one T2 --launch prestarted --prestart-depth 2
tar czf $OUT/r17b.tgz -C $R $(cd $R && ls -d [CPNT]? *.log 2>/dev/null)
echo "done at $(( $(date +%s) - T0 )) s"
