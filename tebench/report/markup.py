"""The markup toolkit of the report pages: escaping for Markdown, code blocks and HTML, tables, templates.

Every value shown comes from a results file, so every cell is escaped here;
``tebench compare`` and the history page use the same functions.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
from markupsafe import Markup

from tebench.escape import for_terminal, visible


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


CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula in a text cell (OWASP's list for CSV injection)."""


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every text cell that a spreadsheet would run as a formula prefixed with ``'``: a case id or size
    from a results file (``=HYPERLINK(...)``) opens as text, not as a link or a call. Numbers are left as they are."""
    out = df.copy()
    for column in [c for c, dtype in out.dtypes.items() if not pd.api.types.is_numeric_dtype(dtype)]:
        out[column] = out[column].map(
            lambda v: "'" + v if isinstance(v, str) and v.startswith(CSV_FORMULA_STARTS) else v)
    return out


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


def aligned(rows: list[tuple[str, str, str]]) -> list[str]:
    """Label, number and bar per line, in columns (for a fixed-width code block)."""
    if not rows:
        return []
    width = max(len(str(label)) for label, _, _ in rows)
    return [f"{str(label):<{width}}  {num:>6}  {bar}".rstrip() for label, num, bar in rows]
