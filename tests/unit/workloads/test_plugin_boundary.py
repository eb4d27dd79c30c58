"""The plugin boundary: what a user workload does on import, in its constructor or in check() is
caught and reported as "workload X: ...", never a traceback, an exit 0 or a parsed tebench argv."""

from __future__ import annotations

import sys
import textwrap

import pytest

from conftest import ROOT
from tebench import cli
from tebench.workloads.plugins import PluginError, resolve

EXAMPLE = ROOT / "examples" / "custom-workload"


@pytest.fixture(autouse=True)
def _clean_modules():
    import tebench.workloads as registry

    modules, specs = set(sys.modules), dict(registry.SPECS)
    yield
    registry.SPECS.clear()
    registry.SPECS.update(specs)
    for name in set(sys.modules) - modules:
        if name.startswith(("tinyreg", "plug_")):
            del sys.modules[name]


def _module(tmp_path, monkeypatch, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.parametrize("body,fragments", [
    ("import sys\nsys.exit(0)\n", ["plug_x", "sys.exit(0)", "if __name__ == '__main__'"]),
    ("import argparse\nargparse.ArgumentParser().parse_args()\nW = 1\n", []),  # sees no tebench options
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--must', required=True)\np.parse_args()\n",
     ["sys.exit(2)"]),
])
def test_an_import_that_exits_or_parses_argv_is_a_plugin_error(tmp_path, monkeypatch, capsys, body, fragments):
    _module(tmp_path, monkeypatch, "plug_x", body)
    monkeypatch.setattr(sys, "argv", ["tebench", "list", "--preset", "smoke"])
    with pytest.raises(PluginError) as err:
        resolve("plug_x:W")
    for fragment in fragments:
        assert fragment in str(err.value)
    assert sys.argv == ["tebench", "list", "--preset", "smoke"]


def test_what_an_import_prints_goes_to_stderr_and_cwd_is_put_back(tmp_path, monkeypatch, capsys):
    _module(tmp_path, monkeypatch, "plug_p", """
        import os
        print('{"event": "progress"}')
        os.chdir('/')
        W = None
    """)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PluginError):
        resolve("plug_p:W")
    out, err = capsys.readouterr()
    assert out == "" and '{"event": "progress"}' in err
    assert str(tmp_path) == __import__("os").getcwd()


def test_a_size_type_with_unresolvable_annotations_is_refused(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "plug_s", """
        from __future__ import annotations
        import dataclasses
        from tinyreg.workload import RegressionWorkload

        @dataclasses.dataclass(frozen=True)
        class Size:
            n: NotDefinedAnywhere = 4

        class W(RegressionWorkload):
            size_type = Size
    """)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    with pytest.raises(PluginError) as err:
        resolve("plug_s:W")
    assert "cannot be resolved" in str(err.value) and "NotDefinedAnywhere" in str(err.value)


def test_a_check_that_raises_is_a_matrix_error_naming_the_workload(tmp_path, monkeypatch, capsys):
    _module(tmp_path, monkeypatch, "plug_c", """
        from tinyreg.workload import RegressionWorkload

        class W(RegressionWorkload):
            def check(self, size):
                raise RuntimeError("my check is broken")
    """)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    path = tmp_path / "m.toml"
    path.write_text('name = "x"\n[axes]\nmodes = ["PT-FP32"]\n[sizes."plug_c:W".small]\ndim = 64\nffn = 256\n'
                    'blocks = 2\nbatch = 64\n')
    assert cli.main(["list", str(path)]) == 2
    err = capsys.readouterr().err
    assert "workload 'plug_c:W': its check() of this size raised RuntimeError: my check is broken" in err
    assert "Traceback" not in err
