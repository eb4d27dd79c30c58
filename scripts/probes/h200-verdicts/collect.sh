#!/usr/bin/env bash
# Device call 3: waits for nightly 2 and brings it back.
set -u
source scripts/probes/h200-verdicts/setup.sh
[ -f $V/n2.pid ] || { echo "collect.sh: nightly 2 never started on this machine (a fresh machine?)" >&2; exit 2; }
wait_nightly 2 ${LIMIT:-570}
echo "done at $(el) s"
