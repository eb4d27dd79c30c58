"""Text from a matrix or a results file, made safe to print on a terminal.

A matrix's exclusion reason, a record's failure reason or a run id is data
someone else wrote. Printed raw, an escape sequence in it can recolour,
retitle or clear the operator's terminal, and a line separator can forge
lines of tebench's own output. Here every such character is shown as a
visible escape instead (``\\x1b``, ``\\u2028``). Markdown and HTML have their
own escaping (``tebench.report.md_escape``, Jinja2's autoescape), which uses
:func:`visible` for the same characters.
"""

from __future__ import annotations

import unicodedata


def _show(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: object) -> str:
    """``text`` with every control, format or separator character (newlines too) as a visible escape.

    Those are the categories C* (control, format, surrogate, private use, unassigned) and Zl, Zp
    (line and paragraph separators): what a terminal or a renderer acts on or hides instead of
    showing. Spaces of every width (Zs) are kept, as names may hold them.
    """
    s = str(text)
    if s.isprintable():  # the common case, decided in C: nothing to escape
        return s
    return "".join(ch if ch.isprintable() or unicodedata.category(ch) == "Zs" else _show(ch) for ch in s)


def for_terminal(text: object, keep_newlines: bool = False) -> str:
    """``text`` safe to write to a terminal: :func:`visible`, but newlines kept when ``keep_newlines``
    (for tebench's own multi-line messages, whose foreign parts are escaped already)."""
    if not keep_newlines:
        return visible(text)
    return "\n".join(visible(line) for line in str(text).split("\n"))


def terminal_lines(text: str, indent: str = "      ") -> tuple[str, list[str]]:
    """The first line of ``text`` safe for a terminal, and each further line so and indented under it: a
    message that quotes a worker's log tail shows it as lines, where escaped it was one line of ``\x0a``."""
    first, *more = text.split("\n")
    return for_terminal(first), [indent + for_terminal(line) for line in more]


def short_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, safe for any value.

    An integer past Python's digit limit (4,300 digits) has no decimal repr (``repr`` raises
    ValueError); a hexadecimal literal in a TOML file or an integer computed from one can be one.
    It is shown by its size instead, so the message about it can still be printed.
    """
    try:
        text = repr(value)
    except ValueError:
        if isinstance(value, int):
            return f"<an integer of {value.bit_length()} bits>"
        return f"<a {type(value).__name__} that cannot be shown>"
    return text if len(text) <= limit else text[:limit - 3] + "..."
