"""The option that decides whether stored loss-parity verdicts are read as stored or judged again."""

from __future__ import annotations

import argparse


def add_rejudge_arg(p: argparse.ArgumentParser) -> None:
    """``--rejudge``, on every command that reads judged runs (report, compare, merge, history add)."""
    p.add_argument("--rejudge", action="store_true",
                   help="judge every loss-parity verdict again from the stored curves; without it a verdict "
                   "stored with this tebench's parity rules is taken as it is, and only older ones are judged")
