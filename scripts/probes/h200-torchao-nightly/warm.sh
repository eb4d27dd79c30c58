#!/usr/bin/env bash
# 1) Fill an empty compile cache with the nightly's torch.compile cases, PT-AMP+compile and AO-FP8;
#    the cache stays on this machine for nightly.sh (PARTS=1: also as xz parts in $OUT, if small enough).
# 2) Then GPU tests in the time left (LIMIT, s): TESTPATHS, by default the torchao and one-GPU
#    data-parallel ones; TESTS=0 skips them.
# 3) NIGHTLY=1: then start nightly.sh on this machine, detached; collect.sh gathers it.
set -u
source scripts/probes/h200-torchao-nightly/setup.sh
python3 -c "import torch, torchao; print('torch', torch.__version__, 'torchao', torchao.__version__)" 2>&1 | tail -1
rm -rf $CCDIR /tmp/ao-nightly/warm*; mkdir -p $CCDIR
date -u +%H:%M:%S
# Two shards at once on the one GPU: compiling is host work (16 CPUs), and these results are not the
# measurement (nightly.sh's are), so the cases may share the GPU.
for i in 1 2; do
  timeout ${WARM_LIMIT:-330} python3 -m tebench run --preset nightly --devices 0 --only '*/PT-AMP+compile' --only '*/AO-FP8/*' \
    --shard $i/2 --out /tmp/ao-nightly/warm$i --quiet --no-report --compile-cache $CCDIR > /tmp/ao-nightly/warm$i.log 2>&1 &
done
wait
echo "warm done at $(el) s"; du -sh $CCDIR; tail -n 3 /tmp/ao-nightly/warm1.log /tmp/ao-nightly/warm2.log
cat /tmp/ao-nightly/warm1/results.jsonl /tmp/ao-nightly/warm2/results.jsonl > $OUT/warm-shards.jsonl
first=$(ls /tmp/ao-nightly/warm1/logs/* 2>/dev/null | head -1); grep -q "rror" "$first" 2>/dev/null && { echo "== $first"; tail -25 "$first"; }
python3 - <<'PY'
import json
for line in open("/tmp/ao-nightly/warm1/results.jsonl").readlines() + open("/tmp/ao-nightly/warm2/results.jsonl").readlines():
    r = json.loads(line)
    if r["type"] == "case":
        st = (r.get("timing") or {}).get("stats") or {}
        print(f"{r['case_id']:44s} {r['status']:8s} median {st.get('median') or 0:8.1f} ms  "
              f"warm-up {(r.get('phases') or {}).get('warmup_s') or 0:5.1f} s  case {r['duration_s']:6.1f} s")
PY
# PARTS=1: the cache as xz parts in $OUT, for nightly.sh on a fresh machine (if it packs under 20 MB).
if [ "${PARTS:-0}" = 1 ]; then
  tar cf - -C $(dirname $CCDIR) $(basename $CCDIR) | xz -T0 -1 > /tmp/ao-nightly/cc.tar.xz && ls -la /tmp/ao-nightly/cc.tar.xz
  if [ $(stat -c %s /tmp/ao-nightly/cc.tar.xz) -lt 20000000 ]; then split -b 15M -d /tmp/ao-nightly/cc.tar.xz $OUT/cc.part.; fi
fi
# The GPU tests in the time left, verbose and straight to $OUT, so a cut run still says which passed.
if [ "${TESTS:-1}" = 1 ]; then
  timeout $(( ${LIMIT:-560} - $(el) )) python3 -m pytest -v -rs ${TESTPATHS:-tests/gpu/test_torchao_gpu.py tests/gpu/test_distributed_gpu.py} -p no:cacheprovider > $OUT/gpu-tests.log 2>&1
  echo "pytest exit $? at $(el) s" >> $OUT/gpu-tests.log; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" $OUT/gpu-tests.log | tail -40
fi
# NIGHTLY=1: start nightly.sh at once on this cache, in its own process session so that it outlives
# this device call, from a copy of the checkout (the next call's copy of the working tree must not
# change files under a running nightly), with no time limit: collect.sh, the next device call, waits
# for it and brings its outputs back. The gap between two device calls is where a machine can be
# given back; this way the nightly itself never spans one.
if [ "${NIGHTLY:-0}" = 1 ]; then
  S=/tmp/ao-nightly/src; rm -rf $S /tmp/ao-nightly/out; mkdir -p /tmp/ao-nightly/out
  cp -a . $S; cd $S
  OUT=/tmp/ao-nightly/out LIMIT=${NIGHTLY_LIMIT:-1500} setsid nohup bash -c \
    'echo $$ > /tmp/ao-nightly/nightly.pid; exec bash scripts/probes/h200-torchao-nightly/nightly.sh' \
    > /tmp/ao-nightly/out/nightly-sh.log 2>&1 < /dev/null &
  cd - > /dev/null
  sleep 5; echo "nightly started at $(el) s, pid $(cat /tmp/ao-nightly/nightly.pid)"; cat /tmp/ao-nightly/out/nightly-sh.log
fi
echo "done at $(el) s"
