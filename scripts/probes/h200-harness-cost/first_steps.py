"""Per-step times (synchronized) from step 0 for a few nightly cases, each in a fresh process:
what a warm-up settle rule sees."""
import json, sys, time
import torch
if "TE" in sys.argv[1]:
    import transformer_engine.pytorch  # noqa
from tebench.matrix import load, iter_cases
from tebench.train import build_trainer
from tebench.workloads import WORKLOADS, size_of
case = next(c for c in iter_cases(load("benchmarks/matrices/nightly.toml")) if c.id == sys.argv[1])
torch.cuda.set_device(0); dev = torch.device("cuda", 0)
st = case.settings; total = st.warmup + st.steps + 10
torch.manual_seed(st.seed)
b = WORKLOADS[case.workload].batches(size_of(case), total, st.seed, dev)
tr = build_trainer(case, dev, b)
torch.cuda.synchronize()
ms = []
for i in range(total):
    t = time.perf_counter(); tr.step(b[i]); torch.cuda.synchronize(); ms.append(round((time.perf_counter() - t) * 1000, 2))
print(json.dumps({"case": case.id, "warmup": st.warmup, "steps": st.steps, "ms": ms}))
