#!/usr/bin/env bash
# 2) The whole nightly (`tebench run --preset nightly --devices 0`, its report included) on the compile
#    cache that warm.sh filled: the one it left on this machine, or its xz parts carried in .ccparts/.
#    Timed from the command's start to its end. LIMIT keeps it inside one device call; a cut run is
#    finished with the same command and --resume.
set -u
source scripts/probes/h200-torchao-nightly/setup.sh
# No cache, no run: on an empty cache this is another measurement (2026-12-02 17:00 UTC the device call
# came on a fresh machine, the cache warm.sh had filled was gone, and the nightly ran cold).
if [ -d $CCDIR ]; then echo "cache: left on this machine"
elif ls .ccparts/cc.part.* > /dev/null 2>&1; then
  mkdir -p $(dirname $CCDIR) && cat .ccparts/cc.part.* | xz -d | tar xf - -C $(dirname $CCDIR) && echo "cache: unpacked"
else echo "nightly.sh: no compile cache on this machine ($CCDIR) and no .ccparts/: run warm.sh first, on this machine" >&2; exit 2; fi
du -sh $CCDIR; date -u +%H:%M:%S
# The run stays on this machine for --resume; the log goes straight to $OUT, and LIMIT leaves time in
# the device call to copy the results back.
R=/tmp/ao-nightly/nightly; T1=$(date +%s.%N)
timeout ${LIMIT:-555} python3 -m tebench run --preset nightly --devices 0 --out $R --quiet --compile-cache $CCDIR ${RESUME:-} > $OUT/nightly.log 2>&1
echo "nightly rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$T1,1))") s" | tee -a $OUT/nightly.log
tail -4 $OUT/nightly.log
cp $R/results.jsonl $OUT/nightly.jsonl; [ -f $R/report/report.md ] && cp $R/report/report.md $OUT/
echo "done at $(el) s"
