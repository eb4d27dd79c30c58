"""Matrix files: expansion, exclusions, presets, and clear errors for bad input."""

from __future__ import annotations

import json
import re

import pytest

from tebench.schema.records import Case
from tebench.plan import matrix
from tebench.plan.matrix import MatrixError, iter_cases
from conftest import BASE, write

def test_expansion_drops_options_a_recipe_does_not_take(tmp_path):
    cases = list(iter_cases(matrix.load(write(tmp_path, BASE))))
    ids = [c.id for c in cases]
    # delayed: 2 formats x 2 histories; current scaling has no history -> 2 formats only.
    fp8 = [i for i in ids if "TE-FP8" in i]
    assert sorted(fp8) == sorted([
        "gpt/a/TE-FP8/delayed.E4M3.h16.max", "gpt/a/TE-FP8/delayed.E4M3.h1024.max",
        "gpt/a/TE-FP8/delayed.HYBRID.h16.max", "gpt/a/TE-FP8/delayed.HYBRID.h1024.max",
        "gpt/a/TE-FP8/current.E4M3", "gpt/a/TE-FP8/current.HYBRID",
    ])
    assert "gpt/a/PT-FP32" in ids and "gpt/a/PT-AMP" in ids
    assert len(ids) == len(set(ids)) == 8


def test_case_ids_are_stable_and_roundtrip(tmp_path):
    cases = list(iter_cases(matrix.load(write(tmp_path, BASE))))
    for case in cases:
        again = Case.from_dict(case.to_dict())
        assert again == case and again.id == case.id


def test_exclude_rules_are_data(tmp_path):
    text = BASE + '\n[[exclude]]\nrecipe = "current"\n\n[[exclude]]\nmode = "PT-AMP"\n'
    ids = [c.id for c in iter_cases(matrix.load(write(tmp_path, text)))]
    assert not any("current" in i for i in ids)
    assert "gpt/a/PT-AMP" not in ids and "gpt/a/PT-FP32" in ids


def test_per_size_settings_override(tmp_path):
    text = BASE + "steps = 9\n"  # appended into [sizes.gpt.a]
    (case,) = [c for c in iter_cases(matrix.load(write(tmp_path, text))) if c.mode == "PT-FP32"]
    assert case.settings.steps == 9 and case.settings.warmup == 1


def test_extends_merges_and_adds_sizes(tmp_path):
    write(tmp_path, BASE, "base.toml")
    child = write(tmp_path, """
        extends = "base"
        name = "child"
        [axes]
        modes = ["PT-FP32"]
        [sizes.gpt.b]
        vocab = 32
        d_model = 32
        heads = 2
        layers = 1
        ffn = 64
        seq = 16
        batch = 2
    """, "child.toml")
    ids = [c.id for c in iter_cases(matrix.load(child))]
    assert ids == ["gpt/a/PT-FP32", "gpt/b/PT-FP32"]


def test_every_shipped_preset_loads():
    names = matrix.preset_names()
    for required in ("smoke", "tutorial", "nightly", "large", "crossover", "gpu-smoke"):
        assert required in names
    for name in names:
        cases = list(iter_cases(matrix.load(name, is_preset=True)))
        assert cases, name


def test_nightly_reaches_d4096_seq2048():
    cases = list(iter_cases(matrix.load("nightly", is_preset=True)))
    dims = [dict(c.dims) for c in cases if c.workload == "gpt"]
    assert max(d["d_model"] for d in dims) == 4096 and max(d["seq"] for d in dims) == 2048


