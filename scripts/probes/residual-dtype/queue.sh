#!/usr/bin/env bash
# One device call: GPT d4096-calm (sizes.toml) with the code before the PyTorch blocks took autocast's dtype
# for their residual stream (.old/tebench, made by prepare.sh) and after it; then, after it, the nightly's own GPT
# d4096, GPT tutorial and Llama d2048-l16 cases that compare PT-AMP with TE.
set -u
source scripts/probes/h200-power/setup.sh
versions
S=scripts/probes/residual-dtype/sizes.toml
only() { local s=$1; shift; for m in "$@"; do printf -- "--only %s/%s " $s $m; done; }
CALM=$(only gpt/d4096-calm PT-AMP TE-BF16 TE-FP8/current.HYBRID)
# The checkout with the package before the change: .old/tebench in place of tebench/.
B=/tmp/p/before; rm -rf $B; mkdir -p $B; cp -a $(ls -A | grep -v -x -e .old -e tebench -e reports) $B/; cp -a .old/tebench $B/
# NAME|DIR|ARGS: `tebench run ARGS` from the checkout (.) or from the checkout before the change ($B).
QUEUE=(
  "after-calm|.|$S --no-report $CALM"
  "before-calm|$B|$S --no-report $CALM"
  "after-gpt|.|$S --no-report $(only gpt/d4096 PT-AMP TE-BF16 TE-FP8/current.HYBRID) $(only gpt/tutorial PT-AMP TE-BF16 TE-FP8/current.HYBRID)"
  "after-llama|.|$S --no-report $(only llama/d2048-l16 PT-AMP TE-BF16 TE-FP8/current.HYBRID TE-FP8/delayed.HYBRID.h1024.max)"
)
for item in "${QUEUE[@]}"; do
  IFS='|' read -r n dir args <<< "$item"
  left=$(( ${DEADLINE:-560} - $(el) )); [ $left -lt 60 ] && { echo "deadline: $n not started"; break; }
  (cd $dir && start_run $n $args)
  wait_run $n $left
done
echo "call done at $(el) s"
