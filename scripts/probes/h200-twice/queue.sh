#!/usr/bin/env bash
# One device call of a queue that outlasts a call: each `tebench run` below starts in its own process
# session (scripts/probes/h200-power/setup.sh), in order; every call collects what finished, starts the
# next, and stops waiting ~570 s in (the next call, within the machine's 30 s of warmth, goes on).
# The queue: the GPU test of the new mutation class (tests/gpu, -k subtle), Llama d2048's noise floor at a
# lower lr and a longer lr warm-up (llama.toml), then the nightly twice (two shards each; the second night
# finds the first one's compile cache, as a GPU runner that keeps its cache does), as far as GPU time goes.
set -u
source scripts/probes/h200-power/setup.sh
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
python3 -c "import torch, pydantic, transformer_engine, torchao; print('torch', torch.__version__, 'pydantic', pydantic.VERSION, 'TE', transformer_engine.__version__, 'torchao', torchao.__version__)" 2>&1 | tail -1
L=scripts/probes/h200-twice/llama.toml
QUEUE=(
  "gput|pytest"
  "lx|$L --no-report --only llama/d2048-lr5e5/PT-AMP --only llama/d2048-lr5e5/TE-BF16 --only llama/d2048-w35/PT-AMP --only llama/d2048-w35/TE-BF16"
  "n1s1|--preset nightly --shard 1/2 --no-report"
  "n1s2|--preset nightly --shard 2/2 --no-report"
  "n2s1|--preset nightly --shard 1/2 --no-report"
  "n2s2|--preset nightly --shard 2/2 --no-report"
)
DEADLINE=${DEADLINE:-570}
for item in "${QUEUE[@]}"; do
  n=${item%%|*}; args=${item#*|}
  [ -f $V/$n.collected ] && continue
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $n "* ]] && continue  # ONLY="gput lx": just those
  if [ "$args" = pytest ]; then  # the GPU test of the new mutation class, in the foreground (about a minute)
    [ $(( DEADLINE - $(el) )) -lt 150 ] && { echo "deadline: $n next"; break; }
    python3 -m pytest -q -p no:cacheprovider -s tests/gpu/test_gpu.py -k subtle 2>&1 | tail -n 25 | tee $OUT/$n.log
    touch $V/$n.collected; continue
  fi
  [ -f $V/$n.pid ] || start_run $n $args
  left=$(( DEADLINE - $(el) )); [ $left -lt 5 ] && { echo "deadline: $n left running"; break; }
  wait_run $n $left
  if kill -0 $(cat $V/$n.pid) 2> /dev/null; then echo "deadline: $n left running"; break; fi
  touch $V/$n.collected
done
ls $V/*.collected 2> /dev/null | xargs -n1 basename 2> /dev/null | tr '\n' ' '; echo; echo "call done at $(el) s"
