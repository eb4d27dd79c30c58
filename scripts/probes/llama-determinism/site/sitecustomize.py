"""With TEBENCH_PROBE_DETERMINISTIC=1, every Python process started with this folder on its path (the
tebench parent and its workers: the executor passes PYTHONPATH on) asks torch for deterministic kernels
before it runs anything: ``torch.use_deterministic_algorithms(True, warn_only=True)`` (an op without a
deterministic kernel warns and runs its usual one) and cuDNN's deterministic, non-benchmarking choice.
The shell sets CUBLAS_WORKSPACE_CONFIG and NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 (Transformer Engine's own
switch) before the processes start. A probe's means, not tebench's: it changes nothing without the variable."""

import os

if os.environ.get("TEBENCH_PROBE_DETERMINISTIC") == "1":
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
