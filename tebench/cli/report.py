"""``tebench report``: HTML and Markdown from stored results, no GPU and no re-run."""

from __future__ import annotations

import argparse
import re
from typing import Any

from tebench.cli.paths import check_out_arg, check_results_paths, refuse_inputs, refuse_repeated
from tebench.cli.usage import UsageError, command_line
from tebench.cli.verdict_args import add_rejudge_arg

WRITTEN = ("index.html", "report.md", "cases.csv")
"""The report's files besides its chart PNGs (inputs are never PNGs): none may be one of its inputs."""


_LINK_UNSAFE = str.maketrans({c: f"%{ord(c):02X}" for c in "()<>\"'\\`"})
"""The characters of an --assets-url that would end or break report.md's image links, percent-encoded."""


def cmd_report(args: argparse.Namespace) -> int:
    """Render HTML and Markdown from stored results (tebench results or pytest-benchmark JSON)."""
    import time

    url = args.assets_url
    if url is not None and not re.match(r"^https?://[^\s/]+\S*$", url):
        raise UsageError(f"--assets-url {url!r}: not an absolute http(s) URL (a PR comment cannot show relative "
                         "image paths)")
    if url is not None:
        # Percent-encoded (the same URL to a server): ")" ends a Markdown image link early, and a quote or "<"
        # would let the URL out of it; report.md printed "![Loss curves](https://x/a)b/loss.png)".
        url = url.translate(_LINK_UNSAFE)
    check_results_paths(args.results)
    refuse_repeated(args.results)
    if args.out is None:
        # One run folder: its own report/, where `tebench run` wrote it (so `tebench report runs/main` re-renders
        # the newest run's report in place). Anything else has no such place: --out must say where.
        from pathlib import Path

        if len(args.results) != 1 or not Path(args.results[0]).is_dir():
            raise UsageError("--out is needed (it may be left out only for one run folder, whose report/ it "
                             "then writes)")
        args.out = str(Path(args.results[0]) / "report")
    out = check_out_arg(args.out)
    refuse_inputs([out / name for name in WRITTEN], args.results, "--out", args.out)
    from tebench.report import render  # pandas, matplotlib, jinja2: only for input known to be good
    from tebench.run.outdir import lock_target

    t0 = time.perf_counter()
    with lock_target(out, command_line()):  # into a run directory (OUT or OUT/report): not while a run writes it
        out = render(args.results, out, assets_url=url, rejudge=args.rejudge)
    print(f"report: {out / 'index.html'}\n        {out / 'report.md'}  ({time.perf_counter() - t0:.1f} s)")
    return 0



def add_parser(sub: Any) -> None:
    """The command's arguments, on the ``tebench`` parser's subcommands."""
    p = sub.add_parser("report", help="render HTML + Markdown from stored results (no GPU, no re-run)")
    p.add_argument("results", nargs="+", help="results.jsonl files, run directories or pytest-benchmark JSON; "
                   "several from different machines are compared side by side")
    p.add_argument("--out", help="directory for index.html, report.md and chart PNGs (default for one run "
                                 "folder: its report/)")
    p.add_argument("--assets-url", metavar="URL",
                   help="absolute URL the chart PNGs will be published at (a branch, Pages): report.md then shows "
                        "them from there; without it report.md has no images and reads whole as text")
    add_rejudge_arg(p)
    p.set_defaults(func=cmd_report)
