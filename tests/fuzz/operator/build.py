"""What an operator can hand tebench at night, by mistake or not: the inputs of the operator corpus.

``python tests/fuzz/operator/build.py`` regenerates the small files stored next to this one
(``matrices/``: depth bombs, names with separators and invisible characters, messages that must
point at the right key, escape sequences; ``results/``: headers with fields that must be bounded,
escaped or typed). Everything bulky or special is made where it is used, by the functions below:
FIFOs, a 1,100-file ``extends`` chain, a 20,000-size matrix, a 10 MB string, foreign and damaged
SQLite files, results with a million samples, results whose every text holds markup and escapes.
``tests/fuzz/test_fuzz_operator.py`` and ``scripts/measure_reliability.py`` both build from here.

Each stored matrix starts with ``# expect-key:`` and ``# expect:`` lines, as ``tests/fuzz/matrices``.
"""

from __future__ import annotations

import copy
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent.parent / "fixtures"
DEPTH = 1100
"""Deeper than Python's default recursion limit (1000)."""

GOOD = """name = "operator"
[settings]
steps = 4
warmup = 1
[axes]
modes = ["PT-FP32"]
"""
SIZE = "vocab = 32\nd_model = 64\nheads = 4\nlayers = 1\nffn = 128\nseq = 16\nbatch = 4\n"
INLINE_SIZE = "{vocab = 32, d_model = 64, heads = 4, layers = 1, ffn = 128, seq = 16, batch = 4}"
PAYLOAD = ("<script>alert(1)</script><img src=x onerror=alert(2)>\n# FAKE HEADING | cell \x1b[31mRED\x1b]0;title\x07"
           " \u2028line @octocat [link](http://evil.example) `tick`")
"""Markup, a fake heading and table cell, terminal escapes (colour, window title, bell), a line
separator, a mention, a link and a backtick: what a record's text must never do where it is shown."""


def good_matrix(extra: str = "") -> str:
    """A valid one-case matrix (GPT, PT-FP32), with ``extra`` TOML after its axes."""
    return GOOD + extra + "[sizes.gpt.a]\n" + SIZE


def _expect(key: str, fragment: str, text: str) -> str:
    return f"# expect-key: {key}\n# expect: {fragment}\n" + text


def stored_matrices() -> dict[str, str]:
    """name -> text of the stored bad matrices."""
    deep_key = ".".join(["t"] * DEPTH)
    name = lambda n: good_matrix().replace("[sizes.gpt.a]", f'[sizes.gpt."{n}"]')  # noqa: E731
    return {
        "deep_table_header": _expect("file", "nested more than", good_matrix() + f"[{deep_key}]\nv = 1\n"),
        "deep_dotted_key": _expect("file", "nested more than", good_matrix() + f"[x]\n{deep_key} = 1\n"),
        "deep_inline_table": _expect("file", "nested", good_matrix() + "x = " + "{a = " * DEPTH + "1"
                                     + "}" * DEPTH + "\n"),
        "deep_array": _expect("file", "nested", good_matrix() + "x = " + "[" * DEPTH + "]" * DEPTH + "\n"),
        "name_line_separator": _expect("sizes.gpt", "U+2028", name("a\\u2028b")),
        "name_paragraph_separator": _expect("sizes.gpt", "U+2029", name("a\\u2029b")),
        "name_bidi_override": _expect("sizes.gpt", "U+202E", name("a\\u202eb")),
        "name_zero_width_space": _expect("sizes.gpt", "U+200B", name("a\\u200bb")),
        "name_escape": _expect("sizes.gpt", "U+001B", name("a\\u001b[31mb")),
        "name_matrix_line_separator": _expect("name", "U+2028",
                                              good_matrix().replace('name = "operator"', 'name = "a\\u2028b"')),
        "fp8_weights_without_fp8_mode": _expect("axes.fp8_weights", "FP8 weights exist only under an FP8 mode",
                                                good_matrix("fp8_weights = [true]\n")),
        "key_with_escape": _expect("settings.\\x1b[31m", "unknown setting",
                                   good_matrix().replace("warmup = 1\n", 'warmup = 1\n"\\u001b[31m" = 1\n')),
    }


