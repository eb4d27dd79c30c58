"""Every count of docs/findings/data-path.md, printed one per line, for a tebench tree (default: this checkout).

    .venv/bin/python scripts/data-path/count.py [ROOT] [--no-tools]

ROOT may be an exported older tree (git archive <sha> tebench tests pyproject.toml tox.ini templates benchmarks
scripts docs | tar -x -C DIR): the same counts then say what they were at that commit. --no-tools leaves out what
runs a program (pytest's collection, ruff, the runtime checks that import tebench). Reads only; writes nothing
under ROOT (bytecode writing is off for the subprocesses).
"""

from __future__ import annotations

import ast
import collections
import configparser
import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import env_keys  # noqa: E402
import importers  # noqa: E402
import limits  # noqa: E402
import sentence_asserts  # noqa: E402
import test_helpers  # noqa: E402
import test_only  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
ROOT = pathlib.Path(args[0] if args else str(pathlib.Path(__file__).resolve().parents[2])).resolve()
TOOLS = "--no-tools" not in sys.argv
PY = sys.executable
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT)}
PLAIN = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}  # pytest as a user runs it: nothing added to the path
for mod in (env_keys, importers, limits, sentence_asserts, test_helpers, test_only):
    mod.ROOT = ROOT


def out(section: str, what: str, value: object) -> None:
    print(f"[{section}] {what}: {value}")


def py_files(folder: str = "tebench"):
    for path in sorted((ROOT / folder).rglob("*.py")):
        try:
            yield path, ast.parse(path.read_text())
        except SyntaxError:
            continue


def classes(names: set[str]) -> list[str]:
    found = []
    for path, tree in py_files():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in names:
                found.append(f"{node.name} ({path.relative_to(ROOT / 'tebench')})")
    return sorted(found)


def grep(pattern: str, folder: str = "tebench", exts: tuple[str, ...] = (".py",)) -> list[str]:
    rx = re.compile(pattern)
    hits = []
    for path in sorted((ROOT / folder).rglob("*")):
        if path.suffix in exts and path.is_file():
            for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if rx.search(line):
                    hits.append(f"{path.relative_to(ROOT)}:{i}")
    return hits


def run(cmd: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, env=ENV if env is None else env, capture_output=True, text=True, timeout=600)


print(f"ROOT {ROOT}")

# --- One concept, several shapes ------------------------------------------------------------------------------
S = "shapes"
out(S, "case types defined (Case, CaseInfo)", classes({"Case", "CaseInfo"}))
out(S, "`X.from_dict(y.to_dict())` conversions in tebench/", grep(r"from_dict\([a-z_.]*\.to_dict\(\)\)"))
out(S, "FP8 option types defined (FP8AxisValue, FP8Options, FP8Info)", classes({"FP8AxisValue", "FP8Options", "FP8Info"}))
out(S, "FP8AxisValue(...) instantiations in tebench/ and tests/",
    len(grep(r"FP8AxisValue\(") + grep(r"FP8AxisValue\(", "tests")) - len(grep(r"class FP8AxisValue\(")))
out(S, "run types defined (Run, RunRecords, JudgedRun)", classes({"Run", "RunRecords", "JudgedRun"}))
out(S, "per-case views over rounds (CaseRounds, compare.Side, report CaseRow, answer Pick)",
    classes({"CaseRounds", "Side", "CaseRow", "Pick"}))
out(S, "Exclusion types (one concept, two classes)", classes({"Exclusion"}))
knob, model = limits.scan()
out(S, "knob(min/max) fields (schema/knobs.py framework)", sum(map(len, knob.values())))
out(S, "record-model fields with ge/le/gt/lt or Limits (pydantic)", sum(map(len, model.values())))
out(S, "field names limited in both (by name; steps and reference_twins are different fields)", sorted(set(knob) & set(model)))
out(S, "median functions defined (def *median*)", grep(r"def [a-z_]*median"))
for pat, label in ((r"np\.median\(", "np.median( call sites"), (r"statistics\.median\(", "statistics.median( sites"),
                   (r"\.median\(\)", "pandas .median() sites"), (r"\brow_medians\(", "row_medians( sites incl. def")):
    hits = grep(pat)
    out(S, label, f"{len(hits)} {dict(collections.Counter(h.split(':')[0] for h in hits))}")
out(S, "'last bit' phrases about medians in tebench/", grep(r"(differ|may differ).*last bit"))
sites = list(env_keys.sites())
by_file = collections.Counter(str(p) for p, _, _, _ in sites)
out(S, "string-key reads on an object named *env* (env_keys.py, process environments excluded)",
    f"{len(sites)} {dict(by_file)}")
out(S, "  of which report/load.py (pytest-benchmark JSON, before it is an Environment)",
    by_file.get("tebench/report/load.py", 0))
out(S, "  of which on compare's environment digest (dict[str, Any]: compare.py, compare_markdown.py)",
    by_file.get("tebench/analysis/compare.py", 0) + by_file.get("tebench/report/compare_markdown.py", 0))
