#!/usr/bin/env bash
# One device call of a queue that outlasts a call: each `tebench run` below starts in its own process
# session (scripts/probes/h200-power/setup.sh), in order; every call collects what finished, starts the
# next, and stops waiting ~570 s in (the next call, within the machine's 30 s of warmth, goes on).
# The queue: the GPU test of the new mutation class (tests/gpu, -k subtle), Llama d2048's noise floor at a
# lower lr and a longer lr warm-up (llama.toml), then the nightly twice (two shards each; the second night
# finds the first one's compile cache, as a GPU runner that keeps its cache does), as far as GPU time goes.
set -u
source scripts/probes/h200-power/setup.sh
versions
L=scripts/probes/h200-twice/llama.toml
QUEUE=(
  "gput|pytest"
  "lx|$L --no-report --only llama/d2048-lr5e5/PT-AMP --only llama/d2048-lr5e5/TE-BF16 --only llama/d2048-w35/PT-AMP --only llama/d2048-w35/TE-BF16"
  "n1s1|--preset nightly --shard 1/2 --no-report"
  "n1s2|--preset nightly --shard 2/2 --no-report"
  "n2s1|--preset nightly --shard 1/2 --no-report"
  "n2s2|--preset nightly --shard 2/2 --no-report"
)
run_queue "${QUEUE[@]}"
