"""Render reports from stored results: one self-contained HTML file and PR-ready Markdown.

``render(paths, out)`` reads results files (and pytest-benchmark JSON), builds
the tables with pandas and the charts with matplotlib (each figure drawn
once), and writes ``index.html`` (styles and charts inside it, no network
requests), ``report.md``, the chart PNGs and ``cases.csv``. Nothing here runs a
model or needs a GPU.

``report.md`` reads whole without any image: the answer (verdicts, headline,
where FP8 pays) is text and text bars. It links the chart PNGs only when the
caller says where they will be served (``assets_url``), and then by absolute
URL, because a PR comment cannot show files that sit next to it. It stays
under GitHub's comment limit (:data:`MD_LIMIT`).
"""

from __future__ import annotations

import base64
import io
import math
import multiprocessing as mp
import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import jinja2
import pandas as pd
from markupsafe import Markup

import tebench
from tebench.escape import for_terminal, visible
from tebench.store import atomic
from tebench.plan.environment import usable_cpus
from tebench.plan.matrix import exclusion_text
from tebench.plan import modes
from tebench.plan.modes import FP8_MODES
from tebench.schema import validate
from tebench.schema.records import CaseResult, Phases, RunHeader
from tebench.report import answer, charts, harness_cost as phases, tables
from tebench.report import why as why_mod
from tebench.report.load import Source, load_all

FP8 = " or ".join(tables.TE_FP8_MODES)
"""How headings name TE's FP8 mode (``TE-FP8``); torchao's columns name ``AO-FP8``."""
AO_FP8 = " or ".join(tables.AO_FP8_MODES)
MAX_FP8_CHARTS = 24
"""Upper bound on FP8-state charts (largest sizes and loss spikes are chosen first)."""
MD_LIMIT = 60_000
"""Characters report.md may hold. GitHub refuses comments over 65,536; the rest
is room for what a CI job puts around the report (a marker, links, a compare summary)."""


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
    fig.savefig(buf, format="png", dpi=charts.DPI)
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
    """Make any text safe inside a Markdown table cell: no markup, no HTML, no broken rows.

    Control and separator characters become visible escapes (``\\x1b``), so the text
    is safe on a terminal too (``tebench compare`` prints its Markdown).
    """
    text = visible(str(value).replace("\r", " ").replace("\n", " ")).replace("&", "&amp;")
    text = _MD_SPECIAL.sub(lambda m: {"<": "&lt;", ">": "&gt;", "|": "\\|"}.get(m.group(1), "\\" + m.group(1)), text)
    # GitHub turns bare URLs into links and @name into a notification; entities keep them plain text.
    return text.replace("://", ":&#47;&#47;").replace("www.", "www&#46;").replace("@", "&#64;")


def code_safe(value: Any) -> str:
    """Text for inside a fenced code block: no backtick can close the fence early, no control characters."""
    return visible(str(value).replace("\r", " ").replace("\n", " ")).replace("`", "'")


