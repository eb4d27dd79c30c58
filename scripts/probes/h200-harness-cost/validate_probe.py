"""How much of a case's validation is one-time work? Usage: python validate_probe.py CASE_ID
(a nightly case, run from the repository root). Trains 6 steps, then times validate() three times,
synchronized; calls 2-3 against call 1 say what is one-time (recompiles for eval and no_grad), and
torch._dynamo's counters say how many graphs call 1 compiled. Prints one JSON line."""
import json, sys, time
import torch
if "TE" in sys.argv[1]:
    import transformer_engine.pytorch  # noqa
from torch._dynamo.utils import counters
from tebench.matrix import load, iter_cases
from tebench.train import build_trainer
from tebench.workloads import WORKLOADS, size_of
case = next(c for c in iter_cases(load("benchmarks/matrices/nightly.toml")) if c.id == sys.argv[1])
torch.cuda.set_device(0); dev = torch.device("cuda", 0)
st = case.settings; n = 6
torch.manual_seed(st.seed)
wl = WORKLOADS[case.workload]
b = wl.batches(size_of(case), n, st.seed, dev)
tr = build_trainer(case, dev, b)
for i in range(n):
    tr.step(b[i])
torch.cuda.synchronize()
out = {"case": case.id, "validate_s": [], "frames_compiled": []}
for k in range(3):
    c0 = dict(counters["stats"])
    t = time.perf_counter()
    wl.validate(tr.eager, size_of(case), st.seed, dev, tr.precision.forward_ctx)
    torch.cuda.synchronize()
    out["validate_s"].append(round(time.perf_counter() - t, 3))
    out["frames_compiled"].append({key: v - c0.get(key, 0) for key, v in counters["stats"].items() if v != c0.get(key, 0)})
print(json.dumps(out))
