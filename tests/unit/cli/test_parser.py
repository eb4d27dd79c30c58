"""What the parser says: a misspelt choice is answered with the close one, and help names what is written."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES
from tebench import cli


@pytest.mark.parametrize("argv,typed,suggested", [
    (["reprot", "x"], "reprot", "report"),
    (["comapre", "a", "b"], "comapre", "compare"),
    (["history", "reprot"], "reprot", "report"),
    (["compare", "a", "b", "--format", "jsn"], "jsn", "json"),
])
def test_a_misspelt_choice_gets_a_suggestion(capsys, argv, typed, suggested):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"invalid choice: {typed!r}" in err, err
    assert f"did you mean {suggested!r}?" in err, err


def test_a_choice_close_to_nothing_gets_no_suggestion(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["zzzz"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'zzzz'" in err and "did you mean" not in err, err


def test_history_report_help_names_the_files_it_writes(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["history", "report", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help
    said = set(re.findall(r"[\w-]+\.(?:html|md|png)", text))
    db, out = tmp_path / "h.db", tmp_path / "history"
    assert cli.main(["history", "add", str(FIXTURES / "cpu-smoke.jsonl"), "--db", str(db)]) == 0
    assert cli.main(["history", "report", "--db", str(db), "--out", str(out)]) == 0
    written = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert said == written == {"history.html", "history.md", "trends.png"}, (said, written)