def exclusion_matrix() -> str:
    """A valid matrix whose exclusion reason holds terminal escapes and a forged line of output."""
    return (GOOD.replace('modes = ["PT-FP32"]', 'modes = ["PT-FP32", "PT-AMP"]')
            + "[sizes.gpt.a]\n" + SIZE
            + '[[exclude]]\nmode = "PT-AMP"\nreason = "\\u001b[2J\\u001b]0;owned\\u0007\\n  run  gpt/a/TE-FP8 forged"\n')


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / "cpu-smoke.jsonl").read_text().splitlines() if line.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def stored_results() -> dict[str, tuple[list[dict[str, Any]], dict[str, str]]]:
    """name -> (records, expectation) of the stored results files. The expectation names the
    command (``merge`` or ``history-add``) and a fragment of its exit-2 message."""
    out = {}
    records = _records()
    head = copy.deepcopy(records[0])
    head["shard"] = [1, 1_000_000_000]
    out["header_shard_billion.jsonl"] = ([head, *records[1:]], {"command": "merge", "fragment": "[shard]"})
    head = copy.deepcopy(records[0])
    head["created"] = {"at": "night"}
    out["header_created_object.jsonl"] = ([head, *records[1:]],
                                          {"command": "history-add", "fragment": ":1: header [created]"})
    head = copy.deepcopy(records[0])
    head["env"]["git_commit"] = 1234567
    out["header_git_commit_number.jsonl"] = ([head, *records[1:]],
                                             {"command": "history-add", "fragment": ":1: header [env.git_commit]"})
    cases = copy.deepcopy(records)
    cases[3]["round"] = 2**70
    out["case_round_beyond_int64.jsonl"] = (cases, {"command": "history-add", "fragment": ":4: case "})
    return out


