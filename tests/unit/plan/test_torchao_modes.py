"""AO-FP8: torchao's float8 training as a mode. The registry entries, the matrix's recipe axis and the gate."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conftest import unsaid
from tebench.plan import modes, torchao_support
from tebench.schema.environment import Environment, Support
from tebench.plan.gates import gate_case
from tebench.plan.matrix import MatrixError, expand, load
from tebench.schema.records import Case
from tebench.plan.modes import MODES
from tebench.plan.recipes import DEFAULT_RECIPE, RECIPES, fp8_options

from tests.unit.plan.test_gates import GPT, gpu_env

MATRIX = """
name = "ao"
[settings]
steps = 3
[axes]
workloads = ["gpt"]
modes = {modes}
{fp8}
[sizes.gpt.t]
vocab = 96
d_model = 64
heads = 2
layers = 1
ffn = 128
seq = 16
batch = 4
"""


def loads(text: str):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.toml"
        path.write_text(text)
        return load(path)


def ids(modes_list: str, fp8: str = "") -> list[str]:
    return [c.id for c in expand(loads(MATRIX.format(modes=modes_list, fp8=fp8))).cases]


def ao_env(torchao: str | None = "0.18.0", torch: str = "2.11.0+cu130", cc=(9, 0), **kw) -> Environment:
    env = gpu_env(cc=cc, **kw)
    env.torch, env.torchao = torch, torchao
    env.torchao_error = None if torchao else "not installed"
    env.torchao_recipes = ["tensorwise", "rowwise", "rowwise_with_gw_hp"] if torchao else []
    return env


def _recipes_of(library: str) -> tuple[str, ...]:
    """The names of ``library``'s recipes, in registry order."""
    return tuple(name for name, spec in RECIPES.items() if spec.library == library)


def ao_case(recipe: str = "tensorwise", **kw) -> Case:
    return Case(workload="gpt", size="t", mode="AO-FP8", dims=dict(GPT), fp8=fp8_options(recipe, None, None, None),
                **kw)


def test_the_registry_entry():
    ao = MODES["AO-FP8"]
    assert (ao.family, ao.amp, ao.fp8, ao.compile) == ("pt", True, "torchao", True)
    assert _recipes_of("torchao") == ("tensorwise", "rowwise", "rowwise_with_gw_hp")
    assert "delayed" in _recipes_of("te") and "tensorwise" not in _recipes_of("te")
    assert DEFAULT_RECIPE == {"te": "delayed", "torchao": "tensorwise"}
    # torchao's recipes have no TE options: one case per recipe, labelled by its name alone.
    assert fp8_options("rowwise", "E4M3", 16, "max", 8).label() == "rowwise"


def test_each_fp8_mode_takes_its_own_librarys_recipes():
    assert ids('["TE-FP8", "AO-FP8"]', '[fp8]\nrecipes = ["delayed", "tensorwise", "rowwise"]') == [
        "gpt/t/TE-FP8/delayed.HYBRID.h1024.max", "gpt/t/AO-FP8/tensorwise", "gpt/t/AO-FP8/rowwise"]
    # A library with no recipe listed gets its default, so `modes = "all"` with TE recipes still has AO-FP8.
    assert ids('["TE-FP8", "AO-FP8"]', '[fp8]\nrecipes = ["current"]') == [
        "gpt/t/TE-FP8/current.HYBRID", "gpt/t/AO-FP8/tensorwise"]
    assert ids('["TE-FP8", "AO-FP8"]', '[fp8]\nrecipes = ["rowwise_with_gw_hp"]') == [
        "gpt/t/TE-FP8/delayed.HYBRID.h1024.max", "gpt/t/AO-FP8/rowwise_with_gw_hp"]
    assert "gpt/t/AO-FP8/tensorwise" in ids('"all"')


def test_fp8_weights_and_unknown_recipes():
    # FP8 weights are TE's: AO-FP8 gets its case without them, not a second one.
    assert ids('["AO-FP8"]') == ["gpt/t/AO-FP8/tensorwise"]
    text = MATRIX.format(modes='["AO-FP8"]', fp8='[fp8]\nrecipes = ["tensorwise"]').replace(
        'modes = ["AO-FP8"]', 'modes = ["AO-FP8", "TE-FP8"]\nfp8_weights = [false, true]')
    assert [c.id for c in expand(loads(text)).cases] == [
        "gpt/t/AO-FP8/tensorwise", "gpt/t/TE-FP8/delayed.HYBRID.h1024.max",
        "gpt/t/TE-FP8/delayed.HYBRID.h1024.max/fp8-weights"]
    with pytest.raises(MatrixError, match="colwise"):
        ids('["AO-FP8"]', '[fp8]\nrecipes = ["colwise"]')


