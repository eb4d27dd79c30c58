"""TEBENCH_* variables that hold a number are parsed in one place (tebench.envvars): a bad value names
the variable, its range and the value, and is never blamed on something else."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from tebench import envvars
from tebench.envvars import EnvError
from tebench.schema.protocol import PARENT_ENV
from tebench.workloads import plugins

GOOD_PLUGIN = '''
import dataclasses

@dataclasses.dataclass(frozen=True)
class Size:
    n: int = 1

class W:
    size_type = Size
    def check(self, s): pass
    def fp8_problem(self, s, case): return None
    def tokens_per_step(self, s, settings): return 1
    def flops_per_step(self, s, settings): return 1.0
    def build(self, s, family, device, seed): pass
    def batches(self, *a): pass
    def loss(self, *a): pass
    def validate(self, *a): pass
'''


def test_the_parent_pid_variable_is_the_protocols():
    assert envvars.PARENT_PID == PARENT_ENV


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "-1", "ten", "1" * 100, "²"])
def test_plugin_import_timeout_out_of_range_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(envvars.PLUGIN_IMPORT_TIMEOUT, value)
    with pytest.raises(EnvError) as err:
        plugins.import_limit_s()
    message = str(err.value)
    assert envvars.PLUGIN_IMPORT_TIMEOUT in message and "seconds" in message and "0 to 86400" in message, message
    assert repr(value[:envvars.MAX_TEXT])[:-1] in message, message


@pytest.mark.parametrize("value,expected", [("", 120.0), (" ", 120.0), ("0", 0.0), ("2.5", 2.5), (" 30 ", 30.0)])
def test_plugin_import_timeout_good_values(monkeypatch, value, expected):
    monkeypatch.setenv(envvars.PLUGIN_IMPORT_TIMEOUT, value)
    assert plugins.import_limit_s() == expected


@pytest.mark.parametrize("value", ["nan", "inf", "1e300"])
def test_a_good_plugin_is_not_blamed_for_a_bad_timeout(tmp_path, value):
    # Before: "workload 'plug_env:W': cannot import module 'plug_env'", the variable never named.
    (tmp_path / "plug_env.py").write_text(GOOD_PLUGIN)
    (tmp_path / "m.toml").write_text('[sizes."plug_env:W".tiny]\nn = 1\n')
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, envvars.PLUGIN_IMPORT_TIMEOUT: value}
    proc = subprocess.run([sys.executable, "-m", "tebench", "list", "m.toml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr
    assert envvars.PLUGIN_IMPORT_TIMEOUT in proc.stderr and "cannot import" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name,reader", [(envvars.TEST_SLOWDOWN, envvars.slowdown_factor),
                                         (envvars.TEST_STEP_SLEEP_MS, envvars.step_sleep_ms),
                                         (envvars.PARENT_PID, envvars.parent_pid)])
@pytest.mark.parametrize("value", ["fast", "nan", "-5", "1e400"])
def test_test_hooks_name_the_variable(monkeypatch, name, reader, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(EnvError) as err:
        reader()
    assert name in str(err.value) and repr(value) in str(err.value), str(err.value)
    assert "could not convert" not in str(err.value)


def test_test_hooks_unset_and_set(monkeypatch):
    for name in (envvars.TEST_SLOWDOWN, envvars.TEST_STEP_SLEEP_MS, envvars.PARENT_PID):
        monkeypatch.delenv(name, raising=False)
    assert envvars.slowdown_factor() is None and envvars.step_sleep_ms() == 0.0 and envvars.parent_pid() == 0
    monkeypatch.setenv(envvars.TEST_SLOWDOWN, "1.05")
    monkeypatch.setenv(envvars.TEST_STEP_SLEEP_MS, "15")
    monkeypatch.setenv(envvars.PARENT_PID, "4242")
    assert envvars.slowdown_factor() == 1.05 and envvars.step_sleep_ms() == 15.0 and envvars.parent_pid() == 4242


@pytest.mark.parametrize("value", ["²", "4 5", "4.5", "0", "1" * 5000, "-2"])
def test_report_processes_that_is_not_a_count_means_the_default(monkeypatch, value):
    monkeypatch.setenv(envvars.REPORT_PROCESSES, value)
    assert envvars.report_processes() is None


def test_report_processes_count(monkeypatch):
    monkeypatch.setenv(envvars.REPORT_PROCESSES, " 3 ")
    assert envvars.report_processes() == 3


def test_every_numeric_tebench_variable_is_read_through_envvars():
    # No module but envvars converts a TEBENCH_ variable itself (float(os.environ...), int(os.environ...)).
    import re

    offenders = []
    for path in (ROOT / "tebench").rglob("*.py"):
        if path.name == "envvars.py":
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"(float|int)\(\s*os\.environ[^)]*(TEBENCH_|SLEEP_ENV|SLOWDOWN_ENV|PARENT_ENV)", text):
            offenders.append(str(path))
    assert offenders == [], offenders
