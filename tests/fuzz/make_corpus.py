"""Regenerate the fuzz corpus: ``.venv/bin/python tests/fuzz/make_corpus.py`` (then review and commit).

Every bad matrix in ``matrices/`` starts with comment lines saying what the
error must name: ``# expect-key:`` (the key in brackets), ``# expect:`` (a
fragment of the message) and, where the bad value lives in a parent file,
``# expect-file:``. Every corrupt results file in ``results/`` is listed in
``results/expected.json`` with ``refused`` (exit 2) or ``skipped`` (the bad
line is skipped, naming file:line) and a message fragment. The nested-damage
files in ``nested/`` (one wrong value deep inside a real record) come from
``damage.py``, which also builds the thousands of systematic variants the
tests generate in memory; ``nested/expected.json`` gives each file's line,
field path and expected outcome.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "fixtures" / "cpu-smoke.jsonl"

SETTINGS = """[settings]
steps = 4
warmup = 1
"""
GPT = {"vocab": 32, "d_model": 64, "heads": 4, "layers": 1, "ffn": 128, "seq": 16, "batch": 4}
DISTILL = {"vocab": 64, "hidden": 32, "ffn": 64, "blocks": 1, "seq": 8, "batch": 4}
MODULE = {"module": "linear", "hidden": 32, "tokens": 64}


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return {float("inf"): "inf", float("-inf"): "-inf"}.get(v, "nan" if v != v else repr(v))
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return str(v)


def size_table(workload: str, name: str, dims: dict) -> str:
    key = name if name.replace("_", "").replace("-", "").isalnum() else json.dumps(name)
    return f"[sizes.{workload}.{key}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in dims.items())


def matrix(settings: str = SETTINGS, axes: str = '[axes]\nmodes = ["PT-FP32"]\n', extra: str = "",
           sizes: str | None = None, top: str = 'name = "fuzz"\n') -> str:
    return top + settings + axes + extra + (sizes if sizes is not None else size_table("gpt", "a", GPT))


def cases() -> dict[str, tuple[str, str, str, str | None]]:
    """name -> (text, expected key, expected fragment, expected file or None)."""
    out: dict[str, tuple[str, str, str, str | None]] = {}
    huge, nan, inf = 2**63 - 1, float("nan"), float("inf")
    bad_settings = {
        "steps": [0, -1, huge, 2.5, "ten", True, [1]],
        "warmup": [-1, 1e26, huge, nan],
        "seed": [-1, 2**40, "x"],
        "lr": [nan, inf, -1e-3, 0.0, 1e9, "fast"],
        "lr_warmup": [-5, huge],
        "timeout_s": [nan, inf, -1, 0, 1e12, "never"],
        "parity_rtol": [nan, -0.1, inf],
        "parity_atol": [nan, -1],
        "profile_steps": [-1, huge],
        "scaling_samples": [-3, 1.5],
    }
    for key, values in bad_settings.items():
        for i, v in enumerate(values):
            base = "".join(line + "\n" for line in SETTINGS.splitlines() if not line.startswith(key + " "))
            text = matrix(settings=base + f"{key} = {toml_value(v)}\n")
            float_field = key in ("lr", "timeout_s", "parity_rtol", "parity_atol")
            fragment = "finite" if float_field and isinstance(v, float) and (v != v or v in (inf, -inf)) \
                else "must be"
            out[f"settings_{key}_{i}"] = (text, f"settings.{key}", fragment, None)
    # The same setting, overridden per size.
    out["size_override_timeout_nan"] = (matrix(sizes=size_table("gpt", "a", {**GPT, "timeout_s": nan})),
                                        "sizes.gpt.a.timeout_s", "finite", None)
    out["size_override_steps_huge"] = (matrix(sizes=size_table("gpt", "a", {**GPT, "steps": huge})),
                                       "sizes.gpt.a.steps", "at most", None)
    bad_dims = {"vocab": [3, 0, 2**62], "d_model": [2**62, -64, 0, 64.0, "wide"], "heads": [0, -4, True],
                "layers": [0, 10**6, "four"], "ffn": [-128, 0, 2**40], "seq": [2, 0, 2**62],
                "batch": [0, -1, 2**40]}
    for key, values in bad_dims.items():
        for i, v in enumerate(values):
            out[f"gpt_{key}_{i}"] = (matrix(sizes=size_table("gpt", "a", {**GPT, key: v})),
                                     f"sizes.gpt.a.{key}", "must be", None)
    out["gpt_heads_do_not_divide"] = (matrix(sizes=size_table("gpt", "a", {**GPT, "heads": 5})),
                                      "sizes.gpt.a.d_model", "not divisible by heads", None)
    out["gpt_only_vocab"] = (matrix(sizes=size_table("gpt", "a", {"vocab": 32})), "sizes.gpt.a",
                             "missing key(s) d_model, heads, layers, ffn, seq, batch", None)
    for key in GPT:
        dims = {k: v for k, v in GPT.items() if k != key}
        out[f"gpt_missing_{key}"] = (matrix(sizes=size_table("gpt", "a", dims)), "sizes.gpt.a",
                                     f"missing key(s) {key}", None)
    out["gpt_unknown_dim"] = (matrix(sizes=size_table("gpt", "a", {**GPT, "width": 3})), "sizes.gpt.a.width",
                              "unknown key", None)
    out["gpt_empty_size"] = (matrix(sizes="[sizes.gpt.a]\n"), "sizes.gpt.a", "missing key(s)", None)
    out["gpt_size_not_table"] = (matrix(sizes="[sizes.gpt]\na = 3\n"), "sizes.gpt.a", "must be a table", None)
    distill_axes = '[axes]\nmodes = ["PT-FP32"]\nworkloads = ["distill"]\n'
    for key, v in (("hidden", -32), ("ffn", 0), ("blocks", 2**30), ("seq", "long"), ("batch", 0.5)):
        out[f"distill_{key}"] = (matrix(axes=distill_axes, sizes=size_table("distill", "d", {**DISTILL, key: v})),
                                 f"sizes.distill.d.{key}", "must be", None)
    out["distill_missing"] = (matrix(axes=distill_axes, sizes=size_table("distill", "d", {"vocab": 64})),
                              "sizes.distill.d", "missing key(s) hidden", None)
    module_axes = '[axes]\nmodes = ["PT-FP32"]\nworkloads = ["module"]\n'
    for key, v in (("module", "conv"), ("hidden", 0), ("tokens", -1), ("ffn", -128), ("heads", -1),
                   ("seq", 0)):
        out[f"module_{key}"] = (matrix(axes=module_axes, sizes=size_table("module", "m", {**MODULE, key: v})),
                                f"sizes.module.m.{key}", "", None)
    out["module_missing_hidden"] = (matrix(axes=module_axes, sizes=size_table("module", "m", {"module": "linear"})),
                                    "sizes.module.m", "missing key(s) hidden, tokens", None)
    for i, name in enumerate(["a/b", "tab\there", "bell\x07", "", " padded", "x" * 65,
                              "zero\u200bwidth", "nl\nname"]):
        out[f"size_name_{i}"] = (matrix(sizes=size_table("gpt", name, GPT)), "sizes.gpt", "size name", None)
    out["matrix_name_slash"] = (matrix(top='name = "a/b"\n'), "name", "split the case id", None)
    out["matrix_name_number"] = (matrix(top="name = 5\n"), "name", "must be a string", None)
    out["description_list"] = (matrix(top='name = "x"\ndescription = [1]\n'), "description", "must be a string", None)
    axes_bad = {
        "modes_unknown": ('modes = ["PT-FP33"]', "axes.modes", "unknown value"),
        "modes_number": ("modes = 3", "axes.modes", "must be a string"),
        "modes_empty": ("modes = []", "axes.modes", "must not be empty"),
        "graphs_string": ('modes = ["PT-FP32"]\ngraphs = ["yes"]', "axes.graphs", "true or false"),
        "fp8_weights_int": ('modes = ["PT-FP32"]\nfp8_weights = [1]', "axes.fp8_weights", "true or false"),
        "parallel_unknown": ('modes = ["PT-FP32"]\nparallel = ["mpi"]', "axes.parallel", "unknown value"),
        "nproc_zero": ('modes = ["PT-FP32"]\nnproc = [0]', "axes.nproc", "at least 1"),
        "nproc_huge": ('modes = ["PT-FP32"]\nnproc = [1099511627776]', "axes.nproc", "at most"),
        "workloads_unknown": ('modes = ["PT-FP32"]\nworkloads = ["bert"]', "axes.workloads", "no [sizes.bert"),
        "workloads_no_sizes": ('modes = ["PT-FP32"]\nworkloads = ["distill"]', "axes.workloads", "no [sizes.distill"),
        "unknown_axis": ('modes = ["PT-FP32"]\ncolour = ["red"]', "axes.colour", "unknown key"),
    }
    for name, (body, key, fragment) in axes_bad.items():
        out[f"axes_{name}"] = (matrix(axes=f"[axes]\n{body}\n"), key, fragment, None)
    fp8_axes = '[axes]\nmodes = ["TE-FP8"]\n'
    fp8_bad = {
        "history_zero": ("amax_history_len = [0]", "fp8.amax_history_len", "at least 1"),
        "history_negative": ("amax_history_len = [-16]", "fp8.amax_history_len", "at least 1"),
        "history_huge": ("amax_history_len = [9223372036854775807]", "fp8.amax_history_len", "at most"),
        "history_nan": ("amax_history_len = [nan]", "fp8.amax_history_len", "must be an integer"),
        "recipe_unknown": ('recipes = ["delayd"]', "fp8.recipes", "unknown value"),
        "format_unknown": ('formats = ["E5M2"]', "fp8.formats", "unknown value"),
        "algo_unknown": ('amax_compute_algo = ["mean"]', "fp8.amax_compute_algo", "unknown value"),
        "calibration_negative": ("calibration_steps = [-1]", "fp8.calibration_steps", "at least 0"),
        "calibration_float": ("calibration_steps = [1.5]", "fp8.calibration_steps", "must be an integer"),
        "unknown_key": ("scale = 2", "fp8.scale", "unknown key"),
    }
    for name, (body, key, fragment) in fp8_bad.items():
        out[f"fp8_{name}"] = (matrix(axes=fp8_axes, extra=f"[fp8]\n{body}\n"), key, fragment, None)
    base = matrix()
    excl = {
        "mode_number": ("mode = 3", "exclude[0].mode", "must be a string"),
        "mode_unknown": ('mode = "PT-FP33"', "exclude[0].mode", "unknown value"),
        "reason_number": ('mode = "PT-AMP"\nreason = 5', "exclude[0].reason", "must be a string"),
        "unknown_key": ('colour = "red"', "exclude[0].colour", "unknown key"),
        "size_slash": ('size = "a/b"', "exclude[0].size", "split the case id"),
        "size_unknown": ('size = "b"', "exclude[0].size", "no workload of this matrix has a size of that name"),
        "workload_unknown": ('workload = "llama"', "exclude[0].workload", "no [sizes.llama.<name>] table"),
        "nproc_negative": ("nproc = -1", "exclude[0].nproc", "at least 1"),
        "graphs_string": ('graphs = "yes"', "exclude[0].graphs", "true or false"),
        "everything": ('mode = "PT-FP32"', "exclude", "nothing to run"),
    }
    for name, (body, key, fragment) in excl.items():
        out[f"exclude_{name}"] = (base + f"\n[[exclude]]\n{body}\n", key, fragment, None)
    out["exclude_not_array"] = (base.replace('name = "fuzz"\n', 'name = "fuzz"\nexclude = 3\n'), "exclude",
                                "array of tables", None)
    structure = {
        "sizes_number": ('name = "x"\nsizes = 3\n', "sizes", "must be a table"),
        "settings_array": ('name = "x"\nsettings = [1]\n' + size_table("gpt", "a", GPT), "settings", "must be a table"),
        "axes_string": ('name = "x"\naxes = "all"\n' + size_table("gpt", "a", GPT), "axes", "must be a table"),
        "unknown_top": ('flavour = 1\n' + matrix(), "flavour", "unknown key"),
        "no_sizes": ('name = "x"\n' + SETTINGS, "sizes", "no sizes"),
        "unknown_workload": (matrix(sizes=size_table("bert", "a", {"d": 1})), "sizes.bert", "unknown workload"),
        "not_toml": ("name = \n[axes", "file", "not valid TOML"),
        "unclosed_string": ('name = "x\n', "file", "not valid TOML"),
        "duplicate_key": ('name = "x"\nname = "y"\n', "file", "not valid TOML"),
        "empty_file": ("", "sizes", "no sizes"),
        "datetime_setting": (matrix(settings=SETTINGS + "seed = 1979-05-27T07:32:00Z\n"), "settings.seed",
                             "must be an integer"),
        "unknown_setting": (matrix(settings=SETTINGS + "stepz = 3\n"), "settings.stepz", "unknown setting"),
        "extends_number": ("extends = 5\n" + matrix(), "extends", "must be a preset name"),
        "extends_missing": ('extends = "no-such-parent"\n' + matrix(), "extends", "no such file"),
        "extends_self": ('extends = "structure_extends_self"\n' + matrix(), "extends", "cycle"),
        "extends_bad_parent": ('extends = "parents/bad_lr"\nname = "child"\n', "settings.lr", "finite",),
        "extends_bad_parent_size": ('extends = "parents/bad_size"\nname = "child"\n' + SETTINGS,
                                    "sizes.gpt.p.d_model", "must be at least 1"),
        "extends_parent_only_vocab": ('extends = "parents/ok"\nname = "child"\n[sizes.gpt.q]\nvocab = 32\n',
                                      "sizes.gpt.q", "missing key(s)"),
    }
    for name, spec in structure.items():
        text, key, fragment = spec[:3]
        where = None
        if name == "extends_bad_parent":
            where = "parents/bad_lr.toml"
        if name == "extends_bad_parent_size":
            where = "parents/bad_size.toml"
        out[f"structure_{name}"] = (text, key, fragment, where)
    return out


PARENTS = {
    "bad_lr": matrix(settings=SETTINGS + "lr = nan\n"),
    "bad_size": matrix(sizes=size_table("gpt", "p", {**GPT, "d_model": -8})),
    "ok": matrix(),
}


def write_matrices() -> int:
    root = HERE / "matrices"
    shutil.rmtree(root, ignore_errors=True)
    (root / "parents").mkdir(parents=True)
    for name, text in PARENTS.items():
        (root / "parents" / f"{name}.toml").write_text(text)
    n = 0
    for name, (text, key, fragment, where) in cases().items():
        head = f"# expect-key: {key}\n# expect: {fragment}\n" + (f"# expect-file: {where}\n" if where else "")
        (root / f"{name}.toml").write_text(head + text, encoding="utf-8")
        n += 1
    # Not UTF-8 at all: the loader must say so, not crash.
    (root / "binary_garbage.toml").write_bytes(b"# expect-key: file\n# expect: not valid TOML\n\xff\xfe\x00\x81garbage")
    return n + 1


def write_results() -> int:
    root = HERE / "results"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    lines = FIXTURE.read_text().splitlines()
    header, case = json.loads(lines[0]), json.loads(lines[1])
    head_line = json.dumps(header)
    expected: dict[str, dict[str, str]] = {}

    def jsonl(name: str, *body: str, outcome: str, fragment: str) -> None:
        (root / name).write_text("".join(line + "\n" for line in body))
        expected[name] = {"outcome": outcome, "fragment": fragment}

    def mutate(name: str, edit, fragment: str) -> None:
        rec = json.loads(json.dumps(case))
        edit(rec)
        jsonl(name, head_line, json.dumps(rec), outcome="skipped", fragment=fragment)

    (root / "binary.jsonl").write_bytes(b"\x00\xff\xfe\x81\x9c garbage \x00\n\x89PNG\r\n")
    expected["binary.jsonl"] = {"outcome": "refused", "fragment": "no header record"}
    jsonl("empty.jsonl", outcome="refused", fragment="no header record")
    jsonl("list_line.jsonl", head_line, "[1, 2, 3]", outcome="skipped", fragment=":2: not a tebench results record")
    jsonl("number_line.jsonl", head_line, "42", outcome="skipped", fragment=":2: not a tebench results record")
    jsonl("string_line.jsonl", head_line, '"hello"', outcome="skipped", fragment=":2: not a tebench results record")
    jsonl("null_line.jsonl", head_line, "null", outcome="skipped", fragment=":2: not a tebench results record")
    jsonl("list_first.jsonl", "[1]", head_line, outcome="refused", fragment="not a tebench results record")
    jsonl("null_first.jsonl", "null", outcome="refused", fragment="not a tebench results record")
    jsonl("partial_line.jsonl", head_line, json.dumps(case)[:200], outcome="skipped", fragment=":2: not JSON")
    jsonl("newer_schema.jsonl", json.dumps({**header, "schema_version": 99}), outcome="refused",
          fragment="upgrade tebench")
    jsonl("foreign_schema.jsonl", json.dumps({**header, "schema": "other"}), outcome="refused",
          fragment="not a tebench results record")
    jsonl("no_header.jsonl", json.dumps(case), outcome="refused", fragment="no header record")
    jsonl("header_env_string.jsonl", json.dumps({**header, "env": "H200"}), json.dumps(case), outcome="refused",
          fragment="[env] = 'H200': must be an object")
    jsonl("header_gpus_strings.jsonl", json.dumps({**header, "env": {**header["env"], "gpus": ["H200"]}}),
          json.dumps(case), outcome="refused", fragment="[env.gpus[0]]")
    jsonl("header_case_ids_number.jsonl", json.dumps({**header, "case_ids": 5}), json.dumps(case),
          outcome="refused", fragment="[case_ids] = 5")
    jsonl("header_shard_bad.jsonl", json.dumps({**header, "shard": "1/2"}), json.dumps(case), outcome="refused",
          fragment="[shard]")
    jsonl("schema_version_string.jsonl", json.dumps({**header, "schema_version": "1"}), outcome="refused",
          fragment="no integer schema_version")
    mutate("no_case_id.jsonl", lambda r: r.pop("case_id"), "[case_id] = None: missing")
    mutate("case_id_number.jsonl", lambda r: r.update(case_id=7), "[case_id] = 7: must be a string")
    mutate("case_id_control.jsonl", lambda r: r.update(case_id="gpt/\x07/PT-FP32"), "control characters")
    mutate("no_case.jsonl", lambda r: r.pop("case"), "[case] = None: missing")
    mutate("case_string.jsonl", lambda r: r.update(case="gpt/tiny"), "[case] = 'gpt/tiny': must be an object")
    mutate("case_no_workload.jsonl", lambda r: r["case"].pop("workload"), "[case.workload] = None: missing")
    mutate("case_settings_unknown.jsonl", lambda r: r["case"]["settings"].update(colour=1), "[case.settings.")
    mutate("unknown_status.jsonl", lambda r: r.update(status="great"), "[status] = 'great': unknown value (known: ok")
    mutate("status_missing.jsonl", lambda r: r.pop("status"), "[status] = None: missing")
    mutate("timing_string.jsonl", lambda r: r.update(timing="fast"), "[timing] = 'fast': must be an object")
    mutate("timing_list.jsonl", lambda r: r.update(timing=[1, 2]), "[timing] = [1, 2]: must be an object")
    mutate("samples_empty.jsonl", lambda r: r["timing"].update(samples_ms=[]), "must hold at least one value")
    mutate("samples_strings.jsonl", lambda r: r["timing"].update(samples_ms=["1.0"]), "must be a number")
    mutate("samples_nan.jsonl", lambda r: r["timing"]["samples_ms"].__setitem__(0, float("nan")),
           "must be a finite number")
    mutate("samples_missing.jsonl", lambda r: r["timing"].pop("samples_ms"), "[timing.samples_ms] = None: missing")
    mutate("stats_nan_median.jsonl", lambda r: r["timing"]["stats"].update(median=float("inf")),
           "[timing.stats.median] = inf")
    mutate("loss_string.jsonl", lambda r: r.update(loss="low"), "[loss] = 'low': must be an object")
    mutate("loss_per_step_dict.jsonl", lambda r: r["loss"].update(per_step={"0": 1.0}), "[loss.per_step]")
    mutate("loss_per_step_strings.jsonl", lambda r: r["loss"].update(per_step=["x"]), "[loss.per_step[0]]")
    mutate("memory_list.jsonl", lambda r: r.update(memory=[1]), "[memory] = [1]: must be an object")
    mutate("parity_string.jsonl", lambda r: r.update(parity="pass"), "[parity] = 'pass': must be an object")
    mutate("round_negative.jsonl", lambda r: r.update(round=-1), "[round] = -1: must be at least 0")
    mutate("round_string.jsonl", lambda r: r.update(round="0"), "[round] = '0': must be an integer")
    mutate("throughput_nan.jsonl", lambda r: r.setdefault("throughput", {}).update(tokens_per_s=float("nan")),
           "[throughput.tokens_per_s] = nan")
    mutate("unknown_type.jsonl", lambda r: r.update(type="footer"), "[type] = 'footer': unknown record type")

    pb = {"machine_info": {"cpu": {"brand_raw": "x"}, "node": "h"}, "datetime": "2026-11-30",
          "benchmarks": [{"name": "t", "fullname": "t", "extra_info": {"module": "linear", "mode": "PT-FP32",
                                                                        "hidden": 32, "tokens": 64, "flops": 1.0},
                          "stats": {"data": [0.001, 0.002], "median": 0.0015, "mean": 0.0015, "min": 0.001,
                                    "max": 0.002, "q1": 0.001, "q3": 0.002, "iqr": 0.001}}]}

    def pb_file(name: str, edit, fragment: str) -> None:
        data = json.loads(json.dumps(pb))
        edit(data)
        (root / name).write_text(json.dumps(data))
        expected[name] = {"outcome": "refused", "fragment": fragment}

    pb_file("pb_benchmarks_string.json", lambda d: d.update(benchmarks="many"), "'benchmarks' array")
    pb_file("pb_bench_number.json", lambda d: d["benchmarks"].__setitem__(0, 5), "benchmarks[0]: must be an object")
    pb_file("pb_no_stats.json", lambda d: d["benchmarks"][0].pop("stats"), "benchmarks[0].stats")
    pb_file("pb_data_strings.json", lambda d: d["benchmarks"][0]["stats"].update(data=["a"]), "stats.data")
    pb_file("pb_empty_data_no_median.json",
            lambda d: (d["benchmarks"][0]["stats"].update(data=[]), d["benchmarks"][0]["stats"].pop("median")),
            "stats.data is empty")
    pb_file("pb_extra_info_list.json", lambda d: d["benchmarks"][0].update(extra_info=[1]), "extra_info")
    pb_file("pb_tokens_nan.json", lambda d: d["benchmarks"][0]["extra_info"].update(tokens=float("nan")),
            "extra_info.tokens")
    pb_file("pb_fp8_string.json", lambda d: d["benchmarks"][0]["extra_info"].update(fp8="delayed"), "extra_info.fp8")
    pb_file("pb_gpus_strings.json", lambda d: d["benchmarks"][0]["extra_info"].update(env={"gpus": ["H200"]}),
            "env.gpus[0]")
    pb_file("pb_machine_cpu_string.json", lambda d: d["machine_info"].update(cpu="x86"), "machine_info.cpu")
    (root / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    return len(expected)


def write_nested() -> int:
    """The named nested-damage variants (damage.named_variants) as files, with nested/expected.json."""
    import sys

    sys.path.insert(0, str(HERE))  # damage.py beside this script; tebench from the environment
    import damage

    return damage.write_corpus(HERE / "nested")


if __name__ == "__main__":
    print(f"{write_matrices()} bad matrices, {write_results()} corrupt results files, "
          f"{write_nested()} nested-damage files")
