#!/bin/bash
# Submit a sharded tebench run to Slurm: the shard array, then the merge job
# that waits for it. Run from the repository root on a login node:
#
#   bash examples/slurm/submit.sh            # nightly preset, 4 shards
#   TEBENCH_PRESET=crossover SHARDS=8 bash examples/slurm/submit.sh
#
# Why a script and not two sbatch lines:
#   - sbatch opens the --output file before the job starts, so its directory
#     must exist at submission: this creates runs/slurm/ first.
#   - the merge job needs the array's job id (--dependency=afterany:ID).
# The .venv is created inside the first array task that gets a GPU node (under
# a lock, see tebench-array.sbatch), so it sees that node's CUDA torch and
# Transformer Engine rather than the login node's Python.
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARDS=${SHARDS:-4}
mkdir -p runs/slurm
ARRAY=$(sbatch --parsable --array="1-$SHARDS" --export="ALL,SHARDS=$SHARDS" examples/slurm/tebench-array.sbatch)
ARRAY=${ARRAY%%;*}   # "jobid;cluster" on federated clusters
RUN="runs/nightly-$ARRAY"
sbatch --parsable --dependency="afterany:$ARRAY" --export="ALL,TEBENCH_RUN=$RUN" examples/slurm/tebench-merge.sbatch
echo "submitted: array $ARRAY ($SHARDS shards) into $RUN, merge after it"
