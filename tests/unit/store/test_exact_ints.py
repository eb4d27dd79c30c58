"""Integers past 2**53: kept exact where the field is an integer, refused (naming the field) where the field
is a number and the integer does not convert to a float exactly; never rounded (merge wrote
9007199254740993 back as 9007199254740992.0)."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from tebench import cli
from tebench.schema.records import Throughput
from tebench.schema.version import RecordError

CPU = FIXTURES / "cpu-smoke.jsonl"
ODD = 2**53 + 1  # 9007199254740993: no float holds it


def _changed_shard(tmp_path, change) -> str:
    lines = CPU.read_text().splitlines()
    record = json.loads(lines[1])
    change(record)
    lines[1] = json.dumps(record)
    path = tmp_path / "shard.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _merged(tmp_path, capsys, shard) -> tuple[str, str]:
    assert cli.main(["merge", shard, "--out", str(tmp_path / "m"), "--no-report"]) == 0
    err = capsys.readouterr().err
    return (tmp_path / "m" / "results.jsonl").read_text(), err


def test_an_integer_field_past_2_53_is_written_back_exactly(tmp_path, capsys):
    def change(r):
        r["memory"]["param_count"] = ODD  # a declared integer field
        r["timing"]["steps"] = ODD  # an undeclared key of a part: kept as stored
    text, err = _merged(tmp_path, capsys, _changed_shard(tmp_path, change))
    assert f'"param_count": {ODD}' in text and f'"steps": {ODD}' in text, err
    assert "9007199254740992" not in text


def test_a_number_field_refuses_an_integer_no_float_holds(tmp_path, capsys):
    def change(r):
        r["throughput"]["tokens_per_step"] = ODD
    text, err = _merged(tmp_path, capsys, _changed_shard(tmp_path, change))
    assert "[throughput.tokens_per_step] = 9007199254740993" in err and "cannot hold exactly" in err, err
    assert "9007199254740992" not in text


@pytest.mark.parametrize("value", [ODD, 2**1100 + 1])
def test_number_model_refuses_inexact_integers(value):
    with pytest.raises(RecordError) as err:
        Throughput.from_dict({"tokens_per_step": value})
    assert "tokens_per_step" in str(err.value) and "cannot hold exactly" in str(err.value)


@pytest.mark.parametrize("value,expected", [(2**53, 2**53), (512, 512), (2**60, float(2**60)), (1.5, 1.5)])
def test_number_model_keeps_what_it_can_hold(value, expected):
    got = Throughput.from_dict({"tokens_per_step": value}).tokens_per_step
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("value", [-1, -1.0, -(2**60)])
def test_number_limits_still_apply_to_floats_and_ints(value):
    with pytest.raises(RecordError, match="at least 0"):
        Throughput.from_dict({"tokens_per_step": value})
