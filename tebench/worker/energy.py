"""Energy, power, clocks and clock-event reasons of the GPU over the timed steps, from NVML.

At GPU-bound sizes an H200 runs at its 700 W cap with the SM clock well below its maximum
(2026-12-03: 88 of 91 samples above 300 W carried clock-event reason 0x4, the software power
cap; SM clock 1,350-1,700 MHz against 1,980), so a step time is also a statement about power.
This module measures one window, the timed steps, outside the timed path:

* energy: the delta of NVML's total-energy counter (millijoules), the window's edges
  synchronized by the caller. The counter updates every 20-100 ms (Zeus's note), so a window
  where it stood still, went backwards (a wrap or a reset) or is shorter than
  :data:`MIN_COUNTER_WINDOW_S` falls back to integrating sampled power, and says so;
* a sampling thread every ``period_s``: power, SM and memory clocks, temperature and the
  clock-event reasons bitmask, kept as shares of the samples.

NVML comes from ``nvidia-ml-py`` (``import pynvml``). Where it is missing, where the device
cannot be found in it or a call fails, every figure is recorded as unavailable with the reason:
never zero, never a crash. The NVML module is passed in, so tests drive this with a stub.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any, Callable

MIN_COUNTER_WINDOW_S = 0.2
"""Shorter windows are integrated from sampled power: the counter may not have moved yet."""
DEFAULT_PERIOD_S = 0.1
"""Sampling period: 10 NVML reads a second, each ~tens of microseconds, with the GIL released (ctypes)."""

# NVML clock-event (throttle) reason bits, as nvml.h defines them.
REASON_BITS: dict[str, int] = {
    "idle": 0x1,
    "power_cap": 0x4,
    "hw_slowdown": 0x8 | 0x80,    # hardware slowdown, power brake
    "thermal": 0x20 | 0x40,       # software and hardware thermal slowdown
}
"""Clock-event reasons by name; any other set bit (application clocks, sync boost, display) is ``other``."""
_KNOWN = 0
for _bits in REASON_BITS.values():
    _KNOWN |= _bits


def reason_shares(masks: list[int]) -> dict[str, float]:
    """The share of samples in which each clock-event reason was set (a sample can carry several)."""
    if not masks:
        return {}
    n = len(masks)
    shares = {name: sum(1 for m in masks if m & bits) / n for name, bits in REASON_BITS.items()}
    shares["other"] = sum(1 for m in masks if m & ~_KNOWN) / n
    return shares


def percentiles(values: list[float]) -> dict[str, float]:
    """p10, p50 and p90 of ``values`` (empty for none)."""
    if not values:
        return {}
    if len(values) == 1:
        return {"p10": values[0], "p50": values[0], "p90": values[0]}
    q = statistics.quantiles(values, n=10, method="inclusive")
    return {"p10": q[0], "p50": statistics.median(values), "p90": q[-1]}


def integrate(times: list[float], watts: list[float]) -> float:
    """Joules under a sampled power curve (trapezoids)."""
    return sum((t1 - t0) * (w0 + w1) / 2.0 for t0, t1, w0, w1 in zip(times, times[1:], watts, watts[1:]))


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """An NVML call's value, or None where it fails (an older driver, a GPU without the query)."""
    try:
        return fn(*args)
    except Exception:  # pynvml raises NVMLError subclasses; a stub may raise anything
        return None


