"""cProfile of one case's run_case in a fresh process: where the first (warm-up) steps' time goes."""
import cProfile, io, json, pstats, sys, time
import torch
if sys.argv[2] == "te":
    import transformer_engine.pytorch  # noqa
from tebench.matrix import load, iter_cases
from tebench.measure import run_case
m = load(sys.argv[1])
case = next(c for c in iter_cases(m) if c.id == sys.argv[3])
torch.cuda.set_device(0)
pr = cProfile.Profile()
pr.enable()
raw = run_case(case, torch.device("cuda", 0), lambda *a: None)
pr.disable()
print(case.id, json.dumps(raw["phases"]))
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(45)
print(s.getvalue()[:12000])