def html_finalize(value: Any) -> Any:
    """Jinja2 ``finalize`` of the HTML templates: control characters of every value shown as
    escapes (autoescape sees to the markup); markup built here (tables) keeps its newlines."""
    if isinstance(value, str):
        text = for_terminal(value, keep_newlines=True)
        return Markup(text) if isinstance(value, Markup) else text
    return value


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
    ("fastest", "fastest mode", ""), ("step_ms", "step ms", "ms"), ("speedup_vs_amp", f"vs {tables.BASELINE}", "x"),
    ("speedup_vs_compile", f"vs {tables.COMPILED}", "x"), ("noise", "noise", ""),
    # Signed ("−12%", "+1.9%"): a column named "saved" showed -1.9% where the fastest used more.
    ("memory_change", f"memory vs {tables.BASELINE}", "change"),
    # Cases passed over because they do not count (loss parity not passed, GEMMs not all FP8), each faster
    # than its pool's pick (fastest, best TE-FP8, best AO-FP8) or the fastest of a pool with no pick.
    ("faster_not_passing", "passed over (parity, FP8 proof)", ""),
    ("best_fp8", f"best {FP8}", ""), ("fp8_speedup_vs_amp", f"{FP8} vs {tables.BASELINE}", "x"),
    # torchao's columns exist only where a torchao case ran (tables.headline), so older reports keep their shape.
    ("best_ao_fp8", f"best {AO_FP8}", ""), ("ao_fp8_speedup_vs_amp", f"{AO_FP8} vs {tables.BASELINE}", "x"),
    ("ao_fp8_speedup_vs_compile", f"{AO_FP8} vs {tables.COMPILED}", "x"),
    ("te_vs_ao", f"{FP8} vs {AO_FP8}", "x"), ("te_parity", f"{FP8} parity", ""), ("ao_parity", f"{AO_FP8} parity", ""),
    ("te_vs_ao_passing", f"{FP8} vs {AO_FP8}, fastest passing parity", "x"),
    ("parity", "loss parity", ""), ("not_ok", "not ok", ""),
]
CROSSOVER_COLUMNS = [
    ("source", "machine", ""), ("workload", "workload", ""), ("cuda_graphs", "CUDA graphs", ""),
    ("baseline", "baseline", ""), ("fp8_first_faster_at", f"{FP8} first faster at", ""),
    ("speedup_there", "speedup there", "x"), ("speedup_by_size", f"{FP8} speedup by size", ""),
]
CROSSOVER_BOTH_COLUMNS = [
    ("source", "machine", ""), ("workload", "workload", ""), ("cuda_graphs", "CUDA graphs", ""),
    ("baseline", "baseline", ""), ("fp8", "FP8 mode", ""), ("fp8_first_faster_at", "first faster at", ""),
    ("speedup_there", "speedup there", "x"), ("speedup_by_size", "speedup by size", ""),
]
"""The crossover with torchao's cases beside TE's: one row per FP8 library."""
DIST_COLUMNS = [
    ("source", "machine", ""), ("case_id", "case", ""), ("status", "status", ""), ("ranks", "ranks", ""),
    ("per_rank_tokens_per_s", "tokens/s per rank", ""), ("aggregate_tokens_per_s", "aggregate tokens/s", "int"),
    ("one_gpu_tokens_per_s", "same case, 1 GPU", "int"), ("scaling_efficiency", "scaling efficiency", "pct"),
    ("replicas_in_sync", "replicas identical (DDP)", ""), ("rank0_final_loss", "rank-0 final loss", "loss"),
    # From the profiled extra step's NCCL kernels; shown only where a record measured them.
    ("communication_share", "communication share of the step", "pct"),
    ("communication_overlapped", "of it hidden by compute", "pct"),
]
BUSY_COLUMNS = [
    ("case_id", "case", ""), ("source", "machine", ""), ("median_ms", "step ms", "ms"),
    ("gpu_busy", "GPU busy", "pct"), ("bound", "label", ""),
]


COST_COLUMNS = [
    ("mode", "mode", ""), ("source", "machine", ""), ("cases", "cases", "int"),
    # one column per phase the schema declares (tebench.schema.records.Phases)
    *((name, meta["column"], "s") for name, _, meta in validate.declared(Phases)),
    ("other_s", "other s", "s"), ("duration_s", "case time s", "s"), ("measured_share", "measured", "pct"),
]


def _cost_header(src: Source) -> dict[str, Any]:
    """How a run started its cases and the compile cache it began with (older runs: unknown)."""
    cache = src.header.compile_cache or {}
    launch = src.header.launch or "unrecorded"
    if launch == "prestarted" and src.header.prestart_depth:
        stops = {True: ", stopped beside launch-bound timed steps", False: ", never stopped"}
        launch += f" ({src.header.prestart_depth} per device{stops.get(src.header.prestart_pause, '')})"
    return {"label": src.label, "launch": launch,
            "cache": cache.get("state") or "unrecorded", "cache_dir": cache.get("dir")}


def _sentence(row: pd.Series) -> str:
    fmt = tables.fmt
    text = f"{row['workload']}/{row['size']} on {row['source']}: "
    if row.get("fastest"):
        text += f"fastest is {row['fastest']} at {fmt(row['step_ms'], 'ms')} ms/step"
    else:
        text += "no case counts (loss parity, FP8 proof)"
    if pd.notna(row["speedup_vs_amp"]):
        text += f" ({fmt(row['speedup_vs_amp'], 'x')} vs {tables.BASELINE}" + (
            ", within noise: the steps' spread is larger than the lead" if row.get("noise") else "") + ")"
    if row.get("best_fp8") and pd.notna(row["fp8_speedup_vs_amp"]):
        text += f"; best {FP8} ({row['best_fp8']}) is {fmt(row['fp8_speedup_vs_amp'], 'x')} vs {tables.BASELINE}"
    if row.get("best_ao_fp8") and pd.notna(row.get("ao_fp8_speedup_vs_amp")):
        text += (f"; best {AO_FP8} ({row['best_ao_fp8']}) is {fmt(row['ao_fp8_speedup_vs_amp'], 'x')} vs "
                 f"{tables.BASELINE} and {fmt(row['ao_fp8_speedup_vs_compile'], 'x')} vs {tables.COMPILED}, "
                 f"parity {row.get('ao_parity') or 'not judged'}")
        # Both picks count (tables.counts), so their ratio is the comparison among variants that count.
        if pd.notna(row.get("te_vs_ao")):
            text += f"; {FP8} is {fmt(row['te_vs_ao'], 'x')} vs {AO_FP8}"
        elif not row.get("best_fp8"):
            text += f"; no {FP8} variant counts here"
    elif pd.notna(row.get("ao_ran", False)) and bool(row.get("ao_ran", False)) and row.get("best_fp8"):
        # torchao ran at this size and none of its variants counts: name that library, not TE's.
        text += f"; no {AO_FP8} variant counts here"
    if row.get("faster_not_passing"):
        text += f"; passed over, not counted: {row['faster_not_passing']}"
    saving = row["memory_saving_vs_amp"]
    if pd.notna(saving) and abs(saving) >= 0.0005:
        text += f"; it uses {fmt(abs(saving), 'pct')} {'less' if saving > 0 else 'more'} memory than {tables.BASELINE}"
    return text + f"; loss parity: {row['parity']}."



