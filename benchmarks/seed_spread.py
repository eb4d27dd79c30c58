"""How far do loss curves spread across seeds, per mode? And do the modes' gradients agree?

A diagnostic for loss-parity questions, not a timing tool: every run happens in
this one process (no isolation, no profiler), so many seeds of several modes
cost seconds each instead of a process start each.

    python benchmarks/seed_spread.py --preset tutorial --workload gpt --size tutorial \
        --cases 'PT-FP32' 'PT-AMP' 'TE-BF16' 'TE-FP8/delayed.HYBRID*' --seeds 4 --out spread.json

For each selected case and seed it records the loss curve, the final loss (mean
of the last 10% of steps, as parity uses) and the workload's validation.
``--calibration N`` adds each delayed-scaling case calibrated for N steps.
``--grad-check`` also compares, for the GPT workload, each mode's gradients on
one batch with PT-FP32's from the same weights, per parameter (cosine and norm
ratio), both at the first step and after ``--calibrate`` forward+backward passes
without an optimizer step (tebench's FP8 calibration: delayed-scaling FP8 then
has an amax history, and the weights are unchanged).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch


def _select(preset: str, workload: str, size: str, patterns: list[str]) -> list:
    """The preset's single-process, non-graphed cases of one workload and size whose variant matches."""
    from tebench.plan import matrix
    from tebench.plan.schedule import select_cases

    only = [f"{workload}/{size}/{p}" for p in patterns]
    cases = select_cases(matrix.load(preset, is_preset=True), only)
    return [c for c in cases if c.workload == workload and c.size == size
            and not c.graphs and c.parallel == "single"]


def _with(case, **settings: Any):
    return case.replace(settings=dataclasses.replace(case.settings, **settings))


def canonical_grads(case, device: torch.device, calibrate: int) -> dict[str, torch.Tensor]:
    """Gradients of one GPT train step on batch 0, keyed by canonical parameter name."""
    from tebench.worker.train import build_trainer, calibrate_fp8
    from tebench.worker.models import WORKLOADS
    from tebench.workloads import size_of

    wl = WORKLOADS[case.workload]
    size = size_of(case)
    batches = wl.batches(size, calibrate + 1, case.settings.seed, device)
    trainer = build_trainer(case, device, batches)
    calibrate_fp8(trainer, batches, calibrate)  # fills FP8 amax histories; weights unchanged
    with trainer.precision.forward_ctx():
        loss = wl.loss(trainer.model, batches[0])
    loss.backward()
    pairs = wl.canonical_params(trainer.eager, size, trainer.setup["family"])
    return {name: p.grad.detach().float().clone() for name, p in pairs if p.grad is not None}


def compare_grads(ref: dict[str, torch.Tensor], other: dict[str, torch.Tensor]) -> dict[str, dict[str, float]]:
    """Per parameter kind (qkv.weight, fc1.bias, ...): worst cosine and mean norm ratio against ``ref``."""
    kinds: dict[str, list[tuple[float, float]]] = {}
    for name, g in ref.items():
        if name not in other:
            continue
        o = other[name]
        cos = torch.nn.functional.cosine_similarity(g.flatten(), o.flatten(), dim=0).item()
        ratio = (o.norm() / g.norm()).item() if g.norm() > 0 else float("nan")
        kind = ".".join(name.split(".")[-2:]) if name.startswith("blocks.") else name
        kinds.setdefault(kind, []).append((cos, ratio))
    return {k: {"min_cos": min(c for c, _ in v), "mean_norm_ratio": statistics.fmean(r for _, r in v)}
            for k, v in sorted(kinds.items())}


