"""A comparison of tiny step times (1e-300 against 1e-310 ms, a median of 5e-324): every number it shows
is finite, or the case is not comparable; never inf or nan in its output, never an overflow (exit 70)."""

from __future__ import annotations

import json
import math

import pytest

from conftest import FIXTURES
from conftest import read_jsonl as lines
from conftest import write_jsonl as write
from tebench import cli
from tebench.analysis import stats
from tebench.analysis.compare import Options, _Findings, _judge_level
from tebench.schema.records import Throughput
from tebench.schema.environment import PeakRates

CPU = FIXTURES / "cpu-smoke.jsonl"


def _scaled(tmp_path, name: str, value: float | None = None, scale: float = 1.0) -> str:
    """The CPU fixture with every step time ``value`` (or multiplied by ``scale``)."""
    records = lines(CPU)
    for r in records:
        timing = r.get("timing")
        if r.get("type") == "case" and timing and timing.get("samples_ms"):
            timing["samples_ms"] = [value if value is not None else x * scale for x in timing["samples_ms"]]
            timing.pop("stats", None)  # readers recompute it from the samples
    path = tmp_path / name
    write(path, records)
    return str(path)


def _strict(text: str) -> object:
    def refuse(constant: str) -> object:
        raise AssertionError(f"{constant} in the JSON output")
    return json.loads(text, parse_constant=refuse)


def test_the_ratio_of_two_tiny_medians_is_finite():
    test = stats.compare_rounds([[1e-300] * 10] * 3, [[1e-310] * 10] * 3)
    assert math.isfinite(test.ratio) and test.ratio == pytest.approx(1e-10)
    assert test.lo is not None and test.hi is not None and math.isfinite(test.lo) and math.isfinite(test.hi)


@pytest.mark.parametrize("base,head", [(5e-324, 6.0), (6.0, 5e-324), (5e-324, 1e12)])
def test_a_ratio_beyond_a_float_is_not_comparable(base, head):
    test = stats.compare_rounds([[base] * 10] * 3, [[head] * 10] * 3)
    assert test.p is None and test.lo is None and test.hi is None
    assert test.note is not None and "not comparable" in test.note


def test_an_interval_beyond_a_float_is_not_comparable():
    # Levels spread from 5e-324 to 1e12 within each side: the ratio is 1, its interval's ends overflow.
    rounds = [[5e-324] * 10, [1e12] * 10, [5e-324] * 10, [1e12] * 10]
    test = stats.compare_rounds(rounds, rounds)
    assert test.ratio == 1.0 and test.p is None and test.note is not None and "not comparable" in test.note


def test_rates_at_a_subnormal_step_time_are_none_not_inf():
    rates = Throughput.of(1e-310, 512, 3e8, PeakRates(match="H200", bf16=989.0, fp32=66.9, source="test"))  # 1e-313 s: 512 tokens in it overflow
    assert rates.tokens_per_s is None and rates.tflops is None and rates.mfu is None
    assert Throughput.of(6.0, 512, 3e8, None).tokens_per_s == pytest.approx(512 / 0.006)


def test_a_level_ratio_beyond_a_float_is_not_comparable():
    found = _Findings()
    assert _judge_level("memory", "peak memory", [5e-324], [3e8], Options(), found) is None
    assert not found.regressed and any("not comparable" in u for u in found.uncertain)


@pytest.mark.parametrize("base,head", [((None, 1e-300), (None, 1e-310)), ((None, 1e-310), (None, 1e-300)),
                                       ((5e-324, 1.0), (None, 1.0)), ((None, 1.0), (5e-324, 1.0))],
                         ids=["1e-300/1e-310", "1e-310/1e-300", "5e-324 base", "5e-324 head"])
@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_compare_of_tiny_medians_shows_no_inf_or_nan(tmp_path, capsys, base, head, fmt):
    b = _scaled(tmp_path, "b.jsonl", base[0], base[1])
    h = _scaled(tmp_path, "h.jsonl", head[0], head[1])
    code = cli.main(["compare", b, h, "--format", fmt])
    out, err = capsys.readouterr()
    assert code in (0, 1), err  # a verdict, not bad input (2) nor an overflow (70)
    if fmt == "json":
        _strict(out)
    else:
        words = out.replace("|", " ").split()
        assert not {"inf", "+inf%", "nan", "nan%", "+nan%"} & {w.lower() for w in words}, out
    assert "internal error" not in err


def test_a_huge_finite_change_is_shown_as_its_bound_not_27_digits():
    from tebench.report.compare_markdown import _pct

    assert _pct(7e23) == ">+1000000%"
    assert _pct(1.05) == "+5.0%" and _pct(0.5) == "-50.0%" and _pct(float("inf")) == "–"