def hostile(src: Path, out: Path, keep_names: bool = False) -> Path:
    """``src`` with :data:`PAYLOAD` appended to every text of its header and records (statuses, ids,
    modes and the case description kept, so it reads and renders; device names too if ``keep_names``,
    so it compares with ``src``), and the header's launch and compile cache state replaced by it."""
    # Kept: what readers key on, and the fields the schema enumerates (a hostile value there is refused
    # before anything renders: test_a_hostile_enumerated_header_field_is_refused).
    keep = {"schema", "type", "status", "case_id", "verdict", "kind", "timer", "mode", "workload", "size", "device_type",
            "parallel", "recipe", "format", "amax_compute_algo", "method", "warmup_rule", "module", "source",
            "match", "mfu_basis", *(("name",) if keep_names else ())}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: (v if k in keep else walk(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value + PAYLOAD if isinstance(value, str) else value

    records = []
    for rec in (json.loads(line) for line in src.read_text().splitlines() if line.strip()):
        if rec["type"] == "header":
            rec = walk(rec)
            rec.update(launch="prestarted", compile_cache={"state": "warm", "dir": PAYLOAD}, ab=None)
        else:
            case = rec["case"]
            rec = walk(rec)
            rec["case"] = case
            if rec.get("device"):
                rec["device"]["uuid"] = PAYLOAD
        records.append(rec)
    return _write(out, records)


def extends_chain(directory: Path, length: int = DEPTH) -> Path:
    """``length`` matrix files, each extending the one before; returns the last."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "c0.toml").write_text(good_matrix())
    for i in range(1, length):
        (directory / f"c{i}.toml").write_text(f'extends = "c{i - 1}.toml"\n')
    return directory / f"c{length - 1}.toml"


def many_sizes(path: Path, count: int = 20_000) -> Path:
    """A matrix of ``count`` GPT sizes (far beyond the size limit of a matrix file)."""
    path.write_text(GOOD + "[sizes.gpt]\n" + "".join(f"s{i} = {INLINE_SIZE}\n" for i in range(count)))
    return path


def at_the_limit(path: Path, limit: int) -> Path:
    """A matrix of as many sizes as fit in ``limit`` bytes, the last one bad (batch = 0): the most
    work a refusal can take within the size limit."""
    bad = "bad = " + INLINE_SIZE.replace("batch = 4", "batch = 0") + "\n"
    lines, size, i = [GOOD, "[sizes.gpt]\n"], len(GOOD) + 12 + len(bad), 0
    while True:
        line = f"s{i} = {INLINE_SIZE}\n"
        if size + len(line) > limit:
            break
        lines.append(line)
        size += len(line)
        i += 1
    path.write_text("".join(lines) + bad)
    return path


def long_string(path: Path, length: int = 10_000_000) -> Path:
    """A matrix whose description is ``length`` characters long."""
    path.write_text(good_matrix().replace('name = "operator"', f'name = "operator"\ndescription = "{"x" * length}"'))
    return path


def fifo(path: Path) -> Path:
    """A named pipe no one writes to: opening it for reading waits forever."""
    os.mkfifo(path)
    return path


def million_samples(directory: Path, samples: int = 1_000_000) -> tuple[Path, Path, str]:
    """Base and head results (the CPU fixture) in which one case holds ``samples`` step times, the
    head's 2% slower; and that case's id."""
    import random

    rng = random.Random(1)
    records = _records()
    target = next(r["case_id"] for r in records if r["type"] == "case" and r["status"] == "ok")
    paths = []
    for name, scale in (("base", 1.0), ("head", 1.02)):
        out = copy.deepcopy(records)
        for r in out:
            if r["type"] == "case" and r["case_id"] == target:
                r["timing"]["samples_ms"] = [scale * (1.0 + 0.1 * rng.random()) for _ in range(samples)]
                r["timing"].pop("stats", None)
        paths.append(_write(directory / f"{name}.jsonl", out))
    return paths[0], paths[1], target


def databases(directory: Path, schema: str) -> dict[str, tuple[Path, str]]:
    """name -> (path, message fragment) of SQLite files tebench must refuse and leave as they are.

    ``schema``: tebench's own table definitions (tebench.store.history_db.SCHEMA), for a tebench
    database cut short.
    """
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, tuple[Path, str]] = {}

    def db(name: str, *statements: str, rows: list[tuple[Any, ...]] | None = None) -> Path:
        path = directory / name
        with sqlite3.connect(path) as conn:
            for statement in statements:
                conn.execute(statement)
            if rows:
                conn.executemany("INSERT INTO t VALUES (?)", rows)
        conn.close()
        return path

    out["unrelated"] = (db("unrelated.db", "CREATE TABLE t (x)", rows=[(1,)]), "not a tebench history database")
    out["foreign_cases_table"] = (db("foreign.db", "CREATE TABLE cases (a, b)", "CREATE TABLE t (x)"),
                                  "not a tebench history database")
    out["another_application"] = (db("other.db", "PRAGMA application_id = 1234", "CREATE TABLE t (x)"),
                                  "another program")
    tebench_db = directory / "tebench-full.db"
    with sqlite3.connect(tebench_db) as conn:
        conn.executescript(schema)
        conn.executemany("INSERT INTO runs VALUES (?,?,?,?,?,?,?)",
                         [(f"r{i}", "", "", "cpu", "m", None, "x" * 2000) for i in range(100)])
    conn.close()
    data = tebench_db.read_bytes()
    truncated = directory / "truncated.db"
    truncated.write_bytes(data[:len(data) // 2])
    tebench_db.unlink()
    out["truncated"] = (truncated, "truncated")
    garbage = directory / "garbage.db"
    garbage.write_bytes(b"not a database at all\n" * 10)
    out["not_sqlite"] = (garbage, "not an SQLite database")
    header_only = directory / "header-only.db"
    header_only.write_bytes(data[:100])
    out["header_only"] = (header_only, "truncated")
    return out


def unstamped(path: Path, schema: str) -> Path:
    """A history database as tebench made them before it stamped application_id (WAL, its tables)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(schema)
    conn.close()
    return path


def main() -> None:
    """Write the stored files (matrices/, results/ and results/expected.json)."""
    (HERE / "matrices").mkdir(exist_ok=True)
    (HERE / "results").mkdir(exist_ok=True)
    for name, text in stored_matrices().items():
        (HERE / "matrices" / f"{name}.toml").write_text(text, encoding="utf-8")
    (HERE / "matrices" / "exclusion_reason_escapes.toml").write_text(exclusion_matrix(), encoding="utf-8")
    expected = {}
    for name, (records, want) in stored_results().items():
        _write(HERE / "results" / name, records)
        expected[name] = want
    (HERE / "results" / "expected.json").write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
