#!/usr/bin/env bash
# Device call 3 of 3, at once after call2.sh: waits for the nightly and brings back its log, results and
# Markdown report.
set -u
source scripts/probes/h200-verdicts/setup.sh
[ -f $V/n3.pid ] || { echo "call3.sh: the nightly never started on this machine (a fresh machine?)" >&2; exit 2; }
wait_nightly 3 $(( ${LIMIT:-580} - $(el) ))
nvidia-smi --query-gpu=power.draw,power.limit,clocks.sm,temperature.gpu --format=csv,noheader
echo "done at $(el) s"
