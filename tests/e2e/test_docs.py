"""The docs: the site (mkdocs.yml, docs/) builds in strict mode, so every link and anchor of the
docs' own pages resolves, whatever plain Markdown the included ARCHITECTURE.md holds; the README
stays a short user's guide whose relative links resolve and which gives CI's test command."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

README = ROOT / "README.md"
README_MAX_LINES = 260
"""A user's guide that reads in ten minutes; the rest belongs in docs/."""

needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not importable: install the test extra (pip install -e '.[test]'), "
           "which brings mkdocs-material")

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(\S+)", re.M)
FENCED = re.compile(r"^\s*(`{3,}|~{3,}).*?^\s*\1\s*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)


def _build(root: Path, site: Path) -> subprocess.CompletedProcess:
    # NO_MKDOCS_2_WARNING: mkdocs-material's banner about MkDocs 2.0, which is no warning about these docs.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(site)],
        cwd=root, env=env, capture_output=True, text=True, timeout=600)


def _copy_site_sources(dest: Path) -> Path:
    """What the build reads, in a scratch tree whose files a test may change."""
    dest.mkdir()
    for name in ("mkdocs.yml", "ARCHITECTURE.md"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "docs", dest / "docs")
    (dest / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "docs_hooks.py", dest / "scripts" / "docs_hooks.py")
    return dest


@needs_mkdocs
def test_docs_build_strict(tmp_path):
    site = tmp_path / "site"
    proc = _build(ROOT, site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (site / "design" / "architecture" / "index.html").read_text()
    title = next(line for line in (ROOT / "ARCHITECTURE.md").read_text().splitlines() if line.startswith("# "))
    assert title[2:].strip() in page, "the architecture page does not show ARCHITECTURE.md"
    assert '--8&lt;--' not in page and '--8<--' not in page


@needs_mkdocs
def test_links_inside_architecture_md_cannot_fail_the_build(tmp_path):
    """ARCHITECTURE.md is written for its place at the root and changed by others: whatever it links
    to (a root file, a docs page, something missing, a bad anchor) the strict build passes."""
    root = _copy_site_sources(tmp_path / "src")
    (root / "README.md").write_text("# scratch\n")
    with open(root / "ARCHITECTURE.md", "a") as fh:
        fh.write(
            "\n## Links of every kind\n\n"
            "The [README](README.md), [the running guide](docs/guide/running.md), "
            "[a section of it](docs/guide/running.md#no-such-section), [a page that is not](docs/nowhere.md), "
            "[the package](tebench/), [no such file](no/such/file.py), ![a chart](reports/x/chart.png), "
            "[a missing heading](#no-such-heading), [this heading](#links-of-every-kind), "
            "[a reference][ref], <https://example.org/> and `[code](not/a/link.md)`.\n\n"
            "```markdown\n[inside a fence](nowhere/at/all.md)\n```\n\n"
            "[ref]: CHANGELOG.md\n")
    site = tmp_path / "site"
    proc = _build(root, site)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (site / "design" / "architecture" / "index.html").read_text()
    assert re.search(r'href="\.\./\.\./guide/running/"', page), "a docs link was not rebased onto the page"
    assert "<code>README.md</code>" in page and "<code>no/such/file.py</code>" in page


@needs_mkdocs
def test_a_broken_link_in_a_docs_page_fails_the_build(tmp_path):
    """The docs' own pages stay strict: the hook only rebases what is included."""
    root = _copy_site_sources(tmp_path / "src")
    with open(root / "docs" / "index.md", "a") as fh:
        fh.write("\nSee [a page that is not](guide/nowhere.md).\n")
    proc = _build(root, tmp_path / "site")
    assert proc.returncode != 0
    assert "guide/nowhere.md" in proc.stdout + proc.stderr


def test_readme_is_short():
    lines = README.read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


def _relative_links(text: str) -> list[str]:
    prose = CODE_SPAN.sub("", FENCED.sub("", text))
    targets = LINK.findall(prose) + REF_DEF.findall(prose)
    return [t for t in targets if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//|^#", t)]


def test_readme_relative_links_exist():
    links = _relative_links(README.read_text())
    assert links, "no relative link found: the README should point into docs/"
    missing = [t for t in links if not (ROOT / t.partition("#")[0]).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_readme_gives_the_ci_test_command():
    """.ci/run runs the README's test command exactly; the README must still give it."""
    ci = (ROOT / ".ci" / "run").read_text()
    command = "bash scripts/bootstrap.sh --test && .venv/bin/python -m pytest -q"
    assert command in ci.splitlines()
    assert command in README.read_text()
