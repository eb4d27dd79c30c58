#!/usr/bin/env bash
# 1) the GPU tests; 2) the nightly that nightly_one_gpu.sh left at 63 of 68 cases, resumed (its
# results directory was copied to .gpu/n17/nightly first); 3) the torch.compile cases twice on one
# compile cache: cold, then warm.
set -u
source .gpu/install.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
R=/tmp/r17c; mkdir -p $R; cp -r .gpu/n17/nightly $R/nightly
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
timeout 200 python3 -m pytest -q -m "gpu or te" tests/test_gpu.py -p no:cacheprovider > $R/gpu-tests.log 2>&1
echo "pytest exit $?" >> $R/gpu-tests.log; tail -2 $R/gpu-tests.log; echo "tests done at $(el) s"
t=$(date +%s); timeout 150 python3 -m tebench run --preset nightly --devices 0 --resume --out $R/nightly --quiet --compile-cache $R/cc > $R/resume.log 2>&1
echo "resume rc=$? wall=$(( $(date +%s) - t )) s at $(el) s" | tee -a $R/resume.log
ONLY=(--only "*/PT-AMP+compile")
if [ $(el) -lt 300 ]; then
  t=$(date +%s); timeout $(( 450 - $(el) )) python3 -m tebench run --preset nightly --devices 0 "${ONLY[@]}" --out $R/compile-1 --quiet --no-report --compile-cache $R/cc > $R/compile-1.log 2>&1
  echo "compile-1 rc=$? wall=$(( $(date +%s) - t )) s at $(el) s" | tee -a $R/compile-1.log
fi
if [ $(el) -lt 420 ]; then
  t=$(date +%s); timeout $(( 490 - $(el) )) python3 -m tebench run --preset nightly --devices 0 "${ONLY[@]}" --out $R/compile-2 --quiet --no-report --compile-cache $R/cc > $R/compile-2.log 2>&1
  echo "compile-2 rc=$? wall=$(( $(date +%s) - t )) s at $(el) s" | tee -a $R/compile-2.log
fi
tar czf $OUT/r17c.tgz -C $R $(cd $R && ls -d nightly compile-? *.log 2>/dev/null)
echo "done at $(el) s"
