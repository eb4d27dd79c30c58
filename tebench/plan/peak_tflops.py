"""Peak arithmetic rates of known GPUs, used for MFU.

The numbers are the vendors' datasheet *dense* rates in TFLOP/s (no sparsity).
They are recorded with every run, so a report always shows which peak an MFU
figure was computed against. An unknown GPU gets no peak, and therefore no MFU:
a guessed peak would make MFU look precise when it is not.
"""

from __future__ import annotations

import re

from tebench.schema.environment import PeakRates


def _peak(match: str, bf16: float, fp8: float | None, fp32: float, source: str) -> PeakRates:
    return PeakRates(match=match, bf16=bf16, fp8=fp8, fp32=fp32, source=source)


# Order matters: the first substring that matches wins, so specific names
# (GH200 before H200, H100 PCIe and H100 NVL before H100) come before the
# names they contain.
PEAKS: tuple[PeakRates, ...] = (
    _peak("GH200", 989.4, 1978.9, 66.9, "NVIDIA GH200 datasheet"),
    _peak("H200", 989.4, 1978.9, 66.9, "NVIDIA H200 SXM datasheet"),
    _peak("H100 PCIe", 756.0, 1513.0, 51.2, "NVIDIA H100 PCIe datasheet"),
    _peak("H100 NVL", 835.0, 1670.0, 60.0, "NVIDIA H100 NVL datasheet"),
    _peak("H100", 989.4, 1978.9, 66.9, "NVIDIA H100 SXM datasheet"),
    _peak("H800", 989.4, 1978.9, 66.9, "NVIDIA H800 SXM datasheet"),
    _peak("B200", 2250.0, 4500.0, 80.0, "NVIDIA B200 datasheet (HGX)"),
    _peak("A100", 312.0, None, 19.5, "NVIDIA A100 datasheet"),
    _peak("A800", 312.0, None, 19.5, "NVIDIA A800 datasheet"),
    _peak("L40S", 362.1, 733.0, 91.6, "NVIDIA L40S datasheet"),
    _peak("L4", 121.0, 242.0, 30.3, "NVIDIA L4 datasheet"),
    _peak("A10G", 70.0, None, 31.2, "NVIDIA A10G (AWS) datasheet"),
    _peak("A10", 125.0, None, 31.2, "NVIDIA A10 datasheet"),
)


def peak_for(device_name: str | None) -> PeakRates | None:
    """Return the peak rates for a GPU name, or None when the model is unknown."""
    if not device_name:
        return None
    for peak in PEAKS:
        # Whole words only: a substring test gave an "NVIDIA L40" the L4's peaks.
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(peak.match)}(?![A-Za-z0-9])", device_name):
            return peak
    return None
