"""The hand-off between the runner and a worker process: environment variables and exit codes both sides use."""

from __future__ import annotations



PARENT_ENV = "TEBENCH_PARENT_PID"


# The runner's contract (tebench.run.runner.EXIT_STORAGE): the case ran but its
# result could not be written; the runner stops and --resume re-runs the case.
EXIT_STORAGE = 75
