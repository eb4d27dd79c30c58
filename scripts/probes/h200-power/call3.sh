#!/usr/bin/env bash
# Device call 3: twins at fp32's last bit (twin_scale 2**-23): the GPT tutorial size unmutated and, as
# a second copy (tutorial-m), with one mutation of the new class per case; then the Llama sizes' noise floor.
set -u
source scripts/probes/h200-power/setup.sh
M=scripts/probes/h200-power/power.toml
export TEBENCH_TEST_FAULT='gpt/tutorial-m/PT-AMP=norm-eps;gpt/tutorial-m/TE-BF16=dropout-on;gpt/tutorial-m/TE-FP8/current.HYBRID=leak-small;gpt/tutorial-m/TE-FP8/delayed.HYBRID.h16.max.cal8=lr-quarter'
start_run tut $M --no-report --only 'gpt/tutorial*/PT-FP32' --only 'gpt/tutorial*/PT-AMP' --only 'gpt/tutorial*/TE-BF16' --only 'gpt/tutorial*/TE-FP8/*'
wait_run tut 300
unset TEBENCH_TEST_FAULT
start_run l2 $M --no-report --only 'llama/d2048-l16/PT-AMP' --only 'llama/d2048-l16/TE-BF16' --only 'llama/d2048-l16/TE-FP8/*'
wait_run l2 $(( 450 - $(el) ))
start_run l4 $M --no-report --only 'llama/d4096-l4/PT-AMP' --only 'llama/d4096-l4/TE-BF16'
wait_run l4 $(( 575 - $(el) ))
echo "done at $(el) s"
