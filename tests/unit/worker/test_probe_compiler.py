"""The compile gate's C-compiler check: Triton builds its CUDA launcher with $CC or gcc/clang."""

from __future__ import annotations

from tebench.worker.probe import triton_c_compiler_problem


def which_of(*found: str):
    return lambda name: f"/usr/bin/{name}" if name in found else None


def test_cc_that_names_no_executable_is_the_reason(tmp_path):
    # A directory is what a script once put there: every torch.compile case then failed on its path.
    reason = triton_c_compiler_problem({"CC": str(tmp_path)})
    assert reason and f"CC={str(tmp_path)!r}" in reason and "not an executable" in reason
    assert "not an executable" in triton_c_compiler_problem({"CC": ""}, which_of("gcc"))


def test_cc_on_path_or_a_compiler_found_passes():
    assert triton_c_compiler_problem({"CC": "cc"}, which_of("cc")) is None
    assert triton_c_compiler_problem({}, which_of("gcc")) is None
    assert triton_c_compiler_problem({}, which_of("clang")) is None


def test_no_compiler_anywhere_is_the_reason():
    # Triton looks for gcc and clang only, not cc, when CC is unset.
    reason = triton_c_compiler_problem({}, which_of("cc"))
    assert reason and "neither gcc nor clang" in reason
