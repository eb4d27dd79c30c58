# Sourced by the scripts here: Transformer Engine from .gpu/, torchao from its wheel in .whl/, both
# byte-compiled as a pip install leaves them; the compile cache and the work folders under /tmp/v.
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
if [ ! -d /tmp/ao/torchao ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/ao .whl/torchao-*.whl > /dev/null 2>&1
  python3 -m compileall -q /tmp/te-site > /dev/null 2>&1
fi
export PYTHONPATH="$PWD:/tmp/ao:$PYTHONPATH" PYTHONUNBUFFERED=1
V=/tmp/v; CCDIR=$V/cc; mkdir -p $V $CCDIR
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
# start_nightly N: the whole nightly (its report included) in its own process session, so that it
# outlives this device call, from a copy of the checkout; wall time from start to end in its log.
start_nightly() {
  local n=$1 src=$V/src$1; rm -rf $src $V/n$n; mkdir -p $V/n$n; cp -a . $src
  ( cd $src && setsid nohup bash -c "echo \$\$ > $V/n$n.pid; T1=\$(date +%s.%N); \
      python3 -m tebench run --preset nightly --devices 0 --out $V/n$n/run --quiet --compile-cache $CCDIR > $V/n$n/nightly.log 2>&1; \
      echo \"nightly rc=\$? wall=\$(python3 -c \"print(round(\$(date +%s.%N)-\$T1,1))\") s\" >> $V/n$n/nightly.log" \
      > /dev/null 2>&1 < /dev/null & )
  sleep 2; echo "nightly $n started at $(el) s, $(date -u +%H:%M:%S)"
}
# wait_nightly N LIMIT: wait for nightly N (at most LIMIT s), then bring its log, results and report back.
wait_nightly() {
  local n=$1 t=$(date +%s)
  while kill -0 $(cat $V/n$n.pid) 2> /dev/null && [ $(( $(date +%s) - t )) -lt $2 ]; do sleep 5; done
  kill -0 $(cat $V/n$n.pid) 2> /dev/null && echo "nightly $n still running at $(el) s" || echo "nightly $n finished at $(el) s"
  tail -n 3 $V/n$n/nightly.log; cp $V/n$n/nightly.log $OUT/nightly$n.log
  cp $V/n$n/run/results.jsonl $OUT/nightly$n.jsonl 2> /dev/null; cp $V/n$n/run/report/report.md $OUT/nightly$n.md 2> /dev/null
}
