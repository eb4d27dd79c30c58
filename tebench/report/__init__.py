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

This module is the package's face; the work is done in modules with one job each:

- :mod:`~tebench.report.load`: results files and benchmark JSON into sources;
- :mod:`~tebench.report.tables`: the case frame and every table computed from it;
- :mod:`~tebench.report.columns`: each table's columns, headings and formats;
- :mod:`~tebench.report.context`: the context both templates render, computed once;
- :mod:`~tebench.report.run_info`: each run's machine and how to reproduce it;
- :mod:`~tebench.report.figures`: which charts a report has, drawn once each
  (the chart functions: :mod:`~tebench.report.charts`, ``harness_cost``, ``why``);
- :mod:`~tebench.report.pool`: figures to PNG bytes, in forked processes;
- :mod:`~tebench.report.markup`: escaping, Markdown and HTML tables, the templates' folder;
- :mod:`~tebench.report.page`: the files written (report.md fitted to a PR comment).
"""

from __future__ import annotations

from tebench.report import answer, charts, tables, why
from tebench.report.columns import (AO_FP8, BUSY_COLUMNS, COST_COLUMNS, CROSSOVER_BOTH_COLUMNS, CROSSOVER_COLUMNS,
                                    DIST_COLUMNS, FP8, HEADLINE_COLUMNS)
from tebench.report.context import (answer_context, build_context, parity_context, pays_bars, same_as_baseline, sentence,
                                    speedup_bars, table_context, why_context)
from tebench.report.figures import MAX_FP8_CHARTS, Chart, ChartJob, chart_jobs, draw_charts, fp8_selection, place_charts
from tebench.report.load import Source, load_all
from tebench.report.markup import aligned, code_safe, html_finalize, html_table, md_escape, md_table, templates_dir
from tebench.report.page import MD_LIMIT, fit_markdown, render
from tebench.report.pool import Drawing, draw_all, png_bytes
from tebench.report.run_info import ENV_CELL_CHARS, clip_words, cost_header, environment, reproduce

__all__ = [
    "aligned", "answer", "answer_context", "AO_FP8", "build_context", "BUSY_COLUMNS", "Chart", "chart_jobs",
    "ChartJob", "charts", "clip_words", "code_safe", "COST_COLUMNS", "cost_header", "CROSSOVER_BOTH_COLUMNS",
    "CROSSOVER_COLUMNS", "DIST_COLUMNS", "draw_all", "draw_charts", "Drawing", "ENV_CELL_CHARS", "environment",
    "fit_markdown", "FP8", "fp8_selection", "HEADLINE_COLUMNS", "html_finalize", "html_table", "load_all",
    "MAX_FP8_CHARTS", "md_escape", "MD_LIMIT", "md_table", "parity_context", "pays_bars", "place_charts",
    "png_bytes", "render", "reproduce", "same_as_baseline", "sentence", "Source", "speedup_bars",
    "table_context", "tables", "templates_dir", "why", "why_context",
]
