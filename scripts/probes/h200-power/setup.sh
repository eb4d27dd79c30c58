# Sourced by the scripts here: Transformer Engine from .gpu/, torchao from its wheel in .whl/, both
# byte-compiled as a pip install leaves them; the compile cache and the work folders under /tmp/p.
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
if [ ! -d /tmp/ao/torchao ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/ao .whl/torchao-*.whl > /dev/null 2>&1
  python3 -m compileall -q /tmp/te-site > /dev/null 2>&1
fi
export PYTHONPATH="$PWD:/tmp/ao:$PYTHONPATH" PYTHONUNBUFFERED=1
V=/tmp/p; CCDIR=$V/cc; mkdir -p $V $CCDIR
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
# start_run NAME ARGS...: `tebench run ARGS --out $V/NAME/run` in its own process session (it outlives
# the device call), from a copy of the checkout; its wall time in NAME/run.log.
start_run() {
  local n=$1; shift; local src=$V/src-$n; rm -rf $src $V/$n; mkdir -p $V/$n; cp -a . $src
  ( cd $src && setsid nohup bash -c "echo \$\$ > $V/$n.pid; T1=\$(date +%s.%N); \
      python3 -m tebench run $* --devices 0 --out $V/$n/run --quiet --compile-cache $CCDIR > $V/$n/run.log 2>&1; \
      echo \"$n rc=\$? wall=\$(python3 -c \"print(round(\$(date +%s.%N)-\$T1,1))\") s\" >> $V/$n/run.log" \
      > /dev/null 2>&1 < /dev/null & )
  sleep 2; echo "$n started at $(el) s, $(date -u +%H:%M:%S)"
}
# wait_run NAME LIMIT: wait for run NAME (at most LIMIT s), then bring its log, results and report back.
wait_run() {
  local n=$1 t=$(date +%s)
  while kill -0 $(cat $V/$n.pid) 2> /dev/null && [ $(( $(date +%s) - t )) -lt $2 ]; do sleep 5; done
  kill -0 $(cat $V/$n.pid) 2> /dev/null && echo "$n still running at $(el) s" || echo "$n finished at $(el) s"
  tail -n 4 $V/$n/run.log; cp $V/$n/run.log $OUT/$n.log
  gzip -c $V/$n/run/results.jsonl > $OUT/$n.jsonl.gz 2> /dev/null
  cp $V/$n/run/report/report.md $OUT/$n.md 2> /dev/null; true
}
# The new mutation class at the GPT tutorial size, one mutation per case, beside unmutated cases.
MUTATIONS='gpt/tutorial/PT-AMP=norm-eps;gpt/tutorial/PT-AMP+compile=lr-quarter;gpt/tutorial/TE-BF16=dropout-on;gpt/tutorial/TE-FP8/current.HYBRID=leak-small'
MUT_ONLY="--only gpt/tutorial/PT-FP32 --only gpt/tutorial/PT-AMP --only gpt/tutorial/PT-AMP+compile --only gpt/tutorial/TE-BF16 --only gpt/tutorial/TE-FP8/current.HYBRID --only gpt/tutorial/TE-FP8/delayed.HYBRID.h16.max.cal8"
# versions: the GPU and the library versions a queue's log starts with.
versions() {
  nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
  python3 -c "import torch, pydantic, transformer_engine, torchao; print('torch', torch.__version__, 'pydantic', pydantic.VERSION, 'TE', transformer_engine.__version__, 'torchao', torchao.__version__)" 2>&1 | tail -1
}
# run_queue "NAME|ARGS"...: a queue that outlasts a device call. Each item is `tebench run ARGS` (start_run),
# or with ARGS "pytest" the GPU test of the new mutation class in the foreground (about a minute); items
# already collected are passed over, ONLY="a b" runs just those, and waiting stops DEADLINE s in (570).
run_queue() {
  local item n args left deadline=${DEADLINE:-570}
  for item in "$@"; do
    n=${item%%|*}; args=${item#*|}
    [ -f $V/$n.collected ] && continue
    [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $n "* ]] && continue
    if [ "$args" = pytest ]; then
      [ $(( deadline - $(el) )) -lt 150 ] && { echo "deadline: $n next"; break; }
      python3 -m pytest -q -p no:cacheprovider -s tests/gpu/test_gpu.py -k subtle 2>&1 | tail -n 25 | tee $OUT/$n.log
      touch $V/$n.collected; continue
    fi
    [ -f $V/$n.pid ] || start_run $n $args
    left=$(( deadline - $(el) )); [ $left -lt 5 ] && { echo "deadline: $n left running"; break; }
    wait_run $n $left
    if kill -0 $(cat $V/$n.pid) 2> /dev/null; then echo "deadline: $n left running"; break; fi
    touch $V/$n.collected
  done
  ls $V/*.collected 2> /dev/null | xargs -n1 basename 2> /dev/null | tr '\n' ' '; echo; echo "call done at $(el) s"
}
