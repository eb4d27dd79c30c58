"""Does torch.compile's AOTAutograd cache serve a torchao float8 model in a second process?

On the H200 an AO-FP8 case's warm-up took 18-20 s on a warm compile cache against 3 s for
PT-AMP+compile. This runs on a CPU (torchao converts and its tensorwise matmul runs there too): a
two-layer MLP, plain or converted, compiled and stepped once under bf16 autocast, each in a fresh
process, twice on one cache directory; "torchao+flag" sets
autograd_cache_allow_custom_autograd_functions (it caches graphs with custom autograd.Functions);
"torchao+marked" also names torchao's config classes, which the graphs build, in
torch._inductor.config.unsafe_marked_cacheable_functions (keyed by torchao's version), to see what
the cache stops at after them. It prints the AOTAutograd cache counters and the reason the cache
gave for passing a graph over.

    python scripts/probes/cpu-torchao-aot-cache/probe.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, logging, sys, time
import torch
from torch._dynamo.utils import counters
reasons = []
class Keep(logging.Handler):
    def emit(self, record):
        if "Bypassing autograd cache" in record.getMessage():
            reasons.append(record.getMessage())
logging.getLogger("torch._functorch._aot_autograd.autograd_cache").addHandler(Keep())
logging.getLogger("torch._functorch._aot_autograd.autograd_cache").setLevel(logging.INFO)
if sys.argv[1] in ("torchao+flag", "torchao+marked"):
    torch._functorch.config.autograd_cache_allow_custom_autograd_functions = True
if sys.argv[1] == "torchao+marked":
    import torchao
    torch._inductor.config.unsafe_marked_cacheable_functions = {
        name: torchao.__version__ for name in (
            "torchao.float8.float8_training_tensor.ScaledMMConfig",
            "torchao.float8.float8_training_tensor.LinearMMConfig",
            "torchao.float8.config.CastConfig", "torchao.float8.config.Float8GemmConfig",
            "torchao.float8.config.Float8LinearConfig")}
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64))
if sys.argv[1].startswith("torchao"):
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    convert_to_float8_training(m, config=Float8LinearConfig.from_recipe_name("tensorwise"))
f = torch.compile(m)
t = time.perf_counter()
with torch.autocast("cpu", dtype=torch.bfloat16):
    y = f(torch.randn(32, 64))
y.float().sum().backward()
print(json.dumps({"seconds": round(time.perf_counter() - t, 1), "aot_autograd": dict(counters["aot_autograd"]),
                  "bypass": reasons[:1]}))
"""


def main() -> None:
    import torch
    import torchao

    print(f"torch {torch.__version__}, torchao {torchao.__version__}")
    for model in ("plain", "torchao", "torchao+flag", "torchao+marked"):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
            for run in ("first process", "second process"):
                out = subprocess.run([sys.executable, "-c", CHILD, model], env=env, capture_output=True, text=True)
                line = out.stdout.strip().splitlines()[-1] if out.returncode == 0 else out.stderr[-500:]
                print(f"{model:12s} {run}: {json.loads(line) if out.returncode == 0 else line}")


if __name__ == "__main__":
    main()
