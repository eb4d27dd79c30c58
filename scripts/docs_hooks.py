"""mkdocs hook (mkdocs.yml, ``hooks:``): a page line ``--8<-- "PATH"`` is replaced by the file
PATH of the repository (relative to mkdocs.yml), so the site shows ARCHITECTURE.md, which stays at
the repository's root where readers of the code look for it.

pymdownx.snippets could include the file too, but mkdocs would then read the included links
relative to the including page (docs/design/): a link that is right at the root (``README.md``,
``docs/guide/running.md``) would be reported missing and fail the strict build, and on the site it
would point nowhere. Here each relative link of the included text is rebased instead:

- to a page of the docs: a link relative to the including page, which mkdocs checks like any other;
- to any other file of the repository: a link into the repository when ``repo_url`` is set in
  mkdocs.yml, otherwise its text and its path;
- to nothing that exists: its text (and path), since the included file is not the docs' to keep
  right. Anchors in rebased links are dropped, and a ``#anchor`` link to a heading of the included
  text is kept only when that heading's id is certain.

So whatever plain Markdown the included file holds, the strict build passes, while the docs' own
pages, which this hook leaves alone, stay strict (``validation:`` in mkdocs.yml)."""

from __future__ import annotations

import os
import re

from markdown.extensions.toc import slugify

INCLUDE = re.compile(r'^--8<--\s+"([^"]+)"\s*$', re.M)
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r'(!?)\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REF_DEF = re.compile(r"^( {0,3}\[[^\]]+\]:\s*)(\S+)(.*)$")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def on_page_markdown(markdown, page, config, files):
    """Expand every include line of the page (pages without one pass through untouched)."""
    if not INCLUDE.search(markdown):
        return markdown
    root = os.path.dirname(os.path.abspath(config.config_file_path))
    page_dir = os.path.dirname(os.path.join(config.docs_dir, page.file.src_path))

    def expand(match: re.Match) -> str:
        path = os.path.join(root, match.group(1))
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        return _rebase(text, os.path.dirname(path), page_dir, root, config)

    return INCLUDE.sub(expand, markdown)


def _rebase(text: str, src_dir: str, page_dir: str, root: str, config) -> str:
    anchors = _certain_anchors(text)
    out, in_fence = [], None
    for line in text.splitlines(keepends=True):
        fence = FENCE.match(line)
        if fence:
            marker = fence.group(1)[0]
            in_fence = None if in_fence == marker else (in_fence or marker)
            out.append(line)
            continue
        if in_fence:
            out.append(line)
            continue
        ref = REF_DEF.match(line)
        if ref:
            target = _target(ref.group(2), src_dir, page_dir, root, config, anchors)
            # A reference that cannot be a link is dropped: "[text][id]" then reads as text.
            out.append(f"{ref.group(1)}{target}{ref.group(3)}\n" if target else "\n")
            continue
        out.append(_outside_code(line, lambda s: LINK.sub(
            lambda m: _link(m, src_dir, page_dir, root, config, anchors), s)))
    return "".join(out)


def _outside_code(line: str, fn) -> str:
    """Apply fn to the parts of a line outside inline code spans."""
    parts, pos = [], 0
    for m in CODE_SPAN.finditer(line):
        parts.append(fn(line[pos:m.start()]))
        parts.append(m.group(0))
        pos = m.end()
    parts.append(fn(line[pos:]))
    return "".join(parts)


def _link(m: re.Match, src_dir, page_dir, root, config, anchors) -> str:
    bang, label, raw = m.groups()
    target = _target(raw, src_dir, page_dir, root, config, anchors)
    if target:
        return f"{bang}[{label}]({target})"
    path = _repo_path(raw, src_dir, root)
    if not path or path == label.strip("`") or bang:
        return label if label else f"`{path}`"
    return f"{label} (`{path}`)"


def _target(raw: str, src_dir, page_dir, root, config, anchors) -> str | None:
    """The link to use on the page, or None when there can be none."""
    if SCHEME.match(raw) or raw.startswith("//"):
        return raw                                   # an absolute URL: left as it is
    path, _, frag = raw.partition("#")
    if not path:
        return raw if frag in anchors else None     # a heading of the included text
    full = os.path.normpath(os.path.join(src_dir, path))
    docs = os.path.abspath(config.docs_dir)
    if full.startswith(docs + os.sep):
        page = os.path.join(full, "index.md") if os.path.isdir(full) else full
        if page.endswith(".md") and os.path.isfile(page):
            return os.path.relpath(page, page_dir).replace(os.sep, "/")
    rel = os.path.relpath(full, root)
    if config.repo_url and not rel.startswith("..") and os.path.exists(full):
        kind = "tree" if os.path.isdir(full) else "blob"
        return f"{config.repo_url.rstrip('/')}/{kind}/HEAD/{rel.replace(os.sep, '/')}"
    return None


def _repo_path(raw: str, src_dir, root) -> str:
    path = raw.partition("#")[0]
    if not path or SCHEME.match(raw):
        return path
    rel = os.path.relpath(os.path.normpath(os.path.join(src_dir, path)), root)
    return rel.replace(os.sep, "/") + ("/" if path.endswith("/") else "")


def _certain_anchors(text: str) -> set[str]:
    """Ids of headings whose text is plain (letters, digits, spaces, - and _) and unique: for
    those, the id Python-Markdown's toc gives is the slug below; for any other, it is not sure."""
    seen: dict[str, int] = {}
    prose = re.sub(r"^\s*(`{3,}|~{3,}).*?^\s*\1\s*$", "", text, flags=re.M | re.S)  # not code comments
    for title in HEADING.findall(prose):
        if re.fullmatch(r"[A-Za-z0-9 _-]+", title):
            slug = slugify(title, "-")
            seen[slug] = seen.get(slug, 0) + 1
    return {slug for slug, n in seen.items() if n == 1}
