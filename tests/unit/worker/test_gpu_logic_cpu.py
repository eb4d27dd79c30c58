"""The GPU-only logic, run on the CPU against fakes.

These paths normally run only on a CUDA machine with Transformer Engine: the
GPU-busy interval union, the FP8 scaling-state flags, the TE API fallbacks,
recipe construction, the MFU peak table and the runner's multi-device
scheduling. Each is fed a fake with the same shape as the real thing (a
profiler's events, a TE module's ``fp8_meta``, a ``transformer_engine``
package in ``sys.modules``, an executor), so a CPU-only CI still checks the
arithmetic and the branching; ``tests/gpu/test_gpu.py`` checks them against the
real thing on a GPU.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import types
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.autograd import DeviceType

from conftest import unsaid
from tebench.plan import peak_tflops as hardware
from tebench.worker import profile, te_compat
from tebench.worker.te_recipe import build_recipe
from tebench.run import runner
from tebench.plan import schedule
from tebench.worker.fp8state import COLLAPSED_SCALE, ScalingRecorder, stateful_modules
from tebench.schema.records import Case
from tebench.plan.recipes import RECIPES, fp8_options

GPT = (("vocab", 96), ("d_model", 768), ("heads", 12), ("layers", 4), ("ffn", 3072), ("seq", 256), ("batch", 16))


# --- measure.gpu_busy: the union of kernel intervals ------------------------------------------

@pytest.mark.parametrize("spans, expected", [
    ([], 0.0),
    ([(0, 10)], 10.0),
    ([(0, 10), (20, 25)], 15.0),            # a gap is idle time
    ([(0, 10), (5, 15)], 15.0),             # overlapping streams count once
    ([(0, 10), (2, 4), (3, 9)], 10.0),      # nested inside a longer kernel
    ([(0, 10), (10, 12)], 12.0),            # touching
    ([(20, 25), (0, 10), (5, 15)], 20.0),   # order of events does not matter
    ([(5, 5), (1, 3)], 2.0),                # an empty interval adds nothing
])
def test_union_length(spans, expected):
    assert profile.union_length(spans) == pytest.approx(expected)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), max_size=12))
def test_union_length_matches_counting_covered_unit_slots(raw):
    spans = [(start, start + width) for start, width in raw]
    covered = {t for start, stop in spans for t in range(start, stop)}
    assert profile.union_length(spans) == len(covered)


class _Event:
    def __init__(self, start: float, end: float, device_type=DeviceType.CUDA, name: str = "kernel"):
        self.name = name
        self.time_range = SimpleNamespace(start=start, end=end)
        self.device_type = device_type


class _FakeProfile:
    """Stands in for torch.profiler.profile: records nothing, returns canned events."""

    canned: list[_Event] = []

    def __init__(self, activities=None):
        self.activities = activities

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def events(self):
        return list(self.canned)


def test_gpu_busy_merges_overlapping_kernels_and_ignores_cpu_events(monkeypatch):
    # Two profiled steps. Per step the GPU is busy 0-6 ms and 10-12 ms (two streams overlap
    # at 4-6); CPU-side events cover everything and must not count. Times are in us.
    events = [_Event(0, 4000), _Event(2000, 6000), _Event(10000, 12000),
              _Event(20000, 24000), _Event(22000, 26000), _Event(30000, 32000),
              _Event(0, 40000, DeviceType.CPU)]
    monkeypatch.setattr(_FakeProfile, "canned", events)
    monkeypatch.setattr(torch.profiler, "profile", _FakeProfile)
    steps = []
    trainer = SimpleNamespace(step=steps.append)
    batches = [SimpleNamespace(inputs=torch.zeros(1)), SimpleNamespace(inputs=torch.zeros(1))]
    device_events = profile.device_events(trainer, batches)
    assert steps == batches  # every profiled batch was stepped once
    busy = profile.gpu_busy(device_events, len(batches), step_ms=16.0)
    assert busy["kernel_ms_per_step"] == pytest.approx(8.0)  # (6 + 2) ms per step, not (4 + 4 + 2)
    assert busy["busy_fraction"] == pytest.approx(0.5)
    assert busy["kernels_seen"] == 6 and busy["profiled_steps"] == 2
    # A profiled step slower than the timed median never reads as more than fully busy.
    assert profile.gpu_busy(device_events, 2, step_ms=4.0)["busy_fraction"] == 1.0
    assert profile.gpu_busy(device_events, 2, step_ms=0.0)["busy_fraction"] is None
    # The same events by name: the kernel table the breakdown is derived from.
    table = profile.kernel_table(device_events, 2, "test")
    assert table["union_ms"] == pytest.approx(8.0)
    assert sum(k["ms"] for k in table["kernels"]) == pytest.approx(10.0)  # durations summed, overlaps too
    assert sum(k["calls"] for k in table["kernels"]) == pytest.approx(3.0)


# --- fp8state.ScalingRecorder: flags over fake fp8_meta ----------------------------------------

class _Scaling:
    """The delayed-scaling state TE keeps in ``fp8_meta["scaling_fwd"/"scaling_bwd"]``."""

    def __init__(self, scale: list[float], amax_history: list[list[float]]):
        self.scale = torch.tensor(scale)
        self.amax_history = torch.tensor(amax_history)  # [history, quantizers]


class _FakeTELayer(torch.nn.Module):
    def __init__(self, fwd: _Scaling, bwd: _Scaling | None = None):
        super().__init__()
        self.fp8_meta = {"scaling_fwd": fwd, "recipe": "delayed"}
        if bwd is not None:
            self.fp8_meta["scaling_bwd"] = bwd


class _Model(torch.nn.Module):
    def __init__(self, **layers: torch.nn.Module):
        super().__init__()
        for name, layer in layers.items():
            self.add_module(name, layer)


def _fwd(scales: list[float], amaxes: list[float]) -> _Scaling:
    return _Scaling(scales, [[0.0] * len(amaxes), amaxes])  # the row-wise max is ``amaxes``


def test_stateful_modules_finds_only_layers_with_delayed_scaling_state():
    model = _Model(te=_FakeTELayer(_fwd([1.0] * 3, [1.0] * 3)), plain=torch.nn.Linear(2, 2),
                   current=torch.nn.Module())
    model.current.fp8_meta = {"scaling_fwd": None}  # current scaling keeps no scale tensor
    assert [name for name, _ in stateful_modules(model)] == ["te"]


def test_recorder_names_roles_and_keeps_series_per_quantizer():
    layer = _FakeTELayer(_fwd([1.0, 2.0, 3.0], [0.5, 0.25, 0.0]), _Scaling([4.0, 5.0], [[1.0, 2.0]]))
    rec = ScalingRecorder(_Model(layer=layer))
    rec.sample(0)
    layer.fp8_meta["scaling_fwd"].scale.mul_(2)  # the sample is a copy, not a view
    rec.sample(7)
    out = rec.summary()
    assert out["steps"] == [0, 7]
    q = out["layers"]["layer"]
    assert list(q) == ["fwd.gemm1.input", "fwd.gemm1.weight", "fwd.gemm1.output",
                       "bwd.gemm1.grad_output", "bwd.gemm1.grad_input"]
    assert q["fwd.gemm1.weight"] == {"scale": [2.0, 4.0], "amax": [0.25, 0.25]}
    assert q["bwd.gemm1.grad_input"] == {"scale": [5.0, 5.0], "amax": [2.0, 2.0]}
    assert out["flags"] == []


def test_recorder_flags_a_collapsed_scale_only_where_the_quantizer_saw_values():
    low = COLLAPSED_SCALE / 2
    layer = _FakeTELayer(_fwd([low, low, 1.0], [900.0, 0.0, 1.0]))
    rec = ScalingRecorder(_Model(layer=layer))
    rec.sample(3)
    flags = rec.summary()["flags"]
    assert len(flags) == 1  # gemm1.weight also collapsed, but its amax is 0: never used
    assert unsaid(flags[0], "layer fwd.gemm1.input", f"collapsed to {low:.3g}", "amax 900") == [], flags


def test_recorder_flags_non_finite_state_as_overflow():
    layer = _FakeTELayer(_fwd([1.0, float("inf"), 1.0], [1.0, 1.0, float("nan")]))
    rec = ScalingRecorder(_Model(layer=layer))
    rec.sample(0)
    flags = rec.summary()["flags"]
    assert len(flags) == 2, flags  # fwd.gemm1.input is finite
    assert unsaid(flags[0], "layer fwd.gemm1.weight", "non-finite", "overflow") == [], flags
    assert unsaid(flags[1], "layer fwd.gemm1.output", "non-finite", "overflow") == [], flags


def test_recorder_without_stateful_layers_has_no_summary():
    rec = ScalingRecorder(torch.nn.Linear(2, 2))
    rec.sample(0)
    assert rec.samples == [] and rec.summary() is None


# --- te_compat: the TE 2.x names, the older names, neither ---------------------------------------

def _install_fake_te(monkeypatch, version: str = "9.9.9", **pytorch_api) -> types.ModuleType:
    """A ``transformer_engine`` package whose ``pytorch`` module has exactly ``pytorch_api``."""
    top = types.ModuleType("transformer_engine")
    top.__version__ = version
    te = types.ModuleType("transformer_engine.pytorch")
    for name, fn in pytorch_api.items():
        setattr(te, name, fn)
    top.pytorch = te
    monkeypatch.setitem(__import__("sys").modules, "transformer_engine", top)
    monkeypatch.setitem(__import__("sys").modules, "transformer_engine.pytorch", te)
    return te


def _recording(calls: list, name: str):
    def fn(*args, **kwargs):
        calls.append((name, args, kwargs))
        return contextlib.nullcontext()
    return fn


def test_fp8_autocast_prefers_the_te2_name(monkeypatch):
    calls: list = []
    _install_fake_te(monkeypatch, autocast=_recording(calls, "autocast"),
                     fp8_autocast=_recording(calls, "fp8_autocast"))
    te_compat.fp8_autocast("R", "G")
    assert calls == [("autocast", (), {"enabled": True, "recipe": "R", "amax_reduction_group": "G"})]


def test_fp8_autocast_falls_back_to_the_old_name_and_keywords(monkeypatch):
    calls: list = []
    _install_fake_te(monkeypatch, fp8_autocast=_recording(calls, "fp8_autocast"))
    te_compat.fp8_autocast("R")
    assert calls == [("fp8_autocast", (), {"enabled": True, "fp8_recipe": "R", "fp8_group": None})]


def test_quantized_init_prefers_the_te2_name_then_falls_back(monkeypatch):
    calls: list = []
    _install_fake_te(monkeypatch, quantized_model_init=_recording(calls, "quantized_model_init"),
                     fp8_model_init=_recording(calls, "fp8_model_init"))
    te_compat.quantized_init("R")
    _install_fake_te(monkeypatch, fp8_model_init=_recording(calls, "fp8_model_init"))
    te_compat.quantized_init("R")
    assert calls == [("quantized_model_init", (), {"enabled": True, "recipe": "R"}),
                     ("fp8_model_init", (), {"enabled": True})]  # the old API has no recipe argument


@pytest.mark.parametrize("call, names", [
    (lambda: te_compat.fp8_autocast("R"), "autocast, fp8_autocast"),
    (lambda: te_compat.quantized_init("R"), "quantized_model_init, fp8_model_init"),
    (lambda: te_compat.make_graphed("m", (), None), "make_graphed_callables"),
])
def test_a_release_with_neither_name_gets_a_clear_error(monkeypatch, call, names):
    _install_fake_te(monkeypatch, version="0.1.2")
    with pytest.raises(RuntimeError) as info:
        call()
    assert unsaid(str(info.value), "Transformer Engine 0.1.2", f"none of {names}") == [], str(info.value)


def test_make_graphed_passes_the_recipe_under_the_signature_it_finds(monkeypatch):
    calls: list = []

    def new_api(module, sample_args, num_warmup_iters=3, enabled=False, recipe=None, amax_reduction_group=None):
        calls.append(("new", inspect.getcallargs(new_api, module, sample_args, num_warmup_iters, enabled,
                                                 recipe, amax_reduction_group)))
        return "graphed"

    def old_api(module, sample_args, num_warmup_iters=3, fp8_enabled=False, fp8_recipe=None, fp8_group=None):
        calls.append(("old", dict(fp8_enabled=fp8_enabled, fp8_recipe=fp8_recipe, fp8_group=fp8_group)))
        return "graphed"

    _install_fake_te(monkeypatch, make_graphed_callables=new_api)
    assert te_compat.make_graphed("m", ("x",), "R", "G") == "graphed"
    assert calls[-1][1] == {"module": "m", "sample_args": ("x",), "num_warmup_iters": 3, "enabled": True,
                            "recipe": "R", "amax_reduction_group": "G"}
    _install_fake_te(monkeypatch, make_graphed_callables=old_api)
    te_compat.make_graphed("m", ("x",), "R", "G")
    assert calls[-1] == ("old", {"fp8_enabled": True, "fp8_recipe": "R", "fp8_group": "G"})
    te_compat.make_graphed("m", ("x",), None)  # no recipe (TE-BF16): no FP8 arguments at all
    assert calls[-1] == ("old", {"fp8_enabled": False, "fp8_recipe": None, "fp8_group": None})


# --- RecipeSpec.build against a fake transformer_engine.common.recipe ----------------------------

def _install_fake_recipes(monkeypatch, version: str = "9.9.9", missing: tuple[str, ...] = ()) -> None:
    sys_modules = __import__("sys").modules
    top = types.ModuleType("transformer_engine")
    top.__version__ = version
    common = types.ModuleType("transformer_engine.common")
    recipe = types.ModuleType("transformer_engine.common.recipe")
    recipe.Format = SimpleNamespace(E4M3="Format.E4M3", HYBRID="Format.HYBRID")
    for spec in RECIPES.values():
        if spec.te_class not in missing:
            # Each fake class keeps the keywords it was built with.
            setattr(recipe, spec.te_class, type(spec.te_class, (), {"__init__": lambda self, **kw: setattr(self, "kw", kw)}))
    top.common, common.recipe = common, recipe
    monkeypatch.setitem(sys_modules, "transformer_engine", top)
    monkeypatch.setitem(sys_modules, "transformer_engine.common", common)
    monkeypatch.setitem(sys_modules, "transformer_engine.common.recipe", recipe)


@pytest.mark.parametrize("name, expected", [
    ("delayed", {"fp8_format": "Format.E4M3", "amax_history_len": 16, "amax_compute_algo": "most_recent"}),
    ("current", {"fp8_format": "Format.E4M3"}),
    ("block", {"fp8_format": "Format.E4M3"}),
    ("mxfp8", {"fp8_format": "Format.E4M3"}),
    ("nvfp4", {}),
])
def test_recipe_build_passes_only_the_recipes_own_options(monkeypatch, name, expected):
    _install_fake_recipes(monkeypatch)
    opts = fp8_options(name, "E4M3", 16, "most_recent", 8)
    built = build_recipe(opts)
    assert type(built).__name__ == RECIPES[name].te_class
    assert built.kw == expected  # calibration_steps is tebench's, never TE's


def test_recipe_build_names_the_missing_class_and_the_release(monkeypatch):
    _install_fake_recipes(monkeypatch, version="1.4.0", missing=("NVFP4BlockScaling",))
    with pytest.raises(RuntimeError) as info:
        build_recipe(fp8_options("nvfp4", None, None, None))
    message = str(info.value)
    assert unsaid(message, "Transformer Engine 1.4.0", "no recipe class NVFP4BlockScaling", "'nvfp4'") == [], message


def test_the_probe_looks_for_every_registered_recipe_class():
    # The gate refuses a recipe whose class the probe did not find in TE, so a recipe
    # missing from the probe's list would be skipped on every machine.
    from tebench.plan.environment import TE_RECIPE_CLASSES

    assert {spec.te_class for spec in RECIPES.values() if spec.library == "te"} <= set(TE_RECIPE_CLASSES)


# --- hardware.peak_for: the first matching name wins --------------------------------------------

@pytest.mark.parametrize("device_name, source", [
    ("NVIDIA H200", "NVIDIA H200 SXM datasheet"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM datasheet"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe datasheet"),
    ("NVIDIA H100 NVL", "NVIDIA H100 NVL datasheet"),
    ("NVIDIA GH200 480GB", "NVIDIA GH200 datasheet"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 datasheet"),
    ("NVIDIA A10G", "NVIDIA A10G (AWS) datasheet"),
    ("NVIDIA A10", "NVIDIA A10 datasheet"),
    ("NVIDIA L40S", "NVIDIA L40S datasheet"),
    ("NVIDIA L4", "NVIDIA L4 datasheet"),
    ("NVIDIA B200", "NVIDIA B200 datasheet (HGX)"),
])
def test_peak_for_picks_the_most_specific_entry(device_name, source):
    assert hardware.peak_for(device_name).source == source


@pytest.mark.parametrize("device_name", [None, "", "Tesla T4", "NVIDIA GeForce RTX 4090", "cpu",
                                         "NVIDIA L40", "NVIDIA H20"])
def test_peak_for_an_unknown_gpu_is_none_not_a_guess(device_name):
    assert hardware.peak_for(device_name) is None


def test_no_peak_entry_is_shadowed_by_an_earlier_one():
    # An entry whose name contains an earlier entry's match could never be chosen.
    for i, peak in enumerate(hardware.PEAKS):
        assert hardware.peak_for(f"NVIDIA {peak.match}") is peak, peak.match
        assert all(earlier.match not in peak.match for earlier in hardware.PEAKS[:i]), peak.match


def test_a_gpu_without_fp8_has_no_fp8_peak_recorded():
    a100 = hardware.peak_for("NVIDIA A100").to_dict()
    assert a100["fp8"] is None and a100["bf16"] == 312.0


# --- runner: cases spread over --devices, a case needing k of them ------------------------------

class _FakeExecutor:
    """Records which devices each case ran on and checks no device is used twice at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.busy: set[str] = set()
        self.ran: dict[str, str] = {}
        self.skipped: dict[str, str] = {}
        self.overlaps: list[str] = []

    def run_one(self, p: schedule.Planned, device: str | None, next_case=None) -> dict:
        devs = device.split(",")
        with self.lock:
            if self.busy & set(devs):
                self.overlaps.append(p.case.id)
            self.busy |= set(devs)
        try:
            threading.Event().wait(0.01)  # hold the devices briefly so that others contend for them
        finally:
            with self.lock:
                self.busy -= set(devs)
                self.ran[p.case.id] = device
        return {"case_id": p.case.id, "status": "ok"}

    def skip(self, p: schedule.Planned) -> dict:
        with self.lock:
            self.skipped[p.case.id] = p.skip
        return {"case_id": p.case.id, "status": "skipped", "reason": p.skip}


