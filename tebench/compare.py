"""Compare two runs case by case: did anything get slower, heavier or less accurate beyond noise?

Cases are matched by identity: case id (workload, size, mode, recipe options)
and the device that ran them. A change counts as a regression only when it is
both larger than its threshold *and* larger than the measured noise:

* time: hierarchical bootstrap of the ratio of median step times (rounds
  resampled, then steps within each round), 95% interval; the interval must
  exclude "no change";
* memory: the change must exceed the spread of the memory peaks across rounds;
* loss: the final loss must rise by more than the loss threshold, or parity
  must go from pass to fail.

Runs from different environments (GPU model, driver, CUDA, torch, TE) are
flagged, and their differences are not counted as code regressions unless the
caller asks for it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tebench import parity, results, stats

DEFAULT_THRESHOLDS = {"time": 0.05, "memory": 0.05, "loss": 0.10}
ENV_KEYS = ("device", "driver", "cuda", "torch", "te")
METHOD = ("time: hierarchical bootstrap (rounds, then steps; 2000 resamples, seed 0) 95% interval of the ratio "
          "of median step times; memory: change vs the spread across rounds; loss: final-loss change and parity "
          "verdict. A regression must exceed both its threshold and the noise.")


class CompareError(ValueError):
    """Inputs that cannot be compared (exit status 2)."""


@dataclass
class Side:
    """One run's view of a case: its rounds' samples and summary values."""

    status: str
    reason: str | None
    rounds: list[list[float]]
    median_ms: float | None
    tokens_per_s: float | None
    memory: list[float]
    final_loss: float | None
    parity: str | None


@dataclass
class Delta:
    """The comparison of one case between base and head."""

    case_id: str
    device: str
    verdict: str
    """regressed | improved | inconclusive | status-changed | missing-in-head | new-in-head"""
    why: list[str] = field(default_factory=list)
    time_ratio: float | None = None
    time_ci: tuple[float, float] | None = None
    tokens_ratio: float | None = None
    memory_ratio: float | None = None
    loss_change: float | None = None
    base: dict[str, Any] | None = None
    head: dict[str, Any] | None = None


def _side(records: list[dict[str, Any]]) -> Side:
    records = sorted(records, key=lambda r: r.get("round", 0))
    ok = [r for r in records if r["status"] == "ok" and r.get("timing")]
    last = records[-1]
    bad = next((r for r in records if r["status"] != "ok"), None)
    samples = [s for r in ok for s in r["timing"]["samples_ms"]]
    mems = [m for m in map(results.peak_memory, ok) if m]
    median = float(np.median(samples)) if samples else None
    tokens = (last.get("throughput") or {}).get("tokens_per_step")
    return Side(
        status=bad["status"] if bad else last["status"],
        reason=bad.get("reason") if bad else None,
        rounds=[r["timing"]["samples_ms"] for r in ok],
        median_ms=median,
        tokens_per_s=tokens / (median / 1000.0) if (tokens and median) else None,
        memory=mems,
        final_loss=(last.get("loss") or {}).get("final"),
        parity=(last.get("parity") or {}).get("verdict"),
    )


def _cases(run: results.Run) -> dict[tuple[str, str], list[dict[str, Any]]]:
    records = list(run.latest().values())
    parity.attach(records)
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        device = (r.get("device") or {}).get("name") or "?"
        out.setdefault((r["case_id"], device), []).append(r)
    return out


def environment(run: results.Run) -> dict[str, Any]:
    """The parts of a run's environment that change performance."""
    env = run.env
    gpus = env.get("gpus") or []
    return {
        "device": gpus[0]["name"] if gpus else f"CPU ({env.get('cpu')})",
        "driver": env.get("driver"),
        "cuda": env.get("cuda"),
        "torch": env.get("torch"),
        "te": env.get("te"),
        "git_commit": env.get("git_commit"),
    }