@pytest.mark.parametrize("bad,key,fragment", [
    ('[axes]\nmodes = ["PT-FP33"]', "axes.modes", "unknown value"),
    ('[fp8]\nrecipes = ["delayd"]', "fp8.recipes", "unknown value"),
    ('[fp8]\nformats = ["E5M2"]', "fp8.formats", "unknown value"),
    ('[settings]\nsteps = "ten"', "settings.steps", "must be an integer"),
    ('[settings]\nstepz = 3', "settings.stepz", "unknown setting"),
    ('[sizes.gpt.x]\nvocab = 32\nd_model = 100\nheads = 12\nlayers = 1\nffn = 64\nseq = 8\nbatch = 1',
     "sizes.gpt.x.d_model", "not divisible by heads=12"),
    ('[sizes.gpt.x]\nd_model = -64\nheads = 4', "sizes.gpt.x.d_model", "must be at least 1"),
    ('[sizes.gpt.x]\nwidth = 3', "sizes.gpt.x.width", "unknown key"),
    ('[sizes.bert.x]\nd = 1', "sizes.bert", "unknown workload"),
    ('[axes]\nworkloads = ["distill"]', "axes.workloads", "no [sizes.distill"),
    ('[[exclude]]\nmode = "PT-FP32"\n[[exclude]]\nmode = ["PT-AMP", "TE-FP8"]', "exclude", "nothing to run"),
    ('[[exclude]]\ncolour = "red"', "exclude[0].colour", "unknown key"),
    ("flavour = 1", "flavour", "unknown key"),
])
def test_bad_matrix_names_file_key_and_value(tmp_path, bad, key, fragment):
    path = write(tmp_path, _replace_table(BASE, bad))
    with pytest.raises(MatrixError) as err:
        list(iter_cases(matrix.load(path)))
    message = str(err.value)
    assert str(path) in message and f"[{key}" in message and fragment in message, message


def _replace_table(base: str, bad: str) -> str:
    """Replace the table ``bad`` redefines (if any) so the file stays valid TOML."""
    head = bad.split("\n", 1)[0]
    if head in ("[axes]", "[fp8]", "[settings]"):
        lines, out, skipping = base.splitlines(), [], False
        for line in lines:
            if line.startswith("["):
                skipping = line == head
            if not skipping:
                out.append(line)
        return "\n".join(out) + "\n" + bad + "\n"
    if head.startswith("[sizes.gpt.x]") or head.startswith("[sizes.bert"):
        return base + "\n" + bad + "\n"
    if head.startswith("flavour"):
        return bad + "\n" + base
    return base + "\n" + bad + "\n"


def test_invalid_toml_reports_line(tmp_path):
    path = write(tmp_path, "name = \n[axes")
    with pytest.raises(MatrixError, match="not valid TOML") as err:
        matrix.load(path)
    assert str(path) in str(err.value)


def test_a_byte_order_mark_is_not_part_of_the_text(tmp_path):
    plain = write(tmp_path, BASE, "plain.toml")
    marked = tmp_path / "marked.toml"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    a, b = matrix.load(plain), matrix.load(marked)
    assert [c.id for c in iter_cases(a)] == [c.id for c in iter_cases(b)]
    assert a.data == b.data and a.text_sha256 != b.text_sha256  # the hash stays that of the bytes
    # An error past the mark still names its line.
    marked.write_bytes(b"\xef\xbb\xbf" + b"name = 1\n\xff\n")
    with pytest.raises(MatrixError, match="line 2 holds the byte 0xff"):
        matrix.load(marked)


def test_missing_file_and_unknown_preset(tmp_path):
    with pytest.raises(MatrixError, match="cannot read"):
        matrix.load(tmp_path / "nope.toml")
    with pytest.raises(MatrixError, match="no such preset .*known: auto, .*smoke"):
        matrix.load("nope", is_preset=True)


def test_extends_cycle_is_refused(tmp_path):
    write(tmp_path, 'extends = "b"\n' + BASE, "a.toml")
    write(tmp_path, 'extends = "a"\n' + BASE, "b.toml")
    with pytest.raises(MatrixError, match="cycle") as err:
        matrix.load(tmp_path / "a.toml")
    a, b = (str((tmp_path / name).resolve()) for name in ("a.toml", "b.toml"))
    assert f"closes a cycle of extends: {a} -> {b} -> {a}" in str(err.value)


