"""A report page written: ``report.md`` fitted to a PR comment, ``index.html``, the chart PNGs and the CSVs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tebench.report.context import build_context
from tebench.report.load import load_all
from tebench.report.jinja_env import html_environment, markdown_environment
from tebench.report.markup import csv_safe
from tebench.gc_control import collector_off, frozen_heap
from tebench.errors import StorageError
from tebench.store import atomic

MD_LIMIT = 60_000
"""Characters report.md may hold. GitHub refuses comments over 65,536; the rest
is room for what a CI job puts around the report (a marker, links, a compare summary)."""


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


def render(paths: list[str | Path], out: str | Path, assets_url: str | None = None, rejudge: bool = False) -> Path:
    """Render ``index.html``, ``report.md``, chart PNGs and ``cases.csv`` into ``out``; returns ``out``.

    ``assets_url``: the absolute URL the PNGs will be served from (a branch,
    Pages, an artifact store); report.md then shows the charts from there.
    Without it report.md has no images, and reads whole without them.
    ``rejudge``: judge every parity verdict again, not only those of other rules (:func:`load`).
    """
    out = Path(out)
    nowhere = atomic.dangling_link(out)
    if nowhere:
        raise StorageError(f"report folder {out}: {nowhere}")
    out.mkdir(parents=True, exist_ok=True)
    # The loaded records stay for the whole report (plain dicts and lists, no cycles), yet every
    # collection of the oldest generation would walk them all again: the collector is off while they
    # are read, and they are frozen while the report is built from them.
    with collector_off():
        sources = load_all(list(paths), rejudge)
    with frozen_heap():
        ctx = build_context(sources, out, assets_url)
    _write(ctx, out)
    return out


def _write(ctx: dict[str, Any], out: Path) -> None:
    # Atomic writes: a full disk leaves the previous file (or none), never half of one.
    extra = [c for c in (ctx["cost_chart"], ctx["why_chart"]) if c is not None]
    for chart in ctx["charts"] + ctx["fp8_charts"] + extra:
        atomic.write_bytes(out / f"{chart.name}.png", chart.png)
    html_env, md_env = html_environment(), markdown_environment()
    md_template = md_env.get_template("report.md.j2")
    atomic.write_text(out / "index.html", html_env.get_template("report.html.j2").render(**ctx))
    atomic.write_text(out / "report.md", fit_markdown(lambda c: md_template.render(**c), ctx))
    frame = ctx["frame"].drop(columns=["dims", "round_medians_ms"], errors="ignore")
    atomic.write_text(out / "cases.csv", csv_safe(frame).to_csv(index=False))
    if ctx["has_why"]:
        # Milliseconds per step by category and the memory parts in bytes, one row per case.
        atomic.write_text(out / "breakdown.csv", csv_safe(ctx["why_frame"]).to_csv(index=False))
