"""The plugin boundary: what a user workload does on import, in its constructor or in check() is
caught and reported as "workload X: ...", never a traceback, an exit 0 or a parsed tebench argv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, unsaid
from helpers.plugin_modules import write_module
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


@pytest.mark.parametrize("body,fragments", [
    ("import sys\nsys.exit(0)\n", ["plug_x", "sys.exit(0)", "if __name__ == '__main__'"]),
    ("import argparse\nargparse.ArgumentParser().parse_args()\nW = 1\n", []),  # sees no tebench options
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--must', required=True)\np.parse_args()\n",
     ["sys.exit(2)"]),
])
def test_an_import_that_exits_or_parses_argv_is_a_plugin_error(tmp_path, monkeypatch, capsys, body, fragments):
    write_module(tmp_path, monkeypatch, "plug_x", body)
    monkeypatch.setattr(sys, "argv", ["tebench", "list", "--preset", "smoke"])
    with pytest.raises(PluginError) as err:
        resolve("plug_x:W")
    for fragment in fragments:
        assert fragment in str(err.value)
    assert sys.argv == ["tebench", "list", "--preset", "smoke"]


def test_what_an_import_prints_goes_to_stderr_and_cwd_is_put_back(tmp_path, monkeypatch, capsys):
    write_module(tmp_path, monkeypatch, "plug_p", """
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
    write_module(tmp_path, monkeypatch, "plug_s", """
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
    write_module(tmp_path, monkeypatch, "plug_c", """
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
    assert unsaid(err, "plug_c:W", "check()", "RuntimeError", "my check is broken") == [], err
    assert "Traceback" not in err


# A user workload's own output and its failures, in the worker: what it prints is the case's log
# (never the runner's protocol, which has a pipe of its own), and what it raises is the record's
# reason, naming it, with its whole traceback in the log.
FAKE_PROGRESS = '{"event": "progress", "phase": "fake", "step": 999, "total": 999}'
RUN_PLUGINS = {
    "plug_chatty": """
        import json, sys
        from tinyreg.workload import RegressionWorkload

        class W(RegressionWorkload):
            def build(self, *args, **kwargs):
                print("chatty build on stdout")
                print('FAKE')
                print(json.dumps({"event": "ready"}))
                print(json.dumps({"loss": 1.5}))
                print("chatty build on stderr", file=sys.stderr)
                return super().build(*args, **kwargs)

            def loss(self, *args, **kwargs):
                print('FAKE')  # every step, among the real progress messages
                return super().loss(*args, **kwargs)
    """.replace("FAKE", FAKE_PROGRESS.replace('"', '\\"')),
    "plug_broken": """
        from tinyreg.workload import RegressionWorkload

        class W(RegressionWorkload):
            def build(self, *args, **kwargs):
                raise RuntimeError("broken build of plug_broken")
    """,
    # Imports in the runner (it checks every workload first), not in a worker: the worker's import fails.
    "plug_late": """
        import os
        if "TEBENCH_PARENT_PID" in os.environ:
            raise RuntimeError("plug_late cannot load in a worker")
        from tinyreg.workload import RegressionWorkload as W
    """,
}


def _plugin_run_dir(tmp_path):
    for name, body in RUN_PLUGINS.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    sizes = "".join(f'[sizes."{name}:W".small]\ndim = 16\nffn = 64\nblocks = 1\nbatch = 16\n' for name in RUN_PLUGINS)
    (tmp_path / "m.toml").write_text('name = "plugins"\n[settings]\nsteps = 3\nwarmup = 1\n'
                                     '[axes]\nmodes = ["PT-FP32"]\n' + sizes)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (ROOT, EXAMPLE))}