class Monitor:
    """One device's NVML readings over a window: :meth:`begin` and :meth:`end` around the timed steps."""

    def __init__(self, nvml: Any, handle: Any, period_s: float = DEFAULT_PERIOD_S,
                 clock: Callable[[], float] = time.perf_counter):
        self.nvml, self.handle, self.period_s, self.clock = nvml, handle, period_s, clock
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0: float = 0.0
        self._e0: int | None = None

    def _energy_mj(self) -> int | None:
        return _call(self.nvml.nvmlDeviceGetTotalEnergyConsumption, self.handle)

    def sample(self) -> None:
        """One reading of power, clocks, temperature and the reasons bitmask (what fails is left out)."""
        n, h = self.nvml, self.handle
        reasons = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            getattr(n, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        self.samples.append({
            "t": self.clock(),
            "power_mw": _call(n.nvmlDeviceGetPowerUsage, h),
            "sm_mhz": _call(n.nvmlDeviceGetClockInfo, h, getattr(n, "NVML_CLOCK_SM", 1)),
            "mem_mhz": _call(n.nvmlDeviceGetClockInfo, h, getattr(n, "NVML_CLOCK_MEM", 2)),
            "temp_c": _call(n.nvmlDeviceGetTemperature, h, getattr(n, "NVML_TEMPERATURE_GPU", 0)),
            "reasons": _call(reasons, h) if reasons else None,
        })

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self.sample()

    def begin(self) -> None:
        """Start the window (the caller has synchronized the device): the counter, a first sample, the thread."""
        self._e0 = self._energy_mj()
        self._t0 = self.clock()
        self.sample()
        if self.period_s > 0:
            self._thread = threading.Thread(target=self._run, name="tebench-nvml", daemon=True)
            self._thread.start()

    def end(self, steps: int) -> dict[str, Any]:
        """End the window (the caller has synchronized the device) and summarize it, per step too."""
        e1 = self._energy_mj()
        t1 = self.clock()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()
        return summarize(self.samples, self._t0, t1, self._e0, e1, steps, self.static())

    def static(self) -> dict[str, Any]:
        """The device's limits: enforced power limit, maximum clocks."""
        n, h = self.nvml, self.handle
        limit = _call(n.nvmlDeviceGetEnforcedPowerLimit, h)
        return {"power_limit_w": limit / 1000.0 if limit else None,
                "max_sm_clock_mhz": _call(n.nvmlDeviceGetMaxClockInfo, h, getattr(n, "NVML_CLOCK_SM", 1)),
                "max_mem_clock_mhz": _call(n.nvmlDeviceGetMaxClockInfo, h, getattr(n, "NVML_CLOCK_MEM", 2))}


def summarize(samples: list[dict[str, Any]], t0: float, t1: float, e0: int | None, e1: int | None, steps: int,
              static: dict[str, Any]) -> dict[str, Any]:
    """The Energy part of a record from one window's readings (see the module's rules)."""
    window = t1 - t0
    out: dict[str, Any] = {"window_s": window, "steps": steps, "samples": len(samples), **static}
    watts = [(s["t"], s["power_mw"] / 1000.0) for s in samples if s.get("power_mw") is not None]
    if watts:
        out["avg_power_w"] = (integrate([t for t, _ in watts], [w for _, w in watts]) / (watts[-1][0] - watts[0][0])
                              if len(watts) > 1 and watts[-1][0] > watts[0][0] else watts[0][1])
    energy, method, note = None, None, None
    if e0 is not None and e1 is not None and e1 > e0 and window >= MIN_COUNTER_WINDOW_S:
        energy, method = (e1 - e0) / 1000.0, "counter"
    else:
        why = ("no energy counter (an older GPU or driver)" if e0 is None or e1 is None else
               f"the window ({window * 1000:.0f} ms) is shorter than the counter's update" if window < MIN_COUNTER_WINDOW_S
               else "the energy counter stood still" if e1 == e0 else "the energy counter went backwards (a wrap or reset)")
        if len(watts) > 1:
            energy, method = integrate([t for t, _ in watts], [w for _, w in watts]), "power_integral"
            note = f"{why}: integrated from {len(watts)} power samples"
        else:
            note = f"{why}, and fewer than two power samples"
    if energy is not None and energy > 0:
        out.update(method=method, energy_j=energy, j_per_step=energy / steps if steps else None)
    else:
        out["unavailable"] = note or "no energy reading"
    if note and "unavailable" not in out:
        out["note"] = note
    out["sm_clock_mhz"] = percentiles([s["sm_mhz"] for s in samples if s.get("sm_mhz") is not None])
    out["mem_clock_mhz"] = percentiles([s["mem_mhz"] for s in samples if s.get("mem_mhz") is not None])
    temps = [s["temp_c"] for s in samples if s.get("temp_c") is not None]
    out["temperature_c_max"] = max(temps) if temps else None
    out["reason_share"] = reason_shares([s["reasons"] for s in samples if s.get("reasons") is not None])
    return out


def open_monitor(device: Any, period_s: float = DEFAULT_PERIOD_S, nvml: Any = None) -> tuple[Monitor | None, str | None]:
    """A monitor of the CUDA ``device`` (a torch.device), or None and the reason there is none.

    The device is found in NVML by its UUID (``CUDA_VISIBLE_DEVICES`` renumbers devices; NVML
    does not), else by its PCI bus id.
    """
    if getattr(device, "type", None) != "cuda":
        return None, "not a CUDA device"
    if nvml is None:
        try:
            import pynvml  # nvidia-ml-py
        except ImportError:
            return None, "NVML bindings not installed (pip install nvidia-ml-py)"
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return None, f"NVML did not start: {exc}"
    import torch

    props: Any = torch.cuda.get_device_properties(device)  # its id fields differ between torch versions
    handle, tried = None, []
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        text = str(uuid)
        key = text if text.startswith("GPU-") else f"GPU-{text}"
        tried.append(key)
        handle = _call(nvml.nvmlDeviceGetHandleByUUID, key)
    if handle is None and getattr(props, "pci_bus_id", None) is not None:
        key = f"{getattr(props, 'pci_domain_id', 0):08x}:{props.pci_bus_id:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"
        tried.append(key)
        handle = _call(nvml.nvmlDeviceGetHandleByPciBusId, key)
    if handle is None:
        return None, f"the device is not in NVML (looked for {', '.join(tried) or 'no id torch gives'})"
    return Monitor(nvml, handle, period_s), None
