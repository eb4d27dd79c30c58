#!/usr/bin/env bash
# One device call of the queue that stores two nightlies of one commit: the GPU test of the "same
# structure, different training" mutations (tests/gpu, -k subtle), then the whole nightly twice, each
# night as two shards (`tebench run --preset nightly --shard I/2`). The second night finds the first
# one's compile cache, as a GPU runner that keeps its cache does. Every call collects what finished,
# starts the next item, and stops waiting ~570 s in; the next call, within the machine's 30 s of warmth,
# goes on (scripts/probes/h200-power/setup.sh). Merge each night's shards here (`tebench merge`), then
# `python scripts/probes/h200-nightly-twice/check.py NIGHT1 NIGHT2` reads issue #49's done-when from them.
set -u
source scripts/probes/h200-power/setup.sh
versions
QUEUE=(
  "gput|pytest"
  "n1s1|--preset nightly --shard 1/2 --no-report"
  "n1s2|--preset nightly --shard 2/2 --no-report"
  "n2s1|--preset nightly --shard 1/2 --no-report"
  "n2s2|--preset nightly --shard 2/2 --no-report"
)
run_queue "${QUEUE[@]}"