@pytest.mark.parametrize("launch", ["cold", "prestarted"])
def test_a_workloads_output_and_traceback_land_in_the_case_log(tmp_path, launch):
    env = _plugin_run_dir(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "tebench", "run", "m.toml", "--out", "out", "--no-report",
                           "--launch", launch], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = {r["case_id"].split("/")[0]: r for r in map(json.loads, (tmp_path / "out/results.jsonl").open())
           if r["type"] == "case"}
    logs = {name: (tmp_path / "out" / rec["log"]).read_text() for name, rec in got.items()}

    chatty = got["plug_chatty:W"]
    assert chatty["status"] == "ok", chatty.get("reason")
    assert len(chatty["loss"]["per_step"]) == 4
    log = logs["plug_chatty:W"]
    assert log.count(FAKE_PROGRESS + "\n") >= 1 + 4, "every look-alike is kept as output, none taken as progress"
    for line in ('{"event": "ready"}', '{"loss": 1.5}', "chatty build on stdout", "chatty build on stderr"):
        assert line + "\n" in log
    assert '"phase": "measure"' not in log, "the real progress messages are not in the log"

    broken = got["plug_broken:W"]
    assert broken["status"] == "failed"
    assert unsaid(broken["reason"], "plug_broken:W", "RuntimeError", "broken build of plug_broken") == []
    log = logs["plug_broken:W"]
    assert "Traceback (most recent call last)" in log and "plug_broken.py" in log
    assert 'raise RuntimeError("broken build of plug_broken")' in log

    late = got["plug_late:W"]
    assert late["status"] == "failed"
    assert unsaid(late["reason"], "plug_late:W", "cannot import", "'plug_late'", "RuntimeError",
                  "plug_late cannot load in a worker") == [], late["reason"]
    log = logs["plug_late:W"]
    assert "plug_late.py" in log and 'raise RuntimeError("plug_late cannot load in a worker")' in log
    assert "The above exception was the direct cause" in log and "PluginError" in log
    if launch == "prestarted":
        assert sum(r["launch"]["method"] == "prestarted" for r in got.values()) == 2


@pytest.mark.parametrize("serve", [False, True])
def test_the_worker_speaks_only_on_its_protocol_pipe(tmp_path, monkeypatch, serve):
    # The real worker, started as the runner starts it (cold, or pre-started and sent its case on stdin).
    env = _plugin_run_dir(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from tebench.plan import matrix

    case = next(c for c in matrix.iter_cases(matrix.load(tmp_path / "m.toml")) if c.workload == "plug_chatty:W")
    (tmp_path / "case.json").write_text(json.dumps(case.to_dict()))
    files = {"case": str(tmp_path / "case.json"), "result": str(tmp_path / "result.json")}
    log = tmp_path / "case.log"
    read, write = os.pipe()
    env = {**env, "TEBENCH_PROTOCOL_FD": str(write), "TEBENCH_PARENT_PID": str(os.getpid())}
    command = [sys.executable, "-m", "tebench.worker"]
    command += ["--serve"] if serve else ["--case", files["case"], "--result", files["result"], "--progress"]
    with log.open("w") as out:
        worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=out, stderr=out, text=True,
                                  pass_fds=(write,), env=env)
    os.close(write)
    if serve:
        worker.stdin.write(json.dumps({**files, "log": str(log), "progress": True}) + "\n")
    worker.stdin.close()
    with os.fdopen(read) as pipe:
        lines = pipe.read().splitlines()  # until the worker, its only writer, exits
    assert worker.wait(timeout=300) == 0
    assert json.loads((tmp_path / "result.json").read_text())["status"] == "ok", log.read_text()
    messages = [json.loads(line) for line in lines]
    assert (messages[0] == {"event": "ready"}) is serve
    progress = messages[1:] if serve else messages
    assert progress and all(m["event"] == "progress" and m["phase"] != "fake" for m in progress)
    assert "measure" in {m["phase"] for m in progress}
    text = log.read_text()
    assert FAKE_PROGRESS + "\n" in text and "chatty build on stdout\n" in text


def test_an_import_that_blocks_ends_in_its_time_limit_with_a_plugin_error(tmp_path, monkeypatch):
    # time.sleep stands for any import that blocks (a lock, a network call): the limit ends it, not a hang.
    write_module(tmp_path, monkeypatch, "plug_slow", "import time\ntime.sleep(600)\nW = 1\n")
    monkeypatch.setenv("TEBENCH_PLUGIN_IMPORT_TIMEOUT", "0.5")
    with pytest.raises(PluginError) as err:
        resolve("plug_slow:W")
    assert "plug_slow" in str(err.value) and "0.5 s" in str(err.value)
    assert "TEBENCH_PLUGIN_IMPORT_TIMEOUT" in str(err.value)


def test_the_import_limit_puts_back_the_previous_alarm_handler(monkeypatch):
    import signal

    from tebench.workloads.plugins import import_limit_s, time_limit

    def mine(*_):
        pass

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        with time_limit(30):
            pass
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    finally:
        signal.signal(signal.SIGALRM, previous)
    # A value that is no number is refused naming the variable (it was once taken as the default silently).
    from tebench.envvars import EnvError
    monkeypatch.setenv("TEBENCH_PLUGIN_IMPORT_TIMEOUT", "nonsense")
    with pytest.raises(EnvError, match="TEBENCH_PLUGIN_IMPORT_TIMEOUT='nonsense'"):
        import_limit_s()
    monkeypatch.delenv("TEBENCH_PLUGIN_IMPORT_TIMEOUT")
    assert import_limit_s() == 120.0
