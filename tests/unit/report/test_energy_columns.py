"""Energy columns in the case table: shown where a run measured energy, absent where it did not."""

from __future__ import annotations

import json
from pathlib import Path

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
