#!/usr/bin/env bash
# The nightly preset on one H200 with the defaults (pre-started, depth 2, pause beside launch-bound
# timed steps, settled warm-up), compile cache cold; wall-clock from the command's start to the report.
set -u
source .gpu/install.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
R=/tmp/r17a; mkdir -p $R
T0=$(date +%s.%N)
timeout 575 python3 -m tebench run --preset nightly --devices 0 --out $R/nightly --quiet --compile-cache $R/cc > $R/nightly.log 2>&1
echo "rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$T0,1))") s" | tee -a $R/nightly.log
du -sh $R/cc
tar czf $OUT/nightly.tgz -C $R nightly nightly.log
tar czf $OUT/cc.tgz -C $R cc
ls -la $OUT
tail -4 $R/nightly.log