def test_reference_modes_run_first_in_each_group(tmp_path):
    text = BASE.replace('modes = ["PT-FP32", "PT-AMP", "TE-FP8"]', 'modes = ["TE-FP8", "PT-AMP", "PT-FP32"]')
    ordered = matrix.reference_order(list(iter_cases(matrix.load(write(tmp_path, text)))))
    assert [c.mode for c in ordered[:2]] == ["PT-FP32", "PT-AMP"]


def test_missing_extends_target_is_reported_as_such(tmp_path):
    path = write(tmp_path, 'extends = "no-such-parent"\n' + BASE)
    with pytest.raises(MatrixError) as err:
        matrix.load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: [extends] = 'no-such-parent': no such file") and "--preset" not in message


def test_bad_value_in_a_parent_is_reported_against_the_parent(tmp_path):
    parent = write(tmp_path, BASE.replace("warmup = 1", "warmup = 1\nlr = nan"), "parent.toml")
    child = write(tmp_path, 'extends = "parent"\nname = "child"\n', "child.toml")
    with pytest.raises(MatrixError) as err:
        matrix.load(child)
    assert str(err.value).startswith(f"{parent}: [settings.lr] = nan: must be a finite number")


def test_value_overridden_by_the_child_is_reported_against_the_child(tmp_path):
    write(tmp_path, BASE, "parent.toml")
    child = write(tmp_path, 'extends = "parent"\nname = "child"\n[sizes.gpt.a]\nffn = -1\n', "child.toml")
    with pytest.raises(MatrixError) as err:
        matrix.load(child)
    assert str(err.value).startswith(f"{child}: [sizes.gpt.a.ffn] = -1: must be at least 1")


def test_size_table_must_name_every_dimension(tmp_path):
    path = write(tmp_path, BASE + "\n[sizes.gpt.b]\nvocab = 32\n")
    with pytest.raises(MatrixError, match=r"\[sizes.gpt.b\]: missing key\(s\) d_model, heads, layers, ffn, seq, "
                                          r"batch"):
        matrix.load(path)


@pytest.mark.parametrize("name", ["a/b", "tab\there", "bell\x07", "x" * 65])
def test_size_names_must_fit_case_ids(tmp_path, name):
    path = write(tmp_path, BASE.replace("[sizes.gpt.a]", f"[sizes.gpt.{json.dumps(name)}]"))
    with pytest.raises(MatrixError, match=r"\[sizes.gpt\] = .*size name"):
        matrix.load(path)


def test_dollar_and_braces_are_fine_in_names(tmp_path):
    path = write(tmp_path, BASE.replace("[sizes.gpt.a]", '[sizes.gpt."$\\\\foo{$"]'))
    assert {c.size for c in iter_cases(matrix.load(path))} == {"$\\foo{$"}


@pytest.mark.parametrize("setting,value,fragment", [
    ("timeout_s", "nan", "finite"), ("timeout_s", "-1", "at least 1.0"), ("lr", "nan", "finite"),
    ("steps", "9223372036854775807", "at most"), ("warmup", "1e26", "must be an integer"),
])
def test_settings_limits_come_from_field_metadata(tmp_path, setting, value, fragment):
    text = BASE.replace(f"{setting} = ", "# ")  # drop BASE's own value of it, if any
    path = write(tmp_path, text.replace("[settings]", f"[settings]\n{setting} = {value}"))
    with pytest.raises(MatrixError, match=rf"\[settings.{setting}\] = .*{fragment}"):
        matrix.load(path)


def test_every_user_field_declares_a_doc_and_its_limits():
    import dataclasses

    from tebench.workloads import SPECS

    builtin = [s.size_type for s in SPECS.values() if type(s).__module__.startswith("tebench.")]
    for cls in (matrix.Settings, matrix.AxisValue, matrix.FP8AxisValue, *builtin):
        for f in dataclasses.fields(cls):
            meta = f.metadata
            assert meta.get("doc"), f"{cls.__name__}.{f.name} has no doc"
            if f.type in ("int", "float"):
                assert meta.get("min") is not None and meta.get("max") is not None, f"{cls.__name__}.{f.name}"


