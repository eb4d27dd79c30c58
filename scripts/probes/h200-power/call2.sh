#!/usr/bin/env bash
# Device call 2: collect what call 1 left running, then the nightly's second shard (warm compile cache).
set -u
source scripts/probes/h200-power/setup.sh
for n in n1s1 mut1; do [ -f $V/$n.pid ] && kill -0 $(cat $V/$n.pid) 2> /dev/null && wait_run $n 300; done
[ -f $V/n1s1/run/results.jsonl ] && gzip -c $V/n1s1/run/results.jsonl > $OUT/n1s1.jsonl.gz
[ -f $V/mut1/run/results.jsonl ] && gzip -c $V/mut1/run/results.jsonl > $OUT/mut1.jsonl.gz
start_run n1s2 --preset nightly --shard 2/2 --no-report
wait_run n1s2 $(( 575 - $(el) ))
echo "done at $(el) s"