def _environment(src: Source) -> list[tuple[str, str]]:
    env = src.env
    gpus = env.get("gpus") or []
    setup = next((r.setup for r in src.records if r.setup), {}) or {}
    peak = env.get("peak_tflops")
    clocks = env.get("gpu_clocks") or {}
    rows = [
        ("device", src.device),
        ("GPUs", "; ".join(f"{g['index']}: {g['name']}, CC {g['capability'][0]}.{g['capability'][1]}, "
                          f"{g['memory_bytes'] / 2**30:.0f} GiB, {g.get('multiprocessors')} SMs" for g in gpus) or "none"),
        ("driver / CUDA / cuDNN", clip_words(f"{env.get('driver') or '–'} / {env.get('cuda') or '–'} / "
                                             f"{env.get('cudnn') or '–'}")),
        ("GPU clocks / power", "; ".join(f"GPU {i}: max SM {c.get('clocks.max.sm')} MHz, max mem "
                                        f"{c.get('clocks.max.mem')} MHz, power limit {c.get('power.limit')} W"
                                        for i, c in clocks.items()) or "–"),
        ("torch / Transformer Engine", clip_words(f"{env.get('torch') or '–'} / "
                                                  f"{env.get('te') or 'not available: ' + str(env.get('te_error') or '–')}")),
        ("Python / CPU", f"{env.get('python') or '–'} / {env.get('cpu') or '–'} ×{env.get('cpu_count') or '?'}"),
        ("host", str(env.get("hostname") or "–")),
        ("MFU peak", f"{peak['bf16']} TFLOP/s dense BF16 ({peak['source']})" if peak else "unknown GPU: no MFU"),
        ("master weights", setup.get("master_weights", "–")),
        ("optimizer", setup.get("optimizer", "–")),
        ("relevant variables", ", ".join(f"{k}={v}" for k, v in (env.get("env_vars") or {}).items()) or "none set"),
    ]
    return rows


ENV_CELL_CHARS = 200
"""Characters an environment cell shows. The probe stores error messages cut at a fixed length, often
mid-word ("… a conflicting cuDNN in LD_LIBRA"); the cell ends at a word instead, marked "…"."""


def clip_words(text: str, limit: int = ENV_CELL_CHARS) -> str:
    """``text`` up to ``limit`` characters, cut after a whole word and marked "…" where it is longer."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(None, 1)[0]
    return cut.rstrip(" ,;:") + " …"


def _devices_text(devices: list[str] | None, env: dict[str, Any]) -> str:
    """``--devices`` as the run had it; on a machine without a CUDA GPU its indices were CPU slots."""
    listed = _listed(devices)
    if not listed:
        return "default"
    return listed if env.get("device_type") == "cuda" else f"{listed} (no CUDA GPU: CPU slots, one case each)"


def _listed(value: Any) -> str:
    """A header field for people: a list as "0, 1" (not "['0', '1']"), a mapping as "k=v", None as ""."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _reproduce(src: Source) -> list[tuple[str, str]]:
    head, env = src.header, src.env
    matrix = head.matrix or {}
    commit = env.get("git_commit") or "not a git checkout"
    if env.get("git_dirty"):
        commit += " (with uncommitted changes)"
    return [
        ("command", " ".join(head.command or []) or "–"),
        ("matrix", f"{matrix.get('name', '–')} ({matrix.get('source', '–')})"),
        ("matrix sha256 (resolved / file)", f"{matrix.get('sha256', '–')} / {matrix.get('text_sha256', '–')}"),
        ("run id / created", f"{head.stored('run_id', '–')} / {head.stored('created', '–')}"),
        ("rounds / shard / devices", f"{head.stored('rounds', 1)} / {_listed(head.shard) or 'whole matrix'} / "
                                     f"{_devices_text(head.devices, env)}"),
        ("tebench", f"{head.tebench or env.get('tebench') or '–'} @ {commit}"),
        ("results file", src.path),
    ] + _excluded(head)


def _excluded(head: RunHeader) -> list[tuple[str, str]]:
    """The run-info row of the matrix's exclusions; none for a header from before they were recorded."""
    if head.excluded is None and "excluded" not in head._keys:
        return []
    rules = head.excluded or []
    return [("excluded by the matrix", "; ".join(exclusion_text(e) for e in rules) if rules else "nothing")]




