"""The registry of FP8 quantization recipes: Transformer Engine's and torchao's.

One entry per recipe: the matrix file's choices, the CLI's help, validation,
gating and construction all come from :data:`RECIPES`, so a new recipe is one
entry here. Each recipe belongs to one library, and an FP8 mode takes the
recipes of its own library (TE-FP8 TE's, AO-FP8 torchao's). TE recipes are
built by class *name*, torchao's by recipe name, so a release that lacks one is
reported with a clear message instead of an AttributeError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING


if TYPE_CHECKING:  # the types only: --help builds the parser from RECIPES without pydantic
    from tebench.schema.records import FP8Options
    from tebench.schema.environment import Environment



@dataclass(frozen=True)
class RecipeSpec:
    """What tebench knows about one TE recipe."""

    name: str
    """The name used in matrix files and case ids."""
    te_class: str | None
    """Class name in ``transformer_engine.common.recipe`` (TE recipes); for torchao's, its recipe name
    (``Float8LinearRecipeName``)."""
    options: tuple[str, ...]
    """Which recipe axes apply (``format``, ``amax_history_len``, ``amax_compute_algo``, ``calibration_steps``)."""
    support: str
    """Which :class:`tebench.schema.environment.Environment` support flag gates it."""
    stateful: bool
    """Whether layers keep a scale and an amax history between steps (delayed scaling)."""
    description: str
    library: str = "te"
    """``te`` or ``torchao``: the FP8 mode of that library takes this recipe."""

    def gate(self, env: "Environment") -> str | None:
        """None when this recipe can run here, else the reason it cannot."""
        if self.library == "torchao":
            if env.torchao is not None and env.torchao_recipes and self.te_class not in env.torchao_recipes:
                return f"torchao {env.torchao} has no float8 recipe {self.te_class!r}"
            return None  # the mode's gate checks torchao, the torch pair and the GPU
        if env.te is not None and self.te_class not in env.te_recipes:
            return f"Transformer Engine {env.te} has no recipe class {self.te_class} (recipe '{self.name}')"
        support = getattr(env, self.support)
        if not support.ok:
            return f"recipe '{self.name}' not supported here: {support.reason}"
        return None


RECIPES: dict[str, RecipeSpec] = {
    spec.name: spec
    for spec in (
        RecipeSpec(
            "delayed", "DelayedScaling", ("format", "amax_history_len", "amax_compute_algo", "calibration_steps"),
            "fp8", True,
            "per-tensor delayed scaling: scale from the amax history of earlier steps",
        ),
        RecipeSpec(
            "current", "Float8CurrentScaling", ("format",), "fp8", False,
            "per-tensor current scaling: scale from this step's amax",
        ),
        RecipeSpec(
            "block", "Float8BlockScaling", ("format",), "fp8_block", False,
            "FP8 with 1x128 / 128x128 block scales (DeepSeek-V3 style)",
        ),
        RecipeSpec(
            "mxfp8", "MXFP8BlockScaling", ("format",), "mxfp8", False,
            "MXFP8: E8M0 scale per 32 values (compute capability >= 10.0)",
        ),
        RecipeSpec(
            "nvfp4", "NVFP4BlockScaling", (), "nvfp4", False,
            "NVFP4: 4-bit E2M1 with per-16 FP8 scales (compute capability >= 10.0)",
        ),
        RecipeSpec(
            "tensorwise", "tensorwise", (), "compile", False,
            "torchao: dynamic per-tensor scales, cuBLAS tensorwise FP8 GEMM (torchao's fastest)",
            library="torchao",
        ),
        RecipeSpec(
            "rowwise", "rowwise", (), "compile", False,
            "torchao: dynamic per-row scales rounded to powers of two, E4M3 everywhere",
            library="torchao",
        ),
        RecipeSpec(
            "rowwise_with_gw_hp", "rowwise_with_gw_hp", (), "compile", False,
            "torchao: rowwise, with the weight gradient's GEMM kept in high precision (torchao's most accurate)",
            library="torchao",
        ),
    )
}

DEFAULT_RECIPE = {"te": "delayed", "torchao": "tensorwise"}
"""The recipe an FP8 mode gets when the matrix's ``[fp8] recipes`` lists none of its library's."""


def fp8_options(recipe: str, format: str | None, amax_history_len: int | None, amax_compute_algo: str | None,
                calibration_steps: int | None = 0) -> FP8Options:
    """The FP8 options of one matrix point, without the options ``recipe`` ignores (they would only duplicate cases)."""
    from tebench.schema.records import FP8Options

    spec = RECIPES[recipe]
    return FP8Options(
        recipe=recipe,
        format=format if "format" in spec.options else None,
        amax_history_len=amax_history_len if "amax_history_len" in spec.options else None,
        amax_compute_algo=amax_compute_algo if "amax_compute_algo" in spec.options else None,
        calibration_steps=calibration_steps if "calibration_steps" in spec.options else None,
    )
