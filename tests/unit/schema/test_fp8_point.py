"""An FP8 option is declared once (schema/fp8_point.FP8Point): the matrix's [fp8] lists and the record's fp8 part
take their defaults, docs and limits from it."""

from __future__ import annotations

import dataclasses

import pytest

from tebench.plan import matrix
from tebench.schema.fp8_point import FP8Point
from tebench.schema.records import FP8Options
from tebench.schema.version import RecordError
from conftest import BASE, write

AXIS = {"recipe": "recipes", "format": "formats", "amax_history_len": "amax_history_len",
        "amax_compute_algo": "amax_compute_algo", "calibration_steps": "calibration_steps"}
"""Each option and the [fp8] list of its values."""


def test_the_matrix_and_the_record_declare_each_option_as_fp8_point_does():
    axis = {f.name: f for f in dataclasses.fields(matrix.FP8AxisValue)}
    assert sorted(axis) == sorted(AXIS.values())
    for option in dataclasses.fields(FP8Point):
        listed, stored = axis[AXIS[option.name]], FP8Options.model_fields[option.name]
        assert listed.default == stored.default == option.default
        assert listed.metadata["doc"] == stored.description == option.metadata["doc"]
        assert (listed.metadata["min"], listed.metadata["max"]) == (option.metadata["min"], option.metadata["max"])
    assert list(axis) == list(AXIS.values()), "the order fp8_options takes them in"


def test_the_matrix_checks_both_limits_and_a_record_the_lower_one():
    top = FP8Point.__dataclass_fields__["amax_history_len"].metadata["max"]
    stored = FP8Options.from_dict({"recipe": "delayed", "format": "HYBRID", "amax_history_len": top + 1,
                                   "amax_compute_algo": "max", "calibration_steps": 0})
    assert stored.amax_history_len == top + 1  # valid under the upper limit of its day
    with pytest.raises(RecordError, match="amax_history_len"):
        FP8Options.from_dict({"recipe": "delayed", "format": "HYBRID", "amax_history_len": 0,
                              "amax_compute_algo": "max", "calibration_steps": 0})


@pytest.mark.parametrize("key,value,fragment", [
    ("amax_history_len", "[65537]", "at most 65536"), ("amax_history_len", "[0]", "at least 1"),
    ("calibration_steps", "[-1]", "at least 0"), ("formats", '["E5M2"]', "unknown value"),
])
def test_a_matrix_value_outside_the_declaration_is_refused_naming_its_list(tmp_path, key, value, fragment):
    text = "\n".join(line for line in BASE.splitlines() if not line.startswith(f"{key} ="))
    path = write(tmp_path, text.replace("[fp8]", f"[fp8]\n{key} = {value}"))
    with pytest.raises(matrix.MatrixError, match=rf"\[fp8\.{key}\] = .*{fragment}"):
        matrix.load(path)