def _fp8_selection(sources: list[Source], df: pd.DataFrame) -> tuple[list[tuple[Source, dict[str, Any], str]], int]:
    """Which cases get an FP8-state chart, and why; and how many recorded a state at all.

    The largest size of each workload (where FP8 matters and where scales
    drift), every case whose loss spiked above its reference, and every case
    with a flag. Ordered like the case table; at most MAX_FP8_CHARTS.
    """
    sizes = tables.size_order(df) if not df.empty else {}
    chosen, total = [], 0
    for src in sources:
        recs = [r for r in src.records if r.round_no == 0]
        with_state = [r for r in recs if r.fp8_state]
        total += len(with_state)
        largest: dict[str, float] = {}
        for r in with_state:
            key = sizes.get((r.workload, r.size), (0.0, 0.0))[0]  # FLOPs: the model's size
            largest[r.workload] = max(largest.get(r.workload, -math.inf), key)
        refs = {(r.workload, r.size): r for r in recs if r.verdict == "reference" and r.loss}
        for r in with_state:
            why = []
            if sizes.get((r.workload, r.size), (0.0, 0.0))[0] == largest[r.workload]:
                why.append("largest size")
            ref = refs.get((r.workload, r.size))
            if ref is not None and r.loss:
                step = tables.loss_spike(r.loss.per_step, ref.loss.per_step,
                                         (r.parity.tolerance if r.parity else None) or 0.0)
                if step is not None:
                    why.append(f"loss spiked above the reference at step {step}")
            if r.fp8_state.get("flags"):
                why.append(f"{len(r.fp8_state['flags'])} flag(s)")
            if why:
                chosen.append((src, r, "; ".join(why)))
    order = {cid: i for i, cid in enumerate(df["case_id"])} if not df.empty else {}
    chosen.sort(key=lambda t: order.get(t[1].case_id, len(order)))
    return chosen[:MAX_FP8_CHARTS], total


def _pays_bars(pays: pd.DataFrame, multi: bool) -> list[dict[str, Any]]:
    """Rows of the "where FP8 pays" bars: label, speedup, bar text and bar width (% of the widest)."""
    if pays.empty:
        return []
    peak = pays["speedup_vs_amp"].max()  # NaN where no size has a case that counts
    top = max(1.0, float(peak) if pd.notna(peak) else 1.0) * 1.05
    rows = []
    both = "mode" in pays and pays["mode"].map(modes.fp8_library).nunique() > 1
    for _, r in pays.iterrows():
        label = f"{r['workload']}/{r['size']}" + (f" on {r['source']}" if multi else "") + (
            f" {r['mode']}" if both else "")
        speedup = float(r["speedup_vs_amp"])
        # A size whose FP8 cases all failed to count (tables.counts) has no bar, only its note.
        note = r.get("note") if isinstance(r.get("note"), str) else ""
        variant = r["best_fp8"] if pd.notna(r["best_fp8"]) else "–"
        rows.append({"label": label, "variant": variant, "speedup": tables.fmt(speedup, "x"),
                     "vs_compile": tables.fmt(r["speedup_vs_compile"], "x"),
                     "bar": note if not math.isfinite(speedup) else tables.text_bar(speedup, top),
                     "width": round(100 * speedup / top, 1) if math.isfinite(speedup) else 0.0,
                     "one": round(100 / top, 1), "faster": bool(speedup > 1), "note": note})
    return rows


def _aligned(rows: list[tuple[str, str, str]]) -> list[str]:
    """Label, number and bar per line, in columns (for a fixed-width code block)."""
    if not rows:
        return []
    width = max(len(str(label)) for label, _, _ in rows)
    return [f"{str(label):<{width}}  {num:>6}  {bar}".rstrip() for label, num, bar in rows]


def _speedup_bars(df: pd.DataFrame, multi: bool) -> list[dict[str, Any]]:
    """The speedup chart as text: one block per (machine, workload, size), one bar per variant."""
    ok = df[(df["status"] == "ok") & (df["parallel"] == "single") & df["speedup_vs_amp"].notna()] \
        if not df.empty else df
    if ok.empty:
        return []
    top = max(1.0, float(ok["speedup_vs_amp"].max())) * 1.05
    counted = tables.counts(ok)
    blocks = []
    for (source, workload, size), g in ok.groupby(["source", "workload", "size"], sort=False):
        # Every variant stays (the detail view); one that does not count is marked after its bar.
        lines = _aligned([(r["variant"], tables.fmt(r["speedup_vs_amp"], "x"),
                           tables.text_bar(float(r["speedup_vs_amp"]), top)
                           + ("" if counted[i] else f"  ✗ {charts.not_counted_mark(r)}"))
                          for i, r in g.iterrows()])
        blocks.append({"title": f"{workload}/{size}" + (f" on {source}" if multi else ""), "lines": lines})
    return blocks


