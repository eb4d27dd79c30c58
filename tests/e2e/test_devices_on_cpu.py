"""--devices on a machine without a CUDA GPU: the run goes on (the indices are CPU slots), and says so."""

from __future__ import annotations

import textwrap

from conftest import MICRO_GPT

MATRIX = """
name = "cpu-devices"
[settings]
steps = 3
warmup = 1
profile_steps = 0
[axes]
modes = ["PT-FP32"]
""" + MICRO_GPT


def test_devices_on_a_cpu_machine_say_there_is_no_gpu(tmp_path, stub_cli):
    mat = tmp_path / "m.toml"
    mat.write_text(textwrap.dedent(MATRIX))
    proc = stub_cli("run", str(mat), "--out", str(tmp_path / "out"), "--devices", "0", "--quiet", "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert "--devices 0: this machine has no CUDA GPU; the cases run on the CPU, 1 at a time" in proc.stderr


def test_the_report_calls_them_cpu_slots(tmp_path, stub_cli):
    mat = tmp_path / "m.toml"
    mat.write_text(textwrap.dedent(MATRIX))
    out = tmp_path / "out"
    stub_cli("run", str(mat), "--out", str(out), "--devices", "0", "--quiet", "--no-report", check=True)
    stub_cli("report", str(out), "--out", str(tmp_path / "rep"), check=True)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "0 (no CUDA GPU: CPU slots, one case each)" in md