out(S, "Environment class (schema/environment.py) and RunHeader.env annotation",
    (classes({"Environment"}), grep(r"^\s+env: Environment", "tebench/schema")))
out(S, "CPU device-name rule written (f\"CPU (...\")", grep(r"f\"CPU \(|f'CPU \("))
out(S, "'CPU (None)' / other CPU device spellings ('\"cpu\"' as a device name)",
    grep(r"CPU \(None\)") + grep(r"\"name\":.*else \"cpu\""))

# --- Round trips ----------------------------------------------------------------------------------------------
S = "round trips"
out(S, "Measurements.from_dict / .check calls in tebench/run/", grep(r"Measurements\.(from_dict|check)\(", "tebench/run"))
out(S, "stored verdict taken as it is when rules == PARITY_RULES (judged_run.judge_parity's filter)",
    grep(r"rejudge or not parity_rules\.current\(r\)"))
out(S, "PARITY_RULES", grep(r"^PARITY_RULES = "))
out(S, "answer.py calls of tables._private", grep(r"tables\._[a-z]", "tebench/report"))
out(S, "jinja2.Environment( constructions", grep(r"jinja2\.Environment\("))

# --- Records on pydantic internals ----------------------------------------------------------------------------
S = "pydantic"
out(S, "schema/model.py exists", (ROOT / "tebench/schema/model.py").exists())
out(S, "__pydantic_* names other than the __get_pydantic_core_schema__ hook",
    [h for h in grep(r"__pydantic_[a-z_]+__") if "__get_pydantic_core_schema__" not in
     pathlib.Path(ROOT / h.split(":")[0]).read_text().splitlines()[int(h.split(":")[1]) - 1]])
out(S, "__get_pydantic_core_schema__ hooks defined", len(grep(r"def __get_pydantic_core_schema__")))
out(S, "core-schema edits (Limits._push writes bounds into the generated schema)", grep(r"schema\[key\] = "))
out(S, "object.__setattr__ on a part / __dict__ comparisons",
    (grep(r"object\.__setattr__\(self"), grep(r"self\.__dict__")))
out(S, "pydantic requirement in pyproject.toml", grep(r"\"pydantic[>=<]", ".", (".toml",)) and
    [line.strip() for line in (ROOT / "pyproject.toml").read_text().splitlines() if line.strip().startswith('"pydantic')])

# --- Names and leftovers --------------------------------------------------------------------------------------
S = "names"
out(S, "modules named records.py", [str(p.relative_to(ROOT)) for p in (ROOT / "tebench").rglob("records.py")])
for f in ("tebench/schema/model.py", "tebench/heap.py", "tebench/cli/common.py", "tebench/gc_control.py",
          "tebench/cpus.py", "tebench/errors.py", "tebench/cli/exit_codes.py", "tebench/report/jinja_env.py"):
    out(S, f"{f} exists", (ROOT / f).exists())
cli_helpers = {}
for name in ("usage", "paths", "matrix_args", "thresholds", "verdict_args", "gate_args", "output", "run_args"):
    p = ROOT / f"tebench/cli/{name}.py"
    if p.exists():
        cli_helpers[name] = sum(isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in ast.parse(p.read_text()).body)
out(S, "cli modules that took cli/common.py's helpers: top-level defs/classes each", cli_helpers)
found = importers.importers("tebench.plan.environment", ROOT)
out(S, "modules importing tebench.plan.environment", f"{len(found)} {[str(p) for p, _ in found]}")
out(S, "report/pool.py's imports from tebench", [l.strip() for l in (ROOT / "tebench/report/pool.py").read_text().splitlines()
                                                  if l.startswith("from tebench")])
aliases = []
for path, tree in py_files():
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.startswith("_") and not node.targets[0].id.startswith("__")
                and isinstance(node.value, (ast.Name, ast.Attribute))):
            aliases.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.targets[0].id}")
        if isinstance(node, ast.ImportFrom):
            aliases += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name} as {a.asname}" for a in node.names
                        if a.asname and a.asname.startswith("_")]
out(S, "module-level underscore aliases in tebench/ (`_x = y`, `import y as _x`)", aliases)
t_only = test_only.test_only()
out(S, "top-level tebench defs referenced only from tests/ (name-based)", [f"{p}:{n}" for p, n, _ in t_only])
reach = test_only.private_reached()
out(S, "private tebench names reached from tests/ (import _x, module._x)",
    f"{len(collections.Counter(n for _, n, _ in reach))} names, {len(reach)} sites")
noqa = grep(r"noqa: F401")
out(S, "`noqa: F401` lines in tebench/", f"{len(noqa)} in {sorted({h.split(':')[0] for h in noqa})}")
out(S, "  of which say they re-export ('raised here', 'public names', 'its home')",
    grep(r"noqa: F401.*(raised here|public names|its home)"))
