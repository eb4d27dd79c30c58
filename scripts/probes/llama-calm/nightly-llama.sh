#!/usr/bin/env bash
# One device call: the nightly preset's Llama cases (both sizes, every mode) twice, one run after the other
# on one machine (the second on the compile cache the first filled), with the Llama settings of 2026-12-06
# (d2048-l16 at lr 5e-5; d4096-l4 at lr 5e-5 with beta2 0.95 and clipping at 1.0). Ran on 2026-12-06:
# reports/h100-llama-twice/.
set -u
source scripts/probes/h200-power/setup.sh
versions
QUEUE=("l1|--preset nightly --only llama/* --no-report" "l2|--preset nightly --only llama/* --no-report")
DEADLINE=555 run_queue "${QUEUE[@]}"
