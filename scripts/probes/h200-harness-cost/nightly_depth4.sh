#!/usr/bin/env bash
# The whole nightly on one H200 with the defaults of commit d2f4416 (pre-start depth from the host:
# 4 on its 16 CPUs), timed from the command's start to its end, report included.
#   CACHE=warm: a compile cache that the six torch.compile cases had filled (its xz parts carried in
#               .gpu/ccparts/), unpacked in an earlier call on the same machine with TE's .pyc
#               written (`python3 -m compileall /tmp/te-site`), as a pip install would have;
#   CACHE=cold: an empty compile cache.
# LIMIT keeps the command inside one device call; a cut run is finished with the same command and
# --resume (the cold one was: 575 s, then 63 s).
set -u
source .gpu/install.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
R=/tmp/nightly-${CACHE:-warm}; mkdir -p $R
if [ "${CACHE:-warm}" = warm ]; then
  [ -d $R/cc ] || (cat .gpu/ccparts/cc.part.* | xz -d | tar xf - -C $R)
else
  rm -rf $R/cc && mkdir $R/cc
fi
T0=$(date +%s.%N)
timeout ${LIMIT:-580} python3 -m tebench run --preset nightly --devices 0 --out $R/nightly --quiet --compile-cache $R/cc > $R/nightly.log 2>&1
echo "rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$T0,1))") s" | tee -a $R/nightly.log
tar czf $OUT/nightly-${CACHE:-warm}.tgz -C $R nightly nightly.log