def test_exclusion_by_a_torchao_recipe():
    text = MATRIX.format(modes='["AO-FP8"]', fp8='[fp8]\nrecipes = ["tensorwise", "rowwise"]') + (
        '[[exclude]]\nrecipe = "rowwise"\nreason = "slow"\n')
    assert [c.id for c in expand(loads(text)).cases] == ["gpt/t/AO-FP8/tensorwise"]


def test_gate_runs_on_a_supported_pair_on_hopper():
    assert gate_case(ao_case(), ao_env()) is None
    assert gate_case(ao_case("rowwise"), ao_env(torchao="0.17.0")) is None


@pytest.mark.parametrize("env, words", [
    (ao_env(torchao=None), "needs torchao (not installed; pip install 'tebench[ao]')"),
    (ao_env(torchao="0.13.0", torch="2.9.0"), "outside the releases tebench supports (>=0.17,<0.19"),
    (ao_env(torchao="0.18.0", torch="2.10.1"), "needs torch >= 2.11, and torch 2.10.1 is installed"),
    (ao_env(torchao="0.19.0"), "outside the releases tebench supports"),
    (ao_env(cc=(8, 0)), "needs compute capability >= 8.9; NVIDIA H200 has 8.0"),
])
def test_gate_refuses_with_the_reason(env, words):
    assert words in gate_case(ao_case(), env)


def test_gate_on_a_cpu_and_without_a_compiler():
    cpu = Environment(device_type="cpu", compile=Support.yes(), torch="2.13.0+cpu", torchao="0.18.0")
    assert unsaid(gate_case(ao_case(), cpu) or "", "needs a CUDA GPU", "torchao", "CUDA-only") == []
    # Without torchao too, the CPU decides: installing torchao would not make it run there.
    bare = Environment(device_type="cpu", compile=Support.yes(), torch="2.13.0+cpu", torchao=None)
    assert gate_case(ao_case(), bare).startswith("AO-FP8 needs a CUDA GPU") and "pip install" not in gate_case(
        ao_case(), bare)
    broken = ao_env()
    broken.compile = Support.no("torch.compile on CUDA needs Triton, which does not import: x")
    assert "Triton" in gate_case(ao_case(), broken)
    # Installed but failing to import: the import error is the reason.
    bad = ao_env(torchao=None)
    bad.torchao_error = "ImportError: libcudart.so.12: cannot open shared object file"
    assert "libcudart" in gate_case(ao_case(), bad)


def test_gate_checks_the_recipe_is_in_the_installed_torchao():
    env = ao_env()
    env.torchao_recipes = ["tensorwise", "rowwise"]
    assert "no float8 recipe 'rowwise_with_gw_hp'" in gate_case(ao_case("rowwise_with_gw_hp"), env)


def test_the_pair_table_and_its_words_for_env():
    assert torchao_support.pair_problem("0.18.0", "2.13.0+cpu") is None
    problem = torchao_support.pair_problem("garbage", "2.11")
    assert problem is not None and unsaid(problem, "torchao", "version", "'garbage'") == [], problem
    assert torchao_support.describe("0.18.0", None, "2.11.0").endswith("supported (>=0.17,<0.19)")
    assert "not supported" in torchao_support.describe("0.13.0", None, "2.9.0")
    said = torchao_support.describe(None, "not installed", "2.11.0")
    assert unsaid(said, "not importable", "not installed") == [], said


def test_pyproject_extra_matches_the_gates_range():
    import tomllib

    extra = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["ao"]
    assert extra == [f"torchao{torchao_support.SUPPORTED_RANGE}"]


def test_every_fp8_mode_has_a_library_and_a_default_recipe():
    for name in modes.FP8_MODES:
        lib = MODES[name].fp8
        assert lib in modes.FP8_LIBRARY_NAMES and DEFAULT_RECIPE[lib] in _recipes_of(lib)
    assert all(spec.library in modes.FP8_LIBRARY_NAMES for spec in RECIPES.values())
    assert dataclasses.replace(MODES["PT-AMP"]).fp8 is None