_JOBS: list[Callable[[], Any]] = []


def _draw_job(i: int) -> bytes | None:
    fig = _JOBS[i]()
    return None if fig is None else png_bytes(fig)


_STOPPING = {signal.SIGINT, signal.SIGTERM}


def _drawing_child() -> None:
    # A Ctrl-C reaches the whole process group: the parent stops the pool (SIGTERM, which ends a
    # child quietly). A child that also raised KeyboardInterrupt would print a traceback, and one
    # that died of it leaves multiprocessing's Pool waiting forever on its lost task. The child
    # was forked with these signals blocked (see draw_all), so none arrives before this runs.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)


def draw_all(jobs: list[Callable[[], Any]]) -> list[bytes | None]:
    """PNG bytes of each job's figure (None where a job has nothing to draw), each drawn once.

    On Linux the figures are drawn in up to ``TEBENCH_REPORT_PROCESSES``
    (default: the usable CPUs, at most 4; see :func:`tebench.plan.environment.usable_cpus`) forked processes: drawing is CPU-bound
    Python, so this is what brings a 54-case report down to a few seconds on a
    2-core machine. The forked workers read the jobs from memory; only PNG
    bytes travel back. Anywhere else, or with 1, they are drawn in turn.
    """
    global _JOBS
    wanted = os.environ.get("TEBENCH_REPORT_PROCESSES", "")
    # isascii: str.isdigit() accepts '²', which int() refuses; any other value means the default.
    chosen = int(wanted) if wanted.isascii() and wanted.isdigit() and len(wanted) <= 6 else 0
    workers = min(len(jobs), chosen or min(4, usable_cpus()))
    if workers > 1 and sys.platform == "linux":
        _JOBS = jobs
        try:
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)  # until the children exist
            try:
                pool = mp.get_context("fork").Pool(workers, initializer=_drawing_child)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # a signal held meanwhile arrives here
            with pool:
                return pool.map(_draw_job, range(len(jobs)), chunksize=1)
        finally:
            _JOBS = []
    _JOBS = jobs
    try:
        return [_draw_job(i) for i in range(len(jobs))]
    finally:
        _JOBS = []


ChartJob = tuple[str, str, str, Callable[[], Any]]
"""(name, title, caption, a function drawing the Figure or returning None)."""


def _chart_jobs(sources: list[Source], df: pd.DataFrame, cost: pd.DataFrame,
                chosen: list[tuple[Source, CaseResult, str]], why_df: pd.DataFrame | None = None) -> list[ChartJob]:
    """Every chart the report may show, in drawing order; none without a case."""
    if df.empty:
        return []
    multi = len(sources) > 1
    # Captions name CUDA graphs only where a case ran under them (never on a CPU run).
    graphs = bool(df["graphs"].any())
    # The loss chart first: it is the largest, and the pool hands jobs out in order.
    jobs: list[ChartJob] = [
        ("loss", "Loss curves", "Training loss at every step, warm-up included, one panel per mode family. "
         "Every mode starts from the same weights and sees the same batches; the black dashed curve is the "
         "reference mode and the grey band the band each curve was judged against.",
         lambda: charts.loss_curves(sources, df)),
        ("speedup", f"Speedup over {tables.BASELINE}", f"Each variant's median step time relative to eager "
         f"{tables.BASELINE} at the same size on the same machine; right of the dashed line is faster. "
         + ("Hatched: CUDA graphs. " if graphs else "")
         + f"Pale, labelled ✗: {charts.NOT_COUNTED} (or its FP8 proof is partial); it counts toward no speed claim.",
         lambda: charts.speedup(df)),
        ("step_time", "Train-step time", "Median of the timed steps (warm-up excluded); error bars span the "
         "25th to 75th percentile of the stored per-step samples. A panel whose values span more than 10× "
         "has a log axis.", lambda: charts.step_time(df)),
        ("memory", "Peak memory", "CUDA max allocated over warm-up and timed steps (reset per case); on a "
         "CPU, the case process's peak resident set. With CUDA graphs, activations live in the graph's "
         "private memory pool, set up before the reset: compare such cases by their peak reserved "
         "memory (in the case table), not by this chart.", lambda: charts.memory(df)),
        ("scaling", "Scaling with model size", "Per mode, the best variant at each size; x axis ordered by "
         "training FLOPs per step. " + ("Dashed: CUDA graphs. " if graphs else "") + "An FP8 line takes only the variants that count (passed "
         "loss parity, FP8 proof not partial): a size where none does leaves a gap.", lambda: charts.scaling(df)),
        ("comparison", "Machines side by side", "Median step time of the same case on each machine.",
         lambda: charts.comparison(df)),
    ]
    jobs.append(("phases", "Where the case time went", "Per mode, the case time of all its cases split into "
                 "phases: start-up (process and CUDA start; imports too when the worker started cold), "
                 "build (model, data, optimizer), warm-up (untimed steps: compilation, autotuning), "
                 "measured steps, profile, validate, and other (result hand-off, process exit).",
                 lambda: phases.chart(cost)))
    if why_df is not None and not why_df.empty:
        jobs.append(("why", "Where the step's time went", "GPU time per step by kernel category, from the profiled "
                     "extra steps (never the timed ones), and idle: the median timed step minus the union of kernel "
                     "time, when the GPU waits for the host to launch work. Kernels on concurrent streams count in "
                     f"each category. At most {why_mod.CHART_SIZES} sizes are drawn.",
                     lambda: why_mod.chart(why_df)))
    for i, (src, rec, why) in enumerate(chosen):
        jobs.append((f"fp8_state_{i}", rec.case_id, why + (f"; {src.label}" if multi else ""),
                     lambda rec=rec, why=why: charts.fp8_state(rec, note=why)))
    return jobs


