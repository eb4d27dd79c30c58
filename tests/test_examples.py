"""The documented CI/cluster recipes stay valid: YAML parses, shell parses, and
every tebench command in them is accepted by the current CLI."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from tebench.cli import build_parser

EXAMPLES = ROOT / "examples"
YAMLS = sorted(EXAMPLES.rglob("*.yml")) + sorted(EXAMPLES.rglob("*.yaml"))
SHELL = sorted(EXAMPLES.rglob("*.sbatch"))


def _strings(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


def _commands(text: str) -> list[list[str]]:
    text = text.replace("\\\n", " ")
    text = re.sub(r"\$\{\{[^}]*\}\}", "1", text)          # GitHub expressions
    text = re.sub(r"\$\(\([^)]*\)\)", "1", text)          # shell arithmetic
    text = re.sub(r'\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*', "X", text)
    out = []
    for match in re.finditer(r"(?:^|[\s/])tebench ((?:run|list|env|report|compare|ab|merge|history)(?=\s|$)[^\n;&|)]*)", text):
        out.append(shlex.split(match.group(1)))
    return out


def _check(args: list[str]) -> None:
    try:
        build_parser().parse_args(args)
    except SystemExit as exc:  # argparse reports errors by exiting
        raise AssertionError(f"tebench {' '.join(args)}: rejected by the CLI") from exc


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_yaml_recipes_parse_and_use_real_commands(path):
    docs = list(yaml.safe_load_all(path.read_text()))
    assert docs and all(docs)
    commands = [c for doc in docs for s in _strings(doc) for c in _commands(s)]
    assert commands, "a recipe that runs no tebench command"
    for args in commands:
        _check(args)


@pytest.mark.parametrize("path", SHELL, ids=lambda p: p.name)
def test_shell_recipes_parse_and_use_real_commands(path):
    subprocess.run(["bash", "-n", str(path)], check=True)
    commands = _commands(path.read_text())
    assert commands
    for args in commands:
        _check(args)


def test_github_workflows_have_jobs_with_steps():
    for path in (EXAMPLES / "github-actions").glob("*.yml"):
        doc = yaml.safe_load(path.read_text())
        assert doc["jobs"] and True in doc or "on" in doc, path  # PyYAML reads the key 'on' as True
        for job in doc["jobs"].values():
            assert job["steps"] and "runs-on" in job
