"""Failures an independent corpus of bad input found (issue #42), one test per failure, named by its class:
an internal error (exit 70) where the input was only an odd environment, a message naming a temporary
file or a field instead of the option the user typed, and a library warning that names nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers.child_env import env_with_root
from tebench import cli

CPU = FIXTURES / "cpu-smoke.jsonl"


# wrong exit code: an MPLBACKEND matplotlib does not know ended `report` with exit 70 at matplotlib's import.
def test_an_unknown_mplbackend_does_not_stop_the_report(tmp_path):
    # A fresh interpreter: matplotlib reads MPLBACKEND once, at its first import.
    proc = subprocess.run([sys.executable, "-m", "tebench", "report", str(CPU), "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, env=env_with_root(MPLBACKEND="no-such-backend"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / "r" / "index.html").is_file()


# unclear message: `compare --out` where no file can be created named the atomic write's temporary file.
@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs a /proc file system")
def test_compare_out_where_no_file_can_be_created_names_the_option(capsys):
    assert cli.main(["compare", str(CPU), str(CPU), "--out", "/proc/tebench-compare.md"]) == 2
    err = capsys.readouterr().err
    assert "--out /proc/tebench-compare.md" in err and ".tmp" not in err, err


def test_compare_out_leaves_no_probe_file_behind(tmp_path, capsys):
    out = tmp_path / "compare.md"
    assert cli.main(["compare", str(CPU), str(CPU), "--out", str(out)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["compare.md"]


# unclear message: `--min-rounds -1` was refused naming the field min_rounds and not the value.
@pytest.mark.parametrize("value", ["-1", "0", "1"])
def test_min_rounds_below_two_names_the_option_and_value(capsys, value):
    assert cli.main(["compare", str(CPU), str(CPU), "--min-rounds", value]) == 2
    err = capsys.readouterr().err
    assert f"--min-rounds {value}" in err and "at least 2" in err, err


# unclear message: every report of a run with two sizes and no MFU (a CPU) printed matplotlib's
# "No artists with labels found to put in legend", which names no chart and asks nothing of the user.
def test_the_scaling_chart_of_a_cpu_run_draws_without_a_legend_warning(tmp_path):
    from tebench.report import charts, load, tables

    lines = CPU.read_text().splitlines()
    extra = []
    for line in lines[1:]:
        rec = json.loads(line)
        if rec.get("case_id", "").startswith("gpt/tiny/") and rec.get("status") == "ok":
            rec["case_id"] = rec["case_id"].replace("gpt/tiny/", "gpt/tiny2/")
            rec["case"]["size"] = "tiny2"
            rec["case"]["dims"]["d_model"] = 128
            rec["throughput"]["flops_per_step"] *= 3
            extra.append(json.dumps(rec))
    assert extra and all(json.loads(e)["throughput"]["mfu"] is None for e in extra)
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines + extra) + "\n")
    df = tables.case_frame(load.load_all([path]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = charts.scaling(df)
    assert fig is not None
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends and {t.get_text() for t in legends[0].get_texts()} >= {"PT-FP32"}


# internal error (exit 70): judged again under the equivalence rule, a case whose loss curve holds a non-finite
# value fails with no margin, and an assertion wanted one to judge its validation with.
@pytest.mark.parametrize("where", [0, -1])
def test_a_non_finite_loss_judged_again_fails_without_an_internal_error(tmp_path, capsys, where):
    from conftest import ROOT, read_jsonl
    from tebench.store.writer import Writer

    records = read_jsonl(ROOT / "reports" / "h200-nightly-twice" / "night1.jsonl.gz")
    tutorial = [r for r in records[1:] if r["case_id"].startswith("gpt/tutorial/")]
    amp = next(r for r in tutorial if r["case_id"] == "gpt/tutorial/PT-AMP")
    assert amp["validation"] and amp["parity"]["verdict"] == "pass"
    amp["loss"]["per_step"][where] = float("inf")
    path = tmp_path / "nonfinite.jsonl"
    with Writer(path, durable=False) as out:  # as the writer stores it: null, and a non_finite note
        for r in [records[0], *tutorial]:
            out.append(r)
    assert cli.main(["merge", str(path), "--out", str(tmp_path / "m"), "--no-report", "--rejudge"]) == 0
    merged = {r.get("case_id"): r for r in read_jsonl(tmp_path / "m" / "results.jsonl")}
    verdict = merged["gpt/tutorial/PT-AMP"]["parity"]
    assert verdict["verdict"] == "fail" and verdict["reason"] == "the loss is not finite"
    assert "internal error" not in capsys.readouterr().err


# internal error (exit 70): a reference record whose loss curve is empty (its twins kept) crashed the equivalence
# rule reading its first loss, in report, compare and history add alike.
def test_a_reference_with_no_loss_is_judged_without_an_internal_error(tmp_path, capsys):
    from conftest import ROOT, read_jsonl
    from tebench.store.writer import Writer

    records = read_jsonl(ROOT / "reports" / "h100-nightly-87e902b" / "night1.jsonl.gz")
    llama = [r for r in records[1:] if r["case_id"].startswith("llama/d4096-l4/")]
    ref = next(r for r in llama if r["case_id"] == "llama/d4096-l4/PT-AMP")
    assert ref["loss"]["twins"]
    ref["loss"]["per_step"] = []
    path = tmp_path / "empty-reference.jsonl"
    with Writer(path, durable=False) as out:
        for r in [records[0], *llama]:
            out.append(r)
    assert cli.main(["merge", str(path), "--out", str(tmp_path / "m"), "--no-report", "--rejudge"]) == 0
    merged = {r.get("case_id"): r for r in read_jsonl(tmp_path / "m" / "results.jsonl")}
    assert merged["llama/d4096-l4/PT-AMP"]["parity"]["verdict"] == "reference"
    assert "it recorded no loss" in merged["llama/d4096-l4/PT-AMP"]["parity"]["reason"]
    assert merged["llama/d4096-l4/TE-BF16"]["parity"]["verdict"] == "inconclusive"
    assert "internal error" not in capsys.readouterr().err
