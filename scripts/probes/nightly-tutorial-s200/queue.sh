#!/usr/bin/env bash
# One device call: the nightly's GPT tutorial cases, now 200 steps (benchmarks/matrices/nightly.toml says why),
# then the GPU test of the "same structure, different training" mutations at the tutorial size
# (tests/gpu/test_gpu.py -k subtle), both with the code of the checkout.
set -u
source scripts/probes/h200-power/setup.sh
versions
QUEUE=(
  "tut|--preset nightly --only 'gpt/tutorial/*' --no-report"
  "gput|pytest"
)
run_queue "${QUEUE[@]}"
