#!/usr/bin/env bash
# One device call (or more, as a queue: run_queue in scripts/probes/h200-power/setup.sh): GPT d2048 and d4096
# trained longer or faster (gpt.toml), PT-AMP with its twins and TE-BF16, to find the steps at which the
# reference gets below the unigram entropy and how far apart its twins then land. Not run yet (2026-12-06).
set -u
source scripts/probes/h200-power/setup.sh
versions
G=scripts/probes/gpt-unigram/gpt.toml
QUEUE=(
  "d2048|$G --no-report --only gpt/d2048-*/PT-AMP --only gpt/d2048-*/TE-BF16"
  "d4096|$G --no-report --only gpt/d4096-*/PT-AMP --only gpt/d4096-*/TE-BF16"
)
run_queue "${QUEUE[@]}"