out(S, "exit status 2 decided (EXIT_BAD_INPUT used, SystemExit(2), return 2)",
    grep(r"(return|raise SystemExit\(|else) ?\(?EXIT_BAD_INPUT|SystemExit\(2\)|return 2\b(?!\s*\*)|exit_code: int = EXIT_BAD_INPUT"))
arch = (ROOT / "ARCHITECTURE.md").read_text().splitlines() if (ROOT / "ARCHITECTURE.md").exists() else []
for pat, label in ((r"run/records\b", "ARCHITECTURE.md names run/records (module: run/record_builder.py)"),
                   (r"one Jinja setup", "ARCHITECTURE.md: 'the one Jinja setup'"),
                   (r"store/: .*merge", "ARCHITECTURE.md's diagram lists merge under store/"),
                   (r"thresholds\.py", "ARCHITECTURE.md: --threshold in cli/thresholds.py")):
    out(S, label, [f"ARCHITECTURE.md:{i}" for i, l in enumerate(arch, 1) if re.search(pat, l)])
out(S, "modules that define or take --threshold / parse it", (grep(r"\"--threshold\""), grep(r"def parse_threshold")))
out(S, "code comments naming the removed detect module", grep(r"detect\.py|detect\.usable_cpus"))

# --- Tests ----------------------------------------------------------------------------------------------------
S = "tests"
tests_imp = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")
             if re.search(r"^\s*(from tests(\.| )|import tests\b)", p.read_text(), re.M)]
conf_imp = [p for p in (ROOT / "tests").rglob("*.py") if re.search(r"^\s*(from conftest |import conftest\b)", p.read_text(), re.M)]
out(S, "test modules importing tests.*", f"{len(tests_imp)} {tests_imp}")
out(S, "test modules importing conftest", len(conf_imp))
out(S, "pytest pythonpath setting", [l.strip() for l in (ROOT / "pyproject.toml").read_text().splitlines()
                                      if l.strip().startswith("pythonpath")])
tox = configparser.ConfigParser()
tox.read(ROOT / "tox.ini")
out(S, "tox.ini envlist and [testenv] commands", (tox.get("tox", "envlist", fallback=None),
                                                 tox.get("testenv", "commands", fallback=None)))
out(S, "ruff lint config", [l.strip() for l in (ROOT / "pyproject.toml").read_text().split("[tool.ruff.lint]")[-1]
                            .split("[tool.")[0].splitlines() if l.strip() and not l.strip().startswith("#")])
out(S, "mypy files", [l.strip() for l in (ROOT / "pyproject.toml").read_text().splitlines() if l.strip().startswith("files")])
dup = test_helpers.duplicated()
out(S, "top-level `def _name` in >= 2 test files", f"{len(dup)} names; _case in {len(set(dup.get('_case', [])))} files")
helpers_any, fixtures = test_helpers.duplicated_any()
out(S, "top-level non-test non-fixture functions (any name) in >= 2 test files", len(helpers_any))
counts, by_op, files = sentence_asserts.count()
out(S, "asserts comparing with a string literal of >= 6 words (==, !=, in, not in)",
    f"{sum(counts.values())} (plain {counts['literal']}, f-string {counts['fstring']}) {dict(by_op)}")
sentence_asserts.WORDS = 4
counts4, _, _ = sentence_asserts.count()
sentence_asserts.WORDS = 6
out(S, "  the same with >= 4 words", sum(counts4.values()))
out(S, "Executor built with __new__ in tests/", grep(r"Executor\.__new__|__new__\(Executor", "tests"))
out(S, "any __new__ in tests/", len(grep(r"__new__", "tests")))

if TOOLS:
    for cmd in ([PY, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                [PY, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]):
        done = run(cmd, PLAIN)
        out(S, " ".join(c.split("/")[-1] for c in cmd), f"rc {done.returncode}: "
            f"{(done.stdout.strip().splitlines() or [''])[-1]}")
    done = run([PY, "-m", "ruff", "check", "--no-cache", "tests"])
    out(S, "ruff check tests", f"rc {done.returncode}: {(done.stdout.strip().splitlines() or [''])[-1]}")
    done = run([PY, str(HERE / "frame_columns.py"), str(ROOT), "tests/fixtures/cpu-smoke.jsonl",
                "reports/h200-nightly-energy/results.jsonl"])
    for line in done.stdout.strip().splitlines() or done.stderr.strip().splitlines()[-1:]:
        out("frame_columns", "", line)
    done = run([PY, str(HERE / "underscore_attrs.py"), str(ROOT)])
    out("underscore_attrs", "attributes with a leading underscore not defined in tebench/", done.stdout.count("\n"))
    for script in ("exceptions.py", "runtime_checks.py", "report_columns.py", "stored_rules.py"):
        done = run([PY, str(HERE / script), str(ROOT)])
        for line in done.stdout.strip().splitlines():
            if not line.startswith(("T ", "- ")):
                out(script[:-3], "", line)
        if done.returncode:
            out(script[:-3], "failed", done.stderr.strip().splitlines()[-1:])
