#!/usr/bin/env bash
# Device call 2, at once after first.sh: waits for nightly 1, brings it back, then starts nightly 2 on
# the compile cache nightly 1 filled, alone on the GPU (its wall time is the ten-minute measurement).
set -u
source scripts/probes/h200-verdicts/setup.sh
[ -f $V/n1.pid ] || { echo "next.sh: nightly 1 never started on this machine (a fresh machine?)" >&2; exit 2; }
wait_nightly 1 ${WAIT1:-420}
kill -0 $(cat $V/n1.pid) 2> /dev/null && { echo "nightly 1 still running: not starting nightly 2"; exit 3; }
du -sh $CCDIR; start_nightly 2
wait_nightly 2 $(( ${LIMIT:-570} - $(el) ))
echo "done at $(el) s"
