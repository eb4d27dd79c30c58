#!/usr/bin/env bash
# The short form of queue.sh, for when a whole nightly twice no longer fits the device time: the nightly's
# GPT tutorial cases (175 steps, `--preset nightly --only 'gpt/tutorial/*'`) twice, the second run on the
# compile cache the first filled, then the GPU test of the "same structure, different training" mutations.
# The same queue rules as queue.sh (scripts/probes/h200-power/setup.sh): each call collects what finished
# and stops waiting DEADLINE s in. Compare the two runs with
# `python scripts/probes/h200-nightly-twice/check.py t1.jsonl.gz t2.jsonl.gz`.
set -u
source scripts/probes/h200-power/setup.sh
versions
QUEUE=(
  "t1|--preset nightly --only 'gpt/tutorial/*' --no-report"
  "t2|--preset nightly --only 'gpt/tutorial/*' --no-report"
  "gput|pytest"
)
run_queue "${QUEUE[@]}"