EXCLUDE_TABLE = '\n[exclude]\nmode = "PT-AMP"\nreason = "a table, not [[exclude]]"\n'


def test_an_exclude_table_in_a_parent_is_refused_against_the_parent(tmp_path):
    parent = write(tmp_path, BASE + EXCLUDE_TABLE, "parent.toml")
    child = write(tmp_path, 'extends = "parent"\nname = "child"\n[[exclude]]\nmode = "PT-FP32"\nreason = "y"\n',
                  "child.toml")
    with pytest.raises(MatrixError) as err:
        matrix.load(child)
    message = str(err.value)
    assert message.startswith(f"{parent}: [exclude] = ") and "must be an array of tables" in message, message


def test_an_exclude_table_in_a_child_is_refused_as_in_a_file_of_its_own(tmp_path):
    write(tmp_path, BASE, "parent.toml")
    child = write(tmp_path, 'extends = "parent"\nname = "child"\n' + EXCLUDE_TABLE, "child.toml")
    with pytest.raises(MatrixError) as err:
        matrix.load(child)
    message = str(err.value)
    assert message.startswith(f"{child}: [exclude] = ") and "must be an array of tables" in message, message


def test_a_missing_dimension_lists_the_needed_ones_apart_from_the_optional(tmp_path):
    path = write(tmp_path, BASE.replace("batch = 4\n", ""))
    with pytest.raises(MatrixError) as err:
        matrix.load(path)
    message = str(err.value)
    needed = message.split("(needs ")[1].split(";")[0]
    assert "missing key(s) batch" in message and "task" not in needed and "optional: task" in message, message


def test_a_byte_that_is_not_utf8_is_named_by_its_line(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(BASE.encode().replace(b"[sizes.gpt.a]", b"# caf\xe9\n[sizes.gpt.a]"))
    line = path.read_bytes().split(b"\n").index(b"# caf\xe9") + 1
    with pytest.raises(MatrixError) as err:
        matrix.load(path)
    assert f"line {line} holds the byte 0xe9" in str(err.value), str(err.value)


def test_a_matrix_whose_fp8_lists_multiply_past_the_limit_is_refused_before_they_are_built(tmp_path):
    # 9 KB of TOML once made `tebench list` run for minutes and take gigabytes: the product was built first.
    history = ", ".join(str(n) for n in range(1, 1001))
    path = write(tmp_path, _replace_table(BASE, f"[fp8]\namax_history_len = [{history}]\n"
                                                f"calibration_steps = [{', '.join(map(str, range(1000)))}]"))
    with pytest.raises(MatrixError) as err:
        matrix.load(path)
    assert "[fp8]" in str(err.value) and "1 x 1 x 1000 x 1 x 1000 = 1,000,000" in str(err.value)


def test_a_product_of_axes_and_sizes_past_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix, "MAX_CASES", 20)  # the shipped limit is 10,000: the same rule, fewer points
    path = write(tmp_path, _replace_table(BASE, "[fp8]\nrecipes = [\"delayed\"]\namax_history_len = [1, 2, 3, 4, 5]"))
    assert len(list(iter_cases(matrix.load(path)))) == 7  # 2 PyTorch modes and 5 FP8 points
    monkeypatch.setattr(matrix, "MAX_CASES", 6)
    with pytest.raises(MatrixError) as err:
        matrix.load(path)
    assert "[axes]" in str(err.value) and "more than 6 points before [[exclude]]" in str(err.value)


