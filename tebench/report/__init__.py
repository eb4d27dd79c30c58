"""Render reports from stored results: one self-contained HTML file and PR-ready Markdown.

``render(paths, out)`` reads results files (and pytest-benchmark JSON), builds
the tables with pandas and the charts with matplotlib, and writes
``index.html`` (styles and charts inside it, no network requests),
``report.md`` and the chart PNGs the Markdown refers to. Nothing here runs a
model or needs a GPU.
"""

from __future__ import annotations

import base64
import io
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

import tebench
from tebench import atomic
from tebench.report import charts, tables
from tebench.report.load import Source, load_all

MAX_FP8_CHARTS = 8


@dataclass
class Chart:
    """A rendered chart: its file name, caption, and PNG bytes."""

    name: str
    title: str
    caption: str
    png: bytes

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode()


def png_bytes(fig: Any) -> bytes:
    """A figure as PNG bytes (the resolution every report chart uses)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def templates_dir() -> Path:
    """Where the Jinja2 templates are: inside the installed package, or templates/ of a checkout."""
    try:
        from importlib import resources

        path = Path(str(resources.files("tebench.templates").joinpath("report.html.j2"))).parent
        if (path / "report.html.j2").is_file():
            return path
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent.parent / "templates"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#!~])")


def md_escape(value: Any) -> str:
    """Make any text safe inside a Markdown table cell: no markup, no HTML, no broken rows."""
    text = str(value).replace("\r", " ").replace("\n", " ").replace("&", "&amp;")
    text = _MD_SPECIAL.sub(lambda m: {"<": "&lt;", ">": "&gt;", "|": "\\|"}.get(m.group(1), "\\" + m.group(1)), text)
    # GitHub turns bare URLs into links; an entity for '/' keeps them plain text.
    return text.replace("://", ":&#47;&#47;").replace("www.", "www&#46;")


def md_table(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table with every cell escaped."""
    if df is None or df.empty:
        return "_none_"
    head = "| " + " | ".join(md_escape(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(md_escape(v) for v in row) + " |" for row in df.astype(str).itertuples(index=False)]
    return "\n".join([head, rule, *body])


def html_table(df: pd.DataFrame, cls: str = "") -> str:
    """An HTML table with every cell escaped by pandas."""
    if df is None or df.empty:
        return "<p class='none'>none</p>"
    return df.to_html(index=False, escape=True, classes=cls, border=0, na_rep="–")


HEADLINE_COLUMNS = [
    ("source", "machine", ""), ("workload", "workload", ""), ("size", "size", ""),
    ("fastest", "fastest mode", ""), ("step_ms", "step ms", "ms"), ("speedup_vs_amp", "vs PT-AMP", "x"),
    ("speedup_vs_compile", "vs PT-AMP+compile", "x"), ("memory_saving_vs_amp", "memory saved vs PT-AMP", "pct"),
    ("best_fp8", "best TE-FP8", ""), ("fp8_speedup_vs_amp", "TE-FP8 vs PT-AMP", "x"),
    ("parity", "loss parity", ""), ("not_ok", "not ok", ""),
]
CROSSOVER_COLUMNS = [
    ("source", "machine", ""), ("workload", "workload", ""), ("cuda_graphs", "CUDA graphs", ""),
    ("baseline", "baseline", ""), ("fp8_first_faster_at", "TE-FP8 first faster at", ""),
    ("speedup_there", "speedup there", "x"), ("speedup_by_size", "TE-FP8 speedup by size", ""),
]
DIST_COLUMNS = [
    ("source", "machine", ""), ("case_id", "case", ""), ("status", "status", ""), ("ranks", "ranks", ""),
    ("per_rank_tokens_per_s", "tokens/s per rank", ""), ("aggregate_tokens_per_s", "aggregate tokens/s", "int"),
    ("one_gpu_tokens_per_s", "same case, 1 GPU", "int"), ("scaling_efficiency", "scaling efficiency", "pct"),
    ("replicas_in_sync", "replicas identical (DDP)", ""), ("rank0_final_loss", "rank-0 final loss", "loss"),
]
BUSY_COLUMNS = [
    ("source", "machine", ""), ("case_id", "case", ""), ("median_ms", "step ms", "ms"),
    ("gpu_busy", "GPU busy", "pct"), ("bound", "label", ""),
]


def _sentence(row: pd.Series) -> str:
    fmt = tables.fmt
    text = f"{row['workload']}/{row['size']} on {row['source']}: fastest is {row['fastest']} at {fmt(row['step_ms'], 'ms')} ms/step"
    if pd.notna(row["speedup_vs_amp"]):
        text += f" ({fmt(row['speedup_vs_amp'], 'x')} vs PT-AMP)"
    if row.get("best_fp8") and pd.notna(row["fp8_speedup_vs_amp"]):
        text += f"; best TE-FP8 ({row['best_fp8']}) is {fmt(row['fp8_speedup_vs_amp'], 'x')} vs PT-AMP"
    saving = row["memory_saving_vs_amp"]
    if pd.notna(saving) and abs(saving) >= 0.0005:
        text += f"; it uses {fmt(abs(saving), 'pct')} {'less' if saving > 0 else 'more'} memory than PT-AMP"
    return text + f"; loss parity: {row['parity']}."


def _environment(src: Source) -> list[tuple[str, str]]:
    env = src.env
    gpus = env.get("gpus") or []
    setup = next((r.get("setup") for r in src.records if r.get("setup")), {}) or {}
    peak = env.get("peak_tflops")
    clocks = env.get("gpu_clocks") or {}
    rows = [
        ("device", src.device),
        ("GPUs", "; ".join(f"{g['index']}: {g['name']}, CC {g['capability'][0]}.{g['capability'][1]}, "
                          f"{g['memory_bytes'] / 2**30:.0f} GiB, {g.get('multiprocessors')} SMs" for g in gpus) or "none"),
        ("driver / CUDA / cuDNN", f"{env.get('driver') or '–'} / {env.get('cuda') or '–'} / {env.get('cudnn') or '–'}"),
        ("GPU clocks / power", "; ".join(f"GPU {i}: max SM {c.get('clocks.max.sm')} MHz, max mem "
                                        f"{c.get('clocks.max.mem')} MHz, power limit {c.get('power.limit')} W"
                                        for i, c in clocks.items()) or "–"),
        ("torch / Transformer Engine", f"{env.get('torch') or '–'} / {env.get('te') or 'not available: ' + str(env.get('te_error') or '–')}"),
        ("Python / CPU", f"{env.get('python') or '–'} / {env.get('cpu') or '–'} ×{env.get('cpu_count') or '?'}"),
        ("host", str(env.get("hostname") or "–")),
        ("MFU peak", f"{peak['bf16']} TFLOP/s dense BF16 ({peak['source']})" if peak else "unknown GPU: no MFU"),
        ("master weights", setup.get("master_weights", "–")),
        ("optimizer", setup.get("optimizer", "–")),
        ("relevant variables", ", ".join(f"{k}={v}" for k, v in (env.get("env_vars") or {}).items()) or "none set"),
    ]
    return rows


def _reproduce(src: Source) -> list[tuple[str, str]]:
    head, env = src.header, src.env
    matrix = head.get("matrix", {})
    commit = env.get("git_commit") or "not a git checkout"
    if env.get("git_dirty"):
        commit += " (with uncommitted changes)"
    return [
        ("command", " ".join(head.get("command") or []) or "–"),
        ("matrix", f"{matrix.get('name', '–')} ({matrix.get('source', '–')})"),
        ("matrix sha256 (resolved / file)", f"{matrix.get('sha256', '–')} / {matrix.get('text_sha256', '–')}"),
        ("run id / created", f"{head.get('run_id', '–')} / {head.get('created', '–')}"),
        ("rounds / shard / devices", f"{head.get('rounds', 1)} / {head.get('shard') or 'whole matrix'} / "
                                     f"{head.get('devices') or 'default'}"),
        ("tebench", f"{head.get('tebench') or env.get('tebench') or '–'} @ {commit}"),
        ("results file", src.path),
    ]


def build_context(sources: list[Source], out: Path) -> dict[str, Any]:
    """Everything both templates show, computed once."""
    df = tables.case_frame(sources)
    charts_out: list[Chart] = []

    def add(name: str, title: str, caption: str, fig: Any) -> None:
        if fig is not None:
            charts_out.append(Chart(name, title, caption, png_bytes(fig)))

    fp8_charts: list[Chart] = []
    if not df.empty:
        add("speedup", "Speedup over PT-AMP", "Each variant's median step time relative to eager PT-AMP at the "
            "same size on the same machine; right of the dashed line is faster. Hatched: CUDA graphs.",
            charts.speedup(df))
        add("step_time", "Train-step time", "Median of the timed steps (warm-up excluded); error bars span the "
            "25th to 75th percentile of the stored per-step samples.", charts.step_time(df))
        add("memory", "Peak memory", "CUDA max allocated over warm-up and timed steps (reset per case); on a CPU, "
            "the case process's peak resident set. With CUDA graphs, activations live in the graph's "
            "private memory pool, set up before the reset: compare such cases by their peak reserved "
            "memory (in the case table), not by this chart.", charts.memory(df))
        add("loss", "Loss curves", "Training loss at every step, warm-up included. Every mode starts from the "
            "same weights and sees the same batches; the grey band is the reference mode ± the parity tolerance.",
            charts.loss_curves(sources, df))
        add("scaling", "Scaling with model size", "Per mode, the best variant at each size; x axis ordered by "
            "training FLOPs per step. Dashed: CUDA graphs.", charts.scaling(df))
        add("comparison", "Machines side by side", "Median step time of the same case on each machine.",
            charts.comparison(df))
        fp8_records = [(s, r) for s in sources for r in s.records if r.get("fp8_state") and r.get("round", 0) == 0]
        for i, (src, rec) in enumerate(fp8_records[:MAX_FP8_CHARTS]):
            fig = charts.fp8_state(rec)
            if fig is not None:
                fp8_charts.append(Chart(f"fp8_state_{i}", rec["case_id"], src.label, png_bytes(fig)))
    fp8_flags = [(s.label, r["case_id"], flag) for s in sources for r in s.records
                 if r.get("fp8_state") for flag in r["fp8_state"].get("flags", [])]
    fp8_total = sum(1 for s in sources for r in s.records if r.get("fp8_state") and r.get("round", 0) == 0)

    head = tables.headline(df)
    busy = df[df["gpu_busy"].notna()] if not df.empty else df
    dist = tables.distributed(df, sources) if not df.empty else pd.DataFrame()
    cross = tables.crossover(df)
    comp = tables.comparison(df)
    not_run = tables.not_run(df)
    parity_bad = tables.parity_failures(df)
    envs_differ = len({(s.device, s.env.get("torch"), s.env.get("te"), s.env.get("cuda")) for s in sources}) > 1

    def both(frame: pd.DataFrame, columns=None) -> dict[str, str]:
        shown = tables.formatted(frame, columns) if (columns and not frame.empty) else frame
        return {"html": html_table(shown), "md": md_table(shown)}

    comp_cols = None
    if not comp.empty:
        comp_cols = [("case_id", "case", "")] + [(c, f"{c} (ms)" if "/" not in c else c, "ms" if "/" not in c else "x")
                                                 for c in comp.columns if c != "case_id"]
    return {
        "title": ", ".join(dict.fromkeys(s.header.get("matrix", {}).get("name", "results") for s in sources)),
        "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "tebench_version": tebench.__version__,
        "sources": [{"label": s.label, "kind": s.kind, "notes": s.notes, "env": _environment(s),
                     "reproduce": _reproduce(s), "matrix": s.header.get("matrix", {}).get("data")} for s in sources],
        "envs_differ": envs_differ,
        "headline_sentences": [_sentence(r) for _, r in head.iterrows()],
        "headline": both(head, HEADLINE_COLUMNS),
        "cases": both(df, tables.CASE_COLUMNS),
        "n_cases": len(df),
        "status_counts": df["status"].value_counts().to_dict() if not df.empty else {},
        "busy": both(busy, BUSY_COLUMNS),
        "cpu_bound": int((busy["bound"] == "CPU-bound").sum()) if not busy.empty else 0,
        "crossover": both(cross, CROSSOVER_COLUMNS),
        "has_crossover": not cross.empty,
        "distributed": both(dist, DIST_COLUMNS),
        "has_distributed": not dist.empty,
        "comparison": both(comp, comp_cols),
        "has_comparison": not comp.empty,
        "not_run": both(not_run, [("source", "machine", ""), ("case_id", "case", ""), ("status", "status", ""),
                                  ("reason", "reason", "")]),
        "n_not_run": len(not_run),
        "parity_failures": both(parity_bad, tables.PARITY_COLUMNS),
        "n_parity_failures": len(parity_bad),
        "charts": charts_out,
        "fp8_charts": fp8_charts,
        "fp8_total": fp8_total,
        "fp8_flags": fp8_flags,
        "frame": df,
    }


def render(paths: list[str | Path], out: str | Path) -> Path:
    """Render ``index.html``, ``report.md`` and chart PNGs into ``out``; returns ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sources = load_all(list(paths))
    ctx = build_context(sources, out)
    # Atomic writes: a full disk leaves the previous file (or none), never half of one.
    for chart in ctx["charts"] + ctx["fp8_charts"]:
        atomic.write_bytes(out / f"{chart.name}.png", chart.png)
    loader = jinja2.FileSystemLoader(str(templates_dir()))
    html_env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)
    md_env = jinja2.Environment(loader=loader, autoescape=False, undefined=jinja2.StrictUndefined,
                                keep_trailing_newline=True)
    md_env.filters["md"] = md_escape
    atomic.write_text(out / "index.html", html_env.get_template("report.html.j2").render(**ctx))
    atomic.write_text(out / "report.md", md_env.get_template("report.md.j2").render(**ctx))
    frame = ctx["frame"].drop(columns=["dims", "round_medians_ms"], errors="ignore")
    atomic.write_text(out / "cases.csv", frame.to_csv(index=False))
    return out
