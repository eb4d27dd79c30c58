#!/usr/bin/env bash
# One device call: the Llama variants of llama.toml (PT-AMP with its twins, and TE-BF16): `calm`, the single
# changes (ran on 2026-12-05, reports/h100-llama-calm/), then `calm2`, the combinations; ONLY names the items. Each `tebench run` starts in its own process session
# (scripts/probes/h200-power/setup.sh); a later call within the machine's 30 s of warmth collects it.
set -u
source scripts/probes/h200-power/setup.sh
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
python3 -c "import torch, pydantic, transformer_engine, torchao; print('torch', torch.__version__, 'pydantic', pydantic.VERSION, 'TE', transformer_engine.__version__, 'torchao', torchao.__version__)" 2>&1 | tail -1
L=scripts/probes/llama-calm/llama.toml
QUEUE=(
  "calm|$L --no-report --only llama/*-b95*/PT-AMP --only llama/*-b95*/TE-BF16 --only llama/*-clip/PT-AMP --only llama/*-clip/TE-BF16 --only llama/*-lr5/PT-AMP --only llama/*-lr5/TE-BF16"
  "calm2|$L --no-report --only llama/*-lr5c/PT-AMP --only llama/*-lr5c/TE-BF16 --only llama/*-lr3c/PT-AMP --only llama/*-lr3c/TE-BF16 --only llama/*-c03/PT-AMP --only llama/*-c03/TE-BF16 --only llama/*-w32c/PT-AMP --only llama/*-w32c/TE-BF16"
)
DEADLINE=${DEADLINE:-570}
for item in "${QUEUE[@]}"; do
  [ -z "$item" ] && continue
  n=${item%%|*}; args=${item#*|}
  [ -f $V/$n.collected ] && continue
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $n "* ]] && continue
  [ -f $V/$n.pid ] || start_run $n $args
  left=$(( DEADLINE - $(el) )); [ $left -lt 5 ] && { echo "deadline: $n left running"; break; }
  wait_run $n $left
  if kill -0 $(cat $V/$n.pid) 2> /dev/null; then echo "deadline: $n left running"; break; fi
  touch $V/$n.collected
done
ls $V/*.collected 2> /dev/null | xargs -n1 basename 2> /dev/null | tr '\n' ' '; echo; echo "call done at $(el) s"