def _planned(mode: str, parallel: str = "single", nproc: int = 1, skip: str | None = None) -> schedule.Planned:
    return schedule.Planned(Case(workload="gpt", size="t", mode=mode, dims=dict(GPT), fp8=None, parallel=parallel,
                                 nproc=nproc), 0, skip)


def test_execute_gives_each_case_its_devices_and_skips_what_cannot_fit():
    todo = [_planned("PT-FP32"), _planned("PT-AMP"), _planned("PT-FP32", "ddp", 2),
            _planned("PT-AMP", "ddp", 3), _planned("PT-AMP", "fsdp2", 2),
            _planned("PT-AMP+compile", skip="gated off")]
    ex, records = _FakeExecutor(), []
    runner._execute(ex, todo, ["0", "1"], records.append)
    assert ex.overlaps == []
    assert len(records) == len(todo)
    assert ex.ran["gpt/t/PT-FP32"] in ("0", "1") and ex.ran["gpt/t/PT-AMP"] in ("0", "1")
    assert ex.ran["gpt/t/PT-FP32/ddpx2"] == "0,1"  # both devices, in --devices order
    assert ex.ran["gpt/t/PT-AMP/fsdp2x2"] == "0,1"
    assert set(ex.skipped) == {"gpt/t/PT-AMP/ddpx3", "gpt/t/PT-AMP+compile"}
    assert ex.skipped["gpt/t/PT-AMP+compile"] == "gated off"  # a gate's reason is passed on as it is
    too_big = ex.skipped["gpt/t/PT-AMP/ddpx3"]
    assert unsaid(too_big, "3 devices", "--devices gives 2") == [], too_big


def test_execute_with_one_device_runs_everything_in_order_on_it():
    todo = [_planned("PT-FP32"), _planned("PT-AMP", skip="gated off"), _planned("PT-AMP")]
    ex, records = _FakeExecutor(), []
    runner._execute(ex, todo, ["3"], records.append)
    assert [r["case_id"] for r in records] == [p.case.id for p in todo]
    assert ex.ran == {"gpt/t/PT-FP32": "3", "gpt/t/PT-AMP": "3"}


def test_execute_stops_and_reraises_when_a_device_thread_fails():
    class Failing(_FakeExecutor):
        def run_one(self, p, device, next_case=None):
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        runner._execute(Failing(), [_planned("PT-FP32"), _planned("PT-AMP")], ["0", "1"], None)
