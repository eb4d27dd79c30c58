"""How much does the harness add to a train step? ``python benchmarks/harness_overhead.py``

Times the same model, optimizer and batches in one process two ways, in
alternating blocks so that drift hits both equally:

* a minimal hand-written loop: zero_grad, autocast forward, loss, backward,
  step, with a CUDA event pair around each step;
* the harness's own timed loop (``tebench.worker.case.timed_steps`` calling
  ``Trainer.step``), exactly what ``tebench run`` times.

Prints both medians and the relative overhead, writes JSON with ``--json``,
and exits 1 when the overhead exceeds ``--max-overhead`` (default 1%).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from tebench.schema.records import Case

from tebench.schema.settings import Settings
from tebench.worker.timing import timed_steps
from tebench.worker.train import build_trainer
from tebench.worker.models import WORKLOADS
from tebench.worker.models.gpt import GPTSize


def hand_loop(model, optimizer, batches, amp_dtype, device) -> list[float]:
    """The loop a user would write by hand."""
    times = []
    for batch in batches:
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        else:
            t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=amp_dtype):
            logits = model(batch.inputs)
        loss = F.cross_entropy(logits.float().flatten(0, 1), batch.targets.flatten())
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            end.record()
            times.append((start, end))
        else:
            times.append((time.perf_counter() - t0) * 1000.0)
    if device.type == "cuda":
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in times]
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", default="PT-AMP", choices=["PT-AMP", "TE-BF16"])
    parser.add_argument("--d-model", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=30, help="steps per block")
    parser.add_argument("--blocks", type=int, default=6, help="alternating blocks of each loop")
    parser.add_argument("--max-overhead", type=float, default=0.01)
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args(argv)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    size = GPTSize(vocab=96, d_model=args.d_model, heads=max(1, args.d_model // 128), layers=args.layers,
                   ffn=4 * args.d_model, seq=args.seq, batch=args.batch)
    case = Case(workload="gpt", size="overhead", mode=args.mode, dims=dataclasses.asdict(size),
                settings=Settings(steps=args.steps, warmup=5, lr=1e-4))
    batches = WORKLOADS["gpt"].batches(size, args.steps, 0, device)
    trainer = build_trainer(case, device, batches)
    amp = trainer.precision.amp_dtype
    hand_loop(trainer.model, trainer.optimizer, batches[:5], amp, device)  # warm-up, both paths share it
    timed_steps(trainer, batches, 0, 5, [])
    hand, harness = [], []
    for _ in range(args.blocks):
        hand += hand_loop(trainer.model, trainer.optimizer, batches, amp, device)
        harness += timed_steps(trainer, batches, 0, len(batches), [])
    h, t = statistics.median(hand), statistics.median(harness)
    overhead = t / h - 1
    result = {
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
        "mode": args.mode, "size": dataclasses.asdict(size), "steps_each": len(hand),
        "hand_median_ms": h, "harness_median_ms": t, "overhead": overhead,
        "hand_p25_p75_ms": statistics.quantiles(hand, n=4)[::2], "harness_p25_p75_ms": statistics.quantiles(harness, n=4)[::2],
    }
    print(f"{result['device']} {args.mode} d{args.d_model}x{args.layers} seq{args.seq} batch{args.batch}: "
          f"hand-written {h:.3f} ms, harness {t:.3f} ms, overhead {overhead:+.2%} "
          f"({len(hand)} steps each, {args.blocks} alternating blocks)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0 if overhead <= args.max_overhead else 1


if __name__ == "__main__":
    sys.exit(main())