def _draw_charts(jobs: list[ChartJob]) -> dict[str, Any]:
    """Draw every job once; the context's chart entries (main charts, the cost chart, FP8-state charts)."""
    pngs = draw_all([job[3] for job in jobs])
    drawn = [Chart(name, title, caption, png) for (name, title, caption, _), png in zip(jobs, pngs)
             if png is not None]
    return {
        "charts": [c for c in drawn if not c.name.startswith("fp8_state_") and c.name not in ("phases", "why")],
        "why_chart": next((c for c in drawn if c.name == "why"), None),
        "cost_chart": next((c for c in drawn if c.name == "phases"), None),
        "fp8_charts": [c for c in drawn if c.name.startswith("fp8_state_")],
    }


def _both(frame: pd.DataFrame, columns: list[tuple[str, str, str]] | None, multi: bool) -> dict[str, Any]:
    """A table for both templates: HTML, Markdown and the formatted frame."""
    if columns and not multi:
        columns = [c for c in columns if c[0] != "source"]  # one machine: a column of one value
    shown = tables.formatted(frame, columns) if (columns and not frame.empty) else frame
    return {"html": html_table(shown), "md": md_table(shown), "frame": shown}


def _comparison_columns(comp: pd.DataFrame, labels: list[str]) -> list[tuple[str, str, str]] | None:
    """Headings and formats of :func:`tables.comparison`'s columns (``labels``: the sources, in order)."""
    if comp.empty:
        return None
    out = [("case_id", "case", "")]
    for c in comp.columns:
        if c == "case_id":
            continue
        per_watt = c.endswith(tables.PER_WATT)
        name = c[: -len(tables.PER_WATT)] if per_watt else c
        if name in labels:  # one source's own figure
            out.append((c, c if per_watt else f"{c} (ms)", "int" if per_watt else "ms"))
        else:  # a ratio to the first source
            out.append((c, c, "x"))
    return out


def _fp8_words(both: bool) -> dict[str, str]:
    """How the report names its FP8 comparison: TE's alone, or each library's best beside the other's."""
    if not both:
        return {"fp8_best": f"best {FP8} variant", "fp8_short": f"best {FP8}", "fp8_name": FP8}
    return {"fp8_best": f"best {FP8} and best {AO_FP8} (torchao) variant", "fp8_short": "best FP8 of each library",
            "fp8_name": "FP8"}


def _parity_context(df: pd.DataFrame, multi: bool) -> dict[str, Any]:
    """The headline, loss-parity and where-FP8-pays parts of the context."""
    head = tables.headline(df)
    issues = tables.parity_issues(df)
    pays = _pays_bars(tables.fp8_pays(df), multi)
    fp8_ran = not df.empty and (df["mode"].isin(FP8_MODES) & (df["status"] == "ok")).any()
    return {
        **_answer(df, multi),
        "headline_sentences": [_sentence(r) for _, r in head.iterrows()],
        # The not-counted column only where some size has such a case: most runs pass throughout.
        "headline": _both(_same_as_baseline(head, "fastest", [
            (tables.BASELINE, "speedup_vs_amp"), (tables.BASELINE, "memory_change"),
            (tables.COMPILED, "speedup_vs_compile")]), [c for c in HEADLINE_COLUMNS if c[0] != "faster_not_passing"
                                 or (not head.empty and head["faster_not_passing"].astype(bool).any())], multi),
        "verdict_line": tables.verdict_text(df, reasons=True),
        "verdict_counts": tables.verdict_counts(df),
        "parity_issues": [{"case": r["case_id"], "source": r["source"], "verdict": r["parity"],
                           "reason": r["parity_reason"] or "no reason recorded"} for _, r in issues.iterrows()],
        "parity_table": _both(issues, tables.PARITY_COLUMNS, multi),
        "pays": pays,
        "pays_text": _aligned([(r["label"], r["speedup"], r["bar"]) for r in pays]),
        "fp8_ran": bool(fp8_ran),
        **_fp8_words(tables.has_torchao(df)),
        "fp8_cases": int(df["mode"].isin(FP8_MODES).sum()) if not df.empty else 0,
        "speedup_text": _speedup_bars(df, multi),
        "energy_sentences": tables.energy_sentences(df),
        "power_limits": tables.power_limits(df),
    }


