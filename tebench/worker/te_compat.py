"""The few Transformer Engine entry points tebench calls, under the names the
installed release uses (TE 2.x renamed several; older releases have only the
old names). A release that has neither gets a clear error."""

from __future__ import annotations

import contextlib
from typing import Any


def _te() -> Any:
    import transformer_engine.pytorch as te

    return te


def _missing(*names: str) -> RuntimeError:
    import transformer_engine

    return RuntimeError(
        f"Transformer Engine {getattr(transformer_engine, '__version__', '?')} provides none of "
        f"{', '.join(names)}; this feature needs a release that does"
    )


def fp8_autocast(recipe: Any, group: Any = None) -> contextlib.AbstractContextManager:
    """TE's FP8/quantization autocast around a forward pass."""
    te = _te()
    if hasattr(te, "autocast"):
        return te.autocast(enabled=True, recipe=recipe, amax_reduction_group=group)
    if hasattr(te, "fp8_autocast"):
        return te.fp8_autocast(enabled=True, fp8_recipe=recipe, fp8_group=group)
    raise _missing("autocast", "fp8_autocast")


def fp8_disabled() -> contextlib.AbstractContextManager:
    """TE's autocast with FP8 off: modules called inside run in high precision, whatever encloses them."""
    te = _te()
    if hasattr(te, "autocast"):
        return te.autocast(enabled=False)
    if hasattr(te, "fp8_autocast"):
        return te.fp8_autocast(enabled=False)
    raise _missing("autocast", "fp8_autocast")


def quantized_init(recipe: Any) -> contextlib.AbstractContextManager:
    """Create TE modules with FP8 (quantized) weights."""
    te = _te()
    if hasattr(te, "quantized_model_init"):
        return te.quantized_model_init(enabled=True, recipe=recipe)
    if hasattr(te, "fp8_model_init"):
        return te.fp8_model_init(enabled=True)
    raise _missing("quantized_model_init", "fp8_model_init")


def make_graphed(module: Any, sample_args: tuple, recipe: Any, group: Any = None) -> Any:
    """Capture ``module``'s forward and backward in CUDA graphs, FP8 state included."""
    te = _te()
    if not hasattr(te, "make_graphed_callables"):
        raise _missing("make_graphed_callables")
    kwargs: dict[str, Any] = {"num_warmup_iters": 3}
    if recipe is not None:
        import inspect

        params = inspect.signature(te.make_graphed_callables).parameters
        if "recipe" in params:
            kwargs.update(enabled=True, recipe=recipe, amax_reduction_group=group)
        else:
            kwargs.update(fp8_enabled=True, fp8_recipe=recipe, fp8_group=group)
    return te.make_graphed_callables(module, sample_args, **kwargs)
