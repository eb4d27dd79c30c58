"""Build Transformer Engine recipe objects from the recipe registry's declarations."""

from __future__ import annotations

from typing import Any

from tebench.plan.recipes import RECIPES
from tebench.schema.records import FP8Options


def build_recipe(opts: FP8Options) -> Any:
    """The TE recipe object for ``opts`` (its recipe's registry entry says which class and which of its options
    apply)."""
    spec = RECIPES[opts.recipe]
    if spec.te_class is None:
        raise ValueError(f"recipe '{spec.name}' names no Transformer Engine recipe class")
    from transformer_engine.common import recipe as te_recipe

    cls = getattr(te_recipe, spec.te_class, None)
    if cls is None:
        import transformer_engine

        raise RuntimeError(
            f"Transformer Engine {getattr(transformer_engine, '__version__', '?')} has no recipe class "
            f"{spec.te_class}; recipe '{spec.name}' needs a release that provides it"
        )
    kwargs: dict[str, Any] = {}
    if "format" in spec.options:
        if opts.format is None:
            raise ValueError(f"recipe '{spec.name}' takes a format, and none is set")
        kwargs["fp8_format"] = getattr(te_recipe.Format, opts.format)
    if "amax_history_len" in spec.options:
        kwargs["amax_history_len"] = opts.amax_history_len
    if "amax_compute_algo" in spec.options:
        kwargs["amax_compute_algo"] = opts.amax_compute_algo
    return cls(**kwargs)
