#!/usr/bin/env bash
# The nightly on one H200 with a warm compile cache: the one warm_cache_and_checks.sh filled
# (/tmp/r18/cc, same machine), or its xz parts carried in .gpu/ccparts/ on a fresh machine.
# Under a 585 s limit; the rest then ran with --resume (the command at the end, commented out).
set -u
source .gpu/install.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
R=/tmp/r18b; mkdir -p $R
if [ -d /tmp/r18/cc ]; then cp -r /tmp/r18/cc $R/cc; else cat .gpu/ccparts/cc.part.* | xz -d | tar xf - -C $R; fi; du -sh $R/cc
T0=$(date +%s.%N)
timeout 585 python3 -m tebench run --preset nightly --devices 0 --out $R/nightly --quiet --compile-cache $R/cc > $R/nightly.log 2>&1
echo "rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$T0,1))") s" | tee -a $R/nightly.log
tar czf $OUT/nightly-warm.tgz -C $R nightly nightly.log
# then, on the same machine:
# timeout 200 python3 -m tebench run --preset nightly --devices 0 --resume --out $R/nightly --quiet --compile-cache $R/cc
