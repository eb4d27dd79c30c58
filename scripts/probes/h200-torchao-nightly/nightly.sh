#!/usr/bin/env bash
# 2) The whole nightly (`tebench run --preset nightly --devices 0`, its report included) on the compile
#    cache that warm.sh filled: the one it left on this machine, or its xz parts carried in .ccparts/.
#    Timed from the command's start to its end. LIMIT keeps it inside one device call; a cut run is
#    finished with the same command and --resume.
set -u
source scripts/probes/h200-torchao-nightly/setup.sh
if [ -d $CCDIR ]; then echo "cache: left on this machine"; else mkdir -p $(dirname $CCDIR) && cat .ccparts/cc.part.* | xz -d | tar xf - -C $(dirname $CCDIR); echo "cache: unpacked"; fi
du -sh $CCDIR; date -u +%H:%M:%S
# Results, report and log go straight to $OUT, so a run the device call's limit stops still comes back.
R=$OUT/nightly; T1=$(date +%s.%N)
timeout ${LIMIT:-570} python3 -m tebench run --preset nightly --devices 0 --out $R --quiet --compile-cache $CCDIR ${RESUME:-} > $OUT/nightly.log 2>&1
echo "nightly rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$T1,1))") s" | tee -a $OUT/nightly.log
tail -4 $OUT/nightly.log
echo "done at $(el) s"