def paired_against_reference(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Each mode's final loss minus the reference's (PT-FP32, else PT-AMP) on the same seed.

    The spread over seeds can dwarf a systematic difference; pairing by seed
    does not: a mode that ends clearly lower than the reference on every
    seed is training differently, however wide the spread.
    """
    by = {(r["variant"], r["seed"]): r["final"] for r in runs if math.isfinite(r["final"])}
    variants = list(dict.fromkeys(r["variant"] for r in runs))
    ref = next((m for m in ("PT-FP32", "PT-AMP") if m in variants), None)
    if ref is None:
        return None
    modes = {}
    for variant in variants:
        if variant == ref:
            continue
        diffs = [by[(variant, s)] - by[(ref, s)] for (v, s) in by if v == variant and (ref, s) in by]
        if diffs:
            modes[variant] = {"seeds": len(diffs), "mean_diff": statistics.fmean(diffs),
                              "lower": sum(d < 0 for d in diffs), "higher": sum(d > 0 for d in diffs)}
    return {"reference": ref, "modes": modes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="tutorial")
    parser.add_argument("--workload", default="gpt")
    parser.add_argument("--size", default="tutorial")
    parser.add_argument("--cases", nargs="+", default=["*"], help="glob(s) over the case variant, e.g. 'TE-FP8/*'")
    parser.add_argument("--seeds", type=int, default=3, help="seeds: the matrix's seed and the next N-1")
    parser.add_argument("--steps", type=int, default=None, help="override warm-up + measured steps (total)")
    parser.add_argument("--calibration", type=int, nargs="*", default=[],
                        help="also run each delayed-scaling case with these fp8 calibration_steps")
    parser.add_argument("--grad-check", action="store_true")
    parser.add_argument("--calibrate", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    try:  # TE first: it must load its cuDNN before torch does (see tebench/detect.py)
        import transformer_engine.pytorch  # noqa: F401
    except Exception:
        pass
    from tebench.plan import gates
    from tebench.plan.recipes import RECIPES
    from tebench.worker.probe import detect
    from tebench.worker.case import run_case
    from tebench.analysis.parity import final_loss

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    hw = detect()
    cases = _select(args.preset, args.workload, args.size, args.cases)
    runnable = []
    for case in cases:
        reason = gates.gate_case(case, hw)
        if reason:
            print(f"skip {case.id}: {reason}", file=sys.stderr)
        else:
            runnable.append(case)
    runnable += [c.replace(fp8=c.fp8.model_copy(update={"calibration_steps": n}))
                 for n in args.calibration for c in list(runnable) if c.fp8 and RECIPES[c.fp8.recipe].stateful]
    if not runnable:
        print("no runnable case matches", file=sys.stderr)
        return 2

    out: dict[str, Any] = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                           "runs": [], "grads": {}}
    base_seed = runnable[0].settings.seed
    for k in range(args.seeds):
        for case in runnable:
            st = case.settings
            steps = {} if args.steps is None else {"steps": args.steps - st.warmup}
            c = _with(case, seed=base_seed + k, profile_steps=0, scaling_samples=0, **steps)
            t = time.perf_counter()
            raw = run_case(c, device, lambda *a: None)
            losses = raw.loss.per_step
            run = {"variant": case.variant, "seed": c.settings.seed, "final": final_loss(losses),
                   "validation": raw.validation.to_dict(), "losses": losses, "seconds": time.perf_counter() - t}
            out["runs"].append(run)
            acc = raw.validation.greedy_accuracy
            print(f"seed {c.settings.seed}  {case.variant:<40} final {run['final']:.4f}"
                  + (f"  greedy {acc:.3f}" if acc is not None else ""), flush=True)

    print("\nfinal loss by mode over seeds (mean, min, max):")
    for variant in dict.fromkeys(r["variant"] for r in out["runs"]):
        finals = [r["final"] for r in out["runs"] if r["variant"] == variant and math.isfinite(r["final"])]
        print(f"  {variant:<40} {statistics.fmean(finals):.4f}  [{min(finals):.4f} .. {max(finals):.4f}]")
    out["paired"] = paired_against_reference(out["runs"])
    if out["paired"]:
        ref = out["paired"]["reference"]
        print(f"\nagainst {ref} on the same seed (the same sign on every seed, at a size that matters, "
              "is a systematic difference, not seed noise):")
        for variant, p in out["paired"]["modes"].items():
            print(f"  {variant:<40} mean diff {p['mean_diff']:+.4f}  lower on {p['lower']}/{p['seeds']} seeds, "
                  f"higher on {p['higher']}/{p['seeds']}")

    if args.grad_check and args.workload == "gpt":
        ref_case = next((c for c in runnable if c.mode == "PT-FP32"), None)
        if ref_case is None:
            print("grad check needs PT-FP32 among the cases", file=sys.stderr)
        else:
            for calibrate in (0, args.calibrate):
                ref = canonical_grads(ref_case, device, calibrate)
                for case in runnable:
                    if case is ref_case:
                        continue
                    summary = compare_grads(ref, canonical_grads(case, device, calibrate))
                    out["grads"][f"{case.variant}@calibrate{calibrate}"] = summary
                    worst = min(summary.items(), key=lambda kv: kv[1]["min_cos"])
                    ratios = [v["mean_norm_ratio"] for v in summary.values()]
                    print(f"grads {case.variant:<40} calib {calibrate}: worst cos {worst[1]['min_cos']:.4f} "
                          f"({worst[0]}), norm ratio {min(ratios):.3f}..{max(ratios):.3f}")
    if args.out:
        args.out.write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
