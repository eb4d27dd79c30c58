"""Energy, power, clocks and clock-event reasons from NVML, driven by a stub of its interface."""

from __future__ import annotations

import dataclasses
import sys
import time
import types

import pytest
import torch

from tebench.worker import energy


class StubNVML:
    """The NVML calls tebench makes, with scripted answers; a missing answer raises as NVML does."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, counter=None, power_mw=(700_000,), sm=(1600,), reasons=(0x4,), limit_mw=700_000):
        self.counter = list(counter) if counter is not None else None
        self.power, self.sm, self.reasons, self.limit = list(power_mw), list(sm), list(reasons), limit_mw
        self.i = 0

    def _next(self, values):
        if not values:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        v = values[min(self.i, len(values) - 1)]
        return v

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if self.counter is None:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return self.counter.pop(0)

    def nvmlDeviceGetPowerUsage(self, h):
        return self._next(self.power)

    def nvmlDeviceGetClockInfo(self, h, kind):
        return self._next(self.sm) if kind == self.NVML_CLOCK_SM else 2619

    def nvmlDeviceGetTemperature(self, h, kind):
        return 61

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        v = self._next(self.reasons)
        self.i += 1  # the last read of a sample: the next sample reads the script's next values
        return v

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return self.limit

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return 1980 if kind == self.NVML_CLOCK_SM else 3201


class Clock:
    def __init__(self, step=0.25):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


def run_window(nvml, steps=10, clock_step=0.25, samples=4):
    """begin, (samples - 2) thread-free samples, end: every reading scripted, no sleeping."""
    mon = energy.Monitor(nvml, handle=0, period_s=0, clock=Clock(clock_step))
    mon.begin()
    for _ in range(samples - 2):
        mon.sample()
    return mon.end(steps)


def test_the_counter_gives_joules_per_step_and_the_limits_ride_along():
    out = run_window(StubNVML(counter=[1_000_000, 1_700_000]))
    assert out["method"] == "counter" and out["energy_j"] == pytest.approx(700.0)
    assert out["j_per_step"] == pytest.approx(70.0)
    assert out["power_limit_w"] == 700.0 and out["max_sm_clock_mhz"] == 1980
    assert out["avg_power_w"] == pytest.approx(700.0)
    assert "unavailable" not in out and "note" not in out


@pytest.mark.parametrize("counter,why", [(None, "no energy counter"),
                                         ([5_000, 5_000], "stood still"),
                                         ([9_000, 1_000], "went backwards")])
def test_without_a_usable_counter_power_is_integrated_and_said_so(counter, why):
    out = run_window(StubNVML(counter=counter, power_mw=[600_000, 700_000, 700_000, 600_000]))
    assert out["method"] == "power_integral" and why in out["note"]
    # The stub clock ticks 0.25 s a read: samples at 0.5, 0.75, 1.0 and (after the window's end) 1.5 s.
    assert out["energy_j"] == pytest.approx(650 * 0.25 + 700 * 0.25 + 650 * 0.5)


def test_a_window_shorter_than_the_counter_update_is_integrated():
    out = run_window(StubNVML(counter=[1_000, 2_000]), clock_step=0.01)
    assert out["method"] == "power_integral" and "shorter than the counter" in out["note"], out["note"]


def test_no_counter_and_no_power_is_unavailable_never_zero():
    out = run_window(StubNVML(counter=None, power_mw=[]))
    assert "energy_j" not in out and "j_per_step" not in out
    said = out["unavailable"]
    assert "no energy counter" in said and "fewer than two" in said and "power samples" in said, said


def test_clock_event_reasons_become_shares_and_clocks_percentiles():
    out = run_window(StubNVML(counter=[0, 10_000_000], sm=[1350, 1600, 1650, 1700],
                              reasons=[0x4, 0x4 | 0x40, 0x0, 0x2]))
    shares = out["reason_share"]
    assert shares["power_cap"] == 0.5 and shares["thermal"] == 0.25 and shares["other"] == 0.25
    assert shares["hw_slowdown"] == 0 and shares["idle"] == 0
    assert out["sm_clock_mhz"]["p50"] == pytest.approx(1625) and out["temperature_c_max"] == 61


def test_the_sampling_thread_samples_while_the_window_is_open():
    mon = energy.Monitor(StubNVML(counter=[0, 1]), handle=0, period_s=0.005)
    mon.begin()
    deadline = time.monotonic() + 30.0  # a loaded machine may run the thread late: wait for it, not a fixed time
    while len(mon.samples) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    out = mon.end(3)
    assert out["samples"] >= 4 and not mon._thread.is_alive()


def test_open_monitor_says_why_there_is_none(monkeypatch):
    assert energy.open_monitor(torch.device("cpu")) == (None, "not a CUDA device")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    mon, why = energy.open_monitor(types.SimpleNamespace(type="cuda"))
    assert mon is None and "nvidia-ml-py" in why

    class NoDriver:
        def nvmlInit(self):
            raise RuntimeError("NVML_ERROR_DRIVER_NOT_LOADED")

    mon, why = energy.open_monitor(types.SimpleNamespace(type="cuda"), nvml=NoDriver())
    assert mon is None and "DRIVER_NOT_LOADED" in why


def test_a_cpu_case_records_energy_as_unavailable_with_the_reason():
    from tebench.schema.records import Case
    from tebench.schema.settings import Settings
    from tebench.worker.case import run_case
    from tebench.worker.models.gpt import GPTSize

    size = GPTSize(vocab=16, d_model=16, heads=2, layers=1, ffn=32, seq=8, batch=2)
    case = Case(workload="gpt", size="t", mode="PT-FP32", dims=dataclasses.asdict(size),
                settings=Settings(steps=2, warmup=1, profile_steps=0, validate=False))
    raw = run_case(case, torch.device("cpu"), lambda *a: None)
    assert raw.energy.unavailable == "not a CUDA device" and raw.energy.energy_j is None


def test_tokens_per_joule_is_derived_in_the_parent():
    from tebench.schema.environment import Environment
    from tebench.schema.records import Case
    from tebench.schema.settings import Settings
    from tebench.plan.schedule import Planned
    from tebench.run.record_builder import build_record
    from tebench.schema.records import Energy, Loss, Measurements, Timing
    from tebench.worker.models.gpt import GPTSize

    size = GPTSize(vocab=16, d_model=16, heads=2, layers=1, ffn=32, seq=8, batch=2)
    case = Case(workload="gpt", size="t", mode="PT-FP32", dims=dataclasses.asdict(size), settings=Settings(steps=4))
    raw = Measurements(status="ok", timing=Timing(samples_ms=[10.0] * 4), loss=Loss(per_step=[3.0] * 5),
                       energy=Energy(method="counter", energy_j=8.0, j_per_step=2.0, steps=4))
    rec = build_record(Planned(case, 0, None), raw, Environment(device_type="cuda"), "r", 0.0, 1.0, None)
    assert rec.energy.tokens_per_j == pytest.approx(16 * 4 / 8.0)  # batch 2 x seq 8 tokens a step
    back = type(rec).from_dict(rec.to_dict())
    assert back.energy.tokens_per_j == pytest.approx(8.0) and back.energy.method == "counter"
