"""Energy columns in the case table: shown where a run measured energy, absent where it did not."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import unsaid
from tebench import report

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "h200-torchao-d2048.jsonl"


def _with_energy(tmp_path: Path) -> Path:
    lines = []
    for line in FIXTURE.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "case" and rec.get("status") == "ok":
            rec["energy"] = {"method": "counter", "energy_j": 30.0, "j_per_step": 2.5, "tokens_per_j": 6553.6,
                             "steps": 12, "avg_power_w": 690.0, "reason_share": {"power_cap": 0.9},
                             "sm_clock_mhz": {"p10": 1400.0, "p50": 1600.0, "p90": 1700.0}}
        lines.append(json.dumps(rec))
    out = tmp_path / "energy.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def test_a_run_with_energy_shows_joules_tokens_per_joule_and_the_power_cap(tmp_path):
    md = (report.render([_with_energy(tmp_path)], tmp_path / "rep") / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| case |") and "step ms (median)" in line)
    for heading in ("J/step", "tokens/J", "power W", "at power cap", "SM MHz (p50)"):
        assert heading in header, heading
    assert "| 6,554 |" in md and "| 90.0% |" in md


def test_a_run_without_energy_keeps_its_table(tmp_path):
    md = (report.render([FIXTURE], tmp_path / "rep") / "report.md").read_text()
    assert "J/step" not in md and "tokens/J" not in md


def test_energy_per_token_sentence_and_the_throttle_flag(tmp_path):
    path = _with_energy(tmp_path)
    lines = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "case" and rec.get("energy") and rec["case"]["mode"] in ("TE-FP8", "AO-FP8"):
            rec["energy"].update(tokens_per_j=9000.0, avg_power_w=640.0,
                                 reason_share={"power_cap": 0.2, "thermal": 0.3})
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")
    out = report.render([path], tmp_path / "rep")
    md, html = (out / "report.md").read_text(), (out / "index.html").read_text()
    # 6553.6 tokens/J for PT-AMP against 9000 for the FP8 case that counts (AO-FP8: TE-FP8 fails parity in
    # this fixture, so it never backs the claim): 27% less energy per token.
    claim = next((line for line in md.splitlines() if "less energy per token" in line), "")
    assert unsaid(claim, "AO-FP8/tensorwise", "27% less energy", "PT-AMP") == [], claim
    assert unsaid(html, "27% less energy", "per token") == [] and "TE-FP8/delayed.HYBRID.h1024.max uses" not in md
    assert "thermal 30%" in md  # the throttle flag
    assert "power cap 90%" in md  # PT-AMP at its cap 90% of the time


def test_each_machines_power_limit_is_stated_and_a_difference_named(tmp_path):
    a = _with_energy(tmp_path)
    b = tmp_path / "b.jsonl"
    lines = []
    for line in a.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("energy"):
            rec["energy"]["power_limit_w"] = 500.0
        lines.append(json.dumps(rec))
    b.write_text("\n".join(lines) + "\n")
    for rec_path in (a,):
        text = rec_path.read_text().replace('"avg_power_w": 690.0', '"avg_power_w": 690.0, "power_limit_w": 700.0')
        rec_path.write_text(text)
    from tebench.report import tables
    from tebench.report.load import load_all

    sources = load_all([a, b])
    words = tables.power_limits(tables.case_frame(sources))
    assert f"{sources[0].label}: 700 W" in words and f"{sources[1].label}: 500 W" in words
    assert "not like for like" in words
    one = tables.power_limits(tables.case_frame(sources[:1]))
    assert unsaid(one, "Power limit", f"{sources[0].label}: 700 W") == [] and "not like for like" not in one, one


def _second_gpu(tmp_path: Path, first: Path, limit_w: float, tokens_per_j: float) -> Path:
    """The same run as from another GPU: another name, another power limit, 80% of the step time."""
    lines = []
    for line in first.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "header":
            for gpu in rec["env"].get("gpus") or []:
                gpu["name"] = "NVIDIA Other GPU"
        if rec.get("type") == "case" and rec.get("energy"):
            rec["energy"].update(tokens_per_j=tokens_per_j, power_limit_w=limit_w)
            rec["timing"]["samples_ms"] = [s * 0.8 for s in rec["timing"]["samples_ms"]]
        lines.append(json.dumps(rec))
    out = tmp_path / "other.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def test_machines_side_by_side_show_tokens_per_joule_and_each_side_s_power_limit(tmp_path):
    first = _with_energy(tmp_path)
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    for rec in lines:
        if rec.get("type") == "case" and rec.get("energy"):
            rec["energy"]["power_limit_w"] = 700.0
    first.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    second = _second_gpu(tmp_path, first, 1000.0, 5000.0)
    md = (report.render([first, second], tmp_path / "rep") / "report.md").read_text()
    section = md[md.index("Machines side by side"):]
    header = next(line for line in section.splitlines() if line.startswith("| case |"))
    assert header.count("tokens/J") == 3, header  # each side's, and the ratio
    row = next(line for line in section.splitlines() if line.startswith("| gpt/"))
    assert "| 6,554 |" in row or "| 6554 |" in row, row
    assert "×0.76 |" in row, row  # 5000 / 6553.6 tokens per joule
    assert "700 W" in md and "1000 W" in md and "not like for like" in md
