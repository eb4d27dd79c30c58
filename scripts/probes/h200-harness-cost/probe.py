"""Facts for the harness-cost work: does importing TE create a CUDA context; is fork safe after it;
what do imports and CUDA init cost."""
import json, os, subprocess, sys, time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import transformer_engine.pytorch as te
t2 = time.perf_counter()
out = {"import_torch_s": t1 - t0, "import_te_s": t2 - t1,
       "cuda_initialized_after_imports": torch.cuda.is_initialized()}
smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout
out["compute_apps_after_imports"] = smi.strip()
out["own_pid_listed"] = str(os.getpid()) in smi
# Fork after the imports: does a child get a working CUDA + TE FP8 step?
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    res = {}
    try:
        ts = time.perf_counter()
        x = torch.randn(256, 1024, device="cuda", requires_grad=True)
        lin = te.Linear(1024, 1024).cuda()
        res["child_cuda_init_s"] = time.perf_counter() - ts
        with te.fp8_autocast(enabled=True):
            y = lin(x)
        y.sum().backward()
        torch.cuda.synchronize()
        res["child_fp8_step_s"] = time.perf_counter() - ts
        res["child_ok"] = True
    except Exception as exc:
        res["child_ok"] = False
        res["child_error"] = f"{type(exc).__name__}: {exc}"[:500]
    os.write(w, json.dumps(res).encode())
    os._exit(0)
os.close(w)
_, status = os.waitpid(pid, 0)
data = b""
while chunk := os.read(r, 65536):
    data += chunk
out["fork_child"] = json.loads(data or b"{}")
out["fork_child_status"] = status
# Parent CUDA init after the fork (the pre-started worker's cost after assignment).
ts = time.perf_counter()
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
out["parent_cuda_init_s"] = time.perf_counter() - ts
ts = time.perf_counter()
lin = te.Linear(1024, 1024).cuda()
x = torch.randn(256, 1024, device="cuda", requires_grad=True)
with te.fp8_autocast(enabled=True):
    y = lin(x)
y.sum().backward(); torch.cuda.synchronize()
out["parent_first_fp8_step_s"] = time.perf_counter() - ts
ts = time.perf_counter()
with te.fp8_autocast(enabled=True):
    y = lin(x)
y.sum().backward(); torch.cuda.synchronize()
out["parent_second_fp8_step_s"] = time.perf_counter() - ts
# After CUDA init, fork again: the known-unsafe case, for contrast.
pid = os.fork()
if pid == 0:
    try:
        torch.zeros(1, device="cuda"); torch.cuda.synchronize(); os._exit(0)
    except Exception as exc:
        sys.stderr.write(f"fork after CUDA init: {type(exc).__name__}: {str(exc)[:200]}\n"); os._exit(7)
_, status = os.waitpid(pid, 0)
out["fork_after_cuda_init_child_exit"] = os.waitstatus_to_exitcode(status)
print(json.dumps(out, indent=1))
