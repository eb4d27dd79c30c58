"""The Jinja2 environments tebench's pages render through, one configuration for every page.

HTML is autoescaped, and every value passes :func:`tebench.report.html_finalize`
(control characters shown as escapes); Markdown is not autoescaped, so its
templates escape each value with the ``md`` filter (``code`` inside a fenced
block). Both refuse an undefined name (``StrictUndefined``), so a template that
names a value the context lacks fails instead of printing nothing.
"""

from __future__ import annotations

import jinja2

from tebench.report.markup import code_safe, html_finalize, md_escape, templates_dir


def html_environment() -> jinja2.Environment:
    """The environment of the HTML pages (``*.html.j2`` in the templates folder)."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), autoescape=True,
                              undefined=jinja2.StrictUndefined, finalize=html_finalize)


def markdown_environment() -> jinja2.Environment:
    """The environment of the Markdown pages (``*.md.j2``): the ``md`` and ``code`` filters, and the
    template's last newline kept, so a page ends with one."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), autoescape=False,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["md"] = md_escape
    env.filters["code"] = code_safe
    return env
