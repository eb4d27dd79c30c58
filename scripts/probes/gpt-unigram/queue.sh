#!/usr/bin/env bash
# One device call (a queue: run_queue in scripts/probes/h200-power/setup.sh): GPT d2048 and d4096 with an lr
# warm-up or Llama's calmer AdamW (gpt.toml), PT-AMP with its twins, TE-BF16 and TE-FP8 current HYBRID, to
# find settings under which the reference gets below the unigram entropy within the nightly's budget; then
# the GPT tutorial size 60 steps longer (gpt.toml says why).
set -u
source scripts/probes/h200-power/setup.sh
versions
G=scripts/probes/gpt-unigram/gpt.toml
only() { for s in "$@"; do printf -- "--only gpt/%s/PT-AMP --only gpt/%s/TE-BF16 --only gpt/%s/TE-FP8/current.HYBRID " $s $s $s; done; }
QUEUE=(
  "d2048|$G --no-report $(only d2048-w8 d2048-calm)"
  "d4096|$G --no-report $(only d4096-calm d4096-calm2)"
  "tut|$G --no-report --only gpt/tutorial-s200/PT-FP32 --only gpt/tutorial-s200/PT-AMP --only gpt/tutorial-s200/TE-BF16 --only gpt/tutorial-s200/TE-FP8/current.HYBRID --only gpt/tutorial-s200/TE-FP8/delayed.HYBRID.h16.max.cal8"
)
run_queue "${QUEUE[@]}"
