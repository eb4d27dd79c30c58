#!/usr/bin/env bash
# One device call: the Llama variants of llama.toml (PT-AMP with its twins, and TE-BF16), as a queue
# (run_queue in scripts/probes/h200-power/setup.sh): `calm`, the single changes (ran on 2026-12-05,
# reports/h100-llama-calm/), then `calm2`, the combinations, the nightly's settings with three twins, lr 2e-5
# and 48 steps (ran on 2026-12-06, the same folder); ONLY names the items to run.
set -u
source scripts/probes/h200-power/setup.sh
versions
L=scripts/probes/llama-calm/llama.toml
QUEUE=(
  "calm|$L --no-report --only llama/*-b95*/PT-AMP --only llama/*-b95*/TE-BF16 --only llama/*-clip/PT-AMP --only llama/*-clip/TE-BF16 --only llama/*-lr5/PT-AMP --only llama/*-lr5/TE-BF16"
  "calm2|$L --no-report --only llama/*-lr5c/PT-AMP --only llama/*-lr5c/TE-BF16 --only llama/*-lr3c/PT-AMP --only llama/*-lr3c/TE-BF16 --only llama/*-c03/PT-AMP --only llama/*-c03/TE-BF16 --only llama/*-w32c/PT-AMP --only llama/*-w32c/TE-BF16 --only llama/*-lr5t3/PT-AMP --only llama/*-lr5t3/TE-BF16 --only llama/*-base3/PT-AMP --only llama/*-base3/TE-BF16 --only llama/*-lr2c/PT-AMP --only llama/*-lr2c/TE-BF16 --only llama/*-s48c/PT-AMP --only llama/*-s48c/TE-BF16"
)
run_queue "${QUEUE[@]}"