def _answer(df: pd.DataFrame, multi: bool) -> dict[str, Any]:
    """The first screen's tables (one per workload) for both templates, and the legend under them."""
    groups = answer.groups(df, multi)
    energy = any("mJ/token" in g["table"].columns for g in groups)
    return {"answer": [{"title": g["title"], "html": html_table(g["table"], "answer"), "md": md_table(g["table"]),
                        "passed_over": g["passed_over"]} for g in groups],
            "answer_legend": answer.legend(energy)}


def _same_as_baseline(frame: pd.DataFrame, name: str, pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """A display copy where a row that *is* a baseline shows "=" in that baseline's columns, not "×1.00"
    and "±0%": a case against itself says nothing. ``name``: the column naming the row's variant;
    ``pairs``: (baseline variant, its column)."""
    if frame.empty or name not in frame:
        return frame
    shown = frame.copy()
    for baseline, column in pairs:
        if column in shown:
            shown[column] = shown[column].astype(object)
            shown.loc[shown[name] == baseline, column] = "="
    return shown


def _table_context(df: pd.DataFrame, sources: list[Source], multi: bool, cost: pd.DataFrame) -> dict[str, Any]:
    """The case, GPU-busy, crossover, multi-GPU, comparison, not-run and cost tables."""
    has_busy = not df.empty and df["gpu_busy"].notna().any()
    busy = df[df["gpu_busy"].notna()] if has_busy else df.iloc[0:0]
    dist = tables.distributed(df, sources) if not df.empty else pd.DataFrame()
    cross = tables.crossover(df)
    comp = tables.comparison(df)
    not_run = tables.not_run(df)
    flagged = tables.noisy(df)
    shown = _same_as_baseline(df.assign(spread=flagged.map({True: "IQR > median", False: ""})), "variant",
                              [(tables.BASELINE, "speedup_vs_amp"), (tables.COMPILED, "speedup_vs_compile")])
    columns = [c for c in tables.CASE_COLUMNS if (has_busy or c[0] != "gpu_busy")
               and (flagged.any() or c[0] != "spread")]
    return {
        "cases": _both(shown, columns, multi),
        "n_noisy": int(flagged.sum()),
        "n_cases": len(df),
        "status_counts": df["status"].value_counts().to_dict() if not df.empty else {},
        "has_busy": bool(has_busy),
        "busy": _both(busy, BUSY_COLUMNS, multi),
        "cpu_bound": int((busy["bound"] == "launch-bound").sum()) if not busy.empty else 0,
        "crossover": _both(cross, CROSSOVER_BOTH_COLUMNS if "fp8" in cross.columns else CROSSOVER_COLUMNS, multi),
        "has_crossover": not cross.empty,
        "distributed": _both(dist, DIST_COLUMNS, multi),
        "has_distributed": not dist.empty,
        "comparison": _both(comp, _comparison_columns(comp, list(dict.fromkeys(df["source"])) if not df.empty else []), multi),
        "has_comparison": not comp.empty,
        "not_run": _both(not_run, [("case_id", "case", ""), ("source", "machine", ""), ("status", "status", ""),
                                   ("reason", "reason", "")], multi),
        "n_not_run": len(not_run),
        "cost": _both(phases.by_mode(cost), COST_COLUMNS, multi),
        "cost_totals": phases.totals(cost),
        "cost_header": [_cost_header(s) for s in sources],
    }


def _why_context(why_df: pd.DataFrame, multi: bool, df: pd.DataFrame) -> dict[str, Any]:
    """The "why" section: a sentence per size, the time breakdown and memory tables (CUDA records with kernels).

    ``df``, the case frame, gives the sentences each case's loss-parity verdict: they pick among the cases
    that count, as the headline does."""
    if why_df.empty:
        return {"has_why": False}
    mem = why_df[why_df["mem_peak"].notna()]
    return {
        "has_why": True,
        "why_frame": why_df,
        "why_sentences": why_mod.sentences(why_mod.with_parity(why_df, df)),
        "why_time": _both(why_df, why_mod.time_columns(why_df), multi),
        "why_memory": _both(mem, why_mod.MEMORY_COLUMNS, multi),
        "has_why_memory": not mem.empty,
        "why_unproven": [r["case_id"] for _, r in why_df.iterrows() if r["fp8_proof"] in ("unproven", "no-fp8")],
    }


def build_context(sources: list[Source], out: Path, assets_url: str | None = None) -> dict[str, Any]:
    """Everything both templates show, computed once (each chart drawn once, used by HTML and Markdown)."""
    df = tables.case_frame(sources)
    multi = len(sources) > 1
    chosen, fp8_total = _fp8_selection(sources, df)
    cost = phases.frame(sources)
    why_df = why_mod.frame(sources)
    drawn = _draw_charts(_chart_jobs(sources, df, cost, chosen, why_df))
    return {
        "title": ", ".join(dict.fromkeys((s.header.matrix or {}).get("name", "results") for s in sources)),
        "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "tebench_version": tebench.__version__,
        "sources": [{"label": s.label, "kind": s.kind, "notes": s.notes, "env": _environment(s),
                     "reproduce": _reproduce(s), "matrix": (s.header.matrix or {}).get("data")} for s in sources],
        "multi": multi,
        "cpu_only": bool(sources) and all(s.env.get("device_type") == "cpu" for s in sources
                                          if s.kind == "tebench") and any(s.kind == "tebench" for s in sources),
        "envs_differ": len({(s.device, s.env.get("torch"), s.env.get("te"), s.env.get("cuda"))
                            for s in sources}) > 1,
        **_parity_context(df, multi),
        **_table_context(df, sources, multi, cost),
        **drawn,
        **_why_context(why_df, multi, df),
        "fp8_total": fp8_total,
        "fp8_flags": [(s.label, r.case_id, flag) for s in sources for r in s.records
                      if r.fp8_state for flag in r.fp8_state.get("flags", [])],
        "assets_url": assets_url.rstrip("/") + "/" if assets_url else None,
        "md_note": None,
        "frame": df,
    }


def fit_markdown(render_md: Any, ctx: dict[str, Any], limit: int = MD_LIMIT) -> str:
    """report.md within ``limit`` characters: the case table shortened first, then a hard cut, each with a note.

    ``render_md(ctx)`` renders the template. The answer at the top is never
    cut: what goes first is the folded detail below it.
    """
    text = render_md(ctx)
    if len(text) <= limit:
        return text
    cases = ctx["cases"]["frame"]
    full = ctx["cases"]["md"]
    over = len(text) - limit + 400  # room for the note
    lines = full.splitlines()
    keep = len(lines)
    while keep > 2 and over > 0:
        keep -= 1
        over -= len(lines[keep]) + 1
    shown = len(cases) - (len(lines) - keep)
    ctx = dict(ctx, cases=dict(ctx["cases"], md="\n".join(lines[:keep])),
               md_note=f"The case table shows {max(shown, 0)} of {len(cases)} cases to stay within GitHub's comment "
                       "limit; every case is in cases.csv and index.html.")
    text = render_md(ctx)
    if len(text) <= limit:
        return text
    note = ("\n\n> ✂️ Cut here to stay within GitHub's comment limit of 65,536 characters; "
            "the whole report is index.html.\n")
    cut = text.rfind("\n", 0, limit - len(note) - 200)
    text = text[:cut]
    if text.count("```") % 2:
        text += "\n```"
    text += "\n</details>" * max(0, text.count("<details>") - text.count("</details>"))
    return text + note


def render(paths: list[str | Path], out: str | Path, assets_url: str | None = None) -> Path:
    """Render ``index.html``, ``report.md``, chart PNGs and ``cases.csv`` into ``out``; returns ``out``.

    ``assets_url``: the absolute URL the PNGs will be served from (a branch,
    Pages, an artifact store); report.md then shows the charts from there.
    Without it report.md has no images, and reads whole without them.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sources = load_all(list(paths))
    ctx = build_context(sources, out, assets_url)
    # Atomic writes: a full disk leaves the previous file (or none), never half of one.
    extra = [c for c in (ctx["cost_chart"], ctx["why_chart"]) if c is not None]
    for chart in ctx["charts"] + ctx["fp8_charts"] + extra:
        atomic.write_bytes(out / f"{chart.name}.png", chart.png)
    loader = jinja2.FileSystemLoader(str(templates_dir()))
    html_env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                                  finalize=html_finalize)
    md_env = jinja2.Environment(loader=loader, autoescape=False, undefined=jinja2.StrictUndefined,
                                keep_trailing_newline=True)
    md_env.filters["md"] = md_escape
    md_env.filters["code"] = code_safe
    md_template = md_env.get_template("report.md.j2")
    atomic.write_text(out / "index.html", html_env.get_template("report.html.j2").render(**ctx))
    atomic.write_text(out / "report.md", fit_markdown(lambda c: md_template.render(**c), ctx))
    frame = ctx["frame"].drop(columns=["dims", "round_medians_ms"], errors="ignore")
    atomic.write_text(out / "cases.csv", frame.to_csv(index=False))
    if ctx["has_why"]:
        # Milliseconds per step by category and the memory parts in bytes, one row per case.
        atomic.write_text(out / "breakdown.csv", ctx["why_frame"].to_csv(index=False))
    return out
