"""Bad command-line input: exit 2 with a message naming the option and value, before any probe."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import FIXTURES
from tebench import cli
from tebench.cli.output import strict_json
from tebench.plan import environment as detect


@pytest.fixture(autouse=True)
def no_probe(monkeypatch):
    """Every case here must be rejected before the hardware is probed."""
    def refuse(*args, **kwargs):
        raise AssertionError("the hardware was probed before the input was checked")

    monkeypatch.setattr(detect, "_run_probe", refuse)


@pytest.mark.parametrize("args,fragment", [
    (["--rounds", "0"], "--rounds must be at least 1 and at most 1000, not 0"),
    (["--rounds", "100000000"], "--rounds must be at least 1 and at most 1000, not 100000000"),
    (["--timeout", "nan"], "--timeout nan: must be a finite number"),
    (["--timeout", "-1"], "--timeout -1.0: must be at least 1.0"),
    (["--timeout", "1e12"], "must be at most 604800.0"),
    (["--devices", "a,b"], "--devices a,b: expected comma-separated GPU indices"),
    (["--shard", "1/1000000000000"], "at most 10000 shards"),
    (["--shard", "3/2"], "need 1 <= I <= N"),
])
def test_bad_run_options(tmp_path, capsys, args, fragment):
    assert cli.main(["run", "--preset", "smoke", "--out", str(tmp_path / "out"), *args]) == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_db_that_is_a_directory_or_not_sqlite(tmp_path, capsys):
    cpu = str(FIXTURES / "cpu-smoke.jsonl")
    assert cli.main(["history", "add", cpu, "--db", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    junk = tmp_path / "junk.db"
    junk.write_text("hello, not a database")
    assert cli.main(["history", "add", cpu, "--db", str(junk)]) == 2
    assert "not an SQLite database" in capsys.readouterr().err
    assert cli.main(["history", "report", "--db", str(junk), "--out", str(tmp_path / "h")]) == 2
    assert cli.main(["history", "report", "--db", str(tmp_path / "none.db"), "--out", str(tmp_path / "h")]) == 2
    db = tmp_path / "h.db"
    sqlite3.connect(db).close()
    assert cli.main(["history", "report", "--db", str(db), "--out", str(tmp_path / "h"), "--window", "0"]) == 2
    assert "--window 0" in capsys.readouterr().err


def test_compare_json_is_strict_even_when_values_are_not_finite(tmp_path):
    import json

    out = tmp_path / "c.json"
    cpu = str(FIXTURES / "cpu-smoke.jsonl")
    assert cli.main(["compare", cpu, cpu, "--format", "json", "--out", str(out)]) == 0
    json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"bare {c} in compare JSON"))
    assert strict_json('{"ratio": NaN, "ci": [Infinity, 1.0]}') == '{\n  "ratio": null,\n  "ci": [\n    null,\n    1.0\n  ]\n}'


@pytest.mark.parametrize("args,fragment", [
    # "alpha 1.0: must be between 0 and 1" named neither the option nor what was typed.
    (["--alpha", "0.9999999999999999999"], "argument --alpha: '0.9999999999999999999': must be between 0 and 1"),
    (["--alpha", "0"], "argument --alpha: '0': must be between 0 and 1"),
    # Accepted: no run has more rounds, so no case could ever be judged.
    (["--min-rounds", "1000000"], "--min-rounds 1000000: must be at most 1000"),
])
def test_bad_gate_options_name_the_option_and_what_was_typed(capsys, args, fragment):
    cpu = str(FIXTURES / "cpu-smoke.jsonl")
    try:
        code = cli.main(["compare", cpu, cpu, *args])
    except SystemExit as exc:  # argparse's own refusal of an option's value
        code = exc.code
    assert code == 2
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize("confirm", ["0", "99999999999999999999999"])
def test_history_confirm_out_of_range_is_refused(tmp_path, capsys, confirm):
    # 10^23 was accepted: no run of a history could ever confirm a change.
    code = cli.main(["history", "report", "--db", str(tmp_path / "h.db"), "--out", str(tmp_path / "o"),
                     "--confirm", confirm])
    assert code == 2
    assert f"--confirm {confirm}: must be 1 to 1000" in capsys.readouterr().err
