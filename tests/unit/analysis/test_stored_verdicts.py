"""Stored parity verdicts are read, not judged again: only a verdict of other rules (or none) is judged,
unless --rejudge asks; a changed verdict is said once per run."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from conftest import FIXTURES, read_jsonl, write_jsonl
from tebench import cli
from tebench.analysis import parity, judged_run
from tebench.cli import build_parser
from tebench.run import merge
from tebench.store import reader as results

CROSSOVER = FIXTURES / "h200-crossover.jsonl"
"""An H200 run stored before the rules were recorded: judged again, 4 of its 18 verdicts change."""


class Judged(Exception):
    """Raised by a judge that must not run."""


def _no_judging(monkeypatch: pytest.MonkeyPatch) -> None:
    def judge(*args, **kwargs):
        raise Judged("judged again")

    monkeypatch.setattr(parity, "judge", judge)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Judge as before, and note the case id of every record judged."""
    judged: list[str] = []
    real = parity.judge

    def judge(records, record, cache=None):
        judged.append(record.case_id)
        return real(records, record, cache)

    monkeypatch.setattr(parity, "judge", judge)
    return judged


def _judged_file(tmp_path: Path, rules: str | None = parity.PARITY_RULES) -> Path:
    """The crossover run with every judgeable record's verdict judged over the run by ``rules``
    (no ``rules`` key when None), written as a results file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = judged_run.read(CROSSOVER)
    by_id = {(c.case_id, c.round_no): c for c in run.cases}
    lines = read_jsonl(CROSSOVER)
    for line in lines:
        rec = by_id.get((line.get("case_id"), line.get("round")))
        if line.get("type") == "case" and rec is not None and rec.parity is not None:
            line["parity"] = {k: v for k, v in rec.parity.to_dict().items() if k != "rules"}
            if rules is not None:
                line["parity"]["rules"] = rules
    return write_jsonl(tmp_path / "results.jsonl", lines)


def _verdicts(run: results.Run) -> dict[tuple[str, int], str | None]:
    return {(c.case_id, c.round_no): c.parity.verdict if c.parity else None for c in run.cases}


def test_a_verdict_of_the_current_rules_is_read_as_stored(tmp_path, monkeypatch):
    path = _judged_file(tmp_path)
    _no_judging(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing judged again: no notice either
        run = judged_run.read(path)
    assert {c.parity.rules for c in run.cases if c.parity is not None} == {parity.PARITY_RULES}
    assert sum(v == "fail" for v in _verdicts(run).values()) > 0


def test_a_stored_verdict_of_the_current_rules_wins_over_the_curves(tmp_path, monkeypatch):
    lines = read_jsonl(_judged_file(tmp_path))
    case = next(line for line in lines if (line.get("parity") or {}).get("verdict") == "pass")
    case["parity"]["verdict"] = "fail"  # not what its curve says: proves the stored verdict is what is shown
    path = write_jsonl(tmp_path / "edited.jsonl", lines)
    run = judged_run.read(path)
    assert _verdicts(run)[(case["case_id"], case["round"])] == "fail"
    # --rejudge judges it from the curve, and says that it changed and why.
    with pytest.warns(UserWarning, match=judged_run.REJUDGED) as caught:
        run = judged_run.read(path, rejudge=True)
    assert _verdicts(run)[(case["case_id"], case["round"])] == "pass"
    message = str(caught[0].message)
    assert "--rejudge" in message and "1 of" in message and case["case_id"] in message


@pytest.mark.parametrize("rules", [None, "parity-0"])
def test_a_verdict_without_or_with_other_rules_is_judged_again(tmp_path, monkeypatch, rules):
    path = _judged_file(tmp_path, rules)
    judged = _counting(monkeypatch)
    run = judged_run.read(path)
    judgeable = [c for c in run.cases if parity.judgeable(c)]
    assert judgeable and len(judged) == len(judgeable)
    assert {c.parity.rules for c in judgeable if c.parity is not None} == {parity.PARITY_RULES}


def test_rejudge_judges_every_verdict(tmp_path, monkeypatch):
    path = _judged_file(tmp_path)
    _no_judging(monkeypatch)
    with pytest.raises(Judged):
        judged_run.read(path, rejudge=True)
    with pytest.raises(Judged):
        judged_run.runs_in(path, rejudge=True)


def test_only_the_stale_records_are_judged_against_all_references(tmp_path, monkeypatch):
    lines = read_jsonl(_judged_file(tmp_path))
    stale = next(line for line in lines if (line.get("parity") or {}).get("verdict") == "fail")
    del stale["parity"]["rules"]
    path = write_jsonl(tmp_path / "one-stale.jsonl", lines)
    judged = _counting(monkeypatch)
    run = judged_run.read(path)
    assert judged == [stale["case_id"]]
    assert _verdicts(run)[(stale["case_id"], stale["round"])] == "fail"


def test_a_changed_verdict_is_said_once_per_run_with_its_cause():
    with pytest.warns(UserWarning, match=judged_run.REJUDGED) as caught:
        judged_run.read(CROSSOVER)
    notices = [w for w in caught if judged_run.REJUDGED in str(w.message)]
    assert len(notices) == 1
    message = str(notices[0].message)
    assert "4 of 18" in message and parity.PARITY_RULES in message and str(CROSSOVER) in message


def test_an_unchanged_verdict_is_not_announced(tmp_path):
    path = _judged_file(tmp_path, None)  # no rules, but judged by these: judging again changes nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        judged_run.read(path)


@pytest.mark.parametrize("command", [
    ["report", "r.jsonl", "--out", "o"],
    ["compare", "a.jsonl", "b.jsonl"],
    ["merge", "a.jsonl", "--out", "o"],
    ["history", "add", "r.jsonl", "--db", "h.db"],
])
def test_every_command_that_reads_judged_runs_takes_rejudge(command):
    parser = build_parser()
    assert parser.parse_args(command).rejudge is False
    assert parser.parse_args([*command, "--rejudge"]).rejudge is True


def _merge(tmp_path: Path, shards: list[Path], *flags: str) -> list[dict]:
    out = tmp_path / "merged"
    assert cli.main(["merge", *map(str, shards), "--out", str(out), "--no-report", *flags]) == 0
    return read_jsonl(out / "results.jsonl")


def test_merge_of_one_file_keeps_its_verdicts_of_the_current_rules(tmp_path, monkeypatch):
    path = _judged_file(tmp_path)
    _no_judging(monkeypatch)
    merged = _merge(tmp_path, [path])
    stored = {(r["case_id"], r["round"]): r.get("parity") for r in read_jsonl(path) if r.get("type") == "case"}
    assert {(r["case_id"], r["round"]): r.get("parity") for r in merged if r.get("type") == "case"} == stored
    with pytest.raises(Judged):
        merge.join([path], tmp_path / "again", rejudge=True)


def test_merge_of_shards_judges_over_all_of_them_and_records_the_rules(tmp_path, monkeypatch):
    lines = read_jsonl(CROSSOVER)
    header, cases = lines[0], [line for line in lines[1:] if line.get("type") == "case"]
    half = len(cases) // 2
    shards = []
    for i, part in enumerate((cases[:half], cases[half:]), 1):
        head = {**header, "run_id": f"s{i}", "shard": [i, 2], "case_ids": [c["case_id"] for c in part]}
        shards.append(write_jsonl(tmp_path / f"s{i}.jsonl", [head, *({**c, "run_id": f"s{i}"} for c in part)]))
    judged = _counting(monkeypatch)
    merged = [r for r in _merge(tmp_path, shards) if r.get("type") == "case"]
    judgeable = [r for r in merged if r.get("loss") and r.get("status") in ("ok", "diverged")]
    assert judgeable and len(judged) == len(judgeable)
    assert {json.dumps(r["parity"].get("rules")) for r in judgeable} == {json.dumps(parity.PARITY_RULES)}
    # Records no judge looked at are copied without rules.
    assert all("rules" not in (r.get("parity") or {}) for r in merged if r not in judgeable)


def test_a_merge_of_shards_says_why_it_judged_again_without_naming_an_option_not_given(tmp_path):
    lines = read_jsonl(CROSSOVER)
    header, cases = lines[0], [line for line in lines[1:] if line.get("type") == "case"]
    # Shard 2 holds no reference, so its stored verdicts are n/a; the merge judges them against shard 1's.
    refs = [c for c in cases if c["case"]["mode"] == "PT-FP32"]
    rest = [{**c, "parity": {"verdict": "n/a", "reason": "no reference in this shard"}}
            for c in cases if c["case"]["mode"] != "PT-FP32"]
    shards = []
    for i, part in enumerate((refs, rest), 1):
        head = {**header, "run_id": f"s{i}", "shard": [i, 2], "case_ids": [c["case_id"] for c in part]}
        shards.append(write_jsonl(tmp_path / f"s{i}.jsonl", [head, *({**c, "run_id": f"s{i}"} for c in part)]))
    with pytest.warns(UserWarning, match=judged_run.REJUDGED) as caught:
        merge.join(shards, tmp_path / "merged")
    message = next(str(w.message) for w in caught if judged_run.REJUDGED in str(w.message))
    assert "a merge of shards" in message and "--rejudge" not in message
    with pytest.warns(UserWarning, match=judged_run.REJUDGED) as caught:
        merge.join(shards, tmp_path / "again", rejudge=True)
    assert any("(--rejudge)" in str(w.message) for w in caught)


@pytest.mark.parametrize("word", ["PASS", "bogus", ""])
def test_a_stored_word_that_is_no_verdict_is_judged_again_and_named(tmp_path, monkeypatch, word):
    """Stored with this tebench's rules but as no verdict ("PASS", a hand edit): counted as neither a pass nor a
    fail, and compare said nothing of it. It is judged again from its curve, alone, and the notice names the word."""
    lines = read_jsonl(_judged_file(tmp_path))
    case = next(line for line in lines if (line.get("parity") or {}).get("verdict") == "pass")
    case["parity"]["verdict"] = word
    path = write_jsonl(tmp_path / "word.jsonl", lines)
    judged = _counting(monkeypatch)
    with pytest.warns(UserWarning, match=judged_run.REJUDGED) as caught:
        run = judged_run.read(path)
    assert judged == [case["case_id"]]
    assert _verdicts(run)[(case["case_id"], case["round"])] == "pass"
    assert f"as no verdict ({word!r})" in str(caught[0].message)