def _judge(case_id: str, device: str, b: Side, h: Side, thr: dict[str, float]) -> Delta:
    d = Delta(case_id, device, "inconclusive", base=asdict(b), head=asdict(h))
    for side in (d.base, d.head):
        side.pop("rounds")
    regressed, improved = [], []
    if b.status != h.status:
        worse = b.status == "ok" or (b.status == "skipped" and h.status not in ("ok", "skipped"))
        d.why.append(f"status {b.status} → {h.status}" + (f" ({h.reason})" if h.reason and worse else ""))
        if h.status == "ok" and b.status != "ok":
            improved.append("now ok")
        elif worse:
            d.verdict = "status-changed"
            regressed.append("status")
    if b.rounds and h.rounds:
        ratio, lo, hi = stats.bootstrap_ratio(b.rounds, h.rounds)
        d.time_ratio, d.time_ci = ratio, (lo, hi)
        change = f"step time {ratio - 1:+.1%} (95% CI {lo - 1:+.1%} … {hi - 1:+.1%})"
        if ratio > 1 + thr["time"] and lo > 1.0:
            regressed.append(change)
        elif ratio < 1 - thr["time"] and hi < 1.0:
            improved.append(change)
        elif abs(ratio - 1) > thr["time"]:
            d.why.append(change + ": beyond the threshold but within noise")
        if b.tokens_per_s and h.tokens_per_s:
            d.tokens_ratio = h.tokens_per_s / b.tokens_per_s
    if b.memory and h.memory:
        bm, hm = float(np.median(b.memory)), float(np.median(h.memory))
        d.memory_ratio = hm / bm
        spread = max(np.ptp(b.memory) if len(b.memory) > 1 else 0.0, np.ptp(h.memory) if len(h.memory) > 1 else 0.0)
        change = f"peak memory {d.memory_ratio - 1:+.1%}"
        if hm > bm * (1 + thr["memory"]) and hm - bm > spread:
            regressed.append(change)
        elif hm < bm * (1 - thr["memory"]) and bm - hm > spread:
            improved.append(change)
    if b.final_loss is not None and h.final_loss is not None and math.isfinite(b.final_loss):
        d.loss_change = h.final_loss - b.final_loss
        rel = d.loss_change / abs(b.final_loss) if b.final_loss else 0.0
        if not math.isfinite(h.final_loss) or rel > thr["loss"]:
            regressed.append(f"final loss {b.final_loss:.4g} → {h.final_loss:.4g}")
        elif rel < -thr["loss"]:
            improved.append(f"final loss {b.final_loss:.4g} → {h.final_loss:.4g}")
    if b.parity == "pass" and h.parity == "fail":
        regressed.append("loss parity pass → fail")
    elif b.parity == "fail" and h.parity == "pass":
        improved.append("loss parity fail → pass")
    if b.status == h.status and b.status != "ok":
        d.why.append(f"{b.status} in both")
    if regressed:
        d.verdict = "status-changed" if d.verdict == "status-changed" else "regressed"
        d.why = regressed + d.why
    elif improved:
        d.verdict = "improved"
        d.why = improved + d.why
    return d


@dataclass
class Comparison:
    """Everything ``tebench compare`` reports."""

    base: str
    head: str
    base_env: dict[str, Any]
    head_env: dict[str, Any]
    env_differs: list[str]
    counted: bool
    """Whether regressions count (False when environments differ and the caller did not ask)."""
    thresholds: dict[str, float]
    deltas: list[Delta]
    method: str = METHOD

    def count(self, verdict: str) -> int:
        return sum(d.verdict == verdict for d in self.deltas)

    @property
    def regressions(self) -> list[Delta]:
        return [d for d in self.deltas if d.verdict in ("regressed", "status-changed")]

    @property
    def exit_code(self) -> int:
        return 1 if (self.regressions and self.counted) else 0

    def to_json(self) -> str:
        return json.dumps({
            "base": self.base, "head": self.head, "base_env": self.base_env, "head_env": self.head_env,
            "environment_differs": self.env_differs, "regressions_counted": self.counted,
            "thresholds": self.thresholds, "method": self.method,
            "summary": {v: self.count(v) for v in ("regressed", "status-changed", "improved", "inconclusive",
                                                    "missing-in-head", "new-in-head")},
            "exit_code": self.exit_code,
            "cases": [asdict(d) for d in self.deltas],
        }, indent=2, default=str)


