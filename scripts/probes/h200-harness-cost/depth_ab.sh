#!/usr/bin/env bash
# Pre-start depth 2 against 4 on the launch-bound part of the nightly (gpt/tutorial, distill),
# one warm compile cache, in one machine session: G2 G4 D4 D2.
set -u
source .gpu/install.sh >/dev/null 2>&1; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:${PYTHONPATH:-}
R=/tmp/r18c; mkdir -p $R; cat .gpu/ccparts/cc.part.* | xz -d | tar xf - -C $R; du -sh $R/cc
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
one() {  # name, only-pattern, depth, limit
  local t=$(date +%s)
  timeout $4 python3 -m tebench run --preset nightly --devices 0 --only "$2" --prestart-depth $3 --out $R/$1 --quiet --no-report --compile-cache $R/cc > $R/$1.log 2>&1
  echo "$1 depth $3 rc=$? wall=$(( $(date +%s) - t )) s at $(el) s" | tee -a $R/$1.log
}
one G2 "gpt/tutorial/*" 2 170
one G4 "gpt/tutorial/*" 4 170
[ $(el) -lt 380 ] && one D4 "distill/*" 4 80
[ $(el) -lt 460 ] && one D2 "distill/*" 2 80
tar czf $OUT/r18c.tgz -C $R $(cd $R && ls -d G? D? *.log 2>/dev/null)
echo "done at $(el) s"
