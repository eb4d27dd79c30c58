#!/usr/bin/env bash
# The device call after `NIGHTLY=1 warm.sh`: waits (at most LIMIT s) for the nightly that warm.sh left
# running on this machine, then brings its log, results and report back to $OUT. If the limit comes
# first, it brings what there is so far; the same command again waits on.
set -u
P=/tmp/ao-nightly/nightly.pid; D=/tmp/ao-nightly/out
[ -f $P ] || { echo "collect.sh: no nightly was started on this machine (fresh machine?)" >&2; exit 2; }
T0=$(date +%s)
while kill -0 $(cat $P) 2> /dev/null && [ $(( $(date +%s) - T0 )) -lt ${LIMIT:-570} ]; do sleep 5; done
if kill -0 $(cat $P) 2> /dev/null; then echo "still running after $(( $(date +%s) - T0 )) s of waiting"; else echo "nightly finished"; fi
cp $D/* $OUT/ 2> /dev/null; [ -f $OUT/nightly.jsonl ] || cp /tmp/ao-nightly/nightly/results.jsonl $OUT/nightly-so-far.jsonl 2> /dev/null; ls -la $OUT; tail -n 8 $D/nightly.log; cat $D/nightly-sh.log