def compare(base_path: str | Path, head_path: str | Path, thresholds: dict[str, float] | None = None,
            count_env_changes: bool = False) -> Comparison:
    """Compare two results files or run directories."""
    thr = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    try:
        base, head = results.read(base_path), results.read(head_path)
    except (OSError, results.SchemaError) as exc:
        raise CompareError(str(exc)) from None
    bcases, hcases = _cases(base), _cases(head)
    common = set(bcases) & set(hcases)
    if not common:
        raise CompareError(f"{base_path} and {head_path} have no case in common (same case id on the same device)")
    benv, henv = environment(base), environment(head)
    differs = [k for k in ENV_KEYS if benv.get(k) != henv.get(k)]
    deltas = []
    for key in sorted(set(bcases) | set(hcases)):
        case_id, device = key
        if key not in hcases:
            deltas.append(Delta(case_id, device, "missing-in-head", ["in base only"]))
        elif key not in bcases:
            deltas.append(Delta(case_id, device, "new-in-head", ["in head only"]))
        else:
            deltas.append(_judge(case_id, device, _side(bcases[key]), _side(hcases[key]), thr))
    return Comparison(str(base_path), str(head_path), benv, henv, differs, count_env_changes or not differs,
                      thr, deltas)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value - 1:+.1%}"


def to_markdown(c: Comparison) -> str:
    """GitHub-flavoured Markdown: headline, what changed, everything in <details>."""
    from tebench.report import md_escape as esc, md_table
    import pandas as pd

    n_reg = len(c.regressions)
    lines = []
    icon = "🔴" if (n_reg and c.counted) else ("🟡" if n_reg else "🟢")
    lines.append(f"### {icon} tebench compare: {n_reg} regression(s), {c.count('improved')} improvement(s), "
                 f"{c.count('inconclusive')} unchanged (within threshold or noise)")
    extra = [f"{c.count(v)} {v}" for v in ("missing-in-head", "new-in-head") if c.count(v)]
    if extra:
        lines.append("Also: " + ", ".join(extra) + ".")
    if c.env_differs:
        lines.append("")
        lines.append("> ⚠️ **Base and head ran in different environments** ("
                     + ", ".join(f"{k}: {esc(c.base_env.get(k))} → {esc(c.head_env.get(k))}" for k in c.env_differs)
                     + "). Differences reflect the machine/software as much as the code; "
                     + ("they are counted as regressions because --count-env-changes was given."
                        if c.counted else "they are **not** counted as code regressions (exit 0)."))
    lines.append("")

    def row(d: Delta) -> dict[str, str]:
        return {"case": d.case_id, "device": d.device, "verdict": d.verdict,
                "step time": _pct(d.time_ratio),
                "95% CI": f"{d.time_ci[0] - 1:+.1%} … {d.time_ci[1] - 1:+.1%}" if d.time_ci else "–",
                "tokens/s": _pct(d.tokens_ratio), "memory": _pct(d.memory_ratio),
                "Δ final loss": "–" if d.loss_change is None else f"{d.loss_change:+.4g}",
                "why": "; ".join(d.why)}

    changed = [d for d in c.deltas if d.verdict != "inconclusive"]
    if changed:
        lines.append(md_table(pd.DataFrame([row(d) for d in changed])))
    else:
        lines.append("Nothing changed beyond thresholds and noise.")
    lines += ["", f"<details><summary>All {len(c.deltas)} cases</summary>", "",
              md_table(pd.DataFrame([row(d) for d in c.deltas])), "", "</details>", "",
              "<details><summary>Method and inputs</summary>", "",
              f"- base: {esc(c.base)} ({esc(c.base_env.get('device'))}, "
              f"commit {esc(c.base_env.get('git_commit') or 'unknown: not run from a git checkout')})",
              f"- head: {esc(c.head)} ({esc(c.head_env.get('device'))}, "
              f"commit {esc(c.head_env.get('git_commit') or 'unknown: not run from a git checkout')})",
              "- thresholds: " + ", ".join(f"{k} {v:.0%}" for k, v in c.thresholds.items()),
              f"- {esc(c.method)}", "", "</details>", ""]
    return "\n".join(lines)
