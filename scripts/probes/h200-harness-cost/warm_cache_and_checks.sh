#!/usr/bin/env bash
# 1) warm a compile cache with the nightly's six torch.compile cases (kept in /tmp/r18/cc for
# nightly_warm.sh on the same machine, and also written out in xz parts for a fresh machine);
# 2) the GPU tests and benchmarks/harness_overhead.py on the current code.
set -u
source .gpu/install.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
R=/tmp/r18; mkdir -p $R
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
timeout 240 python3 -m tebench run --preset nightly --devices 0 --only "*/PT-AMP+compile" --out $R/warm --quiet --no-report --compile-cache $R/cc > $R/warm.log 2>&1
echo "warm rc=$? at $(el) s"; du -sh $R/cc
timeout 200 python3 -m pytest -q -m "gpu or te" tests/test_gpu.py -p no:cacheprovider > $R/gpu-tests.log 2>&1
echo "pytest exit $?" >> $R/gpu-tests.log; tail -2 $R/gpu-tests.log; echo "tests done at $(el) s"
timeout 60 python3 benchmarks/harness_overhead.py --mode PT-AMP --json $R/ho-pt-amp.json > $R/ho.log 2>&1; echo "ho PT-AMP rc=$?" >> $R/ho.log
timeout 60 python3 benchmarks/harness_overhead.py --mode TE-BF16 --json $R/ho-te-bf16.json >> $R/ho.log 2>&1; echo "ho TE-BF16 rc=$?" >> $R/ho.log
cat $R/ho.log | tail -8; echo "ho done at $(el) s"
tar czf $OUT/r18a.tgz -C $R warm warm.log gpu-tests.log ho.log $(cd $R && ls ho-*.json 2>/dev/null)
if [ $(el) -lt 480 ]; then tar cf - -C $R cc | xz -T0 -1 > $R/cc.tar.xz && split -b 15M -d $R/cc.tar.xz $OUT/cc.part.; fi
ls -la $OUT; echo "done at $(el) s"
