"""The registries carry what the rest of tebench knows about a mode or a workload.

Report colours, the parity reference and its companion, the report's speedup
baselines, which modes run FP8 and which workloads are single modules are
fields of the registry entries; these tests pin the entries to what the code
used to spell out by name, and check that a new entry is picked up.
"""

from __future__ import annotations

import dataclasses

import pytest

from conftest import unsaid
from tebench.plan import gates, matrix, modes
from tebench import workloads
from tebench.plan.modes import MODES, Mode
from tebench.report import charts, tables
from tebench.workloads import SPECS


def test_roles_of_the_shipped_modes():
    assert modes.REFERENCE_MODES == ("PT-FP32", "PT-AMP")
    assert MODES["PT-FP32"].companion == "PT-AMP"
    assert modes.FP8_MODES == ("TE-FP8", "AO-FP8")
    assert modes.fp8_library("AO-FP8") == "torchao" and modes.fp8_library("TE-FP8") == "te"
    assert (modes.baseline("amp"), modes.baseline("compile")) == ("PT-AMP", "PT-AMP+compile")
    assert (tables.BASELINE, tables.COMPILED) == ("PT-AMP", "PT-AMP+compile")


def test_registry_is_consistent():
    ranks = [m.reference_rank for m in MODES.values() if m.reference_rank is not None]
    assert len(ranks) == len(set(ranks)), "two reference modes with one rank"
    for mode in MODES.values():
        assert mode.companion is None or mode.companion in MODES
        assert mode.baseline in (None, "amp", "compile")
        assert mode.family in ("pt", "te")
    colours = [m.color for m in MODES.values()]
    assert len(set(colours)) == len(colours), "two modes share a chart colour"
    assert charts.FALLBACK not in colours, "a mode's colour must differ from the unknown-mode colour"


def test_chart_colours_and_panels_come_from_the_registry(monkeypatch):
    assert charts.color("TE-FP8") == MODES["TE-FP8"].color == "#d62728"
    assert charts.color("no-such-mode") == charts.FALLBACK
    assert charts.family({"mode": "PT-AMP+compile"}) == "PyTorch"
    assert charts.family({"mode": "TE-BF16"}) == "TE-BF16"
    assert charts.family({"mode": "TE-FP8", "fp8": {"recipe": "block"}}) == "TE-FP8 block"
    assert charts.family({"mode": "from-a-newer-tebench"}) == "from-a-newer-tebench"
    # A new mode is one registry entry: its colour, its panel and its FP8-ness follow.
    new = Mode("TE-FP8+compile", "te", amp=True, fp8="te", compile=True, description="test", color="#123456")
    monkeypatch.setitem(MODES, new.name, new)
    assert charts.color(new.name) == "#123456"
    assert modes.is_fp8(new.name)
    assert charts.family({"mode": new.name, "fp8": {"recipe": "current"}}) == "TE-FP8+compile current"


def test_baseline_needs_exactly_one_mode(monkeypatch):
    twin = dataclasses.replace(MODES["PT-AMP"], name="PT-AMP-twin")
    monkeypatch.setitem(MODES, twin.name, twin)
    with pytest.raises(LookupError, match="exactly one 'amp' baseline"):
        modes.baseline("amp")


def test_workload_kinds():
    built_in = {"gpt": "model", "llama": "model", "distill": "model", "module": "module"}
    assert {name: workloads.kind(name) for name in built_in} == built_in
    # A name that is not built in is never imported just to learn its kind.
    assert workloads.kind("no_such_package_xyz.mod:W") == "model"
    assert "no_such_package_xyz.mod:W" not in dict(SPECS)


def test_data_parallel_gate_follows_the_workload_kind(monkeypatch):
    from conftest import CPU_ENV
    from tebench.schema.records import Case

    dims = tuple(dataclasses.asdict(SPECS["module"].size_type()).items())
    case = Case(workload="module", size="s", mode="PT-AMP", dims=dict(dims), parallel="ddp", nproc=2)
    reason = gates.gate_case(case, CPU_ENV.model_copy())
    assert unsaid(reason or "", "data parallelism", "gpt, llama, distill", "not to single modules") == []


def test_cli_help_lists_every_shipped_preset():
    from tebench import cli
    from tebench.plan import matrix

    run = next(a for a in cli.build_parser()._subparsers._group_actions[0].choices["run"]._actions
               if "--preset" in a.option_strings)
    names = matrix.preset_names()
    assert names and "smoke" in names
    assert run.help.endswith(", ".join(names))


def test_fp8_options_are_one_type_from_the_plan_to_the_record():
    """The plan's point is the record's part: the same keys in the same order (nulls for what the recipe
    ignores), equal and of one hash whether built or read back, and frozen."""
    from pydantic import ValidationError

    from tebench.plan.recipes import fp8_options
    from tebench.schema.records import Case, FP8Options

    current = fp8_options("current", "HYBRID", 1024, "max", 8)
    assert current.to_dict() == {"recipe": "current", "format": "HYBRID", "amax_history_len": None,
                                 "amax_compute_algo": None, "calibration_steps": None}
    assert current.label() == "current.HYBRID"
    delayed = fp8_options("delayed", "E4M3", 16, "max", 8)
    assert list(delayed.to_dict()) == ["recipe", "format", "amax_history_len", "amax_compute_algo",
                                       "calibration_steps"]
    read = FP8Options.from_dict(delayed.to_dict())
    assert read == delayed and hash(read) == hash(delayed) and len({read, delayed, current}) == 2
    with pytest.raises(ValidationError):
        delayed.recipe = "current"  # type: ignore[misc]
    case = next(c for c in matrix.iter_cases(matrix.load("tutorial", is_preset=True)) if c.fp8 is not None)
    stored = Case.from_dict(case.to_dict())
    assert stored.fp8 == case.fp8 and stored.to_dict() == case.to_dict()
    assert stored == case and hash(stored) == hash(case) and stored.settings == case.settings