@pytest.mark.parametrize("rule,fragment", [
    ('size = []', "[exclude[0].size] = []: must not be empty"),
    ('workload = "gpt"\nsize = "tiny"', "no size of that name in the rule's workload(s) gpt"),
])
def test_an_exclude_rule_that_could_match_nothing_is_refused(tmp_path, rule, fragment):
    text = BASE + "\n[sizes.distill.tiny]\nvocab = 64\nhidden = 32\nffn = 64\nblocks = 1\nseq = 8\nbatch = 4\n"
    matrix.load(write(tmp_path, text, "ok.toml"))  # the sizes themselves are fine
    with pytest.raises(MatrixError) as err:
        matrix.load(write(tmp_path, text + f"\n[[exclude]]\n{rule}\n", "bad.toml"))
    assert fragment in str(err.value)


def test_a_file_named_like_a_preset_that_extends_that_name_extends_the_preset(tmp_path):
    own = tmp_path / "smoke.toml"
    own.write_text('extends = "smoke"\nname = "my-smoke"\n[settings]\nsteps = 3\n')
    mat = matrix.load(own)
    preset = matrix.load("smoke", is_preset=True)
    assert mat.name == "my-smoke" and mat.data["settings"]["steps"] == 3
    assert sorted(mat.data["sizes"]) == sorted(preset.data["sizes"])
    # A file that extends itself by another name is still a cycle.
    (tmp_path / "mine.toml").write_text('extends = "mine"\n' + BASE)
    with pytest.raises(MatrixError, match="extends itself"):
        matrix.load(tmp_path / "mine.toml")


def test_a_presets_name_given_as_a_file_says_to_give_it_as_a_preset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(matrix.MatrixError, match=r"'smoke' is a preset: give --preset smoke"):
        matrix.load("smoke")
    (tmp_path / "smoke").write_text('name = "mine"\n[axes]\nworkloads = ["gpt"]\nmodes = ["PT-FP32"]\n'
                                    '[sizes.gpt.a]\nvocab = 8\nd_model = 8\nheads = 1\nlayers = 1\nffn = 8\n'
                                    'seq = 4\nbatch = 1\n')
    assert matrix.load("smoke").name == "mine"  # a file of that name is the file


@pytest.mark.parametrize("make,said", [
    (lambda p: p.symlink_to("/nowhere/smoke.toml"), "a symbolic link to /nowhere/smoke.toml, which does not exist"),
    (lambda p: p.mkdir(), "is a directory"),
])
def test_an_extends_file_that_is_there_but_unreadable_is_named_not_replaced_by_the_preset(tmp_path, make, said):
    """extends = "smoke" beside a smoke.toml that is a dangling link took the shipped preset without a word."""
    make(tmp_path / "smoke.toml")
    mine = tmp_path / "mine.toml"
    mine.write_text('extends = "smoke"\nname = "mine"\n')
    with pytest.raises(MatrixError, match=said):
        matrix.load(mine)


@pytest.mark.parametrize("where", ["settings", "size"])
def test_an_lr_warmup_longer_than_the_run_is_refused_naming_the_key(tmp_path, where):
    """A warm-up of 1,000,000 steps over a run of 4 kept the lr below 5e-9 without a word."""
    settings = "[settings]\nwarmup = 1\nsteps = 3\n" + ("lr_warmup = 1000000\n" if where == "settings" else "")
    size = "lr_warmup = 1000000\n" if where == "size" else ""
    path = tmp_path / "m.toml"
    path.write_text(settings + '[axes]\nworkloads = ["gpt"]\nmodes = ["PT-FP32"]\n[sizes.gpt.a]\nvocab = 8\n'
                    'd_model = 8\nheads = 1\nlayers = 1\nffn = 8\nseq = 4\nbatch = 1\n' + size)
    key = "settings.lr_warmup" if where == "settings" else "sizes.gpt.a.lr_warmup"
    with pytest.raises(MatrixError, match=rf"\[{re.escape(key)}\] = 1000000: longer than the run at this size "
                                          r"\(warmup 1 \+ steps 3 = 4 optimizer steps\)"):
        matrix.load(path)
    path.write_text(path.read_text().replace("1000000", "4"))
    assert matrix.load(path).name == "m"
